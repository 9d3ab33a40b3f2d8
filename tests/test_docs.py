"""The README, docs, code and privacy records are self-contained: no link outside the
repository, papers cited by authors, title and year (docs/references.md) and never by an
internal number, every relative link resolves; unknown audit names fail in one line."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpbandits.agents import available_agents, make_agent
from dpbandits.bo import DPGIBO, ExactGradientDPGD, PrivateRandomSearch
from dpbandits.cli import main
from dpbandits.optim import OPTIMIZERS
from dpbandits.privacy.guarantee import PrivacyGuarantee

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A paper cited by its internal number ("seed 000", "Seeds 002/004", "seed-000 note",
# "seed001", also in a path), or a pointer to a file outside the repository.
SEED_CITATION = re.compile(r"seeds?[ _-]?00\d", re.IGNORECASE)
OUTSIDE = re.compile(r"DESIGN\.md|reference/(notes|seeds)|\.\./shared", re.IGNORECASE)
#: tracked text files whose words a user reads: code, comments, docs, configs, scripts
_TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".cfg", ".ini", ".txt", ".yaml", ".yml"}


def _forbidden(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if SEED_CITATION.search(line) or OUTSIDE.search(line)]


def _markdown_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
        files = [ROOT / f for f in out]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*.md") if ".venv" not in p.parts]
    assert files, "no markdown files found"
    return files


def _text_files() -> list[Path]:
    """Tracked text files (committed result data excluded) but this test file, which has to
    spell the patterns it forbids."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
        files = [ROOT / f for f in out]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*") if p.is_file()
                 and not {".venv", ".git"} & set(p.parts)]
    files = [p for p in files if p.suffix in _TEXT_SUFFIXES or p.parent.name == ".ci"]
    assert any(p.suffix == ".py" for p in files), "no source files found"
    return [p for p in files if p != Path(__file__).resolve() and p.exists()]


def _user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_outside_the_repository(path):
    hits = _forbidden(path.read_text())
    assert not hits, f"cite the paper (docs/references.md), not a seed number: {hits[:3]}"


def test_code_cites_papers_not_seed_numbers_nor_files_outside_the_repository():
    """Source, comments, docstrings, configs and scripts of dpbandits/, benchmarks/,
    experiments/, tests/ and scripts/, and every document."""
    files = _text_files()
    assert {"dpbandits", "benchmarks", "experiments", "tests"} <= {
        p.relative_to(ROOT).parts[0] for p in files}
    hits = [f"{p.relative_to(ROOT)}: {line}" for p in files
            for line in _forbidden(p.read_text(encoding="utf-8", errors="replace"))]
    assert not hits, ("cite the paper by authors and year (docs/references.md), not a seed "
                      f"number, and no file outside the repository: {hits[:5]}")


def test_the_citation_patterns_catch_citations_and_outside_pointers():
    for text in ("Figure 5.1 of seed 000", "Seed 003, Appendix E.4", "Theorem 3.4, seed 000",
                 "the two versions (seeds 002 and 004)", "Seeds 002/004", "(seed-000 note)",
                 "note seed-002-004, sections 7-8", "experiments/seed001_dp_erm/"):
        assert SEED_CITATION.search(text), text
    for text in ("(DESIGN.md, \"Errors\")", "``reference/notes/sco-baselines.md``",
                 "../shared/x", "reference/seeds/000.pdf"):
        assert OUTSIDE.search(text), text
    for text in ("environment seeds 0..19", "seed 0, thorough tier", "seed = 20240503",
                 "Han et al. 2022, Theorem 3.4", "experiments/wang2017_dp_erm/"):
        assert not _forbidden(text), text


#: values for the constructor arguments without a default; the rest stay at their defaults
_REQUIRED = {"epsilon": 1.0, "delta": 1e-5, "loss": "squared", "dim": 5, "p": 1.5,
             "radius": 1.0, "horizon": 1000}
