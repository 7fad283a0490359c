"""The checks engine: building checks from specs, binding them to their case, and running
them on a sample so that every problem is seen (an incomplete sample, an exception, a check
over its time budget: each a failure that says so)."""

from __future__ import annotations

import copy
import inspect
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evalnb._exceptions import ArgumentError
from evalnb._sync import run_sync
from evalnb._types import Case, CheckResult, Sample
from evalnb.checks._base import (
    CHECK_TIMEOUT,
    THRESHOLD,
    Check,
    CheckSpec,
    FunctionCheck,
    Outcome,
    Unscored,
    check_types,
    on_a_thread,
)

__all__ = [
    "arun_checks",
    "as_check",
    "bind_check",
    "build_check",
    "build_checks",
    "built_cases",
    "checks_for",
    "run_checks",
    "unique_names",
]


def _is_check(value: object) -> bool:
    # Cheaper than isinstance(value, Check), whose protocol test costs ~0.1 ms a call: this
    # runs for every check of every sample.
    return callable(value) and all(hasattr(value, a) for a in ("name", "type", "spec", "applies"))


def build_check(
    spec: CheckSpec,
    *,
    where: str = "check",
    case: Case | None = None,
    base: Path | None = None,
) -> Check:
    """Turn a spec mapping, a callable or a ready check object into a check object.

    With ``case`` the check is bound to it (:func:`bind_check`); ``base`` is the folder a
    ``python`` check's module is looked for in (a cases file's own folder). Errors are
    ``ValueError`` naming the field: ``'checks[1].type' must be one of ...``.
    """
    if isinstance(spec, Mapping):
        kind = spec.get("type")
        types = check_types()
        if not isinstance(kind, str) or kind not in types:
            allowed = ", ".join(repr(name) for name in sorted(types))
            raise ArgumentError(f"'{where}.type' must be one of {allowed}; got {kind!r}")
        check: Check = types[kind](spec, where=where, base=base)
    elif _is_check(spec):
        check = cast(Check, spec)
    elif callable(spec):
        check = cast(Check, FunctionCheck(spec))
    else:
        raise TypeError(f"'{where}' must be a check spec (mapping) or a callable; got {spec!r}")
    return bind_check(check, case) if case is not None else check


def bind_check(check: Check, case: Case) -> Check:
    """``check`` for ``case``: checks that read their case (``bind``) get a bound copy."""
    bind = getattr(check, "bind", None)
    return cast(Check, bind(case)) if callable(bind) else check


def unique_names(checks: Sequence[Check], wheres: Sequence[str]) -> None:
    """A ``ValueError`` when two checks of one case share a name."""
    seen: dict[str, int] = {}
    for i, check in enumerate(checks):
        if check.name in seen:
            first = seen[check.name]
            unnamed = not getattr(check, "named", True)
            raise ArgumentError(
                f"'{wheres[i]}.name' must be unique within the case; got {check.name!r} again "
                f"(first at {wheres[first]})" + ("; give one of them a 'name'" if unnamed else "")
            )
        seen[check.name] = i


def build_checks(
    specs: Iterable[CheckSpec],
    *,
    case: Case | None = None,
    base: Path | None = None,
    where: str = "checks",
) -> tuple[Check, ...]:
    """Build every check of a case (bound to ``case`` when given); names must be unique
    within the case."""
    if isinstance(specs, str | bytes | Mapping):
        raise ArgumentError(f"'{where}' must be a list of check specs; got {specs!r}")
    wheres = []
    checks = []
    for i, spec in enumerate(specs):
        wheres.append(f"{where}[{i}]")
        checks.append(build_check(spec, where=wheres[-1], case=case, base=base))
    unique_names(checks, wheres)
    return tuple(checks)


def built_cases(cases: Iterable[Case]) -> list[Case]:
    """The cases with their checks built, bound and validated; an error names the case."""
    out = []
    for case in cases:
        try:
            checks = build_checks(case.checks, case=case)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"case {case.id!r}: {exc}") from None
        # A copy with the built checks: not dataclasses.replace, which would validate the
        # case's other fields again (a tenth of a millisecond a case; Case checked them).
        built = copy.copy(case)
        object.__setattr__(built, "checks", checks)
        out.append(built)
    return out


def checks_for(case: Case, extra: Sequence[Check], *, replace: bool = False) -> tuple[Check, ...]:
    """A built case's checks and the ``extra`` checks (added to every case), bound to it.

    An extra check whose name a case check has already is an error naming both, unless
    ``replace`` (rescoring: the extra check is passed again and takes the case's place).
    """
    bound = []
    for i, check in enumerate(extra):
        try:
            bound.append(bind_check(check, case))
        except ValueError as exc:
            raise ArgumentError(
                f"case {case.id!r}: 'checks[{i}]' (given to every case): {exc}"
            ) from None
    names = {c.name for c in bound}
    own = [c for c in case.checks if not (replace and c.name in names)]
    taken = {c.name for c in own} & names
    if taken:
        name = sorted(taken)[0]
        raise ArgumentError(
            f"case {case.id!r} has a check named {name!r} already, and the checks given to "
            "every case add another; give the added one a 'name'"
        )
    return (*own, *bound)


def _scored(check: Any, score: float, detail: str = "", evidence: Any = None) -> Outcome:
    threshold = float(getattr(check, "threshold", THRESHOLD))
    passed = score >= threshold
    if not passed and not detail:
        detail = f"score {score:g} < threshold {threshold:g}"
    return Outcome(passed, detail, evidence, float(score))


