"""Sphinx configuration of the documentation site (built by ``bash scripts/docs.sh``).

Sources: ``index.md`` (the README), the other ``docs/*.md`` pages (``changelog.md`` includes
``CHANGELOG.md``), an API reference written here at build time from every public module's
``__all__`` (``docs/api/``, not committed), the command-line reference written from the CLI's
parser (``docs/cli.md``, not committed; ``docs/_cliref.py``) and
the example gallery (``docs/examples/*.py``, executed by sphinx-gallery into
``docs/gallery/``, not committed). The build is strict (``-W -n``: every warning, broken link
or unresolved reference fails it) and the output is meant to be opened from disk.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import sys
from pathlib import Path

from docutils import nodes

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # the checkout being documented wins over an installed copy
sys.path.insert(0, str(DOCS))  # the gallery's scraper (_legend_scraper)

import dpbandits  # noqa: E402

project = "dpbandits"
author = "the dpbandits developers"
copyright = "the dpbandits developers"  # noqa: A001  (Sphinx's name)
release = version = dpbandits.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["examples/*", "gallery/*.md5", "gallery/*.py",
                    "gallery/*.ipynb", "gallery/*.zip", "gallery/*.json"]
nitpicky = True
# names outside dpbandits (numpy, pandas, typing, ...) have no pages here: no cross-links to
# other projects' sites, so the site never links outside itself
nitpick_ignore_regex = [(r"py:.*", r"(?!dpbandits\b).*")]

html_theme = "furo"
html_title = f"dpbandits {release}"
html_static_path = ["_static"]
templates_path = ["_templates"]  # page.html: our own footer
html_css_files = ["site.css"]
html_copy_source = False
html_show_sourcelink = False
html_show_sphinx = False
html_permalinks_icon = "#"
html_theme_options = {"footer_icons": [], "navigation_with_keys": True}
html_last_updated_fmt = None
html_use_index = True
# search works from disk (the index is a script); its result summaries would fetch() each
# page, which a browser refuses over file://, so they are off
html_show_search_summary = False

myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]
suppress_warnings = []

# every name of an __all__ is listed, with a docstring or not
autodoc_default_options = {"undoc-members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autoclass_content = "both"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# parameter and return types as text: "(n, d) array" is a shape, not names to cross-reference
napoleon_use_param = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # a class's "Attributes" section describes its fields once

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "gallery",
    "filename_pattern": r".*\.py$",  # run every example
    "abort_on_example_error": True,  # a failing example fails the build
    "only_warn_on_example_error": False,
    "show_signature": False,  # its signature links to an outside site
    "show_memory": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "reset_modules": ("matplotlib",),
    # Matplotlib's plain save, recording where each legend landed (tests/test_site.py reads it)
    "image_scrapers": ("_legend_scraper.scrape",),
    "min_reported_time": 1e9,  # no per-example timing line: it changes every build
    "write_computation_times": False,
}
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only slow down
os.environ.setdefault("MPLBACKEND", "Agg")


# --- API reference: one page per public package or top-level module with __all__ -------

def _public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _modules() -> list[str]:
    walk = pkgutil.walk_packages(dpbandits.__path__, "dpbandits.")
    return ["dpbandits"] + sorted(m.name for m in walk if _public(m.name))


def _is_package(name: str) -> bool:
    return hasattr(importlib.import_module(name), "__path__")


def _title(text: str, mark: str) -> str:
    return f"{text}\n{mark * len(text)}\n"


def _exports(name: str) -> dict[str, object]:
    module = importlib.import_module(name)
    return {n: getattr(module, n) for n in getattr(module, "__all__", [])}


def _pages() -> list[str]:
    """The API pages: every public package, and every top-level public module that has an
    ``__all__`` (``cli`` and ``plugins`` have none: the guide describes them)."""
    return [m for m in _modules() if m != "dpbandits" and (
        _is_package(m) or (m.count(".") == 1 and "__all__" in vars(importlib.import_module(m))))]


def _homes(pages: list[str]) -> dict[int, str]:
    """Where each exported object is documented in full: among the pages whose ``__all__``
    holds it (a class can be exported by its package and a parent package), the one nearest
    to the module that defines it. The other pages link there."""
    def score(page: str, obj: object) -> tuple[bool, int]:
        where = getattr(obj, "__module__", None) or ""
        return (where == page or where.startswith(page + "."), len(page))

    homes: dict[int, str] = {}
    for page in pages:
        for obj in _exports(page).values():
            if id(obj) not in homes or score(page, obj) > score(homes[id(obj)], obj):
                homes[id(obj)] = page
    return homes


def _entries(module: str, names: list[str]) -> str:
    """One autodoc directive per name: a class with its public members, a function, or data
    (a constant or registry)."""
    out = []
    for n in names:
        obj = getattr(importlib.import_module(module), n)
        if isinstance(obj, type):
            kind = "exception" if issubclass(obj, BaseException) else "class"
            out.append(f".. auto{kind}:: {module}.{n}\n   :members:\n")
        elif callable(obj):
            out.append(f".. autofunction:: {module}.{n}\n")
        else:
            out.append(f".. autodata:: {module}.{n}\n")
    return "\n".join(out)


def _api_pages() -> dict[str, str]:
    """reST text of every API page: the page's module with the names of its ``__all__``
    documented in full (or linked, where another page holds them), then its public submodules
    with their docstrings and the exported names that no page documents."""
    modules, pages = _modules(), _pages()
    homes = _homes(pages)
    texts: dict[str, str] = {}
    for name in pages:
        module, exports = importlib.import_module(name), _exports(name)
        here = [n for n, obj in exports.items() if homes[id(obj)] == name]
        parts = [_title(f"``{name}``", "="), f".. automodule:: {name}\n", _entries(name, here)]
        elsewhere = [f":py:obj:`{n} <{homes[id(obj)]}.{n}>`" for n, obj in exports.items()
                     if homes[id(obj)] != name]
        if elsewhere:
            parts.append("Also exported here, documented where they are defined: "
                         + ", ".join(elsewhere) + ".\n")
        # submodules (not subpackages, which have pages); one shadowed by a package attribute
        # of its name (``dpbandits.harness.simulate`` is the function) is left out
        children = [m for m in modules if m.rsplit(".", 1)[0] == name and not _is_package(m)
                    and getattr(module, m.rsplit(".", 1)[1]) is importlib.import_module(m)]
        if children:
            parts.append(_title("Submodules", "-"))
        for child in children:
            extra = [n for n, obj in _exports(child).items() if id(obj) not in homes]
            parts.append(_title(f"``{child}``", "~"))
            parts += [f".. automodule:: {child}\n", _entries(child, extra)]
        texts[name] = "\n".join(parts)
    return texts


def _write_api() -> None:
    out = DOCS / "api"
    out.mkdir(exist_ok=True)
    pages = _api_pages()
    index = [_title("API reference", "="),
             "Every public name of the package: what each package (or top-level module) lists "
             "in ``__all__``, then its submodules. Import from the package named in the page "
             "title.\n",
             ".. toctree::\n   :maxdepth: 1\n"]
    index += [f"   {name}" for name in pages]
    index.append("\n.. automodule:: dpbandits\n")
    want = {f"{name}.rst": text for name, text in pages.items()}
    want["index.rst"] = "\n".join(index) + "\n"
    for stale in set(p.name for p in out.glob("*.rst")) - set(want):
        (out / stale).unlink()
    for file, text in want.items():  # rewrite only what changed: Sphinx then re-reads less
        path = out / file
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


_write_api()


def _write_cli() -> None:
    """``cli.md``, the command-line reference, from the CLI's parser (``docs/_cliref.py``)."""
    sys.path.insert(0, str(DOCS))
    from _cliref import cli_reference

    path, text = DOCS / "cli.md", cli_reference()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


