"""Checks: what is tested on every sample, and how outcomes are recorded.

A check is any object with ``name``, ``type``, ``spec`` (JSON-ready), ``applies``
(whether it can be scored for its case at all) and one method, ``__call__(sample)``.
Check specs in a cases file name a registered ``type``; new types come in with
:func:`register`. Plain Python callables become :class:`FunctionCheck`.

``None`` or ``True`` means fine, ``False`` or a short problem message means a failure,
:class:`Unscored` means the check does not apply, and :class:`Outcome` carries evidence.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from evalnb._sync import run_sync
from evalnb._types import Case, CheckResult, Sample

# The modules below register their check types on import.
from evalnb.checks import answers as _answers  # noqa: F401
from evalnb.checks import judge as _judge  # noqa: F401
from evalnb.checks import lexical as _lexical  # noqa: F401
from evalnb.checks import observed as _observed  # noqa: F401
from evalnb.checks import trace as _trace  # noqa: F401
from evalnb.checks._base import (
    Check,
    CheckSpec,
    FunctionCheck,
    Outcome,
    SpecCheck,
    Unscored,
    check_types,
    register,
)

__all__ = [
    "Check",
    "CheckSpec",
    "FunctionCheck",
    "Outcome",
    "SpecCheck",
    "Unscored",
    "arun_checks",
    "build_check",
    "build_checks",
    "built_cases",
    "check_types",
    "register",
    "run_checks",
]


def _is_check(value: object) -> bool:
    # Cheaper than isinstance(value, Check), whose protocol test costs ~0.1 ms a call: this
    # runs for every check of every sample.
    return callable(value) and all(hasattr(value, a) for a in ("name", "type", "spec", "applies"))


def build_check(spec: CheckSpec, *, where: str = "check") -> Check:
    """Turn a spec mapping, a callable or a ready check object into a check object.

    Errors are ``ValueError`` naming the field: ``'checks[1].type' must be one of ...``.
    """
    if isinstance(spec, Mapping):
        kind = spec.get("type")
        types = check_types()
        if not isinstance(kind, str) or kind not in types:
            allowed = ", ".join(repr(name) for name in sorted(types))
            raise ValueError(f"'{where}.type' must be one of {allowed}; got {kind!r}")
        return types[kind](spec, where=where)
    if _is_check(spec):
        return cast(Check, spec)
    if callable(spec):
        return cast(Check, FunctionCheck(spec))
    raise TypeError(f"'{where}' must be a check spec (mapping) or a callable; got {spec!r}")


def build_checks(specs: Iterable[CheckSpec]) -> tuple[Check, ...]:
    """Build every check of a case; names must be unique within the case."""
    if isinstance(specs, str | bytes | Mapping):
        raise ValueError(f"'checks' must be a list of check specs; got {specs!r}")
    checks = tuple(build_check(spec, where=f"checks[{i}]") for i, spec in enumerate(specs))
    seen: dict[str, int] = {}
    for i, check in enumerate(checks):
        if check.name in seen:
            raise ValueError(
                f"'checks[{i}].name' must be unique within the case; "
                f"got {check.name!r} again (first at checks[{seen[check.name]}])"
            )
        seen[check.name] = i
    return checks


def built_cases(cases: Iterable[Case]) -> list[Case]:
    """The cases with their checks built and validated; an error names the case."""
    out = []
    for case in cases:
        try:
            checks = build_checks(case.checks)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"case {case.id!r}: {exc}") from None
        out.append(dataclasses.replace(case, checks=checks))
    return out


def _normalise(value: Any) -> Outcome:
    if value is None or value is True:
        return Outcome(True)
    if value is False:
        return Outcome(False, "failed")
    if isinstance(value, Outcome):
        return value
    if isinstance(value, Unscored):
        return Outcome(None, value.reason)
    if isinstance(value, str):
        return Outcome(False, value) if value else Outcome(True)
    raise TypeError(
        f"a check must return None/True, False, a problem string or Unscored; got {value!r}"
    )


def _result(check: Check, outcome: Outcome) -> CheckResult:
    evidence = outcome.evidence
    if evidence is not None and not isinstance(evidence, str):
        evidence = json.dumps(evidence, ensure_ascii=False, default=str)
    return CheckResult(check.name, check.type, outcome.passed, outcome.detail, evidence)


def _before(check: Check, sample: Sample) -> Outcome | None:
    """The outcome fixed before the check runs: for an incomplete sample, unless the check
    judges observations that exist either way (containment, settings)."""
    if sample.completed or getattr(check, "observes_incomplete", False):
        return None
    if check.applies:
        return Outcome(False, f"incomplete sample: {sample.status}")
    return Outcome(None, "not applicable to this case")


def _failed(exc: Exception) -> Outcome:
    return Outcome(False, f"check raised {type(exc).__name__}: {exc}")


def run_checks(checks: Iterable[CheckSpec], sample: Sample) -> list[CheckResult]:
    """Run every check on ``sample`` from synchronous code, also inside a running event loop
    (a notebook cell); see :func:`arun_checks`."""
    return run_sync(arun_checks(checks, sample))


async def arun_checks(checks: Iterable[CheckSpec], sample: Sample) -> list[CheckResult]:
    """Run every check on ``sample`` so that all problems are seen.

    An incomplete sample fails every applicable check (detail names its status) and
    leaves the others unscored; an exception inside a check is a failure naming it.
    A check may be async (the judge): it is awaited. Specs and callables are built first.
    """
    results = []
    for given in checks:
        check = cast(Check, given) if _is_check(given) else build_check(given)
        outcome = _before(check, sample)
        if outcome is None:
            try:
                value = check(sample)
                if inspect.isawaitable(value):
                    value = await value
                outcome = _normalise(value)
            except Exception as exc:
                outcome = _failed(exc)
        results.append(_result(check, outcome))
    return results


def as_check(function: Callable[..., Any], name: str | None = None) -> FunctionCheck:
    """Wrap a Python callable as a named check."""
    return FunctionCheck(function, name=name)
