"""One comparison, told the same way everywhere: the notebook display, the text, Markdown and
HTML reports and the ``plot_compare`` subtitle all take their words from :func:`story`.

The p shown is the one the verdict uses (``p_adjusted``: ``p_value``, the larger of the
method's test and the exact test beside it, adjusted over the family), named by the test that
gave it. The interval shown is the one that test inverts, always named by the method that made
it (``interval_method``), and said unadjusted beside an adjusted p. An interval that cannot
exclude anything (too few cases for the deciding test: ``bounded`` is False) is said in
words, with the interval on exactly these cases beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Story", "bounded", "fixed_phrase", "interval_phrase", "p_phrase", "story"]


@dataclass(frozen=True)
class Story:
    """The words of one comparison row (plain text; callers escape them for HTML)."""

    verdict: str  #: "v2 better", "v1 better" or "can't tell yet", the variants named
    difference: str  #: "+25.0 pp"
    #: the interval and the verdict's p, named once by the test that made both:
    #: "95% CI +9.1 to +40.9 pp and p = 0.004 (paired t across cases)"; where that test
    #: cannot reject anything with so few cases, in words: "4 cases cannot bound the
    #: difference at 95% and p = 0.125 (sign-flip over cases)"
    interval: str
    rates: str  #: "70.0% → 95.0%"
    cases: str  #: "4 paired cases"
    #: beside an interval that cannot bound: "on these 4 cases only: 95% CI +12.0 to +28.0
    #: pp (fixed cases: within-case binomial variance, normal interval)"; else ""
    fixed: str
    note: str  #: the row's note (a design that cannot reach significance...), or ""

    def line(self, a: str, b: str, check: str) -> str:
        """The whole sentence: verdict, effect, its interval and p with their test, and what
        these cases alone can tell when the interval cannot bound."""
        text = (
            f"{self.verdict} · {b} vs {a} on {check}: {self.difference}, {self.interval}; "
            f"{self.rates}; {self.cases}"
        )
        return f"{text} · {self.fixed}" if self.fixed else text


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _points(value: Any) -> str:
    """``+9.1``; an end that rounds to zero is ``0.0``, never ``-0.0``."""
    if not _finite(value):
        return "n/a"
    points = float(value) * 100
    return "0.0" if abs(points) < 0.05 else f"{points:+.1f}"


def _percent(value: Any) -> str:
    return f"{float(value) * 100:.1f}%" if _finite(value) else "n/a"


def p_text(value: Any) -> str:
    """``p = 0.125``, ``p < 0.001``, ``p n/a``."""
    if not _finite(value):
        return "p n/a"
    return "p < 0.001" if float(value) < 0.001 else f"p = {float(value):.3f}"


def deciding_test(row: Mapping[str, Any]) -> str:
    """The test whose p the verdict uses: the exact test where its p is the larger."""
    exact = row.get("p_exact", math.nan)
    own = row.get("p_method", row.get("p_value"))
    if _finite(exact) and row.get("exact_method") and float(exact) >= float(own):
        return str(row["exact_method"])
    return str(row["method"])


def p_phrase(row: Mapping[str, Any]) -> str:
    """``p = 0.125 (sign-flip over cases)``: the verdict's p, named by its test."""
    adjust = row.get("adjust")
    adjusted = "" if adjust in (None, "none", "") else f", {adjust}-adjusted"
    return f"{p_text(row['p_adjusted'])} ({deciding_test(row)}{adjusted})"


def bounded(row: Mapping[str, Any]) -> bool:
    """Whether the row's interval can exclude a difference (False: too few cases for the
    deciding test, its interval the whole axis)."""
    value = row.get("bounded", True)
    return bool(value) if value is not None else True


def interval_phrase(row: Mapping[str, Any]) -> str:
    """The row's interval and the verdict's p, named by the test that made both (and by the
    interval's own method where that is another); when the test cannot reject anything with
    these cases, that in words instead of an interval across the whole axis."""
    level = f"{float(row['level']) * 100:g}%"
    if bounded(row):
        adjust = row.get("adjust")
        unadjusted = "" if adjust in (None, "none", "") else ", unadjusted"
        interval = f"{level} CI{unadjusted} {_points(row['low'])} to {_points(row['high'])} pp"
    else:
        cases = int(row["cases"])
        interval = f"{cases} case{'' if cases == 1 else 's'} cannot bound the difference at {level}"
    text = f"{interval} and {p_phrase(row)}"
    made_by = str(row.get("interval_method") or row["method"])
    if bounded(row) and not made_by.startswith(deciding_test(row)):
        text += f"; interval: {made_by}"
    return text


def fixed_phrase(row: Mapping[str, Any]) -> str:
    """Beside an interval that cannot bound: the interval on exactly these cases, or ""."""
    low, high = row.get("fixed_low"), row.get("fixed_high")
    if bounded(row) or not (_finite(low) and _finite(high)):
        return ""
    level = f"{float(row['level']) * 100:g}%"
    return (
        f"on these {int(row['cases'])} cases only: {level} CI {_points(low)} to "
        f"{_points(high)} pp ({row['fixed_method']})"
    )


def story(row: Mapping[str, Any]) -> Story:
    """The words of one row of :func:`evalnb.compare`'s frame."""
    label = str(row["verdict"]).replace("B ", f"{row['b']} ").replace("A ", f"{row['a']} ")
    rates = f"{_percent(row['rate_a'])} → {_percent(row['rate_b'])}"
    note = row.get("note")
    note = note if isinstance(note, str) else ""
    return Story(
        label,
        f"{_points(row['diff'])} pp",
        interval_phrase(row),
        rates,
        f"{int(row['cases'])} paired cases",
        fixed_phrase(row),
        note,
    )
