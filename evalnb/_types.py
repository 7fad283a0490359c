"""The values that flow through a run: cases, variants, requests, completions, samples."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, overload

from evalnb._exceptions import ArgumentError
from evalnb._templates import _Namespace, check_template, render_template

__all__ = [
    "CHOICES_TEMPLATE",
    "LETTERS",
    "STATUSES",
    "Action",
    "Case",
    "CheckResult",
    "Completion",
    "Request",
    "Sample",
    "ToolCall",
    "Variant",
    "chat_prompt",
    "check_template",
    "choice_index",
    "render_template",
    "text_of",
]

#: Every status a sample can have. Only ``completed`` means the target gave a usable,
#: non-empty answer; the others are kinds of incomplete samples.
STATUSES = ("completed", "error", "timeout", "empty", "budget", "malformed")

SPLITS = ("dev", "heldout")

#: The letters that label multiple-choice options, in order (at most 26 choices).
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: How a case's ``choices`` are shown when the variant has no ``template`` of its own:
#: the prompt, the lettered choices, and the answer format the ``choice`` check reads first.
CHOICES_TEMPLATE = (
    "{{ prompt }}\n\n{{ choices_text }}\n\n"
    'Answer with the letter of one choice ({{ letters | join(", ") }}), ending with a line '
    "of the form ANSWER: <letter>"
)

#: Names a template sees besides the case's ``vars``; no variable may take one of them.
RESERVED_VARS = ("vars", "prompt", "choices", "letters", "choices_text", "target", "context")


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


@overload
def text_of(content: Any, *, sep: str = ..., strict: Literal[False] = ...) -> str: ...
@overload
def text_of(content: Any, *, sep: str, strict: Literal[True]) -> str | None: ...
@overload
def text_of(content: Any, *, strict: Literal[True]) -> str | None: ...


def text_of(content: Any, *, sep: str = "\n", strict: bool = False) -> str | None:
    """The text of a message's ``content``: a string as is, a list of parts as the text of
    its text parts joined by ``sep`` (an image part has no text). ``strict``: None unless
    every part is text (a message evalnb could not send as text alone).

    >>> text_of([{"type": "text", "text": "a"}, {"type": "image_url"}])
    'a'
    >>> text_of([{"type": "text", "text": "a"}, {"type": "image_url"}], strict=True) is None
    True
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return None if strict else ""
    texts = [p.get("text") if isinstance(p, Mapping) else None for p in content]
    if strict and (not texts or not all(isinstance(t, str) for t in texts)):
        return None
    return sep.join(t for t in texts if isinstance(t, str))


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_case_fields(case: Case) -> None:
    """The reference, choices, vars and context of a case: types and consistency."""
    where = f"Case {case.id!r}"
    target = case.target
    if target is not None:
        ok = (
            (isinstance(target, str) and target != "")
            or _is_real(target)
            or (
                isinstance(target, Sequence)
                and not isinstance(target, str)
                and len(target) > 0
                and all(isinstance(t, str) and t != "" for t in target)
            )
        )
        if not ok:
            raise ArgumentError(
                f"{where}: 'target' must be a non-empty string, a non-empty list of "
                f"non-empty strings, or a number; got {target!r}"
            )
    choices = case.choices
    if choices is not None:
        if (
            isinstance(choices, str)
            or not isinstance(choices, Sequence)
            or not 2 <= len(choices) <= len(LETTERS)
            or not all(isinstance(c, str) and c.strip() for c in choices)
        ):
            raise ArgumentError(
                f"{where}: 'choices' must be a list of 2 to {len(LETTERS)} non-empty strings; "
                f"got {choices!r}"
            )
        if len(set(choices)) != len(choices):
            raise ArgumentError(
                f"{where}: 'choices' must not repeat a choice; got {list(choices)!r}"
            )
        if target is not None:
            for wanted in target if isinstance(target, tuple) else (target,):
                if choice_index(wanted, choices) is None:
                    raise ArgumentError(
                        f"{where}: 'target' must be a letter {LETTERS[0]}-"
                        f"{LETTERS[len(choices) - 1]} or the text of one of the 'choices'; "
                        f"got {wanted!r}"
                    )
    if not isinstance(case.vars, Mapping) or not all(isinstance(k, str) for k in case.vars):
        raise ArgumentError(f"{where}: 'vars' must be an object of name: value; got {case.vars!r}")
    reserved = sorted(set(case.vars) & set(RESERVED_VARS))
    if reserved:
        raise ArgumentError(
            f"{where}: 'vars.{reserved[0]}' is a name templates keep for themselves "
            f"({', '.join(RESERVED_VARS)}); rename the variable"
        )
    context = case.context
    if context is not None and not (
        isinstance(context, str)
        or (isinstance(context, Sequence) and all(isinstance(c, str) for c in context))
    ):
        raise ArgumentError(
            f"{where}: 'context' must be a string or a list of strings; got {context!r}"
        )


