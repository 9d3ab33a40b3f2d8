#!/usr/bin/env bash
# Mutation testing of the privacy-critical code (issue 34 item 5; report: docs/mutation-report.md).
# Needs mutmut (pip install -e '.[mutation]'). The files mutated and the fast test selection
# each mutant runs against are [tool.mutmut] in pyproject.toml (source_paths,
# pytest_add_cli_args_test_selection); -x stops a mutant's run at its first failing test.
# Two children: the machine's two cores. Prints the counts and lists every survivor's diff.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
PY=${PYTHON:-python}
rm -rf mutants
"$PY" -m mutmut run --max-children "${MUTMUT_CHILDREN:-2}" || true
"$PY" -m mutmut results --all true > mutants/results.txt 2>/dev/null || "$PY" -m mutmut results > mutants/results.txt
for status in killed survived "no tests" timeout suspicious; do
    printf '%s: %s\n' "$status" "$(grep -c ": $status\$" mutants/results.txt || true)"
done
grep ': survived$' mutants/results.txt | sed 's/: survived$//; s/^ *//' | while read -r m; do
    echo "### $m"; "$PY" -m mutmut show "$m" | grep '^[-+] ' || true
done
