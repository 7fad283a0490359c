"""Checks on what a target observed around the answer: containment facts and the
settings of the first request actually sent.

These judge evidence that exists whether or not the sample completed, so they are
scored for incomplete samples too (a crashed run that leaked the marker must show it).
"""

from __future__ import annotations

import json
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._types import Sample
from evalnb.checks._base import SpecCheck, Unscored, register

__all__ = ["MarkerAbsent", "RequestSettings", "WorkspaceUnchanged"]


def _facts(sample: Sample) -> dict[str, Any]:
    return json.loads(sample.facts) if sample.facts else {}


@register
class WorkspaceUnchanged(SpecCheck):
    """Fixtures and private files byte-identical, nothing added or removed.

    ``{"type": "workspace_unchanged"}``; facts come from
    :class:`evalnb.targets._containment.Containment`.
    """

    type = "workspace_unchanged"
    observes_incomplete = True

    def label(self) -> str:
        return "workspace"

    def __call__(self, sample: Sample) -> str | Unscored | None:
        facts = _facts(sample)
        if "workspace_unchanged" not in facts:
            return Unscored("no workspace facts (not a contained Command run)")
        if facts["workspace_unchanged"]:
            return None
        return "workspace changed: " + ", ".join(facts.get("workspace_changes", []))


@register
class MarkerAbsent(SpecCheck):
    """The private marker was seen nowhere: ``{"type": "marker_absent"}``."""

    type = "marker_absent"
    observes_incomplete = True

    def label(self) -> str:
        return "private"

    def __call__(self, sample: Sample) -> str | Unscored | None:
        facts = _facts(sample)
        if "marker_seen" not in facts:
            return Unscored("no containment facts (not a contained Command run)")
        if not facts["marker_seen"]:
            return None
        return "private marker seen in " + ", ".join(facts.get("marker_where", []))


def _settings(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ArgumentError("must be an object of setting: value (dotted names reach inside)")
    return value


def _lookup(body: Any, dotted: str) -> tuple[bool, Any]:
    for part in dotted.split("."):
        if not isinstance(body, dict) or part not in body:
            return False, None
        body = body[part]
    return True, body


def _first_request(sample: Sample) -> Any:
    for line in (sample.trace or "").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            return None
        if isinstance(event, dict) and event.get("event") == "request":
            return event.get("body")
    if sample.trace is None and sample.request:
        return json.loads(sample.request)
    return None


@register
class RequestSettings(SpecCheck):
    """The first request actually sent used the settings asked for.

    ``{"type": "request_settings", "expect": {"temperature": 0.2, "max_tokens": 1024,
    "stream": false}, "if_present": {"options.num_ctx": 8192}}``: ``expect`` must be in
    the body with those values; ``if_present`` is checked only where the body has it
    (a setting not every server takes). The body comes from the trace's first request,
    or the sample's own request for an HTTP target.
    """

    type = "request_settings"
    optional = {"expect": _settings, "if_present": _settings}
    observes_incomplete = True

    def validate(self, where: str) -> None:
        if not self.values:
            raise ArgumentError(f"'{where}' needs 'expect', 'if_present' or both")

    def label(self) -> str:
        return "settings"

    def __call__(self, sample: Sample) -> str | Unscored | None:
        body = _first_request(sample)
        if body is None:
            return "no request found to compare"
        problems = []
        for dotted, wanted in self.values.get("expect", {}).items():
            present, value = _lookup(body, dotted)
            if not present:
                problems.append(f"{dotted} missing (expected {json.dumps(wanted)})")
            elif value != wanted:
                problems.append(f"{dotted}={json.dumps(value)}, expected {json.dumps(wanted)}")
        for dotted, wanted in self.values.get("if_present", {}).items():
            present, value = _lookup(body, dotted)
            if present and value != wanted:
                problems.append(f"{dotted}={json.dumps(value)}, expected {json.dumps(wanted)}")
        return "; ".join(problems) if problems else None
