"""The privacy core: mechanisms, tree aggregation, accounting, auditing.

Knows nothing about bandits or optimizers (DESIGN.md, layers).
"""

from dpbandits.privacy.guarantee import PrivacyGuarantee

__all__ = ["PrivacyGuarantee"]
