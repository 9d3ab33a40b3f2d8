"""The README's custom-agent example must run as written."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_custom_agent_example_runs():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    example = next(b for b in blocks if "class EpsilonGreedy" in b)
    example = example.replace("horizon=1000, n_reps=5", "horizon=200, n_reps=2")
    example = example.replace("horizon=1000)", "horizon=200)")
    namespace: dict = {}
    exec(compile(example, "README-example", "exec"), namespace)
    res = namespace["result"]
    assert res.regret.shape == (2, 200)
    # it learns something: less regret than uniform random on the same instances
    from dpbandits.harness.simulate import simulate

    rnd = simulate("dpbandits/Figure5.1-v0", "random", horizon=200, n_reps=2, seed=0)
    assert res.cum_regret[:, -1].mean() < rnd.cum_regret[:, -1].mean()


def test_readme_quick_start_has_exactly_two_commands():
    text = README.read_text()
    quick = text.split("## Quick start", 1)[1].split("##", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick, flags=re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    assert [c.split("#")[0].strip() for c in commands] == ["bash scripts/demo.sh",
                                                            "bash scripts/test.sh"]


def test_readme_private_tuning_example_runs():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    example = next(b for b in blocks if "AgentTuningObjective(" in b)
    for old, new in (("user_seeds=range(100), horizon=1000", "user_seeds=range(6), horizon=40"),
                     ("n_iters=15", "n_iters=2")):
        assert old in example
        example = example.replace(old, new)
    printed = []
    namespace: dict = {"print": lambda *args: printed.append(args)}
    exec(compile(example, "README-tuning-example", "exec"), namespace)
    result, tuner, objective = (namespace[k] for k in ("result", "tuner", "objective"))
    assert objective.n_individuals == 6
    assert result.history.shape == (1, 3, 2)
    assert result.extra["n_evals"][0] == 6
    assert tuner.privacy.notion == "GDP" and tuner.privacy.epsilon < 5
    assert set(printed[0][0]) == {"radius", "h_sub"}


def _block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    return next(b for b in blocks if marker in b)


def _toml_block(marker: str) -> str:
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(), flags=re.S)
    return next(b for b in blocks if marker in b)


def test_readme_read_results_example_runs_on_compare_and_sweep_outputs(tmp_path, monkeypatch):
    from dpbandits.cli import main

    small = {"horizon = 10000": "horizon = 30", "n_reps = 10": "n_reps = 2",
             "[0.3, 1.0, 3.0, 10.0]": "[1.0, 10.0]"}
    sweep_toml = _toml_block("# sweep.toml")
    for old, new in small.items():
        assert old in sweep_toml
        sweep_toml = sweep_toml.replace(old, new)
    sweep_toml = sweep_toml.replace('seeds = [0, 1]', 'seeds = [0, 1]\n[env_params]\n'
                                    'horizon = 30\ndim = 8')
    (tmp_path / "sweep.toml").write_text(sweep_toml)
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--env", "dpbandits/Figure5.1-v0", "--agent", "dp-hdb",
                 "--agent", "random", "--horizon", "30", "--reps", "2", "--out", "results/cmp",
                 "--no-plot", "--quiet"]) == 0
    assert main(["sweep", "sweep.toml", "--out", "results/sweep", "--quiet"]) == 0
    example = _block('pd.DataFrame(record["privacy"])')
    for out in ("results/cmp", "results/sweep"):
        printed: list = []
        namespace = {"print": lambda *a, _sink=printed: _sink.append(a)}
        exec(compile(example.replace('"results/cmp"', repr(out)), "README-read", "exec"),
             namespace)
        summary, privacy = printed[0][0], printed[1][0]
        labels = {"hdb", "random"} if "sweep" in out else {"dp-hdb", "random"}
        assert set(summary["agent"]) == labels
        assert privacy["certified"].any() and not privacy["certified"].all()
        if "sweep" in out:
            assert len(privacy) == 3 * 2 and (summary["n"] == 4).all()


def test_readme_imports_only_public_names():
    """Every ``from dpbandits.X import a, b`` in the README names a public package whose
    ``__all__`` lists a and b (users never need an underscore or implementation module)."""
    import importlib

    imports = re.findall(r"^from (dpbandits[\w.]*) import ([^\n(]+)$", README.read_text(),
                         flags=re.M)
    assert len(imports) >= 5
    for module_name, names in imports:
        module = importlib.import_module(module_name)
        assert module.__file__.endswith("__init__.py") or module_name == "dpbandits.testing", (
            f"README imports from the implementation module {module_name}")
        for name in (n.strip() for n in names.split(",")):
            assert name in module.__all__, f"{name} is not in {module_name}.__all__"
            assert getattr(module, name) is not None


@pytest.mark.integration
def test_harness_public_names_resolve_lazily():
    import importlib
    import subprocess
    import sys

    import dpbandits.harness as harness

    for module in ("simulate", "compare", "sweep"):  # a submodule import must not shadow
        importlib.import_module(f"dpbandits.harness.{module}")
    for name in harness.__all__:
        assert getattr(harness, name).__name__ == name
    code = ("import sys, dpbandits.harness; "
            "print('dpbandits.harness.plots' in sys.modules, 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
    try:
        harness.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_readme_real_data_example_runs():
    pytest.importorskip("sklearn.datasets", reason="the digits need the datasets extra")
    example = _block('"dpbandits/DigitsBandit-v0"')
    assert example.count("\n") <= 5 and "n_reps=10" in example
    printed: list = []
    namespace = {"print": lambda *a: printed.append(a)}
    exec(compile(example.replace("n_reps=10", "n_reps=2"), "README-real-data", "exec"),
         namespace)
    summary = printed[0][0].set_index("agent")
    assert set(summary.index) == {"dp-screened-ls", "random"}
    assert summary.loc["dp-screened-ls", "certified_epsilon"] <= 1.0 + 1e-6
    assert np.isnan(summary.loc["random", "certified_epsilon"])
    # one pass over the 1,797 rows: random's regret is 9/10 of the rounds, within 5 sd
    sd = np.sqrt(1797 * 0.9 * 0.1 / 2)
    assert abs(summary.loc["random", "mean"] - 0.9 * 1797) < 5 * sd


def test_readme_fit_predict_example_runs():
    """The block with a uniform-random log of the digits; its non-private twin
    (epsilon = inf) must learn the classes from it, so the block feeds the log correctly."""
    pytest.importorskip("sklearn.datasets", reason="the digits need the datasets extra")
    from dpbandits.envs import ClassificationBanditEnv

    example = _block("agent.fit(contexts, arms, rewards")
    env = ClassificationBanditEnv("digits")
    x, _ = env.reset(seed=0)
    n = env.horizon
    arms = np.random.default_rng(1).integers(0, 10, n)
    contexts, rewards = np.empty((n, 64)), np.empty(n)
    for t in range(n):
        contexts[t] = x
        x, rewards[t], *_ = env.step(int(arms[t]))
    data = {"contexts": contexts, "arms": arms, "rewards": rewards,
            "new_contexts": env.config.X[:300], "secret_seed": 7}
    runs = []
    for text in (example, example, example.replace("epsilon=1.0", "epsilon=float('inf')")):
        namespace = dict(data)
        exec(compile(text, "README-fit-predict", "exec"), namespace)
        runs.append(namespace)
    assert runs[0]["agent"].t_ == n and runs[0]["agent"].privacy.epsilon == 1.0
    assert np.array_equal(runs[0]["chosen"], runs[1]["chosen"])  # same seed, same arms
    # chance is 0.1 (sd 0.017 on 300 rows); the no-noise twin measured 0.72
    assert np.mean(runs[2]["chosen"] == env.config.labels[:300]) > 0.5
