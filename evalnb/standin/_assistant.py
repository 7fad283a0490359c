"""What a stand-in assistant is: one ``respond`` method that returns a ``Reply``.

The server owns everything HTTP (ids, usage, truncation, faults); an assistant only
decides what to say, drawing every random choice from the ``rng`` it is given so that
answers are reproducible.

>>> class Shout:
...     def respond(self, messages, params, rng):
...         return Reply(last_user_text(messages).upper())
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalnb._types import text_of as content_text

__all__ = ["Assistant", "Reply", "ToolRequest", "last_user_text", "text_of"]


@dataclass(frozen=True)
class ToolRequest:
    """A tool call the assistant asks for; the server gives it an id and OpenAI shape.

    ``arguments`` may be a mapping (serialised to a JSON string) or a string that is
    already JSON.
    """

    name: str
    arguments: Mapping[str, Any] | str


@dataclass(frozen=True)
class Reply:
    """What an assistant says: text, tool calls, or both (``content`` may be ``None``)."""

    content: str | None
    tool_calls: Sequence[ToolRequest] | None = None


#: A request's chat list, and its other body fields (``temperature``, ``tools``...).
Messages = Sequence[Mapping[str, Any]]
Params = Mapping[str, Any]


class Assistant(Protocol):
    """Anything with ``respond(messages, params, rng) -> Reply``.

    ``messages`` is the request's chat list, ``params`` the other body fields
    (``temperature``, ``tools``...), and ``rng`` a ``random.Random`` seeded for this
    exact draw: use it for every random choice and nothing else.
    """

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply: ...


def text_of(message: Mapping[str, Any]) -> str:
    """The text of one chat message, whether ``content`` is a string or a parts list."""
    return content_text(message.get("content"), sep="")


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last user message, or ``""`` when there is none."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return text_of(message)
    return ""
