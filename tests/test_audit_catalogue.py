"""The audit catalogue (dpbandits.audits): every component passes its audit and every audit
detects its broken variant (power check), at the fixed seed of the fast tier.

A component that fails here is a bug in the component, not in the test: do not loosen.
The thorough tier (docs/privacy-audit.md) runs under ``-m slow``.
"""

import json
import re
from pathlib import Path

import pytest

from dpbandits.audits import (
    AUDITS,
    CONFIDENCE,
    MISSING,
    _registry,
    format_table,
    run_audits,
    select,
)
from dpbandits.audits.__main__ import main as audits_main

SEED = 0
POWER = [name for name, spec in AUDITS.items() if spec.has_broken]

#: components the catalogue must cover (issue 7)
REQUIRED = ["laplace", "gaussian", "generalized-gaussian", "report-noisy-argmin", "tree",
            "dp-tofw", "dp-tofw-accountant", "dp-pofw", "dp-pofw-accountant", "noisy-sfw",
            "noisy-sgd", "local-md", "dp-ucb", "dp-hdb", "dp-gd", "dp-accmd", "dp-svrg",
            "private-sgd", "private-ftrl", "dp-gibo"]


REPORT = Path(__file__).resolve().parents[1] / "docs" / "privacy-audit.md"


def test_the_report_documents_every_audit():
    """docs/privacy-audit.md: each registered audit has its thorough-run rows (one per
    variant) and its section as the registration renders it (the heading's component may
    cite papers by link); the stated totals match. To document a new audit: paste
    ``python -m dpbandits.audits NAME --markdown`` and the rows of ``--thorough --power``."""
    text = REPORT.read_text()
    table = [line.strip("|").split("|") for line in text.splitlines()
             if line.startswith("| ") and not line.startswith("| component")]
    rows: dict[str, int] = {}
    for cells in table:
        rows[cells[0].strip()] = rows.get(cells[0].strip(), 0) + 1
    sections = {m.group(1): m.group(0).strip() for m in re.finditer(
        r"^### `([^`]+)` — .*?(?=^##|\Z)", text, re.S | re.M)}
    for name, entry in AUDITS.items():
        assert rows.get(name) == 1 + entry.has_broken, f"{name}: rows in the results table"
        assert name in sections, f"{name}: no section; see python -m dpbandits.audits --markdown"
        body = sections[name].splitlines()[1:]
        assert body == entry.markdown().splitlines()[1:], f"{name}: section != --markdown"
    assert set(rows) == set(AUDITS) and set(sections) == set(AUDITS)
    n_broken = sum(e.has_broken for e in AUDITS.values())
    assert (f"All {len(AUDITS) + n_broken} verdicts ({len(AUDITS)} audits, {n_broken} broken "
            "variants)") in " ".join(text.split())


def test_catalogue_covers_the_components():
    assert not MISSING, MISSING
    for name in REQUIRED:
        assert name in AUDITS, name
    for spec in AUDITS.values():
        assert spec.shows and spec.cannot_show and spec.canary and spec.broken_variant
        assert spec.fast_runs < spec.thorough_runs


@pytest.mark.parametrize("name", list(AUDITS))
def test_component_passes_its_audit(name):
    spec = AUDITS[name]
    res = spec(spec.fast_runs, SEED)
    assert res.component == name
    assert res.verdict == spec.expected, (
        f"{name}: {res.verdict} (expected {spec.expected}); eps_lb={res.eps_lb:.3f} vs "
        f"epsilon={res.epsilon:.3f}, mu_lb={res.mu_lb} vs mu={res.mu_claim}")


@pytest.mark.heavy  # seconds of sampling each (about 40 s in all): CI runs them
@pytest.mark.parametrize("name", POWER)
def test_audit_detects_its_broken_variant(name):
    spec = AUDITS[name]
    res = spec(spec.fast_runs, SEED, broken=True)
    assert res.broken and res.expected == "violation"
    assert res.verdict == "violation", (
        f"{name} ({spec.broken_variant}): no power, eps_lb={res.eps_lb:.3f}, "
        f"mu_lb={res.mu_lb}")


def test_screening_noise_for_a_change_of_arm_is_only_wrong_from_three_arms():
    """Why dp-screened-ls-k3 exists: screening noise sized with the different-arm sensitivity
    sqrt(2) y_max is the correct noise at K = 2 (the K = 2 audit cannot catch it) and too
    small at every K >= 3, by sqrt(K / (2 (K - 1)))."""
    import math

    from dpbandits.agents.screened_ls import ScreenedLS
    from dpbandits.audits.screened_ls import SCREEN_PARAMS

    for K in (2, 3, 5):
        agent = ScreenedLS(**{**SCREEN_PARAMS, "n_arms": K})
        different_arm = agent.multiplier * math.sqrt(2.0) * agent._y_screen
        ratio = different_arm / agent.sigmas["screen"]
        assert ratio == pytest.approx(math.sqrt(K / (2.0 * (K - 1))), rel=1e-12)
        assert (ratio < 1 - 1e-3) == (K >= 3)


