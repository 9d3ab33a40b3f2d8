"""A killed sweep leaves no worker running, whatever the moment it is killed and however busy
the machine is. Every wait here is on an event (a process appears, a worker has used CPU, a
process is gone); the only clock is a cap far beyond what the event needs, so a slow machine
makes these tests slower, never red."""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"),
                       reason="finds processes through /proc and tests Linux's death signal"),
]

# How long a process that should die may take. A worker orphaned while it starts up exits
# once its imports finish (about 1 s of CPU); the killed-sweep cells below keep a worker that
# does not die busy for minutes, so the cap separates the two cases by an order of magnitude.
CAP = 60.0


def _tagged(tag: str) -> list[int]:
    """Every live process whose environment carries ``DPBANDITS_TEST_TAG=tag`` (a sweep and
    its workers inherit it; orphans keep it after they are re-parented)."""
    needle = f"DPBANDITS_TEST_TAG={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if needle in fh.read().split(b"\0") and _alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    try:
        return _stat(pid)[0] not in ("Z", "X")
    except OSError:
        return False


def _cpu_seconds(pid: int) -> float:
    try:
        fields = _stat(pid)
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until(condition, what: str, cap: float = CAP) -> None:
    deadline = time.monotonic() + cap
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} (waited {cap:.0f} s)")
        time.sleep(0.05)


@pytest.fixture
def busy_cores():
    """Another process keeps every core busy for the whole test."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 2)]
    yield
    for loop in loops:
        loop.kill()
        loop.wait()


def _workers(parent: int, tag: str) -> list[int]:
    return [p for p in _tagged(tag) if p != parent]


@pytest.mark.parametrize("moment", ["parent-importing", "workers-starting", "workers-computing"])
def test_killing_a_parallel_sweep_leaves_no_worker_running(tmp_path, busy_cores, moment):
    # 40 cells of about 10 s of CPU each: a worker that survived its parent would compute for
    # minutes, far past CAP.
    cfg = tmp_path / "long.toml"
    cfg.write_text('env = "dpbandits/GLMBandit-v0"\nhorizon = 10000\nn_reps = 30\n'
                   f"seeds = {list(range(40))}\n[agents.ucb]\nname = \"linucb\"\n")
    tag = uuid.uuid4().hex
    proc = subprocess.Popen([sys.executable, "-m", "dpbandits.cli", "sweep", str(cfg),
                             "--jobs", "2", "--out", str(tmp_path / "o"), "--quiet"],
                            env={**os.environ, "DPBANDITS_TEST_TAG": tag},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if moment == "parent-importing":
            _wait_until(lambda: _cpu_seconds(proc.pid) > 0.2, "the sweep never ran")
        elif moment == "workers-starting":
            _wait_until(lambda: _workers(proc.pid, tag), "the sweep started no worker")
        else:
            # past their imports and into their cells: each worker has used 3 s of CPU
            _wait_until(lambda: sum(_cpu_seconds(w) > 3.0 for w in _workers(proc.pid, tag)) >= 2,
                        "the sweep's workers never got to their cells", cap=10 * CAP)
        seen = set(_workers(proc.pid, tag))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        _wait_until(lambda: not _tagged(tag),
                    f"workers outlived their parent (killed {moment}; seen before the kill: "
                    f"{sorted(seen)}, alive now: {_tagged(tag)})")
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _tagged(tag):
            os.kill(pid, signal.SIGKILL)


def _orphan_script(hold_gil: bool) -> str:
    """A middle process that starts a worker following it, then waits to be killed. The worker
    prints its pid, then either sleeps without the kernel's death signal (only its watchdog
    thread can stop it: the path of systems without that signal) or holds the GIL in a
    regular-expression search that never releases it (only the kernel's signal can stop it)."""
    if hold_gil:
        setup, work = "", "import re; re.match(r'(a+)+b', 'a' * 64)"
    else:
        setup, work = "grid._set_parent_death_signal = lambda: False; ", "time.sleep(3600)"
    worker = ("import os, sys, time; import dpbandits.harness.grid as grid; " + setup
              + "grid.follow_parent(int(sys.argv[1])); print(os.getpid(), flush=True); " + work)
    return ("import os, subprocess, sys, time; "
            f"w = subprocess.Popen([sys.executable, '-c', {worker!r}, str(os.getpid())]); "
            "time.sleep(3600)")


@pytest.mark.parametrize("hold_gil", [False, True],
                         ids=["watchdog-only", "death-signal-while-holding-the-gil"])
def test_a_worker_dies_with_the_parent_it_follows(hold_gil):
    tag = uuid.uuid4().hex
    middle = subprocess.Popen([sys.executable, "-c", _orphan_script(hold_gil)],
                              env={**os.environ, "DPBANDITS_TEST_TAG": tag},
                              stdout=subprocess.PIPE, text=True)
    try:
        worker = int(middle.stdout.readline())  # printed once follow_parent has returned
        if hold_gil:
            _wait_until(lambda: _cpu_seconds(worker) > 0.5, "the worker never started its search")
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        _wait_until(lambda: not _alive(worker), "the worker outlived the parent it follows")
    finally:
        for pid in _tagged(tag):
            os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_already_died_exits_before_its_task():
    # The task names a parent that is not this process's parent: the worker was orphaned
    # while it started up, so it must exit (status 1) without running anything after.
    code = ("import os; from dpbandits.harness.grid import follow_parent; "
            "follow_parent(os.getppid() + 1 if os.getppid() != 1 else 2); print('computed')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1 and "computed" not in done.stdout
