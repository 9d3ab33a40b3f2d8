"""Targeted mutation testing of the components' noise, clip and sensitivity lines (issue 34).

Whole-file mutmut over every component is too slow on a small machine. This runner mutates
only the lines that set a noise scale, a clip bound or a sensitivity (found with ``ast``: an
assignment, return or keyword argument whose name says so, a call of a noise or clip
primitive), each mutation in the direction that weakens privacy:

- ``scale``: the expression times 0.8 (noise scales, multipliers, sensitivities, lambdas);
- ``clip``: the expression times 1.25 (a clip or data bound loosened) and times 0.8 (a bound
  that enters a sensitivity lowered; one of the two weakens privacy);
- ``const``: a numeric constant ``c`` of the expression replaced by ``c*0.8`` and by ``c+1``;
- ``drop``: one term of a sum, or one argument of a ``max``, dropped;
- ``sqrt``: ``sqrt(x)`` replaced by ``x``.

Each mutant is written into a temporary copy of the repository (``dpbandits/``, ``tests/``,
``conftest.py``, ``pyproject.toml``, copied once per worker; the file is restored after each
mutant) and runs the component's fast test selection (``TARGETS``) with ``pytest -x``; a
non-zero exit (or the timeout) kills it. The selections leave out the golden digest and
fingerprint tests (``EXCLUDE``): a digest changes with any intended change, so a mutant only a
digest catches counts as survived. ``--recheck`` runs the survivors again against the spread
and kill tests of their component (``-k`` words), the heavy ones included: the first pass
leaves those out, since they take seconds each. Results go to a JSON-lines file, one line per
mutant, read back on a re-run (resumable); the order of mutants is deterministic.

    python scripts/mutate_noise_lines.py --out mutants_components.jsonl [FILE ...]
    python scripts/mutate_noise_lines.py --list dpbandits/agents/dp_ucb.py   # mutants only
    python scripts/mutate_noise_lines.py --recheck --out mutants_components.jsonl [FILE ...]
    python scripts/mutate_noise_lines.py --report --out mutants_components.jsonl   # tables
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the noise primitives of dpbandits/privacy/mechanisms.py (the scale is their second
#: positional argument, after the generator) and the clip primitives of dpbandits/geometry.py
NOISE_CALLS = {"gaussian_noise", "laplace_noise", "generalized_gaussian_noise",
               "symmetric_gaussian", "symmetric_from_normals", "wishart_matrix",
               "report_noisy_argmax", "report_noisy_argmin", "gaussian_report_noisy_argmax",
               "gaussian_report_noisy_argmin", "exponential_mechanism",
               "exponential_mechanism_from_uniforms", "laplace_scale",
               "gaussian_sigma_classical", "gaussian_sigma_analytic", "normal", "laplace"}
CLIP_CALLS = {"clip_rows", "clip_row_l2_into", "clip_row_lq_into", "normalize_rows",
              "normalize_to_norm", "clip_to_norm", "clipped_coefficients", "clip_factors",
              "gradient_rows", "clip_limits", "project_l2_ball", "project_lp_ball",
              "project_l1_ball", "project_linf_ball"}
#: names of noise scales and sensitivities (weakened downwards)
SCALE_RE = re.compile(r"sigma|scale|noise|multiplier|sensitiv|l_tilde|ltilde|lam\b|lambda|"
                      r"^lam_|_lam$|std|delta_f|^mu$|^rho$|^rho1|kappa|temperature|^_?[cksb]$|"
                      r"^_?[cksb]_|^_?s_|constant|smooth", re.I)
#: names of clip and data bounds (weakened upwards when they clip, downwards when they enter
#: a sensitivity: both directions are tried)
CLIP_RE = re.compile(r"(?<!n_)clip(?!ped)|bound(?!s)|limit|radius|lipschitz|^_?g$|^gmax|"
                     r"target|^_?[LDGBS]$|^_?beta$", re.I)

#: a component's fast test selection; ``-k``/``--deselect`` leave out the digest tests
EXCLUDE = "not digest and not fingerprint and not bit_identical and not those_of_main"
#: the spread tests (layer 1 of docs/mutation-report.md) run first in every selection: they
#: kill a cut in the drawn noise in seconds, and ``-x`` stops a killed mutant there
SPREAD = ["tests/test_noise_spread.py", "tests/test_noise_spread_more.py",
          "tests/test_noise_spread_components.py", "tests/test_mutation_kills_components.py"]
COMMON = ["tests/test_plan.py"]
#: the contract tests (stored parameters, ``get_params``), run by the re-check with the spread
#: and kill tests
CONTRACT = ["tests/test_agent_contract.py", "tests/test_user_conventions.py"]
_T = {
    "dpbandits/agents/dp_ucb.py": ["tests/test_dp_ucb.py", "tests/test_dp_ucb_block.py",
                                   "tests/test_wishart_ledger.py",
                                   "tests/test_wishart_row_bound.py"],
    "dpbandits/agents/_ucb_kernels.py": ["tests/test_ucb_kernels.py", "tests/test_dp_ucb.py",
                                         "tests/test_wishart_row_bound.py"],
    "dpbandits/agents/_ucb_ops.py": ["tests/test_ucb_kernels.py", "tests/test_dp_ucb.py",
                                     "tests/test_noise_laws.py",
                                     "tests/test_wishart_row_bound.py"],
    "dpbandits/agents/authors_code.py": ["tests/test_ucb_kernels.py",
                                         "tests/test_agent_contract.py"],
    "dpbandits/optim/streaming/dp_pofw.py": ["tests/test_dp_pofw.py", "tests/test_vertex_rnm.py"],
    "dpbandits/optim/streaming/_pofw_kernels.py": ["tests/test_dp_pofw.py",
                                                   "tests/test_vertex_rnm.py"],
    "dpbandits/optim/streaming/_clip_kernels.py": ["tests/test_row_norms.py",
                                                   "tests/test_dp_tofw.py"],
    "dpbandits/agents/dp_hdb.py": ["tests/test_dp_hdb.py", "tests/test_vertex_rnm.py"],
    "dpbandits/agents/_hdb_kernels.py": ["tests/test_dp_hdb.py", "tests/test_backends.py",
                                         "tests/test_vertex_rnm.py"],
    "dpbandits/optim/streaming/dp_tofw.py": ["tests/test_dp_tofw.py"],
    "dpbandits/optim/batch/oracle.py": ["tests/test_dp_erm.py", "tests/test_private_sgd.py",
                                        "tests/test_gradient_clip_extremes.py"],
    "dpbandits/optim/batch/dp_gd.py": ["tests/test_dp_erm.py",
                                       "tests/test_gradient_clip_extremes.py"],
    "dpbandits/optim/batch/dp_accmd.py": ["tests/test_dp_erm.py",
                                          "tests/test_gradient_clip_extremes.py",
                                          "tests/test_optim_plan.py"],
    "dpbandits/optim/batch/dp_svrg.py": ["tests/test_dp_erm.py",
                                         "tests/test_gradient_clip_extremes.py",
                                         "tests/test_optim_plan.py"],
    "dpbandits/optim/batch/noisy_sgd.py": ["tests/test_sco_baselines.py",
                                           "tests/test_gradient_clip_extremes.py",
                                           "tests/test_noise_laws.py",
                                           "tests/test_optim_plan.py"],
    "dpbandits/optim/batch/_noisy_sgd_kernel.py": ["tests/test_sco_baselines.py",
                                                   "tests/test_gradient_clip_extremes.py"],
    "dpbandits/optim/batch/local_md.py": ["tests/test_sco_baselines.py",
                                          "tests/test_optim_plan.py"],
    "dpbandits/optim/batch/noisy_sfw.py": ["tests/test_sco_baselines.py",
                                           "tests/test_closed_form.py",
                                           "tests/test_extreme_parameters.py",
                                           "tests/test_optim_plan.py"],
    "dpbandits/optim/batch/private_ftrl.py": ["tests/test_private_ftrl.py",
                                              "tests/test_gradient_clip_extremes.py",
                                              "tests/test_optim_plan.py"],
    "dpbandits/optim/batch/private_sgd.py": ["tests/test_private_sgd.py",
                                             "tests/test_gradient_clip_extremes.py",
                                             "tests/test_optim_plan.py"],
    "dpbandits/agents/moment_ls.py": ["tests/test_moment_ls.py"],
    "dpbandits/agents/screened_ls.py": ["tests/test_screened_ls.py"],
    "dpbandits/agents/budget_ls.py": ["tests/test_budget_ls.py"],
    "dpbandits/agents/fliphat.py": ["tests/test_fliphat.py", "tests/test_peeling.py"],
    "dpbandits/agents/_niht.py": ["tests/test_fliphat.py", "tests/test_peeling.py"],
    "dpbandits/agents/adac_oful.py": ["tests/test_adac_oful.py"],
    "dpbandits/agents/ldp_linucb.py": ["tests/test_ldp_linucb.py"],
    "dpbandits/agents/_private_ridge.py": ["tests/test_adac_oful.py",
                                           "tests/test_ldp_linucb.py",
                                           "tests/test_extreme_parameters.py"],
    "dpbandits/bo/dp_gibo.py": ["tests/test_bo_dp_gibo.py"],
    "dpbandits/bo/_common.py": ["tests/test_bo_dp_gibo.py"],
}
#: a component's fast test selection: spread tests, its own tests, the plan's
TARGETS: dict[str, list[str]] = {p: [*SPREAD, *ts, *COMMON] for p, ts in _T.items()}
PYTEST_ARGS = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
               "-m", "not slow and not integration and not heavy", "-k", EXCLUDE]


@dataclass(frozen=True)
class Mutant:
    path: str      # repository-relative
    line: int
    col: int
    kind: str      # scale, clip, const, drop, sqrt
    what: str      # human-readable: "sigma = ... -> (...) * 0.8"
    source: str    # the whole mutated file

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.col}:{self.kind}:{self.what}"


def _name(node: ast.AST) -> str:
    """The last identifier of a target or callee (``self.sigma`` -> ``sigma``)."""
    while isinstance(node, ast.Subscript | ast.Starred):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            return node.slice.value  # st["noise"] -> noise
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


_SKIP_VALUES = (ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Compare, ast.BoolOp, ast.JoinedStr,
                ast.Lambda, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp,
                ast.IfExp, ast.Await, ast.Yield, ast.NamedExpr)


def _numeric_like(node: ast.expr) -> bool:
    """Whether multiplying ``node`` by a float is a plausible (type-preserving) mutation."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool) \
            and node.value != 0
    if isinstance(node, _SKIP_VALUES):
        return False
    return not (isinstance(node, ast.Call) and _name(node.func) in
                {"dict", "tuple", "list", "MappingProxyType", "frozenset", "set", "str",
                 "NoisePlan", "replace", "int", "range", "len", "check_int"})


