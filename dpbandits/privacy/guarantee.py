"""``PrivacyGuarantee``: the contract every private component states (CONTRIBUTING.md)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from dpbandits._validation import check_choice, check_delta, check_epsilon

NOTIONS = frozenset({"DP", "JDP", "LDP", "GDP", "RDP", "none"})
NEIGHBOURINGS = frozenset({"replace-one", "add-remove"})


@dataclass(frozen=True)
class PrivacyGuarantee:
    """An (epsilon, delta) guarantee together with what it means and what it rests on.

    Attributes
    ----------
    epsilon : float
        > 0, or ``inf`` for a component run without privacy.
    delta : float
        In [0, 1).
    notion : str
        ``"DP"``, ``"JDP"`` (joint DP, bandits), ``"LDP"`` (local DP: each user's message is
        (epsilon, delta)-DP in that user's data before it leaves the user), ``"GDP"``,
        ``"RDP"``; ``"none"`` together with ``epsilon=inf`` marks a non-private run.
    neighbouring : str
        ``"replace-one"`` (default) or ``"add-remove"``.
    basis : str
        Which theorem or accountant the numbers come from, e.g. ``"Theorem 3.4 of Han et al.
        2022"``; papers are cited by authors and year as in ``docs/references.md``.
    certified : bool
        False when the component reproduces a published claim that is known not to hold
        (e.g. Private FTRL for non-smooth losses); ``caveat`` says why.
    mu : float or None
        For ``notion="GDP"``: the Gaussian-DP parameter (epsilon, delta is its conversion).
    """

    epsilon: float
    delta: float
    notion: str = "DP"
    neighbouring: str = "replace-one"
    basis: str = ""
    certified: bool = True
    caveat: str = ""
    mu: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_choice("notion", self.notion, NOTIONS)
        check_choice("neighbouring", self.neighbouring, NEIGHBOURINGS)
        if self.notion == "none" and not math.isinf(self.epsilon):
            raise ValueError(f"notion='none' requires epsilon=inf, got epsilon={self.epsilon}")
        if self.mu is not None and not (self.mu > 0):
            raise ValueError(f"mu must be > 0 when given, got {self.mu}")
        if not self.certified and not self.caveat:
            raise ValueError("caveat must explain why a guarantee is not certified")

    @property
    def is_private(self) -> bool:
        """True when the guarantee is finite and certified."""
        return math.isfinite(self.epsilon) and self.certified

    @classmethod
    def non_private(cls, basis: str = "no noise (epsilon = inf)") -> PrivacyGuarantee:
        """The guarantee of a component run with privacy switched off."""
        return cls(epsilon=math.inf, delta=0.0, notion="none", basis=basis)

    def to_dict(self) -> dict:
        """Plain dict (JSON-serialisable; inf stays a float)."""
        return asdict(self)

    def __str__(self) -> str:
        if self.notion == "none":
            return f"not private ({self.basis})"
        # a mu-GDP guarantee's (epsilon, delta) is its conversion: (epsilon, delta)-DP
        notion = "DP" if self.notion == "GDP" else self.notion
        head = f"({self.epsilon:.4g}, {self.delta:.3g})-{notion}"
        if self.mu is not None:
            head = f"{self.mu:.4g}-GDP => " + head
        tail = "" if self.certified else f"; NOT CERTIFIED: {self.caveat}"
        return f"{head} [{self.neighbouring}; {self.basis}]{tail}"
