"""Privacy accounting: mechanism events, composition, conversions and noise calibration.

Thin wrappers over `dp_accounting <https://github.com/google/differential-privacy>`_
(``DpEvent`` objects composed by a PLD or an RDP accountant), using only its public API.
Nothing here hand-writes a composition theorem that dp_accounting already implements:
composition is always done by dp_accounting's PLD convolution or RDP accountant.

* :mod:`~dpbandits.privacy.accounting.events` — event constructors (noise parameters relative
  to the sensitivity) and the package's only custom ``DpEvent`` subclasses;
* :mod:`~dpbandits.privacy.accounting.pld` / :mod:`~dpbandits.privacy.accounting.rdp` — the
  two accountants (and the package's RDP orders);
* :mod:`~dpbandits.privacy.accounting.query` — ``epsilon_of`` / ``delta_of`` of a ledger;
* :mod:`~dpbandits.privacy.accounting.closed_form` — the closed-form check (Lemma 2.1, basic
  composition) of the generalized-Gaussian events no accountant supports;
* :mod:`~dpbandits.privacy.accounting.wishart` — the closed-form check (Sheffet's Theorem 4.1,
  optimal composition) of Wishart tree events;
* :mod:`~dpbandits.privacy.accounting.conversions` — Gaussian DP and zCDP;
* :mod:`~dpbandits.privacy.accounting.calibration` — the one noise search, ``calibrate``, and
  the ledger calibrations built on it;
* :mod:`~dpbandits.privacy.accounting.certification` — ``certify``: the epsilon the accountant
  recomputes from a component's own ledger at its claimed delta.
"""

from dpbandits.privacy.accounting.calibration import (
    calibrate,
    certified_gaussian_multiplier,
    gaussian_multiplier,
    svrg_multipliers,
    svrg_split,
    wor_gaussian_multiplier,
)
from dpbandits.privacy.accounting.certification import Certificate, certified_guarantee, certify
from dpbandits.privacy.accounting.closed_form import LEMMA_2_1_MAX_EPSILON, lemma_2_1_epsilon
from dpbandits.privacy.accounting.conversions import (
    bounded_range_to_zcdp,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    pure_dp_to_zcdp,
    zcdp_epsilon,
    zcdp_rho,
)
from dpbandits.privacy.accounting.events import (
    GeneralizedGaussianDpEvent,
    GeneralizedGaussianTreeDpEvent,
    WishartTreeDpEvent,
    compose,
    gaussian_event,
    laplace_event,
    pure_dp_event,
    subsampled_gaussian_event,
    svrg_event,
    wor_gaussian_event,
    zcdp_event,
)
from dpbandits.privacy.accounting.query import delta_of, epsilon_of
from dpbandits.privacy.accounting.rdp import (
    RDP_ORDERS,
    SCO_BASELINE_ORDERS,
    WOR_SEARCH_ORDERS,
    replace_one_rdp_epsilon,
)
from dpbandits.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "Certificate",
    "DEFAULT_MAX_DISCRETIZATION",
    "GeneralizedGaussianDpEvent",
    "GeneralizedGaussianTreeDpEvent",
    "LEMMA_2_1_MAX_EPSILON",
    "PrivacyGuarantee",
    "RDP_ORDERS",
    "SCO_BASELINE_ORDERS",
    "WOR_SEARCH_ORDERS",
    "WishartTreeDpEvent",
    "bounded_range_to_zcdp",
    "calibrate",
    "certified_gaussian_multiplier",
    "certified_guarantee",
    "certify",
    "compose",
    "delta_of",
    "epsilon_of",
    "gaussian_event",
    "gaussian_multiplier",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "laplace_event",
    "lemma_2_1_epsilon",
    "pure_dp_event",
    "pure_dp_to_zcdp",
    "replace_one_rdp_epsilon",
    "subsampled_gaussian_event",
    "svrg_event",
    "svrg_multipliers",
    "svrg_split",
    "wor_gaussian_event",
    "wor_gaussian_multiplier",
    "zcdp_epsilon",
    "zcdp_event",
    "zcdp_rho",
]


def __getattr__(name: str):
    # the PLD module (dp_accounting's PLD code, scipy.signal and scipy.stats) loads on first use
    if name == "DEFAULT_MAX_DISCRETIZATION":
        from dpbandits.privacy.accounting.pld import DEFAULT_MAX_DISCRETIZATION

        return DEFAULT_MAX_DISCRETIZATION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
