"""The stand-in's assistants by model name; adding one is one ``register_assistant`` call."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from evalnb._exceptions import ArgumentError
from evalnb.standin._assistant import Assistant
from evalnb.standin._echo import Echo
from evalnb.standin._extractor import Extractor
from evalnb.standin._judge import Judge
from evalnb.standin._notes import NotesAssistant
from evalnb.standin._quiz import Quiz
from evalnb.standin._shop import SLIP_RATES, ShopAssistant

__all__ = ["assistants", "register_assistant"]

_REGISTRY: dict[str, Assistant] = {
    **{name: ShopAssistant(slip_rate=rate) for name, rate in SLIP_RATES.items()},
    "extractor": Extractor(),
    "echo": Echo(),
    "notes": NotesAssistant(),
    "judge": Judge(),
    "quiz": Quiz(),
}


def assistants() -> Mapping[str, Assistant]:
    """Every assistant a stand-in serves, by model name (a live, read-only view)."""
    return MappingProxyType(_REGISTRY)


def register_assistant(name: str, assistant: Assistant, *, replace: bool = False) -> None:
    """Serve ``assistant`` as model ``name`` from every stand-in in this process.

    A stand-in started with ``process=True`` runs in another interpreter and only
    knows the built-in assistants.
    """
    if not isinstance(name, str) or not name or name != name.strip():
        raise ArgumentError(f"'name' must be a non-empty string without outer spaces; got {name!r}")
    if not callable(getattr(assistant, "respond", None)):
        raise TypeError(
            f"'assistant' must have a respond(messages, params, rng) method; "
            f"got {type(assistant).__name__}"
        )
    if name in _REGISTRY and not replace:
        raise ArgumentError(
            f"an assistant named {name!r} is already registered; pass replace=True to swap it"
        )
    _REGISTRY[name] = assistant
