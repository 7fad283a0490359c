"""The explorer's line on pairwise preferences: under the grid, one sentence per pair of
variants reviewers compared side by side (:func:`evalnb.preferences`'s own words), or
nothing when the run has no preferences."""

from __future__ import annotations

import html

from evalnb.analysis import Run, preferences
from evalnb.analysis._preference import compared_pairs, preference_story

__all__ = ["preference_lines"]


def preference_lines(run: Run, level: float = 0.95) -> str:
    """HTML: a sentence per compared pair of ``run``'s variants, escaped ("" when none)."""
    lines = []
    for a, b in compared_pairs(run):
        row = preferences(run, a=a, b=b, level=level).iloc[0]
        told = preference_story(row)
        lines.append(
            f"<div><b>{html.escape(told.verdict)}</b> · "
            f"{html.escape(told.line(a, b, 'preference').split(' · ', 1)[1])}</div>"
        )
    if not lines:
        return ""
    return (
        "<div class='evalnb-preferences tex2jax_ignore mathjax_ignore'>"
        "<div style='opacity:.7'>pairwise preferences (evalnb.preferences)</div>"
        f"{''.join(lines)}</div>"
    )
