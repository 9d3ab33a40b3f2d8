#!/usr/bin/env python
"""How much noise does the authors' generalized-Gaussian sampler add, relative to the
distribution Lemma 2.1 / Algorithm 4 of Han et al. 2022 asks for?  (Table 5.1 discussion, README.)

    .venv/bin/python -m experiments.table_5_1.noise_check

The authors' code (liangzp/DP-Streaming-SCO, ``utils.GGPlus``) draws, for the p = 1.5
algorithms, ``r^2 ~ Gamma(d/2, scale 2 sigma^2)``, ``x_i = s_i (e_i + 1/k)`` with ``e_i`` from
the generalized normal of shape ``k`` and ``k = min(q - 1, log d - 1)`` (the paper's "q+"
read literally), and outputs ``r x / ||x||_k``. This script re-implements that recipe from its
description and compares the mean l_q norm (q = 3, the dual norm in which the noise perturbs
the Frank-Wolfe direction) with the generalized Gaussian of this package
(``generalized_gaussian_noise`` with the smooth norm of ``geometry.noise_geometry``) at the same
sigma.
"""

import math

import numpy as np
from scipy.stats import gennorm

from dpbandits.geometry import lp_norm, noise_geometry
from dpbandits.privacy.mechanisms import generalized_gaussian_noise


def authors_recipe(rng, d, k, sigma, size):
    r = np.sqrt(rng.gamma(d / 2.0, 2.0 * sigma**2, size))
    e = gennorm.rvs(k, size=(size, d), random_state=rng) + 1.0 / k
    x = e * rng.choice([-1.0, 1.0], (size, d))
    return r[:, None] * x / (np.sum(np.abs(x) ** k, axis=1) ** (1.0 / k))[:, None]


def main():
    rng = np.random.default_rng(0)
    p, q, sigma, m = 1.5, 3.0, 1.0, 200_000
    print(f"p = {p}: mean ||noise||_q (q = {q:g}) at sigma = 1")
    print(f"{'d':>3} {'code k':>7} {'ours q+':>7} {'code':>8} {'ours':>8} {'ratio':>7}")
    for d in (5, 10, 20):
        k = min(q - 1.0, math.log(d) - 1.0)
        geo = noise_geometry(p, d)
        code = lp_norm(authors_recipe(rng, d, k, sigma, m), q).mean()
        ours = lp_norm(generalized_gaussian_noise(rng, sigma / geo.scale, geo.q_plus, d, m),
                       q).mean()
        print(f"{d:>3} {k:7.3f} {geo.q_plus:7.3f} {code:8.4f} {ours:8.4f} {code / ours:7.3f}")


if __name__ == "__main__":
    main()
