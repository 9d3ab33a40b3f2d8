"""The built documentation site (``bash scripts/docs.sh`` -> ``site/``) as a reader meets it:
every page opened from disk in headless Chromium loads without a console error and with
every image, search works without a server, nothing links or loads from outside the site,
and the API reference documents every public name. Skipped when ``site/`` or Chromium is
absent (CI builds the site, then runs these)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from _browser import Browser, chromium

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
# Sphinx's own copies (page sources, downloads) are not pages a reader navigates
NOT_PAGES = ("_sources", "_downloads", "_static", "_images")

needs_site = pytest.mark.skipif(not (SITE / "index.html").exists(),
                                reason="site/ is not built (bash scripts/docs.sh builds it)")
needs_chromium = pytest.mark.skipif(chromium() is None,
                                    reason="chromium is not installed (apt-get install chromium)")
pytestmark = [pytest.mark.integration, needs_site]


def _pages() -> list[Path]:
    return sorted(p for p in SITE.rglob("*.html")
                  if not set(p.relative_to(SITE).parts) & set(NOT_PAGES))


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


@needs_chromium
def test_every_page_loads_without_console_errors_or_missing_images(browser):
    pages = _pages()
    assert len(pages) > 20, [p.name for p in pages]
    problems = {}
    for page in pages:
        report = browser.load(page)
        if report.errors or report.broken_images:
            problems[str(page.relative_to(SITE))] = report.errors + [
                f"image not shown: {src}" for src in report.broken_images]
    assert not problems, problems


@needs_chromium
def test_gallery_pages_show_the_plots_their_examples_drew(browser):
    examples = sorted((SITE / "gallery").glob("plot_*.html"))
    assert len(examples) >= 5
    for page in examples:
        report = browser.load(page)
        assert not report.errors and not report.broken_images, (page.name, report)
        plots = browser.evaluate("document.querySelectorAll('img.sphx-glr-single-img,"
                                 " img.sphx-glr-multi-img').length")
        assert plots >= 1, f"{page.name} shows no plot"


@needs_chromium
def test_search_works_from_disk(browser):
    # Sphinx titles the results "Search Results" once the last hit is shown
    report = browser.load(f"{(SITE / 'search.html').as_uri()}?q=snips",
                          ready="(document.querySelector('#search-results h2') || {})"
                                ".textContent === 'Search Results'")
    assert not report.errors, report.errors
    hits = browser.evaluate("Array.from(document.querySelectorAll('#search-results li a'))"
                            ".map(a => a.getAttribute('href'))")
    assert any("dpbandits.offpolicy" in h for h in hits), hits


ATTR = re.compile(r'\b(?:href|src)="([^"]*)"')


def test_nothing_links_or_loads_outside_the_site_and_every_local_link_resolves():
    problems = []
    for page in _pages():
        for target in ATTR.findall(page.read_text()):
            if re.match(r"(?:[a-z][a-z0-9+.-]*:|//)", target):
                if not target.startswith(("data:", "mailto:", "javascript:")):
                    problems.append(f"{page.name}: outside link {target}")
                continue
            file = target.split("#", 1)[0].split("?", 1)[0]
            if file and not (page.parent / file).is_file():  # from disk a folder is no page
                problems.append(f"{page.relative_to(SITE)}: broken link {target}")
    assert not problems, problems[:20]


def _object(name: str):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise LookupError(name)


def test_api_reference_documents_every_public_name():
    """Every name of every public module's ``__all__`` has an entry: under its own module,
    or under the package that defines it (a re-export is documented once)."""
    import pkgutil

    import dpbandits

    anchors = set()
    for page in (SITE / "api").glob("*.html"):
        anchors |= set(re.findall(r'<dt class="sig sig-object py" id="(dpbandits[\w.]*)"',
                                  page.read_text()))
    documented = set()
    for anchor in anchors:
        try:
            documented.add(id(_object(anchor)))
        except (LookupError, AttributeError):
            pass
    missing = []
    for info in pkgutil.walk_packages(dpbandits.__path__, "dpbandits."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            if f"{info.name}.{name}" not in anchors and id(getattr(module, name)) not in documented:
                missing.append(f"{info.name}.{name}")
    assert not missing, missing


#: the Parameters field of a documented class: its parameter names, in the page as shown
_PARAMETERS_JS = """(() => {
  const out = {};
  for (const dt of document.querySelectorAll('dl.py.class > dt[id]')) {
    const field = Array.from(dt.nextElementSibling.querySelectorAll(':scope > dl.field-list > dt'))
      .find(f => f.textContent.trim().startsWith('Parameters'));
    out[dt.id] = field ? Array.from(field.nextElementSibling.querySelectorAll('li strong'))
      .map(s => s.textContent) : null;
  }
  return out;
})()"""


@needs_chromium
def test_every_agent_has_its_signature_and_parameters_on_the_api_page(browser):
    """Each registered agent is documented on the agents page with its constructor's
    signature and a Parameters section naming every constructor parameter (the seven
    research options leaving dp-moment-ls aside)."""
    from dpbandits._docparams import constructor_parameters
    from dpbandits.agents import agent_class, available_agents
    from dpbandits.harness.faults import is_builtin

    report = browser.load(SITE / "api" / "dpbandits.agents.html")
    assert not report.errors, report.errors
    shown = browser.evaluate(_PARAMETERS_JS)
    leaving = {"thompson", "fit_first", "lasso", "marginal_below", "no_screen_below",
               "no_screen_episodes", "play_top"}
    checked = 0
    for name in available_agents():
        cls = agent_class(name)
        if not is_builtin(cls):
            continue
        anchor = f"{cls.__module__}.{cls.__qualname__}"
        assert anchor in shown, f"agent {name}: no entry {anchor} on the agents page"
        assert shown[anchor] is not None, f"agent {name}: no Parameters section"
        want = [p.name for p in constructor_parameters(cls) if p.name not in leaving]
        assert set(want) <= set(shown[anchor]), (name, set(want) - set(shown[anchor]))
        signature = browser.evaluate(
            f"document.getElementById({anchor!r}).textContent")
        assert "n_arms" in signature and "*args" not in signature, signature
        fields = browser.evaluate(
            f"Array.from(document.getElementById({anchor!r}).nextElementSibling"
            ".querySelectorAll(':scope > dl.field-list > dt')).map(f => f.textContent.trim())")
        assert any(f.startswith("Raises") for f in fields), (name, fields)
        checked += 1
    assert checked >= 12


@needs_chromium
def test_cli_reference_and_changelog_pages_load(browser):
    for page, needle in (("cli.html", "dpbandits describe"), ("changelog.html", "Changelog")):
        report = browser.load(SITE / page)
        assert not report.errors, (page, report.errors)
        assert needle in browser.evaluate("document.body.innerText"), page


def test_no_page_links_to_a_markdown_file_and_no_markdown_is_downloaded():
    links = [f"{page.relative_to(SITE)}: {target}" for page in _pages()
             for target in ATTR.findall(page.read_text())
             if re.search(r"\.md(?:$|[#?])", target)]
    assert not links, links[:10]
    assert not list(SITE.rglob("_downloads/**/*.md"))


def _legend_records() -> dict[str, dict]:
    """The legend record the gallery's scraper (``docs/_legend_scraper.py``) wrote into each
    gallery image, by the image's path in the site."""
    import json

    from PIL import Image

    records = {}
    for page in sorted((SITE / "gallery").glob("plot_*.html")):
        for src in re.findall(r'<img [^>]*src="([^"]+\.png)"', page.read_text()):
            image = (page.parent / src).resolve()
            with Image.open(image) as png:
                text = png.text.get("Description")
                assert text is not None, f"{src}: not saved by the gallery's legend scraper"
                records[str(image.relative_to(SITE))] = {**json.loads(text), "size": png.size}
    return records


