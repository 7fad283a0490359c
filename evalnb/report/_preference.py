"""The report's section on pairwise preferences: for each pair of variants reviewers
compared side by side (:func:`evalnb.annotate` with ``compare=``), the verdict of
:func:`evalnb.preferences` in its own words, first among the report's verdicts, and a
table of the choices. A run without preferences has no such section.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from evalnb.analysis import Run, preferences
from evalnb.analysis._format import interval_text, number
from evalnb.analysis._preference import compared_pairs, preference_story

__all__ = ["PreferenceSection", "preference_section"]


@dataclass(frozen=True)
class PreferenceSection:
    """What the report's preferences section shows: its title, table, notes and verdicts."""

    title: str
    table: pd.DataFrame
    notes: list[str]
    verdicts: list[str]


def preference_section(run: Run, level: float) -> PreferenceSection | None:
    """The preferences section of ``run``'s report (None when none was saved)."""
    pairs = compared_pairs(run)
    if not pairs:
        return None
    rows, verdicts, notes = [], [], []
    for a, b in pairs:
        row = preferences(run, a=a, b=b, level=level).iloc[0]
        told = preference_story(row)
        verdicts.append(told.line(a, b, "preference"))
        if told.note:
            notes.append(f"{b} vs {a}: {told.note}")
        rows.append(
            {
                "A": a,
                "B": b,
                "cases": str(row["cases"]),
                "choices": str(row["judgements"]),
                "B better": str(row["b_better"]),
                "A better": str(row["a_better"]),
                "ties": str(row["ties"]),
                "both bad": str(row["both_bad"]),
                "B wins": number(row["win_rate"]),
                "interval": interval_text(row["low"], row["high"], level),
                "p": f"{number(row['p_value'])} (sign test)",
                "verdict": row["verdict"],
            }
        )
    return PreferenceSection(
        "Preferences (pairwise review)",
        pd.DataFrame(rows),
        [
            *notes,
            "B wins: the mean over cases of each case's share of choices for B, a tie half a "
            "win; 'both bad' is no preference and is left out (counted beside it); interval: "
            "t across cases; p: the exact sign test on each case's net preference",
        ],
        verdicts,
    )