def _is_score(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


def _normalise(value: Any, check: Any) -> Outcome:
    if value is None or value is True:
        return Outcome(True)
    if value is False:
        return Outcome(False, "failed")
    if isinstance(value, Outcome):
        if value.score is None:
            return value
        if not _is_score(value.score):
            raise TypeError(f"a check's score must be a number in [0, 1]; got {value.score!r}")
        if value.passed is None:
            return _scored(check, value.score, value.detail, value.evidence)
        return value
    if isinstance(value, Unscored):
        return Outcome(None, value.reason)
    if isinstance(value, str):
        return Outcome(False, value) if value else Outcome(True)
    if _is_score(value):
        return _scored(check, value)
    raise TypeError(
        f"a check must return None/True, False, a problem string or Unscored; got {value!r} "
        "(or a score: a number in [0, 1])"
    )


#: The most characters a check result's detail keeps; the rest is cut, its size said.
MAX_DETAIL = 4_000
#: The most characters a check result's evidence keeps (as JSON text).
MAX_EVIDENCE = 64_000


#: The note a cut text ends with; a grader's worker cuts first and says the size it saw.
_CUT = re.compile(r" \[cut: ([\d,]+) characters in all\]$")


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    earlier = _CUT.search(text)
    size = int(earlier.group(1).replace(",", "")) if earlier else len(text)
    return f"{text[:limit]} [cut: {size:,} characters in all]"


def _result(check: Check, outcome: Outcome) -> CheckResult:
    """A check's outcome as stored: detail and evidence capped (a grader may return
    megabytes), the original size kept in the text."""
    evidence = outcome.evidence
    if evidence is not None and not isinstance(evidence, str):
        evidence = json.dumps(evidence, ensure_ascii=False, default=str)
    if evidence is not None and len(evidence) > MAX_EVIDENCE:
        evidence = json.dumps({"cut": True, "size": len(evidence), "head": evidence[:MAX_EVIDENCE]})
    detail = _capped(str(outcome.detail or ""), MAX_DETAIL)
    return CheckResult(check.name, check.type, outcome.passed, detail, evidence, outcome.score)


def _zero(check: Check) -> float | None:
    """A graded check's score when it fails without grading: 0, so it stays in the mean."""
    return 0.0 if getattr(check, "graded", False) else None


def _before(check: Check, sample: Sample) -> Outcome | None:
    """The outcome fixed before the check runs: for an incomplete sample, unless the check
    judges observations that exist either way (containment, settings)."""
    if sample.completed or getattr(check, "observes_incomplete", False):
        return None
    if check.applies:
        return Outcome(False, f"incomplete sample: {sample.status}", score=_zero(check))
    return Outcome(None, "not applicable to this case")


def _failed(check: Check, exc: Exception) -> Outcome:
    return Outcome(False, f"check raised {type(exc).__name__}: {exc}", score=_zero(check))


def run_checks(
    checks: Iterable[CheckSpec], sample: Sample, case: Case | None = None
) -> list[CheckResult]:
    """Run every check on ``sample`` from synchronous code, also inside a running event loop
    (a notebook cell); see :func:`arun_checks`."""
    return run_sync(arun_checks(checks, sample, case))


async def arun_checks(
    checks: Iterable[CheckSpec], sample: Sample, case: Case | None = None
) -> list[CheckResult]:
    """Run every check on ``sample`` so that all problems are seen.

    An incomplete sample fails every applicable check (detail names its status; a graded
    check scores 0) and leaves the others unscored; a check that compares the variants'
    answers (``compares``) is left out: :func:`~evalnb.checks.acompare` grades its group;
    an exception inside a check is a failure naming it. A check may be async (the judge):
    it is awaited. Specs and callables are built first, and bound to ``case`` when given.
    """
    results = []
    for given in checks:
        if _is_check(given):
            check = cast(Check, given)
            if case is not None:
                check = bind_check(check, case)
        else:
            check = build_check(given, case=case)
        if getattr(check, "compares", False):
            continue  # graded over its group of answers (checks/_compare.py)
        outcome = _before(check, sample)
        if outcome is None:
            try:
                if getattr(check, "bounded", False):
                    value = check(sample)
                else:
                    value = await _within_budget(check, sample)
                if inspect.isawaitable(value):
                    value = await value
                outcome = _normalise(value, check)
            except TimeoutError:
                outcome = _over_budget(check)
            except Exception as exc:
                outcome = _failed(check, exc)
        results.append(_result(check, outcome))
    return results


async def _within_budget(check: Check, sample: Sample) -> Any:
    """``check(sample)`` on a thread of its own, waited for at most the check's ``timeout``
    (default :data:`CHECK_TIMEOUT`): the event loop, other samples and Ctrl-C go on.

    A check over its budget raises ``TimeoutError`` here; its thread cannot be stopped and
    runs on in the background (a daemon: it never holds the process open).
    """
    # A self-timed check bounds its own run and may wait for a free worker first: a queue
    # is not its run, so no budget here counts the wait.
    seconds = None if getattr(check, "self_timed", False) else _timeout(check)
    return await on_a_thread(lambda: check(sample), seconds, f"evalnb-check-{check.name}")


def _timeout(check: Check) -> float:
    value = getattr(check, "timeout", None)
    return float(value) if isinstance(value, int | float) and value > 0 else CHECK_TIMEOUT


def _over_budget(check: Check) -> Outcome:
    return Outcome(
        False,
        f"gave up after {_timeout(check):g} s: the check took longer than its time budget",
        score=_zero(check),
    )


def as_check(
    function: Callable[..., Any],
    name: str | None = None,
    *,
    threshold: float | None = None,
    timeout: float | None = None,
) -> FunctionCheck:
    """Wrap a Python callable as a named check (graded when given a ``threshold``); it fails,
    saying so, when one call takes over ``timeout`` seconds (default :data:`CHECK_TIMEOUT`)."""
    return FunctionCheck(function, name=name, threshold=threshold, timeout=timeout)