class _Finder(ast.NodeVisitor):
    """Collects (expression, kind) pairs on the noise, clip and sensitivity lines."""

    def __init__(self) -> None:
        self.sites: list[tuple[ast.expr, str]] = []
        self._func: list[str] = []

    def _add(self, expr: ast.expr | None, name: str) -> None:
        if expr is None:
            return
        if SCALE_RE.search(name):
            self.sites.append((expr, "scale"))
        elif CLIP_RE.search(name):
            self.sites.append((expr, "clip"))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name == "_main":  # a module's script entry (prints its docstring's numbers)
            return
        self._func.append(node.name)
        for stmt in node.body:  # skip the docstring
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                self.visit(stmt)
        self._func.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            if isinstance(t, ast.Tuple):
                continue
            self._add(node.value, _name(t))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._add(node.value, _name(node.target))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._add(node.value, _name(node.target))
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if self._func:
            self._add(node.value, self._func[-1])
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                self._add(v, k.value)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = _name(node.func)
        if callee in NOISE_CALLS and len(node.args) >= 2:
            self.sites.append((node.args[1], "scale"))
        elif callee in NOISE_CALLS and len(node.args) == 1:
            self.sites.append((node.args[0], "scale"))
        if callee in CLIP_CALLS:
            for a in node.args[1:]:
                self.sites.append((a, "clip"))
        for kw in node.keywords:
            if kw.arg:
                self._add(kw.value, kw.arg)
        self.generic_visit(node)


