"""A run's spending limits: tokens and dollars of the samples that finished.

The runner adds every finished sample; once a limit is reached it starts no new sample,
lets the ones in flight finish, and marks the run ``interrupted`` with the reason, so
``--resume`` (with a higher limit, if need be) finishes it. Samples already stored count
towards the limit of a resumed run: the limit is the run's, not one session's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_whole
from evalnb._prices import Prices, price_table, sample_cost
from evalnb._types import Sample

__all__ = ["Budget"]


def _tokens(
    prompt_tokens: int | None, completion_tokens: int | None, total_tokens: int | None
) -> int | None:
    if prompt_tokens is not None and completion_tokens is not None:
        return prompt_tokens + completion_tokens
    return total_tokens


class Budget:
    """Limits on the tokens (prompt + completion) and dollars a run may spend.

    A sample served from a cache spent nothing. A completed sample whose use cannot be
    measured (no token counts, or a model the price table lacks) stops the run: a limit
    that cannot be kept is never ignored in silence.

    >>> budget = Budget(max_tokens=10_000)
    """

    def __init__(
        self,
        max_cost: float | None = None,
        max_tokens: int | None = None,
        prices: Prices | str | os.PathLike[str] | None = None,
    ):
        if max_cost is not None and (
            isinstance(max_cost, bool)
            or not isinstance(max_cost, int | float)
            or not math.isfinite(max_cost)
            or max_cost <= 0
        ):
            raise ArgumentError(f"'max_cost' must be a number of dollars > 0; got {max_cost!r}")
        if max_tokens is not None and not is_whole(max_tokens, 1):
            raise ArgumentError(f"'max_tokens' must be a whole number >= 1; got {max_tokens!r}")
        if max_cost is not None and prices is None:
            raise ArgumentError(
                "'max_cost' needs 'prices' (a price table: TOML file or mapping of model to "
                "(input, output) dollars per million tokens)"
            )
        self.max_cost = None if max_cost is None else float(max_cost)
        self.max_tokens = max_tokens
        self.prices = None if prices is None else price_table(prices)
        self.tokens = 0
        self.cost = 0.0
        self.stopped: dict[str, Any] | None = None

    @property
    def active(self) -> bool:
        """Whether there is a limit to keep."""
        return self.max_cost is not None or self.max_tokens is not None

    @property
    def reached(self) -> bool:
        return self.stopped is not None

    def limits(self) -> dict[str, Any]:
        """The limits and the price table, as the manifest records them."""
        return {
            "max_cost": self.max_cost,
            "max_tokens": self.max_tokens,
            "prices": {m: list(p) for m, p in self.prices.items()} if self.prices else None,
        }

    def add_sample(self, sample: Sample) -> None:
        if not self.active:  # the common case, once per sample: nothing to count
            return
        self.add(
            {
                "status": sample.status,
                "model": sample.model,
                "prompt_tokens": sample.prompt_tokens,
                "completion_tokens": sample.completion_tokens,
                "total_tokens": sample.total_tokens,
                "cached": sample.cached,
            }
        )

    def add(self, row: Mapping[str, Any]) -> None:
        """Count one finished sample (a row of the samples table) and check the limits."""
        if not self.active or row.get("cached"):
            return
        used = _tokens(row["prompt_tokens"], row["completion_tokens"], row["total_tokens"])
        cost = None
        if self.prices is not None:
            cost = sample_cost(
                self.prices, row["model"], row["prompt_tokens"], row["completion_tokens"]
            )
        unmeasured = (self.max_tokens is not None and used is None) or (
            self.max_cost is not None and cost is None
        )
        self.tokens += used or 0
        self.cost += cost or 0.0
        if self.stopped is not None:
            return
        if unmeasured and row["status"] == "completed":
            self.stopped = {
                "reason": "unmeasured",
                "detail": "a completed sample reported no token counts"
                if used is None
                else f"model {row['model']!r} is not in the price table",
            }
        elif self.max_cost is not None and self.cost >= self.max_cost:
            self.stopped = {"reason": "max_cost", "limit": self.max_cost, "spent": self.cost}
        elif self.max_tokens is not None and self.tokens >= self.max_tokens:
            self.stopped = {"reason": "max_tokens", "limit": self.max_tokens, "spent": self.tokens}

    def record(self) -> dict[str, Any] | None:
        """What the manifest's ``stopped`` holds: the reason, the limit and what was spent
        when the run stopped, and the totals at its end (in-flight samples included)."""
        if self.stopped is None:
            return None
        return {**self.stopped, "tokens": self.tokens, "cost": self.cost if self.prices else None}
