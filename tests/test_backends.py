"""The backend choice: numba (and its ~125 MB runtime) is loaded only by a compiled kernel;
pandas and pyarrow (~60 MB) only by what writes or reads frames, never by a simulation."""

import json
import subprocess
import sys

import pytest

from dpbandits import _backends

# runs (agent, backend) pairs in order in one process; prints whether numba was loaded
# after the imports and after each run
_PROBE = r"""
import json, sys
import dpbandits, dpbandits.agents, dpbandits.harness, dpbandits.optim, dpbandits.audits
import dpbandits.cli
from dpbandits.harness import simulate

def loaded():
    return int(any(m.split(".")[0] in ("numba", "llvmlite") for m in sys.modules))

seen = [loaded()]
for agent, backend in json.loads(sys.argv[1]):
    simulate("dpbandits/GLMBandit-v0", agent, n_reps=2, seed=0,
             env_params={"horizon": 30, "dim": 4, "n_arms": 2},
             agent_params={"backend": backend})
    seen.append(loaded())
print(json.dumps(seen))
"""


def _numba_loaded(*runs: tuple[str, str]) -> list[int]:
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(runs)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.integration
@pytest.mark.skipif(not _backends.HAVE_NUMBA, reason="numba not installed")
def test_numba_is_imported_only_by_a_compiled_run():
    # one child: the numpy runs leave numba unloaded, then a compiled run loads it (the
    # compiled DP-UCB, LinUCB and DP-HDB paths are tested against these numpy twins elsewhere)
    numpy_runs = [(a, "numpy") for a in ("dp-ucb", "linucb", "dp-hdb")]
    assert _numba_loaded(*numpy_runs, ("dp-hdb", "numba")) == [0, 0, 0, 0, 1]


def test_backend_choice_is_checked():
    assert _backends.compiled("numpy") is False
    assert _backends.compiled("auto") is _backends.HAVE_NUMBA
    with pytest.raises(ValueError, match="backend must be one of"):
        _backends.compiled("cuda")


@pytest.mark.integration
def test_a_simulation_loads_neither_pandas_nor_pyarrow():
    # the peak memory of a run through simulate (benchmarks/bench_simulate.py) counts every
    # imported library; frames are built only by to_frame, compare, sweep and the loaders
    code = ("import json, sys\n"
            "from dpbandits.harness import simulate\n"
            "res = simulate('dpbandits/GLMBandit-v0', 'dp-ucb', n_reps=2, seed=0,\n"
            "               env_params={'horizon': 30, 'dim': 4, 'n_arms': 2},\n"
            "               agent_params={'backend': 'numpy'})\n"
            "before = sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'pyarrow'})\n"
            "res.to_frame()\n"
            "after = sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'pyarrow'})\n"
            "print(json.dumps([before, after]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    before, after = json.loads(out.stdout)
    assert before == [] and "pandas" in after


# runs the CLI commands of argv lists in one child and prints which heavy modules each left
# loaded (cumulative): what `dpbandits --help`, `list` and `describe` import
_CLI_PROBE = r"""
import contextlib, io, json, sys
HEAVY = ("numba", "llvmlite", "pandas", "pyarrow", "matplotlib", "seaborn", "sklearn",
         "scipy.stats", "dp_accounting.pld", "numpy", "gymnasium", "scipy", "dpbandits.agents")
from dpbandits.cli import main
seen = []
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
    seen.append(sorted(m for m in HEAVY if m in sys.modules))
print(json.dumps(seen))
"""


def _cli_loaded(tmp_path, *argvs: list[str]) -> list[list[str]]:
    env = {**__import__("os").environ, "DPBANDITS_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _CLI_PROBE, json.dumps(argvs)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


@pytest.mark.integration
def test_help_list_and_describe_import_only_what_they_print(tmp_path):
    # --help and list print no number they would have to compute (list reads the built-in
    # rows from catalogue.json): neither imports numpy, Gymnasium or an agent; describe loads
    # neither numba, frames, plots nor scikit-learn. It does load the PLD accountant (and
    # scipy.stats with it) even with its noise search in the store: the certified epsilon it
    # prints is recomputed from the ledger in every process, never read from a file (issue 34)
    _cli_loaded(tmp_path, ["describe", "dp-ucb"])  # fills the store
    helped, described = _cli_loaded(tmp_path, ["--help"], ["describe", "dp-ucb"])
    assert helped == []
    assert set(described) == {"numpy", "gymnasium", "scipy", "dpbandits.agents",
                              "dp_accounting.pld", "scipy.stats"}
    (listed,) = _cli_loaded(tmp_path, ["list"])
    assert listed == []
