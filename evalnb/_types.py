"""The values that flow through a run: cases, variants, requests, completions, samples."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "STATUSES",
    "Action",
    "Case",
    "CheckResult",
    "Completion",
    "Request",
    "Sample",
    "ToolCall",
    "Variant",
]

#: Every status a sample can have. Only ``completed`` means the target gave a usable,
#: non-empty answer; the others are kinds of incomplete samples.
STATUSES = ("completed", "error", "timeout", "empty", "budget", "malformed")

SPLITS = ("dev", "heldout")


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


def _spec_of(check: Any) -> Any:
    """A check as JSON-ready data: a spec as given, else the check object's own ``spec``."""
    if isinstance(check, Mapping):
        return dict(check)
    spec = getattr(check, "spec", None)
    if spec is not None:
        return spec
    return {"type": "python", "name": getattr(check, "__name__", type(check).__name__)}


@dataclass(frozen=True)
class Case:
    """One thing to ask, and how to check the answers.

    ``checks`` holds check specs (``{"type": "contains", "text": "A-1042"}``), plain
    callables or check objects, kept as given: the runner builds and validates them
    (:func:`evalnb.checks.build_checks`) before anything runs, and :func:`evalnb.load_cases`
    does so as it reads a file, so a bad spec is reported with its line.

    >>> Case("greet", prompt="Say hello", checks=[{"type": "contains", "text": "hello"}])
    Case(id='greet', ...)
    """

    id: str
    prompt: str | None = None
    messages: Sequence[Mapping[str, Any]] | None = None
    fixtures: Mapping[str, str] = field(default_factory=dict)
    checks: Sequence[Any] = ()
    review: str | None = None
    group: str | None = None
    split: str = "dev"
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    expect_keys: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Case 'id' must be a non-empty string; got {self.id!r}")
        if (self.prompt is None) == (self.messages is None):
            raise ValueError(
                f"Case {self.id!r} needs exactly one of 'prompt' or 'messages'; "
                f"got {'both' if self.prompt is not None else 'neither'}"
            )
        if self.split not in SPLITS:
            raise ValueError(
                f"Case {self.id!r}: 'split' must be one of {SPLITS}; got {self.split!r}"
            )
        set_ = object.__setattr__
        if self.messages is not None:
            set_(self, "messages", tuple(MappingProxyType(dict(m)) for m in self.messages))
        set_(self, "fixtures", _frozen_mapping(self.fixtures))
        set_(self, "metadata", _frozen_mapping(self.metadata))
        set_(self, "tags", tuple(self.tags))
        if self.expect_keys is not None:
            set_(self, "expect_keys", tuple(self.expect_keys))
        if isinstance(self.checks, str | bytes | Mapping):
            raise ValueError(
                f"Case {self.id!r}: 'checks' must be a list of check specs; got {self.checks!r}"
            )
        set_(self, "checks", tuple(self.checks))
        if self.group is None:
            set_(self, "group", self.id)

    def to_dict(self) -> dict[str, Any]:
        """The case as plain JSON-ready data (what the manifest records)."""
        out: dict[str, Any] = {"id": self.id}
        if self.prompt is not None:
            out["prompt"] = self.prompt
        else:
            out["messages"] = [dict(m) for m in self.messages or ()]
        out.update(
            fixtures=dict(self.fixtures),
            checks=[_spec_of(check) for check in self.checks],
            review=self.review,
            group=self.group,
            split=self.split,
            tags=list(self.tags),
            metadata=dict(self.metadata),
        )
        if self.expect_keys is not None:
            out["expect_keys"] = list(self.expect_keys)
        return out


@dataclass(frozen=True)
class Variant:
    """A named change to the request; a variant that changes nothing is a baseline.

    ``prefix`` is prepended to the last user message (separated by a blank line unless it
    already ends in white space), ``system`` replaces or adds the system message, and
    ``params`` are merged over the target's request parameters.
    """

    name: str
    prefix: str | None = None
    system: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Variant 'name' must be a non-empty string; got {self.name!r}")
        object.__setattr__(self, "params", _frozen_mapping(self.params))

    @property
    def is_baseline(self) -> bool:
        return self.prefix is None and self.system is None and not self.params

    def messages_for(self, case: Case) -> tuple[dict[str, Any], ...]:
        """The chat messages this variant sends for ``case``."""
        if case.messages is not None:
            messages = [dict(m) for m in case.messages]
        else:
            messages = [{"role": "user", "content": case.prompt}]
        if self.prefix is not None:
            for message in reversed(messages):
                if message.get("role") == "user":
                    joiner = "" if self.prefix[-1:].isspace() else "\n\n"
                    message["content"] = f"{self.prefix}{joiner}{message.get('content', '')}"
                    break
        if self.system is not None:
            messages = [m for m in messages if m.get("role") != "system"]
            messages.insert(0, {"role": "system", "content": self.system})
        return tuple(messages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "prefix": self.prefix,
            "system": self.system,
            "params": dict(self.params),
        }


@dataclass(frozen=True)
class Request:
    """What a target is asked to answer: one (case, variant, repeat)."""

    case: Case
    variant: Variant
    repeat: int
    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]

    @property
    def prompt(self) -> str:
        """The text of the last user message, as sent."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else str(content)
        return ""


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model requested (requested is not executed)."""

    id: str | None
    name: str
    arguments: str


@dataclass(frozen=True)
class Action:
    """A tool action from a trace: requested by the model, or executed by the application.

    ``error`` is whether the executed tool returned an error (``None`` for a request);
    ``path`` is the ``path`` argument when there is one.
    """

    tool: str
    arguments: str
    path: str | None = None
    error: bool | None = None
    result: str | None = None


@dataclass(frozen=True, kw_only=True)
class _Evidence:
    """What a target reports besides its answer, stored unchanged on every sample."""

    model: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    retries: int = 0
    exit_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    trace: str | None = None
    trace_truncated: bool = False


#: The names of that evidence: a sample copies them from its completion.
EVIDENCE_FIELDS = tuple(f.name for f in dataclasses.fields(_Evidence))


@dataclass(frozen=True)
class Completion(_Evidence):
    """What a target returns. Only ``text`` is required; the rest is evidence, keyword-only.

    ``request`` and ``response`` are what went over the wire (stored as JSON text);
    ``facts`` are a harness's observations (containment).
    """

    text: str
    request: Any = None
    response: Any = None
    facts: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Sample(_Evidence):
    """One attempt, as stored: key ``(run_id, case_id, variant, repeat)``."""

    run_id: str
    case_id: str
    variant: str
    repeat: int
    order: int
    started_at: dt.datetime
    latency_ms: float
    status: str
    error: str | None
    answer: str | None
    prompt: str
    request: str | None
    response: str | None
    fingerprint: str | None = None
    canonical: str | None = None
    requested: tuple[Action, ...] = ()
    executed: tuple[Action, ...] = ()
    evidence_problem: str | None = None
    facts: str | None = None

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.run_id, self.case_id, self.variant, self.repeat)


@dataclass(frozen=True)
class CheckResult:
    """One check on one sample: outcome ``True``, ``False`` or ``None`` (unscored)."""

    check: str
    type: str
    outcome: bool | None
    detail: str
    evidence: str | None = None
