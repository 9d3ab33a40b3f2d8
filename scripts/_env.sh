# Sourced by the scripts in this folder: create .venv on first use and (re)install the
# package whenever pyproject.toml changes. Idempotent: a second run reuses the environment.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "dpbandits: creating the virtual environment .venv ..." >&2
  "$PY" -m venv .venv
fi
# One floating-point dispatch for the tests: numpy's AVX-512 loops and OpenBLAS's AVX-512
# kernels round differently in the last bits from their AVX2 forms, and the committed golden
# digests (streams bit-identical to earlier releases) were recorded with AVX2. On x86-64
# machines with AVX2, pin numpy to its AVX2 loops and OpenBLAS to its Haswell kernels.
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  export NPY_DISABLE_CPU_FEATURES="${NPY_DISABLE_CPU_FEATURES-X86_V4 AVX512_ICL AVX512_SPR}"
  export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE-Haswell}"
fi
# The install marker: the hash of pyproject.toml and the extras installed with it, one line
# "HASH EXTRA1,EXTRA2". A script reinstalls only when pyproject.toml changed or its extra is
# not among them, and then installs the union, so docs.sh then test.sh install once each and
# later runs of either reuse the environment.
STAMP=.venv/.dpbandits-installed
HASH="$(sha256sum pyproject.toml | cut -d' ' -f1)"
HAVE=""
if [ -f "$STAMP" ]; then
  read -r OLD_HASH OLD_EXTRAS < "$STAMP" || true
  if [ "${OLD_HASH:-}" = "$HASH" ]; then HAVE="${OLD_EXTRAS:-}"; fi
fi
case ",$HAVE," in
  *",$1,"*) ;;
  *)
    EXTRAS="${HAVE:+$HAVE,}$1"
    # pip is quiet (-q): say what the next minutes are spent on
    echo "dpbandits: installing dpbandits[$EXTRAS] and its dependencies into .venv" \
         "(numpy, scipy, numba, pandas, matplotlib, ...; the first time takes about 2" \
         "minutes, later runs reuse it) ..." >&2
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
    echo "$HASH $EXTRAS" > "$STAMP"
    echo "dpbandits: .venv is ready" >&2
    ;;
esac
