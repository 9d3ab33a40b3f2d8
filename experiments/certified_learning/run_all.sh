#!/usr/bin/env bash
# The whole study, in the order used for the committed outputs (resumable: finished cells
# are skipped). Run from the repository root:  bash experiments/certified_learning/run_all.sh
set -euo pipefail
PY=${PY:-.venv/bin/python}
S="-m experiments.certified_learning.study"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
$PY $S target --reps 4
$PY $S setting1 --reps 4
# panel C extended, T = 1e4: every agent over the full epsilon grid (DP-HDB variants on
# a sub-grid: each costs ~1.5 min per replication)
$PY $S grid --horizon 10000 --reps 4 --agents random linucb fliphat-thm fliphat-acc \
    fliphat-tight dp-ucb-acc dp-hdb-thm dp-hdb-acc
$PY $S grid --horizon 10000 --reps 4 --eps 1 10 100 --agents dp-hdb-gumbel dp-hdb-tofw \
    dp-hdb-gumbel-r05
# T = 1e5: FLIPHAT over the full grid, DP-UCB and the best DP-HDB variant on a sub-grid
$PY $S grid --horizon 100000 --reps 4 --agents random linucb fliphat-thm fliphat-acc \
    fliphat-tight
# (2 replications each: ~4 min per replication for DP-UCB, ~6 min for DP-HDB on a quiet
# machine)
$PY $S grid --horizon 100000 --reps 2 --eps 10 100 --agents random dp-ucb-acc dp-hdb-gumbel
$PY $S report
$PY $S grid --horizon 100000 --reps 2 --eps 1 10 100 --agents dp-hdb-thm dp-hdb-acc \
    dp-hdb-tofw fliphat-tight
$PY $S report
