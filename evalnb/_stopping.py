"""The stopping-rule contract: what the runner hands a rule after each case, and what the
rule answers. It sits below both sides: the runner calls a rule (``evalnb.runner``) and the
statistics define one (``evalnb.Decided`` in ``evalnb.analysis``), and neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["CaseOutcomes", "Decision", "StoppingRule"]


@dataclass(frozen=True)
class CaseOutcomes:
    """One completed case: per variant, each sample's check outcomes (check name ->
    True, False or None), in repeat order. An incomplete sample's checks are False.
    ``group`` is the case's group (paraphrases of one question, one document's questions)
    when the run's cases have groups: then the group is the unit a rule samples, and the
    runner hands a rule whole groups only. None: the case is its own unit."""

    case_id: str
    samples: Mapping[str, tuple[Mapping[str, bool | None], ...]]
    group: str | None = None


@dataclass(frozen=True)
class Decision:
    """A look's answer: whether to stop, and the look as the manifest records it."""

    stop: bool
    look: dict[str, Any]


@runtime_checkable
class StoppingRule(Protocol):
    """What ``run(..., until=...)`` calls."""

    @property
    def variants(self) -> tuple[str, ...]: ...

    def describe(self) -> dict[str, Any]: ...

    def look(self, cases: Sequence[CaseOutcomes]) -> Decision: ...
