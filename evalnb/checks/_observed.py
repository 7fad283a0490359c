"""Checks on what a target observed around the answer: containment facts and the
settings of the first request actually sent.

These judge evidence that exists whether or not the sample completed, so they are
scored for incomplete samples too (a crashed run that leaked the marker must show it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from evalnb._exceptions import ArgumentError
from evalnb._types import Sample
from evalnb.checks._base import SpecCheck, Unscored, register

__all__ = ["MarkerAbsent", "RequestSettings", "WorkspaceUnchanged"]


def _facts(sample: Sample) -> dict[str, Any]:
    return json.loads(sample.facts) if sample.facts else {}


@dataclass(frozen=True)
class _Fact:
    """One containment fact a check reads: its name, the value that passes, the fact that
    lists where it failed, what a failure says before that list, why the check is unscored
    without the fact, and the check's label."""

    name: str
    good: bool
    places: str
    failure: str
    absent: str
    label: str


class _FactCheck(SpecCheck):
    """A check on one containment fact: unscored without it, passed when it is good."""

    observes_incomplete = True
    fact: ClassVar[_Fact]

    def label(self) -> str:
        return self.fact.label

    def __call__(self, sample: Sample) -> str | Unscored | None:
        facts, fact = _facts(sample), self.fact
        if fact.name not in facts:
            return Unscored(fact.absent)
        if bool(facts[fact.name]) == fact.good:
            return None
        return f"{fact.failure} " + ", ".join(facts.get(fact.places, []))


_CONTAINED = "not a contained Command run"


@register
class WorkspaceUnchanged(_FactCheck):
    """Fixtures and private files byte-identical, nothing added or removed.

    ``{"type": "workspace_unchanged"}``; facts come from
    :class:`evalnb.targets._containment.Containment`.
    """

    type = "workspace_unchanged"
    fact = _Fact(
        "workspace_unchanged",
        True,
        "workspace_changes",
        "workspace changed:",
        f"no workspace facts ({_CONTAINED})",
        "workspace",
    )


@register
class MarkerAbsent(_FactCheck):
    """The private marker was seen nowhere: ``{"type": "marker_absent"}``."""

    type = "marker_absent"
    fact = _Fact(
        "marker_seen",
        False,
        "marker_where",
        "private marker seen in",
        f"no containment facts ({_CONTAINED})",
        "private",
    )


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
