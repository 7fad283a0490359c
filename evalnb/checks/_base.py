"""The check registry and the two kinds of check object: from a spec, from a callable."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeAlias, runtime_checkable

from evalnb._types import Sample

__all__ = [
    "Check",
    "CheckSpec",
    "FunctionCheck",
    "Outcome",
    "SpecCheck",
    "Unscored",
    "check_types",
    "register",
]

_REGISTRY: dict[str, type[SpecCheck]] = {}


@dataclass(frozen=True)
class Unscored:
    """Returned by a check that does not apply to a sample: null, not a pass."""

    reason: str = "not applicable"


@dataclass(frozen=True)
class Outcome:
    """A check's full answer, when it has evidence to keep beside the outcome."""

    passed: bool | None
    detail: str = ""
    evidence: Any = None


@runtime_checkable
class Check(Protocol):
    """What the runner asks of a check: its identity and one method.

    ``applies`` is whether the check can be scored for its case at all; the call returns
    None/True (fine), False or a problem message (failed), :class:`Unscored` or an
    :class:`Outcome`, or an awaitable of one of these (the judge).
    """

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def spec(self) -> Mapping[str, Any]: ...

    @property
    def applies(self) -> bool: ...

    def __call__(self, sample: Sample) -> Any: ...


#: What may stand in a case's ``checks`` or a run's ``checks=``: a spec mapping
#: (``{"type": "contains", "text": "A-1042"}``), a plain callable, or a :class:`Check`.
CheckSpec: TypeAlias = Mapping[str, Any] | Callable[..., Any] | Check


def register(cls: type[SpecCheck]) -> type[SpecCheck]:
    """Class decorator: make ``cls.type`` usable in cases files."""
    if cls.type in _REGISTRY and _REGISTRY[cls.type] is not cls:
        raise ValueError(f"check type {cls.type!r} is already registered")
    _REGISTRY[cls.type] = cls
    return cls


def check_types() -> Mapping[str, type[SpecCheck]]:
    """Every registered check type, by name."""
    return dict(_REGISTRY)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


class SpecCheck(abc.ABC):
    """Base of checks described by a spec mapping.

    Subclasses set ``type``, declare ``required`` and ``optional`` fields with a
    converter each (which raises ``ValueError("must be ...")`` on a bad value), and
    implement ``__call__`` and ``label``.
    """

    type: ClassVar[str]
    required: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}
    optional: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}
    applies: bool = True

    def __init__(self, spec: Mapping[str, Any], *, where: str = "check"):
        known = {"type", "name", *self.required, *self.optional}
        for key in spec:
            if key not in known:
                allowed = ", ".join(repr(k) for k in sorted(known))
                raise ValueError(
                    f"'{where}.{key}' is not a field of a {self.type!r} check (fields: {allowed})"
                )
        values: dict[str, Any] = {}
        for key, convert in {**self.required, **self.optional}.items():
            if key not in spec:
                if key in self.required:
                    raise ValueError(f"'{where}.{key}' is required for a {self.type!r} check")
                continue
            try:
                values[key] = convert(spec[key])
            except ValueError as exc:
                raise ValueError(f"'{where}.{key}' {exc}; got {_describe(spec[key])}") from None
        name = spec.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"'{where}.name' must be a non-empty string; got {_describe(name)}")
        self.values = values
        self.validate(where)
        self.spec = dict(spec)
        self.name = name or f"{self.type}:{self.label()}"

    def validate(self, where: str) -> None:  # noqa: B027  (a hook; most checks need none)
        """Check the fields together (each field alone is checked already)."""

    @abc.abstractmethod
    def label(self) -> str:
        """A short, stable description used in the default name."""

    @abc.abstractmethod
    def __call__(self, sample: Sample) -> Any:
        """None/True when fine; False, a problem string or Unscored otherwise."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionCheck:
    """A Python callable as a check: ``fn(answer)`` or ``fn(answer, sample)``.

    It returns None/True when fine, or False or a short problem message.
    """

    type = "python"
    applies = True

    def __init__(self, function: Callable[..., Any], name: str | None = None):
        if not callable(function):
            raise TypeError(f"'function' must be callable; got {function!r}")
        self.function = function
        self.name = name or getattr(function, "__name__", type(function).__name__)
        self.spec = {
            "type": "python",
            "name": self.name,
            "function": f"{getattr(function, '__module__', '?')}."
            f"{getattr(function, '__qualname__', type(function).__name__)}",
        }
        try:
            parameters = inspect.signature(function).parameters.values()
            positional = [
                p
                for p in parameters
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
            ]
            self._takes_sample = len(positional) >= 2 or any(
                p.kind == p.VAR_POSITIONAL for p in positional
            )
        except (TypeError, ValueError):
            self._takes_sample = False

    def __call__(self, sample: Sample) -> Any:
        if self._takes_sample:
            return self.function(sample.answer or "", sample)
        return self.function(sample.answer or "")

    def __repr__(self) -> str:
        return f"<FunctionCheck {self.name!r}>"
