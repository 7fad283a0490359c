"""Fault specs: how the stand-in misbehaves on purpose, so clients can be tested.

A fault is a mapping, sent per request as the body field ``standin_fault`` or given
server-wide as ``StandIn(faults=[...])`` / ``--faults JSON``::

    {"kind": "status_429", "times": 2, "rate": 1.0, "retry_after": 0.2}

=============  ===============================================================
kind           what the server does
=============  ===============================================================
latency        sleeps ``ms`` (default 100) and then answers normally
status_429     HTTP 429, ``Retry-After: <retry_after>`` (seconds, default 1)
overloaded     the protocol's overload status (Anthropic's 529, else 503), with
               ``Retry-After: <retry_after>``
status_500     HTTP 500 with an OpenAI-style error body
malformed      HTTP 200, ``application/json``, a body that is not JSON
drop           closes the connection without sending any response
empty          HTTP 200 in the normal shape with ``content: ""``
hang           sleeps ``ms`` (default 60,000) and then answers normally
=============  ===============================================================

``times`` (default -1, always): the fault hits the first N attempts of each distinct
body (identical bodies are retries), then the request goes through. ``rate`` (default
1.0): the share of distinct bodies the fault applies to, chosen by body hash and
server seed. ``model`` (server-wide faults only) limits the fault to one model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number, is_whole

__all__ = ["FAULT_KINDS", "Fault", "parse_fault", "parse_faults"]

FAULT_KINDS = (
    "latency",
    "status_429",
    "overloaded",
    "status_500",
    "malformed",
    "drop",
    "empty",
    "hang",
)

_DEFAULT_MS = {"latency": 100.0, "hang": 60_000.0}
_KEYS = ("kind", "times", "rate", "ms", "retry_after", "model")


@dataclass(frozen=True)
class Fault:
    """One validated fault spec."""

    kind: str
    times: int = -1
    rate: float = 1.0
    ms: float = 0.0
    retry_after: float = 1.0
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "times": self.times, "rate": self.rate}
        if self.kind in _DEFAULT_MS:
            out["ms"] = self.ms
        if self.kind in ("status_429", "overloaded"):
            out["retry_after"] = self.retry_after
        if self.model is not None:
            out["model"] = self.model
        return out


def _number(spec: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = spec.get(key, default)
    if not is_number(value, 0):
        raise ArgumentError(f"'{where}.{key}' must be a number >= 0; got {value!r}")
    return float(value)


def parse_fault(spec: Any, *, where: str = "fault", server_wide: bool = True) -> Fault:
    """Validate one fault mapping; errors name the field (``where.key``) and the value."""
    if not isinstance(spec, Mapping):
        raise ArgumentError(f'\'{where}\' must be an object like {{"kind": "drop"}}; got {spec!r}')
    allowed = _KEYS if server_wide else _KEYS[:-1]
    for key in spec:
        if key not in allowed:
            names = ", ".join(repr(k) for k in allowed)
            raise ArgumentError(f"'{where}' has unknown key {key!r}; allowed keys are {names}")
    kind = spec.get("kind")
    if kind not in FAULT_KINDS:
        kinds = ", ".join(repr(k) for k in FAULT_KINDS)
        raise ArgumentError(f"'{where}.kind' must be one of {kinds}; got {kind!r}")
    times = spec.get("times", -1)
    if not is_whole(times, -1):
        raise ArgumentError(
            f"'{where}.times' must be a whole number >= 0, or -1 for always; got {times!r}"
        )
    rate = spec.get("rate", 1.0)
    if not is_number(rate, 0, 1):
        raise ArgumentError(f"'{where}.rate' must be a number between 0 and 1; got {rate!r}")
    model = spec.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise ArgumentError(f"'{where}.model' must be a model name; got {model!r}")
    return Fault(
        kind=kind,
        times=times,
        rate=float(rate),
        ms=_number(spec, "ms", where, _DEFAULT_MS.get(kind, 0.0)),
        retry_after=_number(spec, "retry_after", where, 1.0),
        model=model,
    )


def parse_faults(specs: Any, *, where: str = "faults") -> tuple[Fault, ...]:
    """Validate server-wide faults: a list of fault mappings, one mapping, or JSON text."""
    if specs is None:
        return ()
    if isinstance(specs, str):
        try:
            specs = json.loads(specs)
        except ValueError as exc:
            raise ArgumentError(f"'{where}' is not valid JSON ({exc}); got {specs!r}") from None
    if isinstance(specs, Fault):
        return (specs,)
    if isinstance(specs, Mapping):
        specs = [specs]
    if not isinstance(specs, Sequence) or isinstance(specs, str | bytes):
        raise ArgumentError(f"'{where}' must be a list of fault objects; got {specs!r}")
    return tuple(
        spec if isinstance(spec, Fault) else parse_fault(spec, where=f"{where}[{i}]")
        for i, spec in enumerate(specs)
    )
