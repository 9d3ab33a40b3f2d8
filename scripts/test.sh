#!/usr/bin/env bash
# Install what the tests need (once) and run the default test suite (slow tests excluded).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test
# Single-threaded BLAS: the tests use small matrices, where threaded OpenBLAS on a shared
# 2-core machine is 10-100x slower; it also makes float results independent of thread count.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
.venv/bin/python -m ruff check dpbandits tests benchmarks experiments docs
.venv/bin/python -m mypy  # the files listed under [tool.mypy] in pyproject.toml
# Two test processes (pytest-xdist): the suite is CPU-bound and numba compiles each kernel once
# per fresh clone, so one process per core halves the wall time; -n 0 runs in one process.
exec .venv/bin/python -m pytest -n "${DPBANDITS_TEST_WORKERS:-2}" "$@"
