"""Calibration as data: the frozen noise plan of a private component, and the one
``calibration=`` vocabulary.

Every private component (agent, optimizer, Bayesian-optimization method) computes, by one
pure function of its validated parameters, a :class:`NoisePlan`: the noise parameters it
draws with (``scales``), the sensitivities they are relative to, its ledger (a
``dp_accounting.DpEvent``), its guarantee
(:class:`~dpbandits.privacy.guarantee.PrivacyGuarantee`) and the calibration that produced
them. The plan is immutable (like
dp_accounting's events); components inheriting :class:`Planned` read ``privacy`` and
``ledger`` from it and draw their noise from its scales, so the noise added and the ledger
that certifies it cannot drift apart. An audit's broken variant is a *changed plan*
(:meth:`NoisePlan.scaled`, :meth:`NoisePlan.replaced`) given to :meth:`Planned.with_plan`:
the changed plan says so in its guarantee (``certified=False``) and carries no ledger.

Vocabulary of ``calibration=`` (every component accepts a subset, its docstring says which):

* ``"theorem"`` -- the closed form of the paper the component implements (its theorem,
  lemma or remark: the noise it prescribes for ``(epsilon, delta)``);
* ``"accountant"`` -- the smallest noise for which the ``dp_accounting`` accountant (PLD
  unless the component says otherwise) certifies ``(epsilon, delta)`` for the component's
  own ledger;
* ``"authors"`` -- the noise of the authors' published code, reproduced as it runs (not
  certified: the guarantee says why).

Former values are accepted as aliases (:data:`ALIASES`): ``"paper"`` and ``"zcdp"`` (the
paper's closed form, ``"theorem"``) and ``"pld"`` (``"accountant"``). A plan made without
noise (``epsilon = inf``) has calibration ``"none"``.
"""

from __future__ import annotations

import copy
import functools
import math
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Self

from dp_accounting import DpEvent

from dpbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["ALIASES", "CALIBRATIONS", "NoisePlan", "PlanMethod", "PlanView", "Planned",
           "Scales", "check_calibration"]

#: the calibration vocabulary: value -> what it means (module docstring)
CALIBRATIONS: dict[str, str] = {
    "theorem": "the closed form of the paper's theorem",
    "accountant": "the smallest noise the dp_accounting accountant certifies",
    "authors": "the noise of the authors' published code (not certified)",
}
#: former values, still accepted: value -> its name in the vocabulary
ALIASES: dict[str, str] = {"paper": "theorem", "zcdp": "theorem", "pld": "accountant"}


def check_calibration(value: Any, allowed: Iterable[str], component: str = "") -> str:
    """The vocabulary name of ``value`` (an alias is translated), which must be one of
    ``allowed`` (a subset of :data:`CALIBRATIONS`); otherwise ``ValueError`` naming the
    parameter, the value and the allowed values with their meaning."""
    allowed = tuple(allowed)
    unknown = [a for a in allowed if a not in CALIBRATIONS]
    if unknown:
        raise ValueError(f"allowed calibrations {unknown} are not in the vocabulary "
                         f"{sorted(CALIBRATIONS)}")
    name = ALIASES.get(value, value) if isinstance(value, str) else value
    if isinstance(name, str) and name in allowed:
        return name
    where = f" of {component}" if component else ""
    meaning = "; ".join(f"{a!r}: {CALIBRATIONS[a]}" for a in allowed)
    raise ValueError(f"calibration{where} must be one of {list(allowed)} ({meaning}), got "
                     f"{value!r}")


class Scales(Mapping[str, float]):
    """An immutable, picklable mapping ``name -> float`` (noise scales or sensitivities).

    Insertion order is kept. Looking up a missing name raises ``KeyError`` listing the names.
    """

    __slots__ = ("_items",)
    _items: tuple[tuple[str, float], ...]

    def __init__(self, items: Mapping[str, float] | Iterable[tuple[str, float]] = ()):
        pairs = tuple((str(k), float(v)) for k, v in dict(items).items())
        for k, v in pairs:
            if math.isnan(v) or v < 0.0:
                raise ValueError(f"scale {k!r} must be >= 0 (or inf), got {v}")
        object.__setattr__(self, "_items", pairs)

    def __getitem__(self, key: str) -> float:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(f"no scale {key!r}; the plan has {[k for k, _ in self._items]}")

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __setattr__(self, key, value):
        raise AttributeError("Scales are immutable: build a changed plan with "
                             "NoisePlan.scaled or NoisePlan.replaced")

    def __reduce__(self):
        return (Scales, (self._items,))

    def __repr__(self) -> str:
        return f"Scales({dict(self._items)!r})"


