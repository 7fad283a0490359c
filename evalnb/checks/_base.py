"""The check registry and the two kinds of check object: from a spec, from a callable."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import copy
import inspect
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb._types import Case, Sample

__all__ = [
    "CHECK_TIMEOUT",
    "THRESHOLD",
    "Check",
    "CheckReturn",
    "CheckSpec",
    "CheckValue",
    "FunctionCheck",
    "Outcome",
    "SpecCheck",
    "Unscored",
    "call_signature",
    "check_types",
    "import_path",
    "on_a_thread",
    "register",
    "threshold_value",
]

_REGISTRY: dict[str, type[SpecCheck]] = {}


#: Seconds a check that runs user code (``python`` checks, Python callables, checks of
#: unknown kinds) may take before it fails, saying so; its ``timeout`` overrides this.
CHECK_TIMEOUT = 10.0


@dataclass(frozen=True)
class Unscored:
    """Returned by a check that does not apply to a sample: null, not a pass."""

    reason: str = "not applicable"


@dataclass(frozen=True)
class Outcome:
    """A check's full answer, when it has evidence to keep beside the outcome.

    A graded check gives its ``score`` in [0, 1] too (``passed`` is then ``score >=
    threshold``; left as None, the runner works it out from the check's threshold).
    """

    passed: bool | None
    detail: str = ""
    evidence: Any = None
    score: float | None = None


#: What a check returns: None or True (fine), False or a problem message (failed), a score in
#: [0, 1] (graded), :class:`Unscored` (does not apply) or an :class:`Outcome`.
CheckValue: TypeAlias = bool | str | float | Unscored | Outcome | None

#: A check's call gives a :data:`CheckValue`, or an awaitable of one (the judge's).
CheckReturn: TypeAlias = CheckValue | Awaitable[CheckValue]


#: The pass mark of a graded check without a ``threshold`` (DeepEval's default).
THRESHOLD = 0.5


def threshold_value(value: Any) -> float:
    """A spec's ``threshold``: a number in [0, 1]."""
    if not is_number(value, 0, 1):
        raise ArgumentError("must be a number between 0 and 1")
    return float(value)


@runtime_checkable
class Check(Protocol):
    """What the runner asks of a check: its identity and one method.

    ``applies`` is whether the check can be scored for its case at all; the call returns
    None/True (fine), False or a problem message (failed), a score in [0, 1] (graded),
    :class:`Unscored` or an :class:`Outcome`, or an awaitable of one of these (the judge).

    A check may also offer ``bind(case)``, returning the check for that case (the
    reference checks read its ``target``), ``threshold`` (the pass mark of its scores) and
    ``graded`` (True when it always scores: an incomplete sample then scores 0).
    """

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def spec(self) -> Mapping[str, Any]: ...

    @property
    def applies(self) -> bool: ...

    def __call__(self, sample: Sample) -> CheckReturn: ...


#: What may stand in a case's ``checks`` or a run's ``checks=``: a spec mapping
#: (``{"type": "contains", "text": "A-1042"}``), a plain callable, or a :class:`Check`.
CheckSpec: TypeAlias = Mapping[str, Any] | Callable[..., Any] | Check


def register(cls: type[SpecCheck]) -> type[SpecCheck]:
    """Class decorator: make ``cls.type`` usable in cases files."""
    if cls.type in _REGISTRY and _REGISTRY[cls.type] is not cls:
        raise ArgumentError(f"check type {cls.type!r} is already registered")
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
    implement ``__call__``. A check is named by its ``type`` unless the spec gives a
    ``name``: names never carry per-case values, so one check reads as one row across
    cases. A check that reads its case (``reads_case``) is bound to each case with
    :meth:`bind` before it runs; :meth:`prepare` reads and validates what it needs there.
    """

    type: ClassVar[str]
    required: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}
    optional: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}
    applies: bool = True
    reads_case: bool = False
    graded: bool = False
    threshold: float = THRESHOLD
    #: Built-in checks take time linear in the answer (a regex has its own timeout): they
    #: run inline. A check that runs user code sets False and runs under ``timeout``.
    bounded: bool = True

    def __init__(self, spec: Mapping[str, Any], *, where: str = "check", base: Path | None = None):
        known = {"type", "name", *self.required, *self.optional}
        for key in spec:
            if key not in known:
                allowed = ", ".join(repr(k) for k in sorted(known))
                raise ArgumentError(
                    f"'{where}.{key}' is not a field of a {self.type!r} check (fields: {allowed})"
                )
        values: dict[str, Any] = {}
        for key, convert in {**self.required, **self.optional}.items():
            if key not in spec:
                if key in self.required:
                    raise ArgumentError(f"'{where}.{key}' is required for a {self.type!r} check")
                continue
            try:
                values[key] = convert(spec[key])
            except ValueError as exc:
                raise ArgumentError(f"'{where}.{key}' {exc}; got {_describe(spec[key])}") from None
        name = spec.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise ArgumentError(f"'{where}.name' must be a non-empty string; got {_describe(name)}")
        self.values = values
        self.where = where
        self.base = base
        self.case: Case | None = None
        self.spec = dict(spec)
        self.validate(where)
        self.named = name is not None
        self.name = name or self.type

    def validate(self, where: str) -> None:  # noqa: B027  (a hook; most checks need none)
        """Check the fields together (each field alone is checked already)."""

    def bind(self, case: Case) -> SpecCheck:
        """This check for ``case``: itself when it reads nothing of the case, else a copy
        that has read (and validated) what it needs. A ``ValueError`` names the field."""
        if not self.reads_case:
            return self
        bound = copy.copy(self)
        bound.case = case
        bound.prepare(case)
        return bound

    def prepare(self, case: Case) -> None:  # noqa: B027  (a hook for checks that read the case)
        """Read what this check needs of ``case``; raise ``ValueError`` when it cannot."""

    def targets_of(self, case: Case) -> tuple[Any, ...]:
        """The reference answers of ``case``, for a check that compares with them; a case
        without a ``target`` is an error naming the check."""
        if case.target is None:
            raise ArgumentError(
                f"'{self.where}' ({self.type}) compares with the case's 'target', and the case "
                "has none"
            )
        return tuple(case.targets)

    def bound_case(self) -> Case:
        """The case this check was bound to (an error when it was built without one)."""
        if self.case is None:
            raise RuntimeError(
                f"the {self.type!r} check reads its case: build it with the case "
                "(build_checks(specs, case=...)) or let the runner bind it"
            )
        return self.case

    def label(self) -> str:
        """A short description of what the check looks for (shown in its repr)."""
        return ""

    @abc.abstractmethod
    def __call__(self, sample: Sample) -> CheckReturn:
        """None/True when fine; False, a problem string or Unscored otherwise."""

    def __repr__(self) -> str:
        label = self.label()
        return f"<{type(self).__name__} {self.name!r}{f' {label}' if label else ''}>"


def call_signature(
    function: Callable[..., Any], keywords: Collection[str] = ()
) -> tuple[bool, bool]:
    """Whether ``function`` takes the sample (a second positional parameter, or
    ``*args``, besides the ``keywords`` it is given) and whether it takes ``case``."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False, False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        and p.name != "case"
        and p.name not in keywords
    ]
    takes_sample = len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional)
    takes_case = any(
        p.name == "case" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters
    )
    return takes_sample, takes_case


