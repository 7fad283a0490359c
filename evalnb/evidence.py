"""Evidence read from what a target returned: tool actions from a harness trace, and the
normalised and canonical forms of an answer. Targets, checks and the analysis share it.

Requested is not executed. A harness trace (JSONL, one event a line) repeats the whole
history in every request, so the conversation is rebuilt once from the requests'
messages (each message counted at its position, however many requests repeat it) and
the last response. Every tool message is then matched to the call it answers: by
``tool_call_id`` when given, otherwise to the earliest unanswered call before it.
Broken evidence is reported in ``problem``, never guessed around.

Trace events: ``{"event": "request", "body": {"messages": [...]}}``,
``{"event": "response", "body": <chat completion>}`` (others are ignored). A tool
result's content is JSON ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ...}``;
plain text counts as an error when it starts with "error".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalnb._types import Action, ToolCall

__all__ = [
    "Evidence",
    "canonical_answer",
    "evidence_from",
    "extract_json",
    "normalise_answer",
    "parse_trace",
    "path_of",
]


@dataclass(frozen=True)
class Evidence:
    """The ordered tool actions of one sample, and why they may be unusable."""

    requested: tuple[Action, ...] = ()
    executed: tuple[Action, ...] = ()
    problem: str | None = None


def path_of(arguments: str) -> str | None:
    try:
        value = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return None
    path = value.get("path") if isinstance(value, dict) else None
    return path if isinstance(path, str) else None


def _request_of(call: Any) -> tuple[str | None, Action]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments) if arguments is not None else ""
    name = function.get("name")
    if not isinstance(name, str):
        raise ValueError(f"tool call without a function name: {json.dumps(call)[:80]}")
    return call.get("id"), Action(name, arguments, path_of(arguments))


def _is_error(content: Any) -> bool:
    text = content if isinstance(content, str) else json.dumps(content)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text.strip().lower().startswith("error")
    if isinstance(value, dict):
        return value.get("ok") is False or "error" in value
    return False


def _conversation(lines: Sequence[str]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    last_response: dict[str, Any] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"trace line {number} is not JSON ({exc.msg})") from None
        if not isinstance(event, dict):
            raise ValueError(f"trace line {number} is not an object")
        kind, body = event.get("event"), event.get("body")
        if kind == "request":
            messages = body.get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list):
                raise ValueError(f"trace line {number}: request without a messages list")
            for i, message in enumerate(messages):
                if i < len(history):
                    if message != history[i]:
                        raise ValueError(
                            f"trace line {number}: request rewrites message {i} of the history"
                        )
                else:
                    history.append(message)
            last_response = None
        elif kind == "response":
            try:
                last_response = None if body is None else body["choices"][0]["message"]
            except (KeyError, IndexError, TypeError):
                last_response = None  # an HTTP error body: nothing was said
    if last_response is not None:
        history.append(last_response)
    return history


def parse_trace(text: str, truncated: bool = False) -> Evidence:
    """Requested and executed actions from a JSONL trace, in order."""
    if truncated:
        return Evidence(problem="trace truncated: the evidence is incomplete")
    try:
        conversation = _conversation(text.splitlines())
        requested: list[Action] = []
        executed: list[Action] = []
        pending: list[tuple[str | None, Action]] = []
        for i, message in enumerate(conversation):
            role = message.get("role") if isinstance(message, dict) else None
            if role == "assistant":
                calls = [_request_of(call) for call in message.get("tool_calls") or ()]
                requested.extend(action for _, action in calls)
                pending = calls
            elif role == "tool":
                wanted = message.get("tool_call_id")
                match = next((p for p in pending if wanted is not None and p[0] == wanted), None)
                if match is None and pending and (wanted is None or pending[0][0] is None):
                    match = pending[0]
                if match is None:
                    raise ValueError(f"tool result at message {i} answers no preceding call")
                pending.remove(match)
                content = message.get("content")
                result = content if isinstance(content, str) else json.dumps(content)
                call = match[1]
                executed.append(
                    Action(call.tool, call.arguments, call.path, _is_error(content), result)
                )
    except ValueError as exc:
        return Evidence(problem=str(exc))
    return Evidence(tuple(requested), tuple(executed))


def evidence_from(trace: str | None, truncated: bool, tool_calls: Sequence[ToolCall]) -> Evidence:
    """Evidence of one sample: from its trace, or else from the calls in its response."""
    if trace is not None:
        return parse_trace(trace, truncated)
    return Evidence(
        requested=tuple(Action(c.name, c.arguments, path_of(c.arguments)) for c in tool_calls)
    )


def extract_json(answer: str) -> tuple[dict[str, Any] | None, str]:
    """Parse the first ``{`` to the last ``}`` as a JSON object.

    Returns ``(object, "")`` or ``(None, problem)``. Prose around the object is
    allowed; anything else is reported, never guessed.
    """
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end < start:
        return None, "no JSON object in the answer"
    try:
        value = json.loads(answer[start : end + 1])
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"JSON is a {type(value).__name__}, not an object"
    return value, ""


def normalise_answer(text: str | None) -> str | None:
    """Strip, collapse internal white space and casefold (None stays None)."""
    if text is None:
        return None
    return " ".join(text.split()).casefold()


def canonical_answer(answer: str | None, expect_keys: Sequence[str] | None = None) -> str | None:
    """The form two answers must share to count as the same.

    With ``expect_keys``: the expected keys only, sorted, as JSON (``None`` when the
    answer has no JSON object or lacks a key, so schema failures never agree). Without:
    the answer with white space collapsed and case folded.
    """
    if answer is None:
        return None
    if not expect_keys:
        return normalise_answer(answer)
    value, _ = extract_json(answer)
    if value is None or any(key not in value for key in expect_keys):
        return None
    return json.dumps({key: value[key] for key in expect_keys}, sort_keys=True)
