"""Checks that compare the variants' answers to one case in one repeat, graded as a group.

A per-sample check sees one answer. A comparing check (``compares`` true: promptfoo's
``select-best`` and ``max-score``) sees every variant's answer to the same case in the same
repeat, so it cannot run as each sample finishes: :func:`~evalnb.checks.arun_checks` leaves it
out, and :func:`acompare` grades each group once, after the group's per-sample checks. The
runner calls it when a run is complete (a resumed run when it completes), ``evalnb score`` in
every scoring.

Each sample of a group gets one result, named like the check:

- a completed answer among at least two: passed when the grader chose it (its reason kept);
- an incomplete sample: failed, naming its status (it stays in the denominator);
- a completed answer with no other to compare with: unscored (null, not a pass).

The evidence names the grader and what it compared: the variants whose answers it saw, in
order, and the run's variants it did not see (``missing``: eliminated by a race, settled
early or not run; ``incomplete``: no answer). A rate of such a check is the share of groups
in which the variant's answer was chosen.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from evalnb._types import CheckResult, Sample
from evalnb.checks._base import Check, Outcome
from evalnb.checks._engine import _result

__all__ = ["Comparing", "acompare", "compares", "comparing_checks"]

#: A sample's key inside a run: ``(case_id, variant, repeat)``.
Key = tuple[str, str, int]


@runtime_checkable
class Comparing(Protocol):
    """A check graded over a group of answers: one outcome per answer, in the order given.

    ``others`` holds, for each answer, the results of its sample's other checks (what
    ``max-score`` aggregates)."""

    compares: bool

    async def compare(
        self, samples: Sequence[Sample], others: Sequence[Sequence[CheckResult]]
    ) -> list[Outcome]: ...


def compares(check: Any) -> bool:
    """Whether ``check`` compares the answers of a group (see the module)."""
    return bool(getattr(check, "compares", False))


def comparing_checks(checks: Iterable[Sequence[Check]]) -> bool:
    """Whether any case's checks hold a comparing check (else no pass is needed)."""
    return any(compares(c) for case in checks for c in case)


def _order(samples: Iterable[Sample], variants: Sequence[str]) -> list[Sample]:
    """The group's samples in the run's variant order (others after, by name)."""
    rank = {name: i for i, name in enumerate(variants)}
    return sorted(samples, key=lambda s: (rank.get(s.variant, len(rank)), s.variant))


async def acompare(
    checks: Mapping[str, Sequence[Check]],
    samples: Iterable[Sample],
    variants: Sequence[str],
    others: Mapping[Key, Sequence[CheckResult]] | None = None,
    graded: Iterable[tuple[str, int, str]] = (),
) -> list[tuple[Sample, CheckResult]]:
    """Grade every comparing check of ``checks`` (by case id) once per (case, repeat) group
    of ``samples``, and return one result per sample of each group.

    ``variants`` is the run's variant order (the order answers are shown in); ``others``
    the results of each sample's per-sample checks; ``graded`` the ``(case_id, repeat,
    check)`` groups stored already (a resumed run's), left alone.
    """
    done = set(graded)
    groups: dict[tuple[str, int], list[Sample]] = defaultdict(list)
    for sample in samples:
        if any(compares(c) for c in checks.get(sample.case_id, ())):
            groups[(sample.case_id, sample.repeat)].append(sample)
    out: list[tuple[Sample, CheckResult]] = []
    for (case_id, repeat), members in sorted(groups.items()):
        ordered = _order(members, variants)
        for check in checks[case_id]:
            if compares(check) and (case_id, repeat, check.name) not in done:
                grader = cast(Comparing, check)
                outcomes = await _group(grader, check.name, ordered, variants, others or {})
                out += [(s, _result(check, o)) for s, o in zip(ordered, outcomes, strict=True)]
    return out


async def _group(
    check: Comparing,
    name: str,
    samples: list[Sample],
    variants: Sequence[str],
    others: Mapping[Key, Sequence[CheckResult]],
) -> list[Outcome]:
    """One group's outcomes, in the order of ``samples``."""
    answered = [s for s in samples if s.completed]
    present = {s.variant for s in samples}
    seen = {
        "compared": [s.variant for s in answered],
        "missing": [v for v in variants if v not in present],
        "incomplete": [s.variant for s in samples if not s.completed],
    }
    chosen: dict[str, Outcome] = {}
    if len(answered) >= 2:
        rows = [others.get((s.case_id, s.variant, s.repeat), ()) for s in answered]
        rows = [[r for r in row if r.check != name] for row in rows]
        try:
            graded = await check.compare(answered, rows)
        except Exception as exc:  # one group's failure is its outcome, never the run's end
            failed = Outcome(False, f"check raised {type(exc).__name__}: {exc}")
            graded = [failed] * len(answered)
        chosen = {s.variant: o for s, o in zip(answered, graded, strict=True)}
    outcomes = []
    for sample in samples:
        if not sample.completed:
            outcome = Outcome(False, f"incomplete sample: {sample.status}", seen)
        elif sample.variant not in chosen:
            outcome = Outcome(None, "no other variant's answer to compare with", seen)
        else:
            given = chosen[sample.variant]
            evidence = {**_plain(given.evidence), **seen}
            outcome = Outcome(given.passed, given.detail, evidence, given.score)
        outcomes.append(outcome)
    return outcomes


def _plain(evidence: Any) -> dict[str, Any]:
    if isinstance(evidence, str):
        evidence = json.loads(evidence)
    return dict(evidence) if isinstance(evidence, Mapping) else {}
