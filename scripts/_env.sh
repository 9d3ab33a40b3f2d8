# Sourced by the scripts in this folder: create .venv on first use and (re)install the
# package whenever pyproject.toml changes. Idempotent: a second run reuses the environment.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
STAMP=.venv/.dpbandits-installed
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)-$1"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[$1]"
  echo "$WANT" > "$STAMP"
fi