def import_path(function: Callable[..., Any]) -> str:
    """``module:qualname`` of a function; only a module-level one can be imported again."""
    module = getattr(function, "__module__", None) or "?"
    return f"{module}:{getattr(function, '__qualname__', type(function).__name__)}"


class FunctionCheck:
    """A Python callable as a check: ``fn(answer)`` or ``fn(answer, sample)``.

    It returns None/True when fine, False or a short problem message, or a score in
    [0, 1] (passing at ``threshold``; giving one makes the check ``graded``). Its spec
    records the function's import path, ``module:qualname``: ``evalnb score`` rebuilds a
    module-level function from it, and refuses, naming it, a lambda or a local function.
    """

    type = "python"
    applies = True
    bounded = False

    def __init__(
        self,
        function: Callable[..., Any],
        name: str | None = None,
        *,
        threshold: float | None = None,
        timeout: float | None = None,
    ):
        if not callable(function):
            raise TypeError(f"'function' must be callable; got {function!r}")
        if threshold is not None and not is_number(threshold, 0, 1):
            raise ArgumentError(f"'threshold' must be a number between 0 and 1; got {threshold!r}")
        self.function = function
        self.named = name is not None
        self.name = name or getattr(function, "__name__", type(function).__name__)
        if timeout is not None and not is_number(timeout, 0, open_low=True):
            raise ArgumentError(f"'timeout' must be a number of seconds > 0; got {timeout!r}")
        self.timeout = CHECK_TIMEOUT if timeout is None else float(timeout)
        self.graded = threshold is not None
        self.threshold = THRESHOLD if threshold is None else float(threshold)
        self.spec: dict[str, Any] = {
            "type": "python",
            "name": self.name,
            "function": import_path(function),
        }
        if threshold is not None:
            self.spec["threshold"] = self.threshold
        self._takes_sample, _ = call_signature(function)

    def __call__(self, sample: Sample) -> CheckReturn:
        # A user's function may return anything: the runner checks the value it gets.
        if self._takes_sample:
            return cast(CheckReturn, self.function(sample.answer or "", sample))
        return cast(CheckReturn, self.function(sample.answer or ""))

    def __repr__(self) -> str:
        return f"<FunctionCheck {self.name!r}>"


T = TypeVar("T")


async def on_a_thread(function: Callable[[], T], seconds: float | None, name: str) -> T:
    """``function()`` on a daemon thread of its own (never a pool's, where slow calls would
    queue up the quick ones), awaited for at most ``seconds`` without holding up the event
    loop, other samples or Ctrl-C. Past ``seconds`` this raises ``TimeoutError``; the thread
    cannot be stopped and runs on in the background (a daemon never holds the process open).
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(value)
        else:
            done.set_exception(error)

    def work() -> None:
        try:
            value, error = function(), None
        except BaseException as exc:  # handed to the awaiting task
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop ended while it ran on
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await asyncio.wait_for(done, seconds)