_write_cli()


# --- Markdown written for the repository, read as site pages ----------------------------

ANCHOR = re.compile(r'^<a id="([^"]+)"></a>$', re.M)
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def _site_markdown(text: str, source: Path, page: Path) -> str:
    """Markdown written for the repository (read from ``source``, shown on ``page``) as a
    site page: raw-HTML anchors (``<a id="x"></a>``, which a repository viewer understands)
    become MyST targets, so ``file.md#x`` links resolve; a relative link is re-rooted at the
    page (the README is shown as ``docs/index``); a link to a repository file that is not a
    page becomes a download of that file, but a Markdown file that is not a page (a study's
    README) is named as text with its path in the repository: the site offers no raw
    ``.md``. A link to nothing stays, and fails the build."""
    def relink(match: re.Match) -> str:
        label, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        file = (source.parent / target).resolve()
        if re.match(r"[a-z]+:", target) or not file.exists():
            return match.group(0)
        rel = os.path.relpath(file, page.parent)
        if file.suffix == ".md" and file.parent == DOCS:
            return f"[{label}]({rel}{anchor})"
        if file.suffix == ".md":
            return f"{label} (`{file.relative_to(ROOT)}` in the repository)"
        return f"{{download}}`{label} <{rel}>`"

    return LINK.sub(relink, ANCHOR.sub(r"(\1)=", text))


def _on_source_read(app, docname, source):
    path = Path(app.env.doc2path(docname))
    if path.suffix == ".md":
        source[0] = _site_markdown(source[0], path, path)


def _on_include_read(app, relative_path, parent_docname, content):
    page = Path(app.env.doc2path(parent_docname))
    content[0] = _site_markdown(content[0], (DOCS / relative_path).resolve(), page)


