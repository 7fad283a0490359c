"""The stopping rule's hook: what the runner hands a rule, and how it keeps the looks.

A rule (``evalnb.Decided`` lives beside the statistics it uses; the contract,
:mod:`evalnb._stopping`, sits below both) is any object with the
variants it compares, a JSON description for the manifest, and ``look(cases)``: given the
outcomes of the cases completed so far, in the order they were drawn, it returns a
:class:`Decision`. The runner never computes a statistic; it takes the cases in a seeded
random order, one case (every variant x repeat) after another, and after each case whose
predecessors are all complete it calls ``look``. Looks follow the drawn order, not the
order samples happen to finish in, so a slow case cannot bias the sequence.

When cases have groups (several cases share a ``group``), the group is the unit, as in
:func:`evalnb.compare`: the seeded order draws groups, a group's cases run one after
another, each :class:`CaseOutcomes` names its group, and the rule looks only once a whole
group is complete. The manifest's ``until`` records the ``unit`` (``case`` or ``group``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._exceptions import ArgumentError, StoreError
from evalnb._stopping import CaseOutcomes, Decision, StoppingRule
from evalnb._types import Case, CheckResult, Sample, Variant

__all__ = ["CaseOutcomes", "Decision", "StoppingRule", "Watch", "case_major", "drawn_order"]


def check_rule(until: Any, variants: Sequence[Variant], order: str) -> None:
    """Refuse a rule the run cannot follow, before anything is written."""
    if not isinstance(until, StoppingRule):
        raise TypeError(
            f"'until' must be a stopping rule such as evalnb.Decided(a=..., b=...); got {until!r}"
        )
    names = [v.name for v in variants]
    missing = [v for v in until.variants if v not in names]
    if missing:
        raise ArgumentError(
            f"'until' compares variants {list(until.variants)!r}; the run has {names!r}, "
            f"not {missing!r}"
        )
    if order != "alternate":
        raise ArgumentError(
            "'until' takes the cases in a seeded random order with the variants alternating; "
            f"'order' must be 'alternate'; got {order!r}"
        )


def drawn_order(cases: Sequence[Case], seed: int) -> list[Case]:
    """The cases in the seeded random order a rule sees them: the groups shuffled, each
    group's cases together in their own order (with one case per group: the cases
    shuffled, the order of old)."""
    members: dict[str, list[Case]] = {}
    for case in cases:
        members.setdefault(case.group or case.id, []).append(case)
    groups = list(members)
    random.Random(f"until:{seed}").shuffle(groups)
    return [case for group in groups for case in members[group]]


def case_major(
    planned: Sequence[tuple[Case, Variant, int]], drawn: Sequence[Case]
) -> list[tuple[Case, Variant, int]]:
    """The plan reordered case by case (every variant x repeat of a case, in the plan's
    alternating order, before the next case)."""
    position = {case.id: i for i, case in enumerate(drawn)}
    return sorted(planned, key=lambda entry: position[entry[0].id])


class Watch:
    """The runner's side of a rule: outcomes per case as samples finish, the looks, and
    why the run stopped."""

    def __init__(
        self,
        rule: StoppingRule,
        drawn: Sequence[Case] | Sequence[str],
        per_case: int,
        variants: Sequence[str] = (),
    ) -> None:
        self.rule = rule
        self.drawn = [c if isinstance(c, str) else c.id for c in drawn]
        self.group = {c.id: c.group or c.id for c in drawn if not isinstance(c, str)} or {
            c: c for c in self.drawn
        }
        self.unit = "group" if len(set(self.group.values())) < len(self.group) else "case"
        self.per_case = per_case
        # A race drops variants: a case is complete once the variants left have all run it.
        self.variants = list(variants)
        self.repeats = per_case // max(1, len(self.variants)) if self.variants else 0
        self.dropped: set[str] = set()
        self.outcomes: dict[str, dict[str, dict[int, dict[str, bool | None]]]] = {}
        self.finished: dict[str, int] = {}
        self.looked = 0
        self.looks: list[dict[str, Any]] = []
        self.decided = False

    def add(
        self, case_id: str, variant: str, repeat: int, outcomes: dict[str, bool | None]
    ) -> None:
        by_variant = self.outcomes.setdefault(case_id, {})
        by_variant.setdefault(variant, {})[repeat] = outcomes
        self.finished[case_id] = self.finished.get(case_id, 0) + 1

    def add_sample(self, sample: Sample, results: Sequence[CheckResult]) -> None:
        self.add(
            sample.case_id, sample.variant, sample.repeat, {r.check: r.outcome for r in results}
        )

    def update(self) -> bool:
        """Look after each newly completed case of the drawn order (after each completed
        group, when the unit is the group); True once decided."""
        while not self.decided and self.looked < len(self.drawn):
            if not self._complete(self.drawn[self.looked]):
                break
            self.looked += 1
            if not self._ends_group(self.looked):
                continue
            decision = self.rule.look(self._cases(self.looked))
            self.looks.append(decision.look)
            self.decided = decision.stop
            if decision.active is not None:
                raced = self.rule.variants or self.variants
                self.dropped = {v for v in raced if v not in decision.active}
        return self.decided

    def _ends_group(self, count: int) -> bool:
        """Whether the first ``count`` drawn cases end with a whole group."""
        if count >= len(self.drawn):
            return True
        return self.group[self.drawn[count]] != self.group[self.drawn[count - 1]]

    def wants(self, variant: str) -> bool:
        """Whether a key of ``variant`` still runs: not once a race has eliminated it."""
        return variant not in self.dropped

    def _complete(self, case_id: str) -> bool:
        if not self.dropped:
            return self.finished.get(case_id, 0) >= self.per_case
        by_variant = self.outcomes.get(case_id, {})
        return all(
            len(by_variant.get(v, ())) >= self.repeats for v in self.variants if self.wants(v)
        )

    def _cases(self, count: int) -> list[CaseOutcomes]:
        cases = []
        for case_id in self.drawn[:count]:
            by_variant = self.outcomes.get(case_id, {})
            cases.append(
                CaseOutcomes(
                    case_id,
                    {v: tuple(s[r] for r in sorted(s)) for v, s in by_variant.items()},
                    self.group[case_id] if self.unit == "group" else None,
                )
            )
        return cases

    def replay(self, path: Path, done: set[tuple[str, str, int]]) -> None:
        """On resume: the outcomes already stored, and the looks they give, again."""
        table = store.read_table(
            path, "checks", ["case_id", "variant", "repeat", "check", "outcome"]
        )
        checks: dict[tuple[str, str, int], dict[str, bool | None]] = {}
        for row in table.to_pylist():
            key = (row["case_id"], row["variant"], row["repeat"])
            checks.setdefault(key, {})[row["check"]] = row["outcome"]
        for key in sorted(done, key=lambda k: (k[0], k[1], k[2])):
            self.add(key[0], key[1], key[2], checks.get(key, {}))
        self.update()

    def record(self, stopped: str) -> dict[str, Any]:
        return {
            "rule": self.rule.describe(),
            "order": self.drawn,
            "unit": self.unit,
            "looks": self.looks,
            "stopped": stopped,
            "verdicts": self.looks[-1].get("comparisons", []) if self.looks else [],
            "eliminations": [e for look in self.looks for e in look.get("eliminated", [])],
        }


def start_record(rule: StoppingRule, drawn: Sequence[str]) -> dict[str, Any]:
    """The manifest's ``until`` before the first look."""
    return {"rule": rule.describe(), "order": list(drawn), "looks": [], "stopped": None}


def check_same_rule(
    recorded: Mapping[str, Any] | None, rule: StoppingRule | None, path: Path
) -> None:
    """Refuse to resume a run under another rule (or a rule's run without it)."""
    was = (recorded or {}).get("rule")
    now = rule.describe() if rule is not None else None
    if was != now:
        raise StoreError(
            f"{path}/manifest.json: the run's stopping rule was {was!r}; this resume's is "
            f"{now!r}. Resume with the original until="
        )
