"""Checks: what is tested on every sample, and how outcomes are recorded.

A check is any object with ``name``, ``type``, ``spec`` (JSON-ready), ``applies``
(whether it can be scored for its case at all) and one method, ``__call__(sample)``.
Check specs in a cases file name a registered ``type``; other issues add types with
:func:`register`. Plain Python callables become :class:`FunctionCheck`.

Outcomes follow REFERENCE B: ``None`` or ``True`` means fine, ``False`` or a short
problem message means a failure, :class:`Unscored` means the check does not apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from evalnb._types import CheckResult, Sample
from evalnb.checks import lexical as _lexical  # noqa: F401  (registers the lexical checks)
from evalnb.checks._base import FunctionCheck, SpecCheck, Unscored, check_types, register

__all__ = [
    "FunctionCheck",
    "SpecCheck",
    "Unscored",
    "build_check",
    "build_checks",
    "check_types",
    "register",
    "run_checks",
]


def build_check(spec: Any, *, where: str = "check") -> Any:
    """Turn a spec mapping, a callable or a ready check object into a check object.

    Errors are ``ValueError`` naming the field: ``'checks[1].type' must be one of ...``.
    """
    if isinstance(spec, Mapping):
        kind = spec.get("type")
        types = check_types()
        if kind not in types:
            allowed = ", ".join(repr(name) for name in sorted(types))
            raise ValueError(f"'{where}.type' must be one of {allowed}; got {kind!r}")
        return types[kind](spec, where=where)
    if all(hasattr(spec, attr) for attr in ("name", "type", "spec", "applies")) and callable(spec):
        return spec
    if callable(spec):
        return FunctionCheck(spec)
    raise TypeError(f"'{where}' must be a check spec (mapping) or a callable; got {spec!r}")


def build_checks(specs: Iterable[Any]) -> tuple[Any, ...]:
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


def _normalise(value: Any) -> tuple[bool | None, str]:
    if value is None or value is True:
        return True, ""
    if value is False:
        return False, "failed"
    if isinstance(value, Unscored):
        return None, value.reason
    if isinstance(value, str):
        return (False, value) if value else (True, "")
    raise TypeError(
        f"a check must return None/True, False, a problem string or Unscored; got {value!r}"
    )


def run_checks(checks: Iterable[Any], sample: Sample) -> list[CheckResult]:
    """Run every check on ``sample`` so that all problems are seen.

    An incomplete sample fails every applicable check (detail names its status) and
    leaves the others unscored; an exception inside a check is a failure naming it.
    """
    results = []
    for check in checks:
        if not sample.completed:
            if check.applies:
                outcome, detail = False, f"incomplete sample: {sample.status}"
            else:
                outcome, detail = None, "not applicable to this case"
        else:
            try:
                outcome, detail = _normalise(check(sample))
            except Exception as exc:  # a broken check is a problem to see, not a crash
                outcome, detail = False, f"check raised {type(exc).__name__}: {exc}"
        results.append(CheckResult(check.name, check.type, outcome, detail))
    return results


def as_check(function: Callable[..., Any], name: str | None = None) -> FunctionCheck:
    """Wrap a Python callable as a named check."""
    return FunctionCheck(function, name=name)
