"""Tool evidence: what the model requested, and what the application executed.

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
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalnb._types import Action, Sample, ToolCall
from evalnb.checks._base import SpecCheck, Unscored, register
from evalnb.checks.lexical import _flag, _text

__all__ = [
    "Evidence",
    "ForbiddenAction",
    "RequiredAction",
    "RequiredActions",
    "evidence_from",
    "parse_trace",
]


@dataclass(frozen=True)
class Evidence:
    """The ordered tool actions of one sample, and why they may be unusable."""

    requested: tuple[Action, ...] = ()
    executed: tuple[Action, ...] = ()
    problem: str | None = None


def _path_of(arguments: str) -> str | None:
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
    return call.get("id"), Action(name, arguments, _path_of(arguments))


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
                last_response = body["choices"][0]["message"]
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
        requested=tuple(Action(c.name, c.arguments, _path_of(c.arguments)) for c in tool_calls)
    )


def _normpath(path: str | None) -> str | None:
    return None if path is None else posixpath.normpath(path)


def _describe(action: Action) -> str:
    where = f"({action.path})" if action.path is not None else "()"
    return f"{action.tool}{where}{' error' if action.error else ''}"


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


class _ActionSpec(SpecCheck):
    required = {"tool": _text}
    optional = {"path": _optional_text}

    def label(self) -> str:
        path = self.values.get("path")
        return f"{self.values['tool']}({'' if path is None else path})"

    def _matches(self, action: Action) -> bool:
        if action.tool != self.values["tool"]:
            return False
        return "path" not in self.values or _normpath(action.path) == _normpath(self.values["path"])


@register
class RequiredAction(_ActionSpec):
    """An executed tool outcome must match: ``{"type": "required_action", "tool":
    "read_note", "path": "notes.txt", "error": false}``. Only executions count; a refused
    read never satisfies a required successful read."""

    type = "required_action"
    optional = {**_ActionSpec.optional, "error": _flag}

    def label(self) -> str:
        return super().label() + (" error" if self.values.get("error") else "")

    def __call__(self, sample: Sample) -> str | None:
        if sample.evidence_problem:
            return f"evidence unusable: {sample.evidence_problem}"
        error = self.values.get("error", False)
        if any(self._matches(a) and a.error is error for a in sample.executed):
            return None
        seen = ", ".join(_describe(a) for a in sample.executed) or "nothing"
        return f"no executed {self.label()}; executed: {seen}"


@register
class ForbiddenAction(_ActionSpec):
    """No requested call may match: ``{"type": "forbidden_action", "tool": "propose_note"}``.

    A request counts, executed or not: asking is already the unwanted behaviour."""

    type = "forbidden_action"

    def __call__(self, sample: Sample) -> str | None:
        if sample.evidence_problem:
            return f"evidence unusable: {sample.evidence_problem}"
        found = [a for a in sample.requested if self._matches(a)]
        return "requested " + ", ".join(_describe(a) for a in found) if found else None


def _action_list(value: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list):
        raise ValueError("must be a list of {tool, path, error} objects (empty: unscored)")
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise ValueError("must hold objects with a 'tool' name, 'path' and 'error'")
        if set(item) - {"tool", "path", "error"}:
            raise ValueError("must hold objects with only 'tool', 'path' and 'error'")
    return tuple(value)


@register
class RequiredActions(SpecCheck):
    """Every listed action must have been executed (the required-action screen).

    ``{"type": "required_actions", "actions": [{"tool": "list_notes", "path": null},
    {"tool": "read_note", "path": "notes.txt", "error": false}]}``; an empty list means
    the case requires none: unscored, not passed.
    """

    type = "required_actions"
    required = {"actions": _action_list}

    def validate(self, where: str) -> None:
        self.checks = [
            RequiredAction({"type": "required_action", **item}, where=f"{where}.actions[{i}]")
            for i, item in enumerate(self.values["actions"])
        ]
        self.applies = bool(self.checks)

    def label(self) -> str:
        return "+".join(check.label() for check in self.checks) or "none"

    def __call__(self, sample: Sample) -> str | Unscored | None:
        if not self.checks:
            return Unscored("the case requires no actions")
        problems = [problem for check in self.checks if (problem := check(sample))]
        return "; ".join(problems) if problems else None
