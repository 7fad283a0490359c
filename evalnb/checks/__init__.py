"""Checks: what is tested on every sample, and how outcomes are recorded.

A check is any object with ``name``, ``type``, ``spec`` (JSON-ready), ``applies``
(whether it can be scored for its case at all) and one method, ``__call__(sample)``.
Check specs in a cases file name a registered ``type``; new types come in with
:func:`register`. Plain Python callables become :class:`FunctionCheck`.

``None`` or ``True`` means fine, ``False`` or a short problem message means a failure,
a number in [0, 1] is a score (graded: it passes at the check's threshold),
:class:`Unscored` means the check does not apply, and :class:`Outcome` carries evidence.

Names. A check is named by its type (``contains``) unless the spec gives a ``name``;
names never carry per-case values. Names must be unique within a case, so two checks of
one type in a case need a ``name`` each but one (an error says which).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evalnb._exceptions import ArgumentError
from evalnb._sync import run_sync
from evalnb._types import Case, CheckResult, Sample

# The modules below register their check types on import.
from evalnb.checks import _answers as _answers
from evalnb.checks import _extract as _extract
from evalnb.checks import _graders as _graders
from evalnb.checks import _javascript as _javascript
from evalnb.checks import _judge as _judge
from evalnb.checks import _lexical as _lexical
from evalnb.checks import _observed as _observed
from evalnb.checks import _promptfoo as _promptfoo
from evalnb.checks import _python as _python
from evalnb.checks import _reference as _reference
from evalnb.checks import _similar as _similar
from evalnb.checks import _trace as _trace
from evalnb.checks._base import (
    CHECK_TIMEOUT,
    THRESHOLD,
    Check,
    CheckReturn,
    CheckSpec,
    CheckValue,
    FunctionCheck,
    Outcome,
    SpecCheck,
    Unscored,
    check_types,
    register,
)

__all__ = [
    "CHECK_TIMEOUT",
    "Check",
    "CheckReturn",
    "CheckSpec",
    "CheckValue",
    "FunctionCheck",
    "Outcome",
    "SpecCheck",
    "Unscored",
    "arun_checks",
    "bind_check",
    "build_check",
    "build_checks",
    "built_cases",
    "check_types",
    "checks_for",
    "register",
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


def _result(check: Check, outcome: Outcome) -> CheckResult:
    evidence = outcome.evidence
    if evidence is not None and not isinstance(evidence, str):
        evidence = json.dumps(evidence, ensure_ascii=False, default=str)
    return CheckResult(
        check.name, check.type, outcome.passed, outcome.detail, evidence, outcome.score
    )


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
    check scores 0) and leaves the others unscored; an exception inside a check is a
    failure naming it. A check may be async (the judge): it is awaited. Specs and
    callables are built first, and bound to ``case`` when it is given.
    """
    results = []
    for given in checks:
        if _is_check(given):
            check = cast(Check, given)
            if case is not None:
                check = bind_check(check, case)
        else:
            check = build_check(given, case=case)
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
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if not done.done():
            if error is None:
                done.set_result(value)
            else:
                done.set_exception(error)

    def work() -> None:
        try:
            value, error = check(sample), None
        except BaseException as exc:  # handed to the awaiting task
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop ended while the check ran on
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"evalnb-check-{check.name}", daemon=True).start()
    return await asyncio.wait_for(done, _timeout(check))


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