#: what a guarantee needs before ``fit``: DP-SVRG's steps depend on the loss, and Private
#: SGD's default (theorem) calibration applies only for small epsilon
_SETTINGS = {"dp-svrg": {"step_size": 0.1, "inner_steps": 10},
             "dp-svrg++": {"step_size": 0.1, "inner_steps": 10},
             "private-sgd": {"epsilon": 0.1}}


def _optimizer(cls, name):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    kwargs = {p.name: _REQUIRED[p.name] for p in params if p.name in _REQUIRED
              and (p.default is inspect.Parameter.empty or p.name in ("epsilon", "delta"))}
    return cls(**{**kwargs, **_SETTINGS.get(name, {})})


def _records(component, n=10_000, d=5):
    """Every guarantee a component states: ``privacy`` and each ``*privacy_for(n[, d])``."""
    out = []
    for attr in sorted(a for a in dir(component) if a == "privacy" or a.endswith("privacy_for")):
        try:
            value = getattr(component, attr)
            if callable(value):
                value = value(n, d) if "d" in inspect.signature(value).parameters else value(n)
            out.append(value)
        except RuntimeError:  # a batch optimizer's privacy needs fit() (its n); *_for has it
            continue
    return [g for g in out if isinstance(g, PrivacyGuarantee)]


def _private_components():
    from dpbandits.agents import agent_class
    from dpbandits.harness.faults import is_builtin

    for name in available_agents():
        if is_builtin(agent_class(name)):  # not a plugin another test left registered
            yield f"agent {name}", make_agent(name, n_arms=2, dim=5, horizon=300)
    for name, cls in sorted(OPTIMIZERS.items()):
        yield f"optimizer {name}", _optimizer(cls, name)
    yield "bo DPGIBO", DPGIBO(mu=1.0, n_iters=5, clip_bound=1.0, batch_size=2)
    yield "bo ExactGradientDPGD", ExactGradientDPGD(mu=1.0, n_iters=5, clip_bound=1.0)
    yield "bo PrivateRandomSearch", PrivateRandomSearch(mu=1.0, n_candidates=5,
                                                        bounds=[[0.0, 1.0]],
                                                        loss_bounds=[0.0, 1.0])


@pytest.mark.heavy
def test_privacy_records_cite_papers_not_seed_numbers():
    """The privacy record a user reads (basis and caveat of every registered agent and
    optimizer at its defaults, and of the DP-GIBO methods) names papers by authors and
    year."""
    checked, hits = 0, []
    for label, component in _private_components():
        records = _records(component)
        assert records or component.privacy is None, f"{label}: no privacy record"
        for g in records:
            checked += 1
            hits += [f"{label}: {line}" for line in _forbidden(f"{g.basis}\n{g.caveat}")]
    assert checked >= len(OPTIMIZERS) + 8  # the private agents at least
    assert not hits, f"cite the paper by authors and year (docs/references.md): {hits[:5]}"


@pytest.mark.parametrize("path", _user_docs(), ids=lambda p: p.name)
def test_relative_links_resolve_and_nothing_links_outside(path):
    text = path.read_text()
    assert "http://" not in text and "https://" not in text
    for target in LINK.findall(text):
        file = target.split("#", 1)[0]
        if file:
            assert (path.parent / file).exists(), f"{path.name}: broken link {target}"


def _site_sources() -> list[Path]:
    """What the documentation site is built from besides the Markdown pages: its
    configuration, template and stylesheet, and the gallery's example scripts."""
    docs = ROOT / "docs"
    return sorted([docs / "conf.py", *docs.glob("examples/*"), *docs.glob("_templates/*"),
                   *docs.glob("_static/*")])