class _Source:
    """A file's text with (line, column) -> byte offset (ast's columns are UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode()
        self.starts = [0]
        for i, b in enumerate(self.data):
            if b == 0x0A:
                self.starts.append(i + 1)

    def span(self, node: ast.AST) -> tuple[int, int]:
        a = self.starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        b = self.starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return a, b

    def seg(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.data[a:b].decode()

    def replace(self, node: ast.AST, new: str) -> str:
        a, b = self.span(node)
        return (self.data[:a] + new.encode() + self.data[b:]).decode()


def _short(s: str, n: int = 70) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."


def _dropped(src: _Source, node: ast.AST, drop: ast.AST) -> str:
    return f"{_short(src.seg(node), 50)}: drop {_short(src.seg(drop), 30)}"


def _variants(src: _Source, expr: ast.expr, kind: str) -> list[tuple[ast.AST, str, str, str]]:
    """(mutated node, kind, description, mutated file) for one site."""
    out: list[tuple[ast.AST, str, str, str]] = []
    seg = src.seg(expr)
    if _numeric_like(expr) and not isinstance(expr, ast.Constant):
        factors = ["0.8"] if kind == "scale" else ["1.25", "0.8"]
        for f in factors:
            out.append((expr, kind, f"{_short(seg)} -> (...) * {f}",
                        src.replace(expr, f"({seg}) * {f}")))
    for node in ast.walk(expr):
        if isinstance(node, ast.Constant) and _numeric_like(node):
            c = node.value
            assert isinstance(c, int | float)
            for new in (repr(c * 0.8), repr(c + 1)):
                out.append((node, "const", f"{_short(seg, 40)}: {c!r} -> {new}",
                            src.replace(node, new)))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for keep, drop in ((node.left, node.right), (node.right, node.left)):
                out.append((node, "drop", _dropped(src, node, drop),
                            src.replace(node, f"({src.seg(keep)})")))
        elif isinstance(node, ast.Call) and _name(node.func) in {"max", "maximum", "fmax"} \
                and len(node.args) >= 2:
            for i, drop in enumerate(node.args):
                rest = [src.seg(a) for j, a in enumerate(node.args) if j != i]
                new = rest[0] if len(rest) == 1 else \
                    f"{src.seg(node.func)}({', '.join(rest)})"
                out.append((node, "drop", _dropped(src, node, drop),
                            src.replace(node, f"({new})")))
        elif isinstance(node, ast.Call) and _name(node.func) == "sqrt" and len(node.args) == 1:
            out.append((node, "sqrt",
                        f"{_short(src.seg(node), 50)} -> {_short(src.seg(node.args[0]), 30)}",
                        src.replace(node, f"({src.seg(node.args[0])})")))
    return out


def mutants(path: str) -> list[Mutant]:
    """Every mutant of one file, in a deterministic order, deduplicated by mutated text."""
    text = (ROOT / path).read_text()
    tree = ast.parse(text)
    finder = _Finder()
    finder.visit(tree)
    src = _Source(text)
    seen: set[str] = {text}
    out: list[Mutant] = []
    sites = sorted({(e.lineno, e.col_offset, id(e)): (e, k) for e, k in finder.sites}.items())
    for _, (expr, kind) in sites:
        for node, k, what, new in _variants(src, expr, kind):
            if new in seen:
                continue
            try:
                ast.parse(new)
            except SyntaxError:
                continue
            seen.add(new)
            out.append(Mutant(path, node.lineno, node.col_offset, k, what, new))  # type: ignore[attr-defined]
    return out


def _copy_repo(dest: Path) -> None:
    for name in ("dpbandits", "tests"):
        shutil.copytree(ROOT / name, dest / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis"))
    for name in ("conftest.py", "pyproject.toml"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)


#: the -k words of a file's tests in the spread and kill files, where the file's stem is not
#: (pytest matches -k words case-insensitively)
_K_WORDS = {"pofw_kernels": "pofw", "dp_pofw": "pofw", "noisy_sgd_kernel": "noisy_sgd",
            "ucb_kernels": "dp_ucb", "ucb_ops": "dp_ucb", "hdb_kernels": "dp_hdb",
            "clip_kernels": "tofw or pofw", "dp_tofw": "tofw",
            "oracle": "dp_gd or accmd or svrg or private_sgd or full_gradient",
            "dp_gd": "dp_gd or full_gradient", "dp_accmd": "accmd or full_gradient",
            "dp_svrg": "svrg", "private_ftrl": "ftrl", "niht": "fliphat",
            "adac_oful": "adac", "private_ridge": "adac or ldp_linucb",
            "dp_gibo": "gibo", "common": "gibo", "noisy_sfw": "sfw"}


def _component(path: str) -> str:
    """The -k words of a file's tests in the spread and kill files (``pofw`` for
    ``dp_pofw.py`` and ``_pofw_kernels.py``)."""
    stem = Path(path).stem.lstrip("_")
    return _K_WORDS.get(stem, stem)


def _pytest(cwd: Path, tests: list[str], timeout: float, k: str | None = None,
            heavy: bool = False) -> tuple[str, float, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1", NUMBA_CACHE_DIR=str(cwd / ".numba"),
               PYTHONPATH=str(cwd), HYPOTHESIS_STORAGE_DIRECTORY=str(cwd / ".hypothesis"))
    tests = [t for t in tests if (cwd / t.split("::")[0]).exists()]
    args = PYTEST_ARGS if k is None else [*PYTEST_ARGS[:-1], f"({EXCLUDE}) and ({k})"]
    if heavy:  # the heavy spread and kill tests too
        args = [a.replace(" and not heavy", "") for a in args]
    cmd = [sys.executable, "-m", "pytest", *args, *tests]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, ""
    tail = (p.stdout.strip().splitlines() or [""])[-1]
    first = next((ln for ln in p.stdout.splitlines() if ln.startswith("FAILED")), tail)
    # 5: no test of the selection matches the component's -k words
    verdict = {0: "survived", 1: "killed", 2: "killed", 5: "survived"}.get(
        p.returncode, f"error{p.returncode}")
    return verdict, time.monotonic() - t0, first[:200]


def _records(out: Path) -> dict[str, list[dict]]:
    """Every record of ``out`` by mutant key, in the order written (a re-check appends)."""
    recs: dict[str, list[dict]] = {}
    if out.exists():
        for ln in out.read_text().splitlines():
            r = json.loads(ln)
            recs.setdefault(r["key"], []).append(r)
    return recs


def run(paths: list[str], out: Path, jobs: int, timeout: float | None,
        recheck: bool = False, kinds: frozenset[str] | None = None) -> None:
    """Run the mutants of ``paths`` (of ``kinds``, default all) not yet in ``out``; with
    ``recheck``, run again those whose last verdict is "survived" (after new tests),
    appending ``phase: after``."""
    recs = _records(out)
    todo: list[Mutant] = []
    for p in paths:
        if recheck:
            todo += [m for m in mutants(p)
                     if m.key in recs and recs[m.key][-1]["verdict"] == "survived"]
        else:
            todo += [m for m in mutants(p) if m.key not in recs]
    todo = [m for m in todo if kinds is None or m.kind in kinds]
    if not todo:
        return
    with tempfile.TemporaryDirectory(prefix="mutnoise-") as tmp:
        copies = [Path(tmp) / f"w{i}" for i in range(jobs)]
        for c in copies:
            _copy_repo(c)
        # baseline: the unmutated selection must pass (and gives the timeout); with a given
        # timeout it is skipped (a re-run, where it passed before)
        limits: dict[str, float] = {}
        for p in dict.fromkeys(m.path for m in todo):
            if timeout or recheck:
                limits[p] = timeout or 600.0
                continue
            verdict, secs, tail = _pytest(copies[0], TARGETS.get(p, COMMON), 3600)
            if verdict != "survived":
                sys.exit(f"baseline of {p} does not pass: {verdict} {tail}")
            limits[p] = max(60.0, 3 * secs)
            print(f"baseline {p}: {secs:.1f} s", flush=True)
        # the mutations that cut a noise scale or move a clip first, then the others: a run
        # stopped early has covered the most direct ones of every file
        rank = {"scale": 0, "clip": 1, "drop": 2, "sqrt": 3, "const": 4}
        todo.sort(key=lambda m: rank[m.kind])
        free = list(copies)
        lock = __import__("threading").Lock()

        def one(m: Mutant) -> dict:
            with lock:
                c = free.pop()
            target = c / m.path
            original = target.read_text()
            try:
                target.write_text(m.source)
                if recheck:  # the spread and kill tests of this component, heavy ones too
                    verdict, secs, tail = _pytest(c, [*SPREAD, *CONTRACT], limits[m.path],
                                                  _component(m.path), heavy=True)
                else:  # the component's spread and kill tests, then its own tests
                    verdict, secs, tail = _pytest(c, SPREAD, limits[m.path],
                                                  _component(m.path))
                    if verdict == "survived":
                        verdict, more, tail = _pytest(c, [*_T.get(m.path, []), *COMMON],
                                                      limits[m.path])
                        secs += more
            finally:
                target.write_text(original)
                with lock:
                    free.append(c)
            r = {"key": m.key, "path": m.path, "line": m.line, "kind": m.kind, "what": m.what,
                 "verdict": verdict, "seconds": round(secs, 1), "by": tail,
                 "phase": "after" if recheck else "before"}
            with lock, out.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"{verdict:9s} {m.path}:{m.line} {m.what}", flush=True)
            return r

        with ThreadPoolExecutor(jobs) as ex:
            list(ex.map(one, todo))


def report(out: Path) -> str:
    """Markdown tables per file: line, source, mutation, verdict before and after the
    re-check (a timeout counts as killed), then the counts."""
    recs = _records(out)
    lines: list[str] = []
    counts = ["| file | mutants | killed | survived (first run) | survived (after) |",
              "|---|---|---|---|---|"]
    for p in dict.fromkeys(r[0]["path"] for r in recs.values()):
        rs = sorted((r for r in recs.values() if r[0]["path"] == p),
                    key=lambda r: (r[0]["line"], r[0]["key"]))
        src = (ROOT / p).read_text().splitlines()
        before = sum(r[0]["verdict"] == "survived" for r in rs)
        after = sum(r[-1]["verdict"] == "survived" for r in rs)
        counts.append(f"| `{p}` | {len(rs)} | {len(rs) - after} | {before} | {after} |")
        lines += [f"#### `{p}`", "", "| line | source | mutation | first run | after |",
                  "|---|---|---|---|---|"]
        for r in rs:
            code = _short(src[r[0]["line"] - 1], 60).replace("|", "/")
            lines.append(f"| {r[0]['line']} | `{code}` | `{r[0]['what'].replace('|', '/')}` "
                         f"| {r[0]['verdict']} | {r[-1]['verdict']} |")
        lines.append("")
    return "\n".join(counts + [""] + lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=list(TARGETS))
    ap.add_argument("--out", type=Path, default=ROOT / "mutants_components.jsonl")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    ap.add_argument("--report", action="store_true", help="print the tables of --out")
    ap.add_argument("--recheck", action="store_true",
                    help="run again the mutants whose last verdict is survived")
    ap.add_argument("--kinds", default=None,
                    help="comma-separated kinds to run (scale, clip, drop, sqrt, const)")
    a = ap.parse_args()
    if a.report:
        print(report(a.out))
        return
    if a.list:
        for p in a.files:
            for m in mutants(p):
                print(f"{m.path}:{m.line} [{m.kind}] {m.what}")
        return
    run(a.files, a.out, a.jobs, a.timeout, a.recheck,
        None if a.kinds is None else frozenset(a.kinds.split(",")))
    print(report(a.out))


if __name__ == "__main__":
    main()
