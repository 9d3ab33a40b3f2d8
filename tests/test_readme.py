"""The README's custom-agent example must run as written."""

import re
from pathlib import Path

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