@needs_chromium
def test_gallery_figures_keep_every_legend_inside_the_image_shown(browser):
    """Every axes of a gallery figure that has labelled curves shows a legend, and the legend
    lies inside the image the page shows (a legend placed outside the axes and cut off by a
    plain ``savefig`` fails here) and is drawn there (its box is not one flat colour)."""
    import numpy as np
    from PIL import Image

    records = _legend_records()
    legends = 0
    for image, record in records.items():
        width, height = record["size"]
        assert (width, height) == (record["width"], record["height"]), image
        pixels = np.asarray(Image.open(SITE / image).convert("L"))
        for k, axes in enumerate(record["axes"]):
            if not axes["labelled"]:
                continue
            assert axes["legend"] is not None, f"{image}: axes {k} has labelled curves, no legend"
            x0, y0, x1, y1 = axes["legend"]
            # half a pixel: the box is in pixel units, rounded by the rasteriser
            assert -0.5 <= x0 < x1 <= width + 0.5 and -0.5 <= y0 < y1 <= height + 0.5, \
                f"{image}: axes {k}'s legend {axes['legend']} lies outside {width}x{height}"
            box = pixels[max(int(y0), 0):int(np.ceil(y1)), max(int(x0), 0):int(np.ceil(x1))]
            assert box.min() < box.max(), f"{image}: axes {k}'s legend box is blank"
            legends += 1
    # examples 01-03 draw regret plots with legends; 05 its audit panel
    assert legends >= 4, legends
    # and the page shows exactly these images at the size they were saved
    for page in sorted((SITE / "gallery").glob("plot_*.html")):
        browser.load(page)
        shown = browser.evaluate(
            "Array.from(document.querySelectorAll('img')).filter(i => i.src.endsWith('.png'))"
            ".map(i => [decodeURI(i.src), i.naturalWidth, i.naturalHeight])")
        for src, width, height in shown:
            image = str(Path(src.removeprefix("file://")).resolve().relative_to(SITE))
            assert image in records, (page.name, image)
            assert (width, height) == tuple(records[image]["size"]), (page.name, image)
