"""Number formatting shared by the report and the gate, so both read the same."""

from __future__ import annotations

import math
from typing import Any


def number(value: Any, digits: int = 3) -> str:
    """A float with ``digits`` decimals; blank for missing values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{float(value):.{digits}f}"


def signed(value: Any, digits: int = 3) -> str:
    """A difference with its sign always shown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{float(value):+.{digits}f}"


def interval_text(low: Any, high: Any, level: float, digits: int = 3) -> str:
    """``95% CI 0.564 to 0.945`` (or ``no interval`` when it is undefined)."""
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return "no interval"
    return f"{level * 100:g}% CI {float(low):.{digits}f} to {float(high):.{digits}f}"


def share(k: Any, n: Any) -> str:
    """``33/40``."""
    return f"{int(k)}/{int(n)}"


def text_table(frame: Any) -> str:
    """A frame of strings as an aligned plain-text table: numbers right, text left."""
    columns = [str(c) for c in frame.columns]
    cells = [[str(v) for v in row] for row in frame.itertuples(index=False)]
    numeric = [all(_looks_numeric(row[i]) for row in cells) for i in range(len(columns))]
    widths = [max([len(columns[i]), *(len(row[i]) for row in cells)]) for i in range(len(columns))]

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if right else v.ljust(w)
            for v, w, right in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(columns), *(line(row) for row in cells)])


def _looks_numeric(text: str) -> bool:
    if not text:
        return True
    try:
        float(text.replace("/", "").replace(",", ""))
    except ValueError:
        return False
    return True
