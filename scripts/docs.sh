#!/usr/bin/env bash
# Build the documentation site into site/ (open site/index.html from disk; no server needed).
# Installs the package with the docs tools (once), then runs a strict Sphinx build from
# scratch: any warning -- a broken link, an unresolved reference, a docstring that does not
# parse -- and any failing gallery example fails it. Extra arguments go to sphinx-build.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" docs
# Single-threaded BLAS: the examples use small matrices (see scripts/test.sh).
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export MPLBACKEND=Agg
# From scratch every time: the gallery re-runs its examples against the current code.
rm -rf site build/doctrees docs/api docs/gallery docs/cli.md
exec .venv/bin/python -m sphinx -b html -W --keep-going -n -q -d build/doctrees docs site "$@"
