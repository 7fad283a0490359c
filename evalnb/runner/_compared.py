"""The run's pass over groups of answers: the checks that compare the variants' answers of
one case and repeat (promptfoo's ``select-best``, ``max-score``; see
:mod:`evalnb.checks._compare`), graded once the run is complete.

Run and ``evalnb score`` share it: the samples and their per-sample check results come in,
the group results go out, to be written as a part of their own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from evalnb import store
from evalnb._types import Action, CheckResult, Sample, ToolCall
from evalnb.checks import Check, acompare, comparing_checks

__all__ = ["compared", "others_of", "stored_results", "stored_samples"]

#: The columns of a stored check result a comparing check may read.
_CHECK_COLUMNS = ["case_id", "variant", "repeat", "check", "check_type", "outcome", "detail"]
_CHECK_COLUMNS += ["evidence", "score"]


def stored_samples(run_dir: Path, cases: Iterable[str] | None = None) -> list[Sample]:
    """The run's samples as :class:`Sample` values (only those of ``cases`` when given)."""
    table = store.read_table(run_dir, "samples")
    rows = table.to_pylist()
    wanted = None if cases is None else set(cases)
    out = []
    for row in rows:
        if wanted is not None and row["case_id"] not in wanted:
            continue
        row["tool_calls"] = tuple(ToolCall(**c) for c in row["tool_calls"] or ())
        for key in ("requested", "executed"):
            row[key] = tuple(Action(**a) for a in row[key] or ())
        if row["choice_order"] is not None:
            row["choice_order"] = tuple(row["choice_order"])
        out.append(Sample(**row))
    return out


def stored_results(
    run_dir: Path, cases: Iterable[str] | None = None
) -> dict[tuple[str, str, int], list[CheckResult]]:
    """The run's own check results by sample key (only those of ``cases`` when given)."""
    wanted = None if cases is None else set(cases)
    table = store.read_table(run_dir, "checks", _CHECK_COLUMNS, scoring="run")
    out: dict[tuple[str, str, int], list[CheckResult]] = defaultdict(list)
    for row in table.to_pylist():
        if wanted is not None and row["case_id"] not in wanted:
            continue
        result = CheckResult(
            row["check"],
            row["check_type"],
            row["outcome"],
            row["detail"] or "",
            row["evidence"],
            row["score"],
        )
        out[(row["case_id"], row["variant"], row["repeat"])].append(result)
    return out


async def compared(
    run_dir: Path, by_case: Mapping[str, Sequence[Check]], variants: Sequence[str]
) -> list[tuple[Sample, CheckResult]]:
    """The results of the run's comparing checks for every group not graded yet, read from
    the run's stored samples and check results (an earlier session's too)."""
    cases = [case for case, checks in by_case.items() if comparing_checks([checks])]
    if not cases:
        return []
    samples = stored_samples(run_dir, cases)
    results = stored_results(run_dir, cases)
    names = {c: {k.name for k in by_case[c] if getattr(k, "compares", False)} for c in cases}
    graded = {
        (case_id, repeat, r.check)
        for (case_id, _, repeat), rows in results.items()
        for r in rows
        if r.check in names[case_id]
    }
    return await acompare(by_case, samples, variants, results, graded)


def others_of(
    results: Iterable[tuple[Sample, CheckResult]],
) -> dict[tuple[str, str, int], list[CheckResult]]:
    """Per-sample check results by sample key (what a comparing check may aggregate)."""
    out: dict[tuple[str, str, int], list[CheckResult]] = defaultdict(list)
    for sample, result in results:
        out[(sample.case_id, sample.variant, sample.repeat)].append(result)
    return out
