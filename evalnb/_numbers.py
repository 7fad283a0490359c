"""Whether a value is a whole or real number within bounds: the one test behind every
argument check (``True`` is an int to Python, never a number to evalnb)."""

from __future__ import annotations

from typing import Any

__all__ = ["is_number", "is_whole"]


def is_whole(value: Any, low: int | None = None, high: int | None = None) -> bool:
    """An ``int`` (not a bool) with ``low <= value <= high`` where given."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def is_number(
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> bool:
    """An ``int`` or ``float`` (not a bool) inside the bounds, open or closed as asked."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    above = low is None or (value > low if open_low else value >= low)
    below = high is None or (value < high if open_high else value <= high)
    return above and below
