"""The JSON shapes importers read, checked where they are read, with a located line.

``fields(sample, {"epoch": EPOCH, "scores": OBJECT}, "log.eval: 'samples/1_epoch_1.json'")``
returns the sample when each named field is absent, null or of its kind, and raises
``CasesError("log.eval: 'samples/1_epoch_1.json': 'epoch' must be a whole number from 1;
got text 'x'")`` otherwise: a wrong type is one line naming the file, the record and the
field, never a traceback further on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evalnb._exceptions import CasesError

__all__ = [
    "ANY",
    "BOOL",
    "COUNT",
    "EPOCH",
    "INDEX",
    "LIST",
    "NUMBER",
    "OBJECT",
    "TEXT",
    "Kind",
    "either",
    "fields",
    "objects",
    "shown",
]


@dataclass(frozen=True)
class Kind:
    """A JSON value's expected kind: its name in an error and the test."""

    name: str
    test: Callable[[Any], bool]


def _whole(low: int, high: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


ANY = Kind("anything", lambda v: True)
TEXT = Kind("text", lambda v: isinstance(v, str))
OBJECT = Kind("an object", lambda v: isinstance(v, dict))
LIST = Kind("a list", lambda v: isinstance(v, list))
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
NUMBER = Kind(
    "a number",
    lambda v: (
        (isinstance(v, float) and v == v)
        or (isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63)
    ),
)
#: Token counts and the like: what the store keeps as a 64-bit integer.
COUNT = Kind("a whole number >= 0", _whole(0, 2**63 - 1))
#: A 0-based position (a promptfoo test or repeat index), as the store keeps repeats.
INDEX = Kind("a whole number >= 0", _whole(0, 2**31 - 2))
#: A 1-based epoch (Inspect), as the store keeps repeats.
EPOCH = Kind("a whole number >= 1", _whole(1, 2**31 - 1))


def either(*kinds: Kind) -> Kind:
    """A value of any of ``kinds``."""
    return Kind(" or ".join(k.name for k in kinds), lambda v: any(k.test(v) for k in kinds))


def shown(value: Any) -> str:
    """A value as an error shows it: its JSON kind and a short form (``text 'x'``,
    ``a list [1, 2]``, ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kind = "the number"
    if isinstance(value, str | dict | list):
        kind = (
            "text"
            if isinstance(value, str)
            else "an object"
            if isinstance(value, dict)
            else "a list"
        )
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{kind} {text}"


def fields(
    record: Any,
    kinds: Mapping[str, Kind],
    where: str,
    *,
    name: str = "the record",
    required: Iterable[str] = (),
    prefix: str = "",
) -> dict[str, Any]:
    """``record`` when it is an object whose fields in ``kinds`` are each absent, null or
    of their kind (``required`` ones present); ``where`` places the record in an error,
    ``name`` names it, ``prefix`` goes before each field's name (``output.``)."""
    if not isinstance(record, dict):
        raise CasesError(f"{where}: {name} must be an object; got {shown(record)}")
    for key in required:
        if record.get(key) is None:
            raise CasesError(f"{where}: {name} has no {prefix + key!r}")
    for key, kind in kinds.items():
        value = record.get(key)
        if value is not None and not kind.test(value):
            raise CasesError(f"{where}: {prefix + key!r} must be {kind.name}; got {shown(value)}")
    return record


def objects(value: Any, where: str, name: str) -> list[dict[str, Any]]:
    """``value`` (a list, or null for none) when each item is an object."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise CasesError(f"{where}: {name!r} must be a list; got {shown(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise CasesError(f"{where}: '{name}[{i}]' must be an object; got {shown(item)}")
    return value
