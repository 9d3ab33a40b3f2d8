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

# issue 18: dp-screened-ls's defaults (tuning instances only), the target and its instances,
# the per-segment diagnosis
$PY -m experiments.certified_learning.tune
$PY -m experiments.certified_learning.target
$PY -m experiments.certified_learning.diagnose

# issue 18, the study: every certified agent, LinUCB and random on three instances,
# epsilon in {0.3, 1, 3, 10}, T in {1e4, 1e5}, 20 replications (compare.py), then the noise
# against signal (noise.py). Faithful DP-UCB and the Wishart tree only on Figure 5.1 (the
# block-diagonal DP-UCB reads the same release); T = 1e5 on a budget (README).
C="-m experiments.certified_learning.compare"
LIN="linucb (not private)"; BD="dp-ucb (accountant, block-diag.)"
NB="dp-ucb (accountant, block-diag., no bonus)"
$PY $C grid --horizon 10000 --agents random "$LIN" dp-screened-ls "fliphat (accountant)" \
    adac-oful "$BD" "$NB" ldp-linucb
$PY $C grid --horizon 10000 --instances figure5.1 --agents "dp-ucb (accountant)" \
    "dp-ucb (Wishart)"
$PY -m experiments.certified_learning.noise
$PY $C grid --horizon 100000 --agents random "$LIN" dp-screened-ls "fliphat (accountant)"
$PY $C grid --horizon 100000 --eps 1 10 --agents adac-oful
$PY $C grid --horizon 100000 --instances figure5.1 --eps 1 10 --agents "$BD" "$NB"
$PY $C grid --horizon 100000 --instances figure5.1 --eps 10 --agents ldp-linucb
$PY $C grid --horizon 10000 --agents "dp-hdb (theorem)" "dp-hdb (accountant)"
$PY $C grid --horizon 100000 --instances figure5.1 --eps 1 10 --agents "dp-hdb (accountant)"
# added later (2026-11-26): T = 1e5 for DP-HDB (theorem), AdaC-OFUL, LDP-LinUCB and the
# block-diagonal DP-UCB on every instance and epsilon
$PY $C grid --horizon 100000 --agents "dp-hdb (theorem)" adac-oful ldp-linucb "$BD"
$PY $C report
