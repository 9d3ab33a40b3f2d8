"""Summary tables for a terminal: at most 100 columns, numbers rounded, and one line under
the table for every agent whose recomputed epsilon differs from the epsilon it claims."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd

#: columns printed, in order, when present (the CSV keeps every column)
PRINTED = ["agent", "n", "accepted", "log_events", "mean", "ci95_low", "ci95_high", "epsilon",
           "delta", "certified_epsilon"]
WIDTH = 100


def _num(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, int | np.integer) or not isinstance(value, float | np.floating):
        return str(value)
    return f"{value:.4g}"


def format_summary(table: pd.DataFrame, *, width: int = WIDTH) -> str:
    """The summary table as text no wider than ``width``: long labels are shortened with
    '...', swept-parameter columns (``agent.*``, ``env.*``) are shown after the label."""
    swept = [c for c in table.columns if c.startswith(("agent.", "env."))]
    cols = [c for c in PRINTED if c in table.columns]
    cols = cols[:1] + swept + cols[1:]
    text = table[cols].copy()
    for c in cols[1:]:
        text[c] = [_num(v) for v in table[c]]
    text["agent"] = text["agent"].astype(str)
    rest = sum(max(len(c), int(text[c].str.len().max())) + 1 for c in cols[1:])
    room = max(8, width - rest - 1)
    text["agent"] = [a if len(a) <= room else a[: room - 3] + "..." for a in text["agent"]]
    return text.to_string(index=False)


def privacy_notes(table: pd.DataFrame, privacy: list[dict] | None = None) -> list[str]:
    """One line per agent whose ``certified_epsilon`` is not its claimed ``epsilon`` (a
    claim that is not certified is followed by its whole caveat, on indented lines).

    ``privacy`` (the privacy record entries) adds the reason when a claim is not certified.
    """
    if not {"epsilon", "certified_epsilon"} <= set(table.columns):
        return []
    caveats = {e["agent"]: e.get("caveat", "") for e in (privacy or [])}
    swept = [c for c in table.columns if c.startswith(("agent.", "env."))]
    notes = []
    for _, row in table.iterrows():
        eps, cert = float(row["epsilon"]), float(row["certified_epsilon"])
        name = str(row["agent"]) + "".join(
            f" {c.split('.', 1)[1]}={_num(row[c])}" for c in swept if not pd.isna(row[c]))
        if math.isinf(eps):
            continue
        if math.isnan(cert):
            why = caveats.get(row["agent"]) or "the agent exposes no ledger to recompute"
            # the caveat is the reason: kept whole, continued on indented lines
            notes.extend(textwrap.wrap(f"{name}: claims epsilon={eps:.4g}, NOT certified: "
                                       f"{why}", WIDTH, subsequent_indent="    ",
                                       break_on_hyphens=False))
        elif cert > eps * (1 + 1e-6):
            notes.append(_fit(f"{name}: recomputed {cert:.4g} > claimed {eps:.4g}: the claim "
                              "is NOT certified"))
        elif cert < eps * (1 - 1e-3):
            notes.append(_fit(f"{name}: {cert:.4g} < claimed {eps:.4g}, more private than "
                              "claimed"))
    if notes:
        notes[:0] = ["certified_epsilon: dp_accounting's epsilon for the agent's own noise "
                     "ledger, at the same delta;",
                     "below the claim, the noise was calibrated to a looser bound than the "
                     "accountant's."]
    return notes


def replay_notes(table: pd.DataFrame, reference: float | None = None) -> list[str]:
    """What a replay summary's numbers are (nothing for a regret summary): the final
    cumulative reward over the accepted rounds, the logged rounds read, and the logged
    policy's reward over as many rounds (``reference``: its mean reward per round)."""
    if "accepted" not in table.columns:
        return []
    T, events = int(table["accepted"].max()), float(table["log_events"].mean())
    lines = [f"replay of logged data (no oracle): mean = final cumulative reward over {T} "
             "accepted rounds;",
             f"log_events = logged rounds read per replication (acceptance rate "
             f"{T / events:.3g})."]
    if reference is not None:
        lines.append(f"reference: the logged policy's mean reward {reference:.4g} per round, "
                     f"{reference * T:.4g} over {T} rounds.")
    return [_fit(line) for line in lines]


def _fit(line: str, width: int = WIDTH) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."
