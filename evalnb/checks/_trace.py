"""Checks on tool evidence: what the model requested, and what the application executed.

Requested is not executed: ``required_action`` looks at executed tool outcomes,
``forbidden_action`` at requested calls. The evidence itself is read by
:mod:`evalnb._evidence`.
"""

from __future__ import annotations

import posixpath
from typing import Any

from evalnb._evidence import Evidence, evidence_from, parse_trace
from evalnb._exceptions import ArgumentError
from evalnb._types import Action, Sample
from evalnb.checks._base import SpecCheck, Unscored, register
from evalnb.checks._lexical import _flag, _text

__all__ = [
    "Evidence",
    "ForbiddenAction",
    "RequiredAction",
    "RequiredActions",
    "evidence_from",
    "parse_trace",
]


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
        # A call the model asked for that nothing ran (a chat target's tool calls): named,
        # so the reader sees the request was there and never became a read.
        ran = {(a.tool, _normpath(a.path)) for a in sample.executed}
        asked = [
            _describe(a)
            for a in sample.requested
            if self._matches(a) and (a.tool, _normpath(a.path)) not in ran
        ]
        unrun = f"; requested, never executed: {', '.join(asked)}" if asked else ""
        return f"no executed {self.label()}; executed: {seen}{unrun}"


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
        raise ArgumentError("must be a list of {tool, path, error} objects (empty: unscored)")
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise ArgumentError("must hold objects with a 'tool' name, 'path' and 'error'")
        if set(item) - {"tool", "path", "error"}:
            raise ArgumentError("must hold objects with only 'tool', 'path' and 'error'")
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