def choice_index(target: Any, choices: Sequence[str]) -> int | None:
    """The index a multiple-choice ``target`` names: a letter (``"B"``) in range, else the
    text of a choice (a number is read as text); None when it names none. A single letter
    is read as a letter even when a choice's text is that letter."""
    text = str(target) if _is_real(target) else target
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if len(stripped) == 1 and stripped.upper() in LETTERS[: len(choices)]:
        return LETTERS.index(stripped.upper())
    return next((i for i, c in enumerate(choices) if c.strip() == stripped), None)


@dataclass(frozen=True)
class Case:
    """One thing to ask, and how to check the answers.

    ``checks`` holds check specs (``{"type": "contains", "text": "A-1042"}``), plain
    callables or check objects, kept as given: the runner builds and validates them
    (:func:`evalnb.checks.build_checks`) before anything runs, and :func:`evalnb.load_cases`
    does so as it reads a file, so a bad spec is reported with its line.

    ``target`` is the reference answer (a string, a list of acceptable strings, or a
    number) that ``equals``, ``numeric``, ``choice`` and the others compare with;
    ``choices`` makes the case multiple choice; ``vars`` fill a variant's template (a case
    with ``vars`` may have neither ``prompt`` nor ``messages``: then every variant needs a
    ``template``); ``context`` is what a judge's rubric may quote (retrieval context).

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
    target: str | float | Sequence[str] | None = None
    choices: Sequence[str] | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    context: str | Sequence[str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ArgumentError(f"Case 'id' must be a non-empty string; got {self.id!r}")
        if self.prompt is not None and self.messages is not None:
            raise ArgumentError(
                f"Case {self.id!r} needs exactly one of 'prompt' or 'messages'; got both"
            )
        if self.prompt is None and self.messages is None and not self.vars:
            raise ArgumentError(
                f"Case {self.id!r} needs exactly one of 'prompt' or 'messages'; got neither "
                "(or 'vars' for template variants)"
            )
        if self.split not in SPLITS:
            raise ArgumentError(
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
            raise ArgumentError(
                f"Case {self.id!r}: 'checks' must be a list of check specs; got {self.checks!r}"
            )
        set_(self, "checks", tuple(self.checks))
        if self.group is None:
            set_(self, "group", self.id)
        if isinstance(self.target, list | tuple):
            set_(self, "target", tuple(self.target))
        if isinstance(self.choices, list | tuple):
            set_(self, "choices", tuple(self.choices))
        if isinstance(self.context, list | tuple):
            set_(self, "context", tuple(self.context))
        _check_case_fields(self)
        set_(self, "vars", _frozen_mapping(self.vars))

    @property
    def targets(self) -> tuple[Any, ...]:
        """The acceptable reference answers: ``target`` as a tuple (empty when none)."""
        if self.target is None:
            return ()
        return self.target if isinstance(self.target, tuple) else (self.target,)

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
        # Written only when set, so the definitions of earlier runs read the same.
        if self.target is not None:
            out["target"] = list(self.target) if isinstance(self.target, tuple) else self.target
        if self.choices is not None:
            out["choices"] = list(self.choices)
        if self.vars:
            out["vars"] = dict(self.vars)
        if self.context is not None:
            out["context"] = list(self.context) if isinstance(self.context, tuple) else self.context
        return out

    def template_context(self, shown: Sequence[str] | None = None) -> dict[str, Any]:
        """What a variant's template sees: every var by name, ``vars``, ``prompt`` (the
        prompt, or the last user message's text), and ``choices`` (in the order shown),
        ``letters`` and ``choices_text`` (``"A. ...\nB. ..."``), empty without choices."""
        choices = list(shown if shown is not None else self.choices or ())
        letters = list(LETTERS[: len(choices)])
        context: dict[str, Any] = {
            **self.vars,
            "vars": _Namespace("vars", self.vars),
            "choices": choices,
            "letters": letters,
            "choices_text": "\n".join(f"{x}. {c}" for x, c in zip(letters, choices, strict=True)),
        }
        prompt = self.prompt
        if prompt is None and self.messages is not None:
            users = [m for m in self.messages if m.get("role") == "user"]
            prompt = text_of(users[-1].get("content")) if users else None
        if prompt is not None:
            context["prompt"] = prompt
        return context

    def rubric_context(self) -> dict[str, Any]:
        """What a judge's rubric sees: the template context, and ``target`` and ``context``
        when the case has them (a list stays a list)."""
        context = self.template_context()
        if self.target is not None:
            context["target"] = list(self.target) if isinstance(self.target, tuple) else self.target
        if self.context is not None:
            context["context"] = (
                list(self.context) if isinstance(self.context, tuple) else self.context
            )
        return context


@dataclass(frozen=True)
class Variant:
    """A named change to the request; a variant that changes nothing is a baseline.

    Applied in this order:

    - ``template`` (Jinja2, sandboxed, strict) renders the user message from the case's
      ``vars``, ``prompt`` and ``choices`` (see :meth:`Case.template_context`); it replaces
      the last user message, or is the only one for a case with just ``vars``. Without a
      template, a case's ``choices`` are shown by :data:`CHOICES_TEMPLATE`.
    - ``chat`` reads the template as a chat prompt, as promptfoo's chat providers read a
      rendered prompt (:func:`chat_prompt`): when its rendering is a list of messages (JSON,
      or YAML ``- role:`` lines), that list is the whole request, the case's own messages
      left out; other text is the user message as above. A template that is itself JSON
      has the variables of its strings rendered inside them, so a value's quotes cannot
      break it.
    - ``prefix`` goes before the last user message's text (separated by a blank line
      unless it already ends in white space); when that message is a list of parts, into
      its first text part. A case with no user message cannot take a prefix.
    - ``system`` (also a template) replaces the leading system message, when the first
      message is a system message without a ``name``, and is inserted first otherwise;
      every other message is kept, few-shot examples (``role: system`` with a ``name``)
      included.
    - ``params`` are merged over the target's request parameters.

    ``shuffle_choices`` shows a multiple-choice case's choices in a different order per
    sample, drawn from ``shuffle_seed``, the case id and the repeat (so every variant with
    the same seed shows a sample the same order); the order is stored on the sample.

    ``rendered`` maps case ids to the messages sent for those cases as they are, in place
    of what ``template`` and ``system`` render (``prefix`` and ``params`` still apply): an
    imported prompt as the tool that defines it rendered it (``evalnb import promptfoo``
    stores promptfoo's rendering where evalnb's differs).
    """

    name: str
    prefix: str | None = None
    system: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    template: str | None = None
    shuffle_choices: bool = False
    shuffle_seed: int = 0
    chat: bool = False
    rendered: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ArgumentError(f"Variant 'name' must be a non-empty string; got {self.name!r}")
        _check_rendered(self.name, self.rendered)
        if not isinstance(self.chat, bool):
            raise ArgumentError(
                f"Variant {self.name!r}: 'chat' must be true or false; got {self.chat!r}"
            )
        if self.chat and self.template is None:
            raise ArgumentError(
                f"Variant {self.name!r}: 'chat' reads the template as a chat prompt; give a "
                "'template' too"
            )
        for key in ("prefix", "system", "template"):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise ArgumentError(
                    f"Variant {self.name!r}: {key!r} must be a string; got {value!r}"
                )
        for key in ("system", "template"):
            value = getattr(self, key)
            if value is not None:
                try:
                    check_template(value)
                except ValueError as exc:
                    raise ArgumentError(f"Variant {self.name!r}: {key!r} {exc}") from None
        if not isinstance(self.shuffle_choices, bool):
            raise ArgumentError(
                f"Variant {self.name!r}: 'shuffle_choices' must be true or false; "
                f"got {self.shuffle_choices!r}"
            )
        if isinstance(self.shuffle_seed, bool) or not isinstance(self.shuffle_seed, int):
            raise ArgumentError(
                f"Variant {self.name!r}: 'shuffle_seed' must be a whole number; "
                f"got {self.shuffle_seed!r}"
            )
        object.__setattr__(self, "params", _frozen_mapping(self.params))
        rendered = {
            str(case_id): tuple(MappingProxyType(dict(m)) for m in messages)
            for case_id, messages in self.rendered.items()
        }
        object.__setattr__(self, "rendered", MappingProxyType(rendered))

    @property
    def is_baseline(self) -> bool:
        return (
            self.prefix is None
            and self.system is None
            and self.template is None
            and not self.shuffle_choices
            and not self.params
            and not self.rendered
        )

    def choice_order(self, case: Case, repeat: int = 0) -> tuple[int, ...] | None:
        """The order ``case``'s choices are shown in for this repeat, as indexes into
        ``case.choices``; None when they are shown as written."""
        if not self.shuffle_choices or not case.choices:
            return None
        order = list(range(len(case.choices)))
        random.Random(f"{self.shuffle_seed}:{case.id}:{repeat}").shuffle(order)
        return tuple(order)

    def messages_for(self, case: Case, repeat: int = 0) -> tuple[dict[str, Any], ...]:
        """The chat messages this variant sends for ``case`` (and ``repeat``, which only
        matters when choices are shuffled).

        Raises ``ValueError`` naming the field when the variant cannot apply to the case:
        an undefined template variable, a prefix with no user message, a case with only
        ``vars`` and no template.
        """
        if case.messages is not None:
            messages = [dict(m) for m in case.messages]
        elif case.prompt is not None:
            messages = [{"role": "user", "content": case.prompt}]
        else:
            messages = []
        given = self.rendered.get(case.id)
        order = self.choice_order(case, repeat)
        shown = [case.choices[i] for i in order] if order and case.choices else None
        context = (
            case.template_context(shown) if (self.template or self.system) and not given else None
        )
        if given:
            messages = [dict(m) for m in given]
        elif self.template is not None:
            rendered = (
                _render_chat(self.template, context or {})
                if self.chat
                else _render("template", self.template, context or {})
            )
            users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
            if isinstance(rendered, list):
                messages = rendered
            elif users:
                messages[users[-1]]["content"] = rendered
            else:
                messages.append({"role": "user", "content": rendered})
        elif case.choices:
            if case.prompt is None:
                raise ArgumentError(
                    "the case has 'choices' but no 'prompt': give it a 'prompt', or use a "
                    "variant with a 'template' that shows the choices"
                )
            context = context or case.template_context(shown)
            messages[-1]["content"] = _render("choices", CHOICES_TEMPLATE, context)
        elif not messages:
            raise ArgumentError(
                "the case has only 'vars' (no 'prompt' or 'messages'): the variant needs a "
                "'template'"
            )
        if self.prefix is not None:
            users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
            if not users:
                raise ArgumentError("'prefix' goes before the user message, and the case has none")
            message = messages[users[-1]]
            message["content"] = _prefixed(self.prefix, message.get("content"))
        if self.system is not None and not given:
            system = {"role": "system", "content": _render("system", self.system, context or {})}
            first = messages[0] if messages else {}
            if first.get("role") == "system" and "name" not in first:
                messages[0] = system
            else:
                messages.insert(0, system)
        return tuple(messages)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "prefix": self.prefix,
            "system": self.system,
            "params": dict(self.params),
        }
        # Written only when set, so the variants of earlier runs read (and resume) the same.
        if self.template is not None:
            out["template"] = self.template
        if self.shuffle_choices:
            out["shuffle_choices"] = True
            out["shuffle_seed"] = self.shuffle_seed
        if self.chat:
            out["chat"] = True
        if self.rendered:
            out["rendered"] = {
                case_id: [dict(m) for m in messages] for case_id, messages in self.rendered.items()
            }
        return out


def _check_rendered(name: str, rendered: Any) -> None:
    """A variant's ``rendered``: case ids, each with a non-empty list of messages."""
    if not isinstance(rendered, Mapping):
        raise ArgumentError(
            f"Variant {name!r}: 'rendered' must map case ids to messages; got {rendered!r}"
        )
    for case_id, messages in rendered.items():
        if (
            not isinstance(messages, list | tuple)
            or not messages
            or not all(isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in messages)
        ):
            raise ArgumentError(
                f"Variant {name!r}: 'rendered.{case_id}' must be a list of messages (each "
                f"with a 'role'); got {messages!r}"
            )


