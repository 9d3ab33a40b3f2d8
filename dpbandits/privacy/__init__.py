"""The privacy core: mechanisms, tree aggregation, peeling, accounting, guarantees, auditing.

Knows nothing about bandits or optimizers (docs/architecture.md, layers). The submodules
list their public names in ``__all__``: :mod:`~dpbandits.privacy.mechanisms` (noise samplers,
private selection, calibrations in closed form), :mod:`~dpbandits.privacy.tree` (continual
release), :mod:`~dpbandits.privacy.peeling`, :mod:`~dpbandits.privacy.accounting`
(``dp_accounting`` events, epsilon/delta queries, ``calibrate``) and
:mod:`~dpbandits.privacy.audit` (empirical lower bounds). The names every component uses are
re-exported here (``audit`` itself stays in its module, ``dpbandits.privacy.audit.audit``,
so the package attribute ``audit`` remains the module).
"""

from dpbandits.privacy.audit import AuditResult, AuditSpec
from dpbandits.privacy.guarantee import PrivacyGuarantee
from dpbandits.privacy.tree import TreeAggregator

__all__ = ["AuditResult", "AuditSpec", "PrivacyGuarantee", "TreeAggregator"]
