"""A request's chat messages and OpenAI-named params in the pieces every other protocol
needs: the system text, the tool calls and results, the function tools, the stop list.

A request reaches every target in one form, the OpenAI chat one (``messages`` and params
named ``temperature``, ``max_tokens``, ``tools``...); each protocol module builds its own
body from these pieces, so a case's tools and tool history mean the same to every vendor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from evalnb._types import ToolCall, text_of

__all__ = [
    "FunctionTool",
    "arguments_of",
    "function_tools",
    "image_of",
    "merged_turns",
    "reply",
    "result_text",
    "split_system",
    "stop_list",
    "tool_choice",
]

#: ``(name, description, parameters)`` of a function tool.
FunctionTool = tuple[str, str | None, dict[str, Any]]


def split_system(messages: Iterable[Mapping[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """The system (and developer) messages' text, joined, and the other messages."""
    system, rest = [], []
    for message in messages:
        if message.get("role") in ("system", "developer"):
            system.append(text_of(message.get("content")))
        else:
            rest.append(dict(message))
    return ("\n\n".join(system) if system else None), rest


def arguments_of(call: Mapping[str, Any]) -> Any:
    """A chat tool call's arguments as a value (its JSON text parsed; text that is not
    JSON is kept as text under ``"input"``)."""
    raw = (call.get("function") or {}).get("arguments") or "{}"
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return {"input": raw}


_DATA_URL = re.compile(r"data:([\w/+.-]+);base64,(.*)", re.DOTALL)


def image_of(part: Any) -> tuple[str, str | None, str] | None:
    """A chat ``image_url`` part as ``(url, media type, base64 data)`` (the last two
    ``None`` and ``""`` when the URL is not a ``data:`` URL); ``None`` for any other part."""
    if not isinstance(part, Mapping) or part.get("type") != "image_url":
        return None
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        return None
    found = _DATA_URL.fullmatch(url)
    return (url, found.group(1), found.group(2)) if found else (url, None, "")


def result_text(content: Any) -> str:
    """A tool message's content as text."""
    return content if isinstance(content, str) else text_of(content) or json.dumps(content)


def function_tools(tools: Any) -> tuple[list[FunctionTool], list[Any]]:
    """The chat-form function tools (``{"type": "function", "function": {...}}``) as
    ``(name, description, parameters)``, and every other entry as it is (a vendor's own)."""
    functions: list[FunctionTool] = []
    native = []
    for tool in tools or ():
        spec = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
            parameters = spec.get("parameters") or {"type": "object", "properties": {}}
            functions.append((spec["name"], spec.get("description"), dict(parameters)))
        else:
            native.append(tool)
    return functions, native


def tool_choice(choice: Any) -> tuple[str, str | None] | None:
    """A chat ``tool_choice`` as ``(mode, name)``: ``("auto", None)``, ``("none", None)``,
    ``("required", None)`` or ``("function", NAME)``; ``None`` for any other value."""
    if choice in ("auto", "none", "required"):
        return str(choice), None
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if isinstance(name, str):
            return "function", name
    return None


def stop_list(stop: Any) -> list[Any]:
    """``stop`` as a list of sequences."""
    return [stop] if isinstance(stop, str) else list(stop)


def merged_turns(turns: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Consecutive turns of one role as one turn (its ``key`` lists joined): the protocols
    that want roles to alternate get several tool results as one user turn."""
    merged: list[dict[str, Any]] = []
    for turn in turns:
        if merged and merged[-1]["role"] == turn["role"]:
            merged[-1][key] = [*merged[-1][key], *turn[key]]
        else:
            merged.append(turn)
    return merged


def reply(
    text: str,
    calls: Iterable[ToolCall],
    *,
    model: str | None,
    finish: str | None,
    prompt: int | None,
    completion: int | None,
    total: int | None = None,
) -> dict[str, Any]:
    """:class:`~evalnb.Completion` fields of a reply; the total is the sum when the
    protocol gives none."""
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return {
        "text": text,
        "model": model,
        "finish_reason": finish,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "tool_calls": tuple(calls),
    }
