"""One comparison, told the same way everywhere: the notebook display, the text, Markdown and
HTML reports and the ``plot_compare`` subtitle all take their words from :func:`story`.

The p shown is the one the verdict uses (``p_adjusted``: the larger of the interval's test
and the exact test beside it, adjusted over the family), named by the test that gave it. The
interval shown is the one that test inverts (``interval_method``); when it is another
method's, or not adjusted as the p is, the same line says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Story", "p_phrase", "story"]


@dataclass(frozen=True)
class Story:
    """The words of one comparison row (plain text; callers escape them for HTML)."""

    verdict: str  #: "v2 better", "v1 better" or "can't tell yet", the variants named
    difference: str  #: "+25.0 pp"
    interval: str  #: "95% CI +9.1 to +40.9 pp", "95% CI, unadjusted, ..." beside a Holm p
    rates: str  #: "70.0% → 95.0%"
    test: str  #: "p = 0.125 (sign-flip over cases); 4 paired cases"
    methods: str  #: "interval: paired t across cases; verdict: sign-flip over cases", or ""
    note: str  #: the row's note (a design that cannot reach significance...), or ""

    def line(self, a: str, b: str, check: str) -> str:
        """The whole sentence: verdict, effect, test, and the methods when they differ."""
        text = (
            f"{self.verdict} · {b} vs {a} on {check}: {self.difference} ({self.interval}), "
            f"{self.rates}; {self.test}"
        )
        return f"{text} · {self.methods}" if self.methods else text


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _points(value: Any) -> str:
    return f"{float(value) * 100:+.1f}" if _finite(value) else "n/a"


def _percent(value: Any) -> str:
    return f"{float(value) * 100:.1f}%" if _finite(value) else "n/a"


def p_text(value: Any) -> str:
    """``p = 0.125``, ``p < 0.001``, ``p n/a``."""
    if not _finite(value):
        return "p n/a"
    return "p < 0.001" if float(value) < 0.001 else f"p = {float(value):.3f}"


def deciding_test(row: Mapping[str, Any]) -> str:
    """The test whose p the verdict uses: the exact test where it is the larger p."""
    exact = row.get("p_exact", math.nan)
    if _finite(exact) and row.get("exact_method") and float(exact) >= float(row["p_value"]):
        return str(row["exact_method"])
    return str(row["method"])


def p_phrase(row: Mapping[str, Any]) -> str:
    """``p = 0.125 (sign-flip over cases)``: the verdict's p, named by its test."""
    adjust = row.get("adjust")
    adjusted = "" if adjust in (None, "none", "") else f", {adjust}-adjusted"
    return f"{p_text(row['p_adjusted'])} ({deciding_test(row)}{adjusted})"


def story(row: Mapping[str, Any]) -> Story:
    """The words of one row of :func:`evalnb.compare`'s frame."""
    label = str(row["verdict"]).replace("B ", f"{row['b']} ").replace("A ", f"{row['a']} ")
    level = f"{float(row['level']) * 100:g}%"
    adjust = row.get("adjust")
    unadjusted = "" if adjust in (None, "none", "") else ", unadjusted"
    interval = f"{level} CI{unadjusted} {_points(row['low'])} to {_points(row['high'])} pp"
    rates = f"{_percent(row['rate_a'])} → {_percent(row['rate_b'])}"
    decider = deciding_test(row)
    test = f"{p_phrase(row)}; {int(row['cases'])} paired cases"
    shown = str(row.get("interval_method") or row["method"])
    same = shown in (decider, f"{decider}, inverted")
    methods = "" if same else f"interval: {shown}; verdict: {decider}"
    note = row.get("note")
    note = note if isinstance(note, str) else ""
    return Story(label, f"{_points(row['diff'])} pp", interval, rates, test, methods, note)
