#!/usr/bin/env bash
# Install what the tests need (once) and run the default test suite (slow tests excluded).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh" test
.venv/bin/python -m ruff check dpbandits tests benchmarks experiments
exec .venv/bin/python -m pytest "$@"
