"""The README and docs are self-contained: no link outside the repository, papers cited by
authors, title and year (docs/references.md), every relative link resolves; unknown audit
names fail in one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpbandits.cli import main

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# "seed 000", "Seed 003", "seed001" used as a citation; directory names such as
# experiments/seed001_dp_erm/ are paths, not citations
SEED_CITATION = re.compile(r"(?<![/\w])seeds? ?00\d\b(?!_)", re.IGNORECASE)


def _markdown_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
        files = [ROOT / f for f in out]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*.md") if ".venv" not in p.parts]
    assert files, "no markdown files found"
    return files


def _user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_outside_the_repository(path):
    text = path.read_text()
    assert "../shared" not in text
    assert "reference/seeds" not in text and "reference/notes" not in text
    if path.name == "references.md":
        return  # the bibliography maps the seed numbers of code comments to the papers
    hits = [line for line in text.splitlines() if SEED_CITATION.search(line)]
    assert not hits, f"cite the paper (docs/references.md), not a seed number: {hits[:3]}"


def test_the_citation_pattern_catches_citations_but_not_paths():
    assert SEED_CITATION.search("Figure 5.1 of seed 000")
    assert SEED_CITATION.search("Seed 003, Appendix E.4")
    assert SEED_CITATION.search("the two versions (seeds 002 and 004)")
    assert not SEED_CITATION.search("see experiments/seed001_dp_erm/ for the runs")


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