@dataclass(frozen=True)
class NoisePlan:
    """What one calibration produced (module docstring); immutable.

    Attributes
    ----------
    calibration : str
        The vocabulary name (:data:`CALIBRATIONS`), or ``"none"`` for a plan without noise.
    scales : Scales
        The noise parameters the component draws with, by name. The component's docstring
        gives each one's unit: a standard deviation or Laplace scale (in the units of the
        released statistic), a noise multiplier (noise / sensitivity, dimensionless) or, for
        Wishart noise, degrees of freedom.
    guarantee : PrivacyGuarantee
        The component's ``privacy``.
    events : dp_accounting.DpEvent, callable or None
        The ledger, or a zero-argument callable that computes it once, on first use of
        :attr:`ledger` (for ledgers that are costly to build; picklable: a module-level
        function or a ``functools.partial``). None without noise, or for a plan changed by an
        audit.
    sensitivities : Scales
        The sensitivities the scales are relative to, when the component states them
        (replace-one, in the norm its docstring names).
    altered : str
        Empty for the component's own calibration; otherwise how the plan was changed
        (:meth:`scaled`, :meth:`replaced`).
    """

    calibration: str
    scales: Scales = field(default_factory=Scales)
    guarantee: PrivacyGuarantee = field(default_factory=PrivacyGuarantee.non_private)
    events: DpEvent | Callable[[], DpEvent] | None = None
    sensitivities: Scales = field(default_factory=Scales)
    altered: str = ""

    @property
    def ledger(self) -> DpEvent | None:
        """The component's ``ledger``: the mechanism events the ``scales`` correspond to."""
        if not callable(self.events):
            return self.events
        cached = self.__dict__.get("_ledger")
        if cached is None:
            cached = self.events()
            object.__setattr__(self, "_ledger", cached)
        return cached

    def __post_init__(self):
        if self.calibration != "none" and self.calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {sorted(CALIBRATIONS)} or 'none', "
                             f"got {self.calibration!r}")
        if not isinstance(self.guarantee, PrivacyGuarantee):
            raise TypeError(f"guarantee must be a PrivacyGuarantee, got "
                            f"{type(self.guarantee).__name__}")
        for name in ("scales", "sensitivities"):
            value = getattr(self, name)
            if not isinstance(value, Scales):
                object.__setattr__(self, name, Scales(value))
        bad = self._degenerate()
        if bad and self.is_private and self.guarantee.certified:
            caveat = (f"{bad}: the noise does not match its calibration in floating point"
                      + (f"; {self.guarantee.caveat}" if self.guarantee.caveat else ""))
            object.__setattr__(self, "guarantee",
                               replace(self.guarantee, certified=False, caveat=caveat))

    def __deepcopy__(self, memo: dict) -> NoisePlan:
        """The plan itself: it is immutable, so a copied component shares it (copying its
        ledger and guarantee cost milliseconds per copy in ``fit``'s snapshot)."""
        return self

    def _degenerate(self) -> str:
        """A sensitivity that is 0, subnormal or not finite, or a scale that is subnormal
        ('' when none is): a plan holding one is never certified (a bound or a noise that
        underflowed or overflowed while it was computed certifies nothing). Scales may be 0
        or inf (some name budget shares or unused releases)."""
        for k, v in self.sensitivities.items():
            if not (math.isfinite(v) and v >= sys.float_info.min):
                return f"sensitivity {k!r} is {v!r}"
        for k, v in self.scales.items():
            if 0.0 < v < sys.float_info.min:
                return f"scale {k!r} is subnormal ({v!r})"
        return ""

    @classmethod
    def non_private(cls, basis: str, scales: Mapping[str, float] | None = None,
                    events: DpEvent | None = None, **kwargs: Any) -> NoisePlan:
        """The plan of a component run without noise (``epsilon = inf``): calibration
        ``"none"``, ``scales`` (default none) all 0, no ledger unless ``events`` is given
        (e.g. ``NonPrivateDpEvent``)."""
        zeros = Scales({k: 0.0 for k in (scales or {})})
        return cls("none", zeros, PrivacyGuarantee.non_private(basis), events, **kwargs)

    @property
    def is_private(self) -> bool:
        """True when the plan adds noise (calibration is not ``"none"``)."""
        return self.calibration != "none"

    def _changed(self, scales: Scales, why: str) -> NoisePlan:
        g = self.guarantee
        caveat = (f"noise changed after calibration ({why}): the claim is not certified for "
                  "the noise actually added" + (f"; {g.caveat}" if g.caveat else ""))
        guarantee = replace(g, certified=False, caveat=caveat) if g.notion != "none" else g
        altered = f"{self.altered}; {why}" if self.altered else why
        return replace(self, scales=scales, guarantee=guarantee, events=None, altered=altered)

    def scaled(self, factor: float, *names: str) -> NoisePlan:
        """The plan with the named scales (all when none are named) divided by ``factor``
        (> 0): an audit's broken variant. Its guarantee keeps the claim but is marked not
        certified, and it has no ledger."""
        if not (isinstance(factor, int | float) and math.isfinite(factor) and factor > 0):
            raise ValueError(f"factor must be a finite number > 0, got {factor!r}")
        chosen = names or tuple(self.scales)
        for n in chosen:
            self.scales[n]  # KeyError naming the plan's scales
        new = {k: v / factor if k in chosen else v for k, v in self.scales.items()}
        return self._changed(Scales(new), f"{', '.join(chosen)} divided by {factor:g}")

    @property
    def is_flagged(self) -> bool:
        """True for a changed plan that claims nothing it cannot show: altered (says how), no
        ledger, and a guarantee marked not certified (or no privacy claim at all)."""
        g = self.guarantee
        return bool(self.altered) and self.events is None and (
            not g.certified or g.notion == "none")

    def adopt(self, given: NoisePlan, component: str = "") -> NoisePlan:
        """The plan a component whose own plan is ``self`` draws with when handed ``given``
        (``with_plan``): ``self`` itself when ``given`` equals it, ``given`` when it is
        flagged (:attr:`is_flagged`: :meth:`scaled`, :meth:`replaced`), and otherwise --
        a plan the component did not derive (a hand-built ``NoisePlan`` keeping the original
        guarantee and ledger beside other scales, or another instance's plan) -- ``given``'s
        scales under this plan's guarantee marked not certified, without a ledger. So no
        plan handed in can keep a certificate for noise the component did not calibrate.
        The scale names must be this plan's (``ValueError`` otherwise)."""
        if not isinstance(given, NoisePlan) or set(given.scales) != set(self.scales):
            where = f"{component}.with_plan: " if component else ""
            raise ValueError(f"{where}plan must be a NoisePlan with the scales "
                             f"{list(self.scales)}, got {given!r}")
        if given is self or given == self:
            return self
        if given.is_flagged:
            return given
        return self._changed(given.scales, "a plan the component did not derive itself: "
                             f"scales {dict(given.scales)}")

    def replaced(self, **values: float) -> NoisePlan:
        """The plan with the named scales set to ``values`` (e.g. fewer Wishart degrees of
        freedom); marked like :meth:`scaled`."""
        for n in values:
            self.scales[n]
        new = {k: values.get(k, v) for k, v in self.scales.items()}
        text = ", ".join(f"{k} set to {v:g}" for k, v in values.items())
        return self._changed(Scales(new), text)