@pytest.mark.parametrize("path", _site_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_site_sources_link_nothing_outside_and_cite_papers(path):
    text = path.read_text()
    assert "http://" not in text and "https://" not in text
    hits = [line for line in text.splitlines() if SEED_CITATION.search(line)]
    assert not hits, f"cite the paper (docs/references.md), not a seed number: {hits[:3]}"


def test_every_docs_page_is_in_the_site():
    index = (ROOT / "docs/index.md").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"\n{page.stem}\n" in index, f"{page.name} is in no toctree of docs/index.md"
    assert "{include} ../README.md" in index


def test_reference_anchors_used_in_links_exist():
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', (ROOT / "docs/references.md").read_text()))
    for path in _markdown_files():
        for target in LINK.findall(path.read_text()):
            if "references.md#" in target:
                assert target.split("#", 1)[1] in anchors, f"{path}: {target}"


def test_bibliography_lists_the_source_papers():
    text = (ROOT / "docs/references.md").read_text()
    for title in ("On Private Online Convex Optimization",
                  "Differentially Private\nEmpirical Risk Minimization Revisited",
                  "Private Stochastic Convex Optimization: Efficient Algorithms",
                  "Scalable Differentially Private Bayesian Optimization",
                  "Differentially Private Contextual\nLinear Bandits"):
        assert " ".join(title.split()) in " ".join(text.split()), title


def test_architecture_doc_names_every_layer():
    text = (ROOT / "docs/architecture.md").read_text()
    for package in ("privacy", "optim", "envs", "agents", "harness", "cli"):
        assert f"{package}" in text
    assert "One simulated round" in text


@pytest.mark.parametrize("argv, prog", [
    (["audit", "dp-ucbb"], "dpbandits audit"),
])
def test_unknown_audit_name_is_one_line_with_a_suggestion(argv, prog, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"{prog}: error: unknown audit 'dp-ucbb'; did you mean 'dp-ucb'")


@pytest.mark.integration
def test_unknown_audit_pattern_via_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "dpbandits.audits", "nothing-like-this*"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == ("python -m dpbandits.audits: error: unknown audit "
                                  "'nothing-like-this*'; see --list")


def test_link_texts_are_titles_not_file_paths():
    """A reader sees "Real data", not "docs/real-data.md" (on the site and on GitHub)."""
    bad = []
    for path in _user_docs():
        for label, target in re.findall(r"\[([^\]]*)\]\(([^)\s]+)\)", path.read_text()):
            text = " ".join(label.split())
            if re.search(r"\.(md|py|toml|json)\b", text) and "/" in target + text:
                bad.append(f"{path.name}: [{text}]({target})")
    assert not bad, bad


def _cli_page() -> str:
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from _cliref import cli_reference
    finally:
        sys.path.remove(str(ROOT / "docs"))
    return cli_reference()


def test_cli_reference_page_lists_every_command_and_option():
    """docs/cli.md is written from the parser at build time: every subcommand, every flag
    and every positional argument of the parser is on it, with its help."""
    import argparse

    from dpbandits.cli import build_parser

    page = _cli_page()
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subs.choices) >= {"run", "compare", "sweep", "reproduce", "audit", "list",
                                 "describe", "demo"}
    for name, sub in subs.choices.items():
        assert f"## `dpbandits {name}`" in page
        section = page.split(f"## `dpbandits {name}`", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in section, (name, flag)
            if action.help and action.help != argparse.SUPPRESS and name != "audit":
                assert " ".join(action.help.split()[:4]) in " ".join(section.split()), (
                    name, action.dest)
    for flag in ("--thorough", "--power", "--list", "--json"):  # the audit runner's own
        assert flag in page.split("## `dpbandits audit`", 1)[1]


def test_the_site_has_a_cli_reference_and_a_changelog_page():
    index = (ROOT / "docs/index.md").read_text()
    assert "\ncli\n" in index and "\nchangelog\n" in index
    assert "{include} ../CHANGELOG.md" in (ROOT / "docs/changelog.md").read_text()
    assert "_write_cli()" in (ROOT / "docs/conf.py").read_text()
