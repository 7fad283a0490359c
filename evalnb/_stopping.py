"""The stopping-rule contract: what the runner hands a rule after each case, and what the
rule answers. It sits below both sides: the runner calls a rule (``evalnb.runner``) and the
statistics define one (``evalnb.Decided`` in ``evalnb.analysis``), and neither imports the other.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "REPEAT_RULES",
    "RULES",
    "CaseOutcomes",
    "Decision",
    "RepeatRule",
    "StoppingRule",
    "repeat_rule_from_record",
    "rule_from_record",
]


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
    """A look's answer: whether to stop, the look as the manifest records it, and which of
    the rule's variants still draw samples for later cases (``None``: every one; a race
    names its survivors, and the runner skips the keys of the others)."""

    stop: bool
    look: dict[str, Any]
    active: tuple[str, ...] | None = None


@runtime_checkable
class StoppingRule(Protocol):
    """What ``run(..., until=...)`` calls."""

    @property
    def variants(self) -> tuple[str, ...]: ...

    def describe(self) -> dict[str, Any]: ...

    def look(self, cases: Sequence[CaseOutcomes]) -> Decision: ...


#: The rules a file or a manifest can name, as ``module:class`` of a class whose
#: ``from_record`` reads the record back. Resolved only when a record names one, so the
#: runner, which reads manifests, never imports the statistics that define a rule.
RULES: dict[str, str] = {"best": "evalnb.analysis:Best", "decided": "evalnb.analysis:Decided"}


def rule_from_record(record: Mapping[str, Any]) -> StoppingRule:
    """The rule a record describes (``{"rule": "decided", "a": ..., ...}``, as a rule's
    ``describe()`` writes it or an experiment's ``[until]`` table gives it)."""
    kind = record.get("rule") if isinstance(record, Mapping) else None
    if kind not in RULES:
        raise ValueError(f"'until.rule' must be one of {sorted(RULES)!r}; got {kind!r}")
    rule: StoppingRule = pkgutil.resolve_name(RULES[kind]).from_record(record)
    return rule


@runtime_checkable
class RepeatRule(Protocol):
    """What ``run(..., repeats=...)`` calls instead of a fixed count: up to ``max`` repeats
    of a case on a variant, drawn in order while the earlier ones have not settled it."""

    @property
    def max(self) -> int: ...

    def describe(self) -> dict[str, Any]: ...

    def settled(self, outcomes: Sequence[bool | None]) -> bool: ...


#: The repeat rules a manifest can name, as ``module:class`` (as :data:`RULES`).
REPEAT_RULES: dict[str, str] = {"settled": "evalnb.analysis:UntilSettled"}


def repeat_rule_from_record(record: Mapping[str, Any]) -> RepeatRule:
    """The repeat rule a record describes (``{"rule": "settled", "max": 10, ...}``)."""
    kind = record.get("rule") if isinstance(record, Mapping) else None
    if kind not in REPEAT_RULES:
        raise ValueError(f"'repeats.rule' must be one of {sorted(REPEAT_RULES)!r}; got {kind!r}")
    rule: RepeatRule = pkgutil.resolve_name(REPEAT_RULES[kind]).from_record(record)
    return rule
