"""The audit catalogue: one canary, statistic and broken variant per private component.

Each entry of :data:`AUDITS` is a callable ``(runs, seed, broken=False) -> AuditResult`` built
on the generic auditor :mod:`dpbandits.privacy.audit`; :func:`run_audits` runs a selection in
the ``"fast"`` or ``"thorough"`` tier and :func:`format_table` prints the results. Catalogue
modules whose component cannot be imported are listed in :data:`MISSING` instead of failing
the whole catalogue. See ``docs/privacy-audit.md``.
"""

import importlib

from dpbandits.audits._registry import (
    AUDITS,
    CONFIDENCE,
    MISSING,
    AuditContext,
    RegisteredAudit,
    run_audits,
    select,
)
from dpbandits.privacy.audit import AuditResult, format_table

__all__ = ["AUDITS", "CONFIDENCE", "MISSING", "AuditContext", "AuditResult", "RegisteredAudit",
           "format_table", "run_audits", "select"]

#: catalogue modules, in the order of the report (each registers its audits on import)
CATALOGUE = ("mechanisms", "peeling", "tree", "streaming", "sco", "batch", "agents",
             "fliphat", "screened_ls", "moment_ls", "budget_ls", "adac_oful", "ldp_linucb", "bo",
             "offpolicy")

for _module in CATALOGUE:
    try:
        importlib.import_module(f"dpbandits.audits.{_module}")
    except ImportError as exc:  # a component not (yet) in the package
        MISSING[_module] = f"{type(exc).__name__}: {exc}"
