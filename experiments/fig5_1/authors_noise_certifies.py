"""What (epsilon, delta) the authors' noise scales actually certify at the Figure 5.1 setting.

Run: ``.venv/bin/python -m experiments.fig5_1.authors_noise_certifies``
Both numbers are computed with dpbandits.privacy.accounting (dp_accounting PLD).
"""

import json
import math

from dpbandits.agents.authors_code import (
    authors_dphdb_per_step_epsilons,
    authors_dpucb_noise_multiplier,
)
from dpbandits.privacy.accounting import compose, epsilon_of, gaussian_event, pure_dp_event

T, d, K, eps, delta = 10_000, 50, 2, 1.0, 1e-4

# DP-HDB (code): one arm's stream, each report-noisy-max step eps_t-DP (Algorithm 2's
# analysis with the code's scale, which lacks the D(beta D + L) factor); contexts have
# ||x||_inf <= ||x||_1 = 1, rewards |y| <= 1, radius 1.
per_step = authors_dphdb_per_step_epsilons(T, eps, delta)
hdb_eps = epsilon_of(compose([pure_dp_event(float(e)) for e in per_step]), delta)

# DP-UCB (code): fresh noise every round, so a datum enters up to T releases, each a Gaussian
# mechanism with the code's noise multiplier.
mult = authors_dpucb_noise_multiplier(T, K, d, eps, delta)
ucb_eps = epsilon_of(gaussian_event(mult, count=T - 1), delta)
ucb_eps_tree = epsilon_of(gaussian_event(mult / math.sqrt(14), count=1), delta)

print(json.dumps({
    "claimed": {"epsilon": eps, "delta": delta},
    "dp_hdb_code_certified_epsilon_one_arm": hdb_eps,
    "dp_hdb_code_per_step_epsilon_first_10": [float(e) for e in per_step[:10]],
    "dp_ucb_code_noise_multiplier_per_release": mult,
    "dp_ucb_code_certified_epsilon_fresh_noise": ucb_eps,
    "dp_ucb_same_noise_in_a_14_level_tree_epsilon": ucb_eps_tree,
}, indent=2))