def test_sanity_checks_need_no_broken_variant():
    for name in ("dp-ucb-plain-dp-sanity", "dp-hdb-plain-dp-sanity", "private-ftrl"):
        assert AUDITS[name].expected == "violation" and not AUDITS[name].has_broken
        with pytest.raises(ValueError, match="no broken variant"):
            AUDITS[name](100, 0, broken=True)


def test_select_and_run_audits():
    assert select(["dp-pofw*"]) == ["dp-pofw", "dp-pofw-accountant", "dp-pofw-gumbel"]
    assert select("laplace") == ["laplace"]
    assert select(None) == list(AUDITS)
    with pytest.raises(ValueError, match="unknown audit"):
        select(["no-such-component"])
    with pytest.raises(ValueError, match="tier"):
        run_audits(["laplace"], tier="quick")
    results = run_audits(["laplace", "report-noisy-argmin"], power=True)
    assert [(r.component, r.broken) for r in results] == [
        ("laplace", False), ("laplace", True), ("report-noisy-argmin", False),
        ("report-noisy-argmin", True)]
    assert all(r.ok for r in results)
    assert "laplace" in format_table(results)
    json.dumps([r.to_dict() for r in results])


def test_module_entry_point(capsys):
    assert audits_main(["laplace", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["component"] == "laplace" and out[0]["verdict"] == "consistent"
    assert audits_main(["--list"]) == 0
    assert "dp-ucb" in capsys.readouterr().out
    assert audits_main(["laplace", "--markdown"]) == 0  # runs nothing
    assert capsys.readouterr().out.strip() == AUDITS["laplace"].markdown()


def test_registration_reads_the_docstring_and_the_context_fills_the_spec(monkeypatch):
    monkeypatch.setattr(_registry, "AUDITS", {})

    @_registry.register("toy", fast_runs=100, thorough_runs=200, label="scale / 10")
    def audit_toy(ctx):
        """privacy.toy (a
        component)

        Canary: 0 vs 1
        Broken variant: scale / 10 (patched on
            the instance)
        Shows: what it shows
        Cannot show: what it cannot
        """
        scale = 1.0 / ctx.factor(10.0)
        return ctx.audit(lambda w, n, rng: w + rng.laplace(0.0, scale, n), epsilon=1.0,
                         delta=0.0, statistic="released value")

    entry = _registry.AUDITS["toy"]
    assert (entry.component, entry.canary, entry.broken_variant, entry.shows,
            entry.cannot_show) == ("privacy.toy (a component)", "0 vs 1",
                                   "scale / 10 (patched on the instance)", "what it shows",
                                   "what it cannot")
    ok, bad = entry(100, 3), entry(100, 3, broken=True)
    assert (ok.component, ok.runs, ok.seed, ok.confidence) == ("toy", 100, 3, CONFIDENCE)
    assert (ok.variant, ok.expected, ok.broken) == ("as implemented", "consistent", False)
    assert (bad.variant, bad.expected, bad.broken) == ("broken: scale / 10", "violation", True)

    # a driver registered under several names: keyword arguments replace the docstring
    add = _registry.register_variants(audit_toy, fast_runs=100, thorough_runs=200,
                                      shows="shared")
    add("toy-2", component="privacy.toy, second setting")
    assert _registry.AUDITS["toy-2"].shows == "shared"
    assert _registry.AUDITS["toy-2"].canary == "0 vs 1"
    with pytest.raises(ValueError, match="already registered"):
        add("toy-2")


@pytest.mark.parametrize(("doc", "message"), [
    ("privacy.toy\n\nCanary: c\nBroken variant: b\nShows: s", "does not state cannot_show"),
    ("privacy.toy\n\nsome prose\nCanary: c", "'some prose' is outside a section"),
    (None, "does not state component, canary, broken_variant, shows, cannot_show"),
])
def test_registration_names_what_the_docstring_lacks(monkeypatch, doc, message):
    monkeypatch.setattr(_registry, "AUDITS", {})

    def audit_toy(ctx):
        pass

    audit_toy.__doc__ = doc
    with pytest.raises(ValueError, match=message):
        _registry.register("toy", fast_runs=100, thorough_runs=200)(audit_toy)


@pytest.mark.slow
def test_thorough_tier():
    results = run_audits(tier="thorough", seed=SEED, power=True)
    bad = [r for r in results if not r.ok]
    assert not bad, format_table(bad)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["laplace", "gaussian", "report-noisy-argmin", "tree",
                                  "dp-pofw", "noisy-sfw", "dp-gd", "dp-screened-ls-k3"])
def test_power_is_not_a_lucky_seed(name):
    spec = AUDITS[name]
    for seed in range(1, 21):
        assert spec(spec.fast_runs, seed, broken=True).verdict == "violation", seed
        assert spec(spec.fast_runs, seed).verdict == "consistent", seed
