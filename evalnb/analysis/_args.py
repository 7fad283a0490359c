"""Argument checks shared by the analysis functions, so every error reads the same way."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec, TypeVar, cast

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number, is_whole

T = TypeVar("T")
P = ParamSpec("P")

INTERVAL_METHODS = ("wilson", "agresti_coull", "beta", "jeffreys")


def choice(name: str, value: Any, allowed: Iterable[T]) -> T:
    """``value`` when it is one of ``allowed``; otherwise an ArgumentError naming all three."""
    allowed = tuple(allowed)
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise ArgumentError(f"'{name}' must be one of {options}; got {value!r}")
    return cast(T, value)


def level(value: Any) -> float:
    """A confidence level strictly between 0 and 1."""
    if not is_number(value, 0, 1, open_low=True, open_high=True):
        raise ArgumentError(f"'level' must be a number between 0 and 1 (e.g. 0.95); got {value!r}")
    return float(value)


def names(name: str, value: Any) -> list[str]:
    """A column name or a sequence of them as a list (None is an empty list)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        if len(set(value)) != len(value):
            raise ArgumentError(f"'{name}' must not repeat a name; got {list(value)!r}")
        return list(value)
    raise TypeError(f"'{name}' must be a column name or a list of them; got {value!r}")


def positive_ints(name: str, value: Any) -> list[int]:
    """One positive integer or a sequence of them, as a list."""
    values = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
    for v in values:
        if not is_whole(v, 1):
            raise ArgumentError(
                f"'{name}' must be a positive integer or a list of them; got {value!r}"
            )
    return list(values)


def fraction(name: str, value: Any) -> float:
    """A number in [0, 1]."""
    if not is_number(value, 0, 1):
        raise ArgumentError(f"'{name}' must be a number between 0 and 1; got {value!r}")
    return float(value)


def pair(a: Any, b: Any, values: Sequence[str], what: str = "variants") -> tuple[str, str]:
    """The two sides of a comparison: ``a`` and ``b`` as given, or the only two ``values``."""
    if a is None and b is None:
        if len(values) != 2:
            raise ArgumentError(
                f"'a' and 'b' must name the two {what} to compare (the data has "
                f"{', '.join(map(repr, values)) or 'none'}); got a=None, b=None"
            )
        a, b = values
    a = choice("a", a, values)
    b = choice("b", b, values)
    if a == b:
        raise ArgumentError(f"'a' and 'b' must differ; got a={a!r}, b={b!r}")
    return a, b


def own_warnings(caught: Iterable[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    """The analysis's own warnings among ``caught``; the store's (a damaged part left out, a
    partial scoring) are warned again, to reach the user rather than a note."""
    from evalnb.store import DamagedRunWarning, PartialScoringWarning

    own = []
    for w in caught:
        if issubclass(w.category, DamagedRunWarning | PartialScoringWarning):
            warnings.warn(w.message, w.category, stacklevel=3)
        else:
            own.append(w)
    return own


def renamed(**replaced: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Refuse keywords a function no longer takes, saying what to write instead
    (``old="a= (the baseline run)"``). A call written for an old argument order must fail
    loudly, never run with its arguments read the other way round."""

    def decorate(function: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(function)
        def checked(*args: P.args, **kwargs: P.kwargs) -> T:
            used = [name for name in replaced if name in kwargs]
            if used:
                raise ArgumentError(
                    f"{function.__name__}() no longer takes {' or '.join(map(repr, used))}: "
                    f"write {' and '.join(replaced[name] for name in used)} instead"
                )
            return function(*args, **kwargs)

        return checked

    return decorate