class PlanView(property):
    """A read-only attribute computed from the component's plan (e.g. ``sigmas``,
    ``multiplier``): assigning it raises ``AttributeError`` saying where the value comes
    from, instead of changing a number the noise or the ledger would not follow."""

    def __set__(self, obj, value):
        raise AttributeError(_read_only(obj, getattr(self.fget, "__name__", "attribute")))


def _read_only(obj: Any, name: str) -> str:
    return (f"{type(obj).__name__}.{name} is read from its noise plan (.plan), which both the "
            "noise and the ledger follow, so it cannot be assigned: build the component with "
            "other parameters (set_params / clone), or, for an audit, use "
            ".with_plan(.plan.scaled(...))")


class PlanMethod:
    """A method computed from the component's plan (e.g. a batch optimizer's ``sigma(n)``):
    assigning its name on an instance raises ``AttributeError`` as for :class:`PlanView`,
    instead of shadowing the method with a number the noise would not follow."""

    def __init__(self, func: Callable[..., Any]):
        self.func = func
        self.name = func.__name__
        functools.update_wrapper(self, func)  # type: ignore[arg-type]

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self.func if obj is None else types.MethodType(self.func, obj)

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(_read_only(obj, self.name))


class Planned:
    """Mixin of every component with a :class:`NoisePlan`: ``privacy`` and ``ledger`` come
    from the plan, which the component computes once in ``__init__`` (``self._plan``) and
    draws its noise from. Placed before the component's base class."""

    _plan: NoisePlan

    @property
    def plan(self) -> NoisePlan:
        """The frozen noise plan (module :mod:`dpbandits.privacy.plan`): set in ``__init__``,
        or computed by ``_make_plan`` on first use (components whose calibration is costly
        and not needed to build them)."""
        plan = self.__dict__.get("_plan")
        if plan is None:
            plan = self._make_plan()
            object.__setattr__(self, "_plan", plan)
        return plan

    def _make_plan(self) -> NoisePlan:
        """The component's plan, from its validated parameters (a pure function of them)."""
        raise NotImplementedError(f"{type(self).__name__} sets _plan in __init__ or "
                                  "implements _make_plan")

    @property
    def privacy(self) -> PrivacyGuarantee:
        """The guarantee of the plan."""
        return self.plan.guarantee

    @property
    def ledger(self) -> DpEvent | None:
        """The plan's ledger (None without noise)."""
        return self.plan.ledger

    def with_plan(self, plan: NoisePlan) -> Self:
        """A copy of this component that draws its noise from ``plan``: a changed version of
        its own (:meth:`NoisePlan.scaled` / :meth:`NoisePlan.replaced`, the same scale
        names). For audits' broken variants; call it before ``reset``. Everything the
        component derived from its own calibration (confidence radii, shifts) is kept. A plan
        the component did not derive is flagged (:meth:`NoisePlan.adopt`): its guarantee is
        marked not certified and it has no ledger."""
        adopted = self.plan.adopt(plan, type(self).__name__)
        twin = copy.deepcopy(self)
        object.__setattr__(twin, "_plan", adopted)
        return twin
