"""Audits of the budget-scheduled private least-squares agent (``dp-budget-ls``).

Its releases are ``dp-moment-ls``'s mechanisms under a schedule its budget rule fixes in
advance (:mod:`dpbandits.agents.budget_ls`); at the audit's sizes the rule never fits, so every
release the agent makes is a screening release (moment and contrasts). Each audit drives the
agent class itself (not ``dp-moment-ls``) through the first-user canary of
:mod:`dpbandits.audits.moment_ls`, at K = 2 and K = 3. Broken variants are copies drawing from
a changed noise plan, never changed code.
"""

from __future__ import annotations

from dpbandits.agents.budget_ls import BudgetLS
from dpbandits.audits._registry import AuditContext, register
from dpbandits.audits.moment_ls import screen_audit
from dpbandits.privacy.audit import AuditResult


@register("dp-budget-ls", fast_runs=20_000, thorough_runs=200_000, label="moment noise / 3")
def audit_budget_ls_screen(ctx: AuditContext) -> AuditResult:
    """agents.budget_ls.BudgetLS: screening release under the budget rule, K = 2

    Canary: user 1 (alone in the first episode, uniform arm): unit context u0 with reward -10 vs
        u1 with reward +10 (clipped to -+1), <u0, u1> at the angle where the joint sensitivity
        is attained; K = 2, d = 2, a schedule on which the rule never fits
    Broken variant: the moment's noise standard deviation divided by 3
    Shows: the agent's released moment and contrasts after user 1 hide user 1's context and
        reward as claimed, with the plan and ledger the budget agent builds; the statistic is the
        likelihood-ratio direction of the two worlds, so the audit is tight
    Cannot show: the later screening releases (the same mechanism on disjoint users: parallel
        composition and the billboard lemma are the analysis, not audited) and the fitting
        release (dp-screened-ls's mechanism, audited by dp-screened-ls-fit)
    """
    return screen_audit(ctx, 2, "moment", 3.0, BudgetLS)


@register("dp-budget-ls-K3", fast_runs=20_000, thorough_runs=200_000,
          label="contrast noise / 2")
def audit_budget_ls_screen_k3(ctx: AuditContext) -> AuditResult:
    """agents.budget_ls.BudgetLS: screening release under the budget rule, K = 3

    Canary: user 1 (alone in the first episode, uniform arm): unit context u0 with reward -10 vs
        u1 with reward +10 (clipped to -+1), <u0, u1> at the angle where the joint sensitivity
        is attained; K = 3, d = 2, a schedule on which the rule never fits
    Broken variant: the contrasts' noise standard deviation divided by 2
    Shows: at K = 3, where the contrast sensitivity 2 y_max sqrt((K-1)/K) exceeds the
        different-arm value sqrt(2) y_max, the budget agent's released moment and contrasts
        hide user 1 as claimed and the audit is tight
    Cannot show: the later screening releases and the fitting release (as at K = 2); the
        canary stays on one arm in both worlds, so the different-arm case is not exercised
    """
    return screen_audit(ctx, 3, "contrast", 2.0, BudgetLS)
