"""Repeats until settled, the runner's side: each case's outcomes on each variant by
repeat, and whether the next repeat is still wanted.

The rule (``evalnb.UntilSettled``, beside the statistics; the contract,
:class:`evalnb._stopping.RepeatRule`, sits below both) says from a case's outcomes, in
repeat order, whether it needs more. The plan draws every case's repeat ``r`` before any
case's ``r + 1``, so by the time a repeat comes up its predecessors have usually finished;
a repeat whose predecessors are still in flight is drawn (never skipped on a guess), and
what it adds is kept and read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalnb import store
from evalnb._stopping import RepeatRule
from evalnb._types import CheckResult, Sample

__all__ = ["Settling"]


class Settling:
    """Per (case, variant): the outcome of each finished repeat (all checks pass: True;
    any fails: False; none scored: None), and the rule that reads them."""

    def __init__(self, rule: RepeatRule) -> None:
        self.rule = rule
        self.outcomes: dict[tuple[str, str], dict[int, bool | None]] = {}

    def add(self, case_id: str, variant: str, repeat: int, outcomes: Sequence[bool | None]) -> None:
        scored = [o for o in outcomes if o is not None]
        self.outcomes.setdefault((case_id, variant), {})[repeat] = all(scored) if scored else None

    def add_sample(self, sample: Sample, results: Sequence[CheckResult]) -> None:
        self.add(sample.case_id, sample.variant, sample.repeat, [r.outcome for r in results])

    def wants(self, case_id: str, variant: str, repeat: int) -> bool:
        """Whether repeat ``repeat`` is still to be drawn: not once its first finished
        repeats (0, 1, ... with none missing) settle the case."""
        seen = self.outcomes.get((case_id, variant), {})
        for r in range(repeat):
            if r not in seen:
                return True  # an earlier repeat is in flight: draw, never skip on a guess
            if self.rule.settled([seen[i] for i in range(r + 1)]):
                return False
        return True

    def replay(self, path: Path, done: set[tuple[str, str, int]]) -> None:
        """On resume: the outcomes already stored."""
        table = store.read_table(
            path, "checks", ["case_id", "variant", "repeat", "check", "outcome"]
        )
        checks: dict[tuple[str, str, int], list[bool | None]] = {}
        for row in table.to_pylist():
            key = (row["case_id"], row["variant"], row["repeat"])
            checks.setdefault(key, []).append(row["outcome"])
        for key in done:
            self.add(key[0], key[1], key[2], checks.get(key, []))