class _NoOutsideLinks:
    """Docstrings may hold a link to an outside site; the site shows its text only."""

    @staticmethod
    def apply(app, doctree, docname):
        for ref in list(doctree.findall(nodes.reference)):
            if re.match(r"[a-z]+://", ref.get("refuri", "")):
                ref.replace_self(nodes.inline(ref.astext(), ref.astext()))


def _lookup(target: str):
    """The object a dotted ``dpbandits...`` name denotes (``_MISSING`` if none), and the
    longest leading part of the name that can be imported or reached by attributes."""
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part, _MISSING)
        return obj
    return _MISSING


_MISSING = object()


def _on_missing_reference(app, env, node, contnode):
    """A Python reference Sphinx could not resolve. When it names, by another path, an
    object that has a page (``dpbandits.privacy.accounting.events.svrg_event`` is documented
    as ``dpbandits.privacy.accounting.svrg_event``) it links there; when it names an object
    that exists but is not public (a private helper, a base class outside every ``__all__``)
    it shows the name as code; a name of nothing is left unresolved, which fails the build."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    if not target.startswith("dpbandits"):
        target = f"{node.get('py:module') or 'dpbandits'}.{target}"
    obj = _lookup(target)
    if obj is _MISSING:
        return None
    py = env.get_domain("py")
    documented = {id(o): n for n, (_, _, _, o) in _documented(env).items()}
    parts = target.split(".")
    for i in range(len(parts), 0, -1):  # the longest leading part that has a page
        head = _lookup(".".join(parts[:i]))
        if id(head) in documented:
            name = ".".join([documented[id(head)], *parts[i:]])
            if name in py.objects:
                ref = py.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name,
                                      node, contnode)
                if ref is not None:
                    return ref
            break
    return contnode


def _documented(env) -> dict:
    """Every documented Python object: name -> (docname, node id, type, the object)."""
    cache = env.temp_data.setdefault("dpbandits_documented", {})
    py = env.get_domain("py")
    if len(cache) != len(py.objects):
        cache.clear()
        for name, entry in py.objects.items():
            if not entry.aliased:
                obj = _lookup(name)
                if obj is not _MISSING:
                    cache[name] = (entry.docname, entry.node_id, entry.objtype, obj)
    return cache


def _on_docstring(app, what, name, obj, options, lines):
    """Show only what dpbandits wrote: a constant without a doc comment would show the
    docstring of its type (``dict``, ``tuple``), and a method that overrides one of another
    library (Gymnasium's ``step``) without a docstring would show that library's."""
    if what == "method":
        owner = _lookup(name.rsplit(".", 1)[0])
        attr = name.rsplit(".", 1)[1]
        for cls in getattr(owner, "__mro__", ()):
            if attr in vars(cls) and getattr(vars(cls)[attr], "__doc__", None):
                if not cls.__module__.startswith("dpbandits"):
                    lines.clear()
                break
    if what in ("data", "attribute") and lines and type(obj).__doc__ and (
            "\n".join(lines).strip() == " ".join(type(obj).__doc__.split()) or
            [ln.strip() for ln in lines if ln.strip()] ==
            [ln.strip() for ln in type(obj).__doc__.splitlines() if ln.strip()]):
        lines.clear()


def _inherited_parameters(app, what, name, obj, options, lines):
    """A class's ``Parameters`` section lists every constructor parameter: those its own
    docstring leaves to a base class (``n_arms``, ``epsilon``, ...) are added from the
    nearest base that describes them (:func:`dpbandits._docparams.inherited_entries`), and
    a class without a ``Raises`` section shows its nearest base's. Runs before napoleon
    turns the numpydoc sections into fields."""
    if what not in ("class", "exception") or not isinstance(obj, type):
        return
    from dpbandits._docparams import inherited_entries, inherited_section

    raises = inherited_section(obj, "Raises")
    if raises is not None and not any(ln.strip() == "Raises" for ln in lines):
        lines += ["", "Raises", "------", *raises, ""]
    extra = inherited_entries(obj)
    if not extra:
        return
    try:
        start = next(i for i in range(len(lines) - 1) if lines[i].strip() == "Parameters"
                     and set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        lines += ["", "Parameters", "----------", *extra, ""]
        return
    lines[start + 2:start + 2] = extra  # the base's parameters (sizes, budget) come first


def setup(app):
    app.connect("autodoc-process-docstring", _inherited_parameters, priority=400)
    app.connect("source-read", _on_source_read)
    app.connect("include-read", _on_include_read)
    app.connect("doctree-resolved", _NoOutsideLinks.apply)
    app.connect("missing-reference", _on_missing_reference)
    app.connect("autodoc-process-docstring", _on_docstring)
    return {"parallel_read_safe": True}