def _render(field: str, source: str, context: Mapping[str, Any]) -> str:
    try:
        return render_template(source, context)
    except ValueError as exc:
        raise ArgumentError(f"'{field}': {exc}") from None


def chat_prompt(text: str) -> list[dict[str, Any]] | None:
    """The messages of a rendered prompt that is a chat list, as promptfoo's chat providers
    read one (``parseChatPrompt``): YAML when it starts with ``- role:``, else JSON; None
    when it is not a list of objects that each have a ``role``."""
    stripped = text.strip()
    parsed: Any = None
    if stripped.startswith("- role:"):
        import yaml  # type: ignore[import-untyped]

        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    elif stripped.startswith("["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return None
    if (
        isinstance(parsed, list)
        and parsed
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in parsed)
    ):
        return [dict(m) for m in parsed]
    return None


def _render_strings(value: Any, context: Mapping[str, Any]) -> Any:
    """``value`` (parsed JSON) with each string rendered as a template."""
    if isinstance(value, str):
        return _render("template", value, context)
    if isinstance(value, list):
        return [_render_strings(v, context) for v in value]
    if isinstance(value, dict):
        return {k: _render_strings(v, context) for k, v in value.items()}
    return value


def _render_chat(source: str, context: Mapping[str, Any]) -> list[dict[str, Any]] | str:
    """A chat template's messages, or its text when it renders to no message list. A
    template that is JSON has its strings rendered in place (as promptfoo does, so a
    value's quotes or line breaks stay inside their string)."""
    try:
        parsed = json.loads(source)
    except ValueError:
        parsed = None
    if isinstance(parsed, list | dict):
        text = json.dumps(_render_strings(parsed, context), indent=2, ensure_ascii=False)
    else:
        text = _render("template", source, context)
    messages = chat_prompt(text)
    return messages if messages is not None else text


def _prefixed(prefix: str, content: Any) -> Any:
    """``content`` with ``prefix`` before its text; a parts list keeps its other parts."""
    joiner = "" if prefix[-1:].isspace() else "\n\n"
    if isinstance(content, list | tuple):
        parts = [dict(p) if isinstance(p, Mapping) else p for p in content]
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "text":
                part["text"] = f"{prefix}{joiner}{part.get('text', '')}"
                return parts
        return [{"type": "text", "text": prefix}, *parts]
    return f"{prefix}{joiner}{content if content is not None else ''}"


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
        """The text of the last user message, as sent (a parts list: its text parts)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return text_of(message.get("content"))
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
    cached: bool | None = None


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
    choice_order: tuple[int, ...] | None = None

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.run_id, self.case_id, self.variant, self.repeat)


@dataclass(frozen=True)
class CheckResult:
    """One check on one sample: outcome ``True``, ``False`` or ``None`` (unscored), and for
    a graded check its ``score`` in [0, 1] (the outcome is then ``score >= threshold``)."""

    check: str
    type: str
    outcome: bool | None
    detail: str
    evidence: str | None = None
    score: float | None = None
