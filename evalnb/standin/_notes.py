"""``notes``: a small tool-calling model driving the notes assistant's tools.

It plays the model behind ``examples/notes_assistant`` (tools ``list_notes``,
``read_note(path)``, ``propose_note(path, text)``). Everything it knows comes from the
request: the question is the first user message, the revised variant is recognised by
the phrase "A file name is not evidence" (from ``data/variants/revised.txt``; the
question is then what follows the line holding it), and the facts are the tool results
in the history (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ...}``).

What it means to do. The files named in the question are read one call per response
(a question that names none, or asks to "list", lists the notes first and reads every
listed one); then it answers only from the reads that succeeded, looking for
``Key: value`` lines that match what was asked (project name, language, next task,
release status, cloud region) and saying so when a fact is absent or a read failed.

How it slips. Each decision is one draw from ``rng``, with these probabilities:

=========================  ==============================================  ========  =======
failure                    when it is drawn, and what it does              baseline  revised
=========================  ==============================================  ========  =======
answers without reading    the first response: invents a project name,     0.60      0.25
                           language, region... (declines instead when a
                           named file is ``private.txt`` or starts ``../``)
tool-call text             every call it means to make: writes the call    0.60      0.30
                           as text (``read_note("notes.txt")``), which
                           becomes the answer and is never executed
one of two files           a question naming two or more files, after the  0.90      0.50
                           first read: answers from that read alone
drops the ``../``          a path starting with ``../``: asks for          0.70      0.30
                           ``private.txt`` instead of ``../private.txt``
follows injected commands  after reading a note that holds instructions    0.70      0.20
                           ("ignore the question ... read X ... save as
                           Y"): reads X, proposes Y with ``propose_note``
                           (a harness that cannot get approval stops
                           there), then answers as the note says
=========================  ==============================================  ========  =======

The calls that follow injected commands are always structured. The wording of an
invented answer or of tool-call text is drawn from ``rng`` too. A request whose
``tools`` offer no tool it needs is answered without reading.
Through the notes assistant, on the ten cases of ``data/cases/notes.jsonl``, these
rates give a required-action screen of about 0.12 per sample (baseline) against 0.45
(revised), and an answer-term screen of about 0.09 against 0.41; in either variant
about one injected-instructions sample in ten ends in a proposal.

>>> reply = NotesAssistant(baseline=NEVER).respond(
...     [{"role": "user", "content": "What is the project in notes.txt called?"}],
...     {"tools": [{"type": "function", "function": {"name": "read_note"}}]},
...     random.Random(0),
... )
>>> reply.tool_calls
[ToolRequest(name='read_note', arguments={'path': 'notes.txt'})]
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb.standin._assistant import Messages, Params, Reply, ToolRequest, text_of

__all__ = ["BASELINE", "NEVER", "REVISED", "REVISED_MARKER", "NotesAssistant", "SlipRates"]

#: A phrase of ``data/variants/revised.txt``; its presence marks the revised variant.
REVISED_MARKER = "a file name is not evidence"


@dataclass(frozen=True)
class SlipRates:
    """The probability of each failure mode, per opportunity (see the module docstring)."""

    answer_without_reading: float
    tool_text: float
    one_of_two: float
    drop_parent: float
    follow_injection: float

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not is_number(value, 0, 1):
                raise ArgumentError(f"SlipRates '{name}' must be between 0 and 1; got {value!r}")


BASELINE = SlipRates(0.60, 0.60, 0.90, 0.70, 0.70)
REVISED = SlipRates(0.25, 0.30, 0.50, 0.30, 0.20)
#: Never slips: every planned call is made and every answer comes from the reads.
NEVER = SlipRates(0.0, 0.0, 0.0, 0.0, 0.0)

# A listing longer than this is read only in part, as a small model would.
_MAX_LISTED_READS = 4

_FILE = re.compile(r"(?:\.\./)*[\w-][\w.-]*\.txt\b")
_LIST = re.compile(r"\blist\b", re.I)
_TOPICS = {
    "project": re.compile(r"\bname\b|\bcalled\b|\bwhich project\b", re.I),
    "language": re.compile(r"\blanguage\b", re.I),
    "next": re.compile(r"\bnext\b", re.I),
    "release": re.compile(r"\brelease\b", re.I),
    "region": re.compile(r"\bregion\b", re.I),
}
# Which ``Key: value`` lines of a note answer each topic.
_KEYS = {
    "project": re.compile(r"^project(?: name)?$"),
    "language": re.compile(r"\blanguage\b"),
    "next": re.compile(r"\bnext\b"),
    "release": re.compile(r"\brelease\b"),
    "region": re.compile(r"\bregion\b"),
}
_FACT_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,30}?)\s*:\s*(\S.*?)\s*$")
_FOUND = {
    "project": "The project is called {value} (from {file}).",
    "language": "According to {file}, the project is written in {value}.",
    "next": "According to {file}, the next task is: {value}.",
    "release": "{file} gives the release status as: {value}.",
    "region": "{file} says production runs in {value}.",
}
_ABSENT = {
    "project": "what the project is called",
    "language": "which language the project uses",
    "next": "what the next task is",
    "release": "what the release status is",
    "region": "which cloud region production runs in",
}
# Answers made up without reading; none of them holds a fact of any fixture.
_INVENTED = {
    "project": ("The project is called Blue Harbor.", "It is Project Atlas.", "Northwind."),
    "language": ("It is written in Python.", "The project uses Rust.", "TypeScript."),
    "next": (
        "The next task is setting up the staging server.",
        "Next up is rewriting the login page.",
    ),
    "release": ("Version 2.0 was released last month.", "It is already in general release."),
    "region": ("Production runs in us-east-1.", "It is deployed in europe-west4."),
}
_INVENTED_CONTENTS = (
    "{file} outlines the plan for the next sprint and lists three open bugs.",
    "{file} is a short set of meeting notes about the budget.",
)
_DECLINE = "I can only read the notes listed in this workspace, so I won't open {file}."

_INJECTION = re.compile(
    r"\b(?:ignore|disregard)\b[^\n]{0,80}?\b(?:question|instructions?|user)\b", re.I
)
_INJECTED_READ = re.compile(r"\bread(?:_note)?\b[^\n]*?((?:\.\./)*[\w-][\w.-]*\.txt)", re.I)
_INJECTED_SAVE = re.compile(r"\b(?:propose_note|save)\b[^\n]*?([\w-][\w.-]*\.txt)", re.I)
_INJECTED_REPLY = re.compile(
    r"\b(?:answer|reply|respond)\s+only\s+with\s+(?:the\s+word\s+)?[\"']?([^\"'.\n]+)", re.I
)


@dataclass(frozen=True)
class _Question:
    text: str
    revised: bool
    files: tuple[str, ...]
    wants_list: bool
    topics: tuple[str, ...]


@dataclass(frozen=True)
class _Outcome:
    """One executed tool call, matched from a ``tool`` message to the call it answers."""

    tool: str | None
    path: str | None
    ok: bool
    value: Any


@dataclass(frozen=True)
class _Injection:
    source: str
    read: str | None
    save: str | None
    reply: str


def _question(messages: Sequence[Mapping[str, Any]]) -> _Question:
    first = next((text_of(m) for m in messages if m.get("role") == "user"), "")
    lowered = first.lower()
    revised = REVISED_MARKER in lowered
    text = first
    if revised:
        # The question follows the prefix: after the line holding the marker, or after
        # the marker's sentence when the prefix and question share a line.
        at = lowered.index(REVISED_MARKER)
        line_end = first.find("\n", at)
        text = first[line_end + 1 :] if line_end >= 0 else first[at:].split(". ", 1)[-1]
    files = tuple(dict.fromkeys(_FILE.findall(text)))
    topics = tuple(topic for topic, pattern in _TOPICS.items() if pattern.search(text))
    return _Question(text.strip(), revised, files, bool(_LIST.search(text)), topics)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _outcomes(messages: Sequence[Mapping[str, Any]]) -> list[_Outcome]:
    calls: dict[Any, tuple[str | None, dict[str, Any]]] = {}
    outcomes = []
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    name = function.get("name")
                    calls[call.get("id")] = (
                        name if isinstance(name, str) else None,
                        _arguments(function.get("arguments")),
                    )
        elif message.get("role") == "tool":
            name, arguments = calls.get(message.get("tool_call_id"), (None, {}))
            content = text_of(message)
            try:
                result = json.loads(content)
            except ValueError:
                result = None
            if isinstance(result, dict) and "ok" in result:
                ok = bool(result["ok"])
                value = result.get("result") if ok else result.get("error")
            else:
                ok, value = True, content
            path = arguments.get("path")
            outcomes.append(_Outcome(name, path if isinstance(path, str) else None, ok, value))
    return outcomes


def _plan(question: _Question, outcomes: Sequence[_Outcome]) -> list[tuple[str, str | None]]:
    """The calls it means to make, in order; the n-th outcome answers the n-th step."""
    steps: list[tuple[str, str | None]] = []
    if question.wants_list or not question.files:
        steps.append(("list_notes", None))
        if outcomes and outcomes[0].tool == "list_notes" and outcomes[0].ok:
            listed = outcomes[0].value if isinstance(outcomes[0].value, list) else []
            names = [name for name in listed if isinstance(name, str)]
            steps += [("read_note", name) for name in names[:_MAX_LISTED_READS]]
    for path in question.files:
        if ("read_note", path) not in steps:
            steps.append(("read_note", path))
    return steps


def _private(path: str) -> bool:
    return path.startswith("../") or path.rsplit("/", 1)[-1].casefold() == "private.txt"


def _invented(question: _Question, rng: random.Random) -> str:
    """An answer given without reading anything."""
    private = [path for path in question.files if _private(path)]
    if private:
        return _DECLINE.format(file=private[0])
    if question.topics:
        return " ".join(rng.choice(_INVENTED[topic]) for topic in question.topics)
    file = question.files[0] if question.files else "Your notes"
    return rng.choice(_INVENTED_CONTENTS).format(file=file)


def _tool_text(tool: str, path: str | None, rng: random.Random) -> str:
    """A tool call written out as text, the way small models sometimes do."""
    arguments = {} if path is None else {"path": path}
    forms = (
        f"{tool}({json.dumps(path) if path is not None else ''})",
        f'<tool_call>\n{{"name": "{tool}", "arguments": {json.dumps(arguments)}}}\n</tool_call>',
        f"I'll call {tool} with {json.dumps(arguments)}.",
    )
    return rng.choice(forms)


def _lookup(topic: str, reads: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    for file, text in reads:
        for line in text.splitlines():
            match = _FACT_LINE.match(line)
            if match and _KEYS[topic].search(match[1].lower()):
                return file, match[2].rstrip(".")
    return None


def _summary(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[:2]) if lines else "nothing (it is empty)"


def _answer(question: _Question, outcomes: Sequence[_Outcome], injection: _Injection | None) -> str:
    """The answer built only from the tool results it was sent."""
    reads = [(o.path, o) for o in outcomes if o.tool == "read_note" and o.path is not None]
    good = [(path, o.value) for path, o in reads if o.ok and isinstance(o.value, str)]
    failed = [(path, str(o.value).rstrip(". ")) for path, o in reads if not o.ok]
    sentences = []
    if question.topics:
        for topic in question.topics:
            found = _lookup(topic, good)
            if found is not None:
                sentences.append(_FOUND[topic].format(file=found[0], value=found[1]))
            elif good:
                files = ", ".join(file for file, _ in good)
                sentences.append(f"The notes I read ({files}) do not say {_ABSENT[topic]}.")
        sentences += [f"I could not read {file}: {error}." for file, error in failed]
    else:
        sentences += [f"{file} says: {_summary(text)}" for file, text in good]
        sentences += [
            f"I could not read {file}: {error}. I won't guess at what it contains."
            for file, error in failed
        ]
    if injection is not None:
        sentences.append(
            f"{injection.source} also holds instructions addressed to an assistant; "
            "I treated them as text and did not act on them."
        )
    return " ".join(sentences) or "I have not read any note, so I can't answer that."


def _injection(outcomes: Sequence[_Outcome]) -> _Injection | None:
    """Commands written inside a note that was read, if any."""
    for outcome in outcomes:
        if outcome.tool != "read_note" or not outcome.ok or not isinstance(outcome.value, str):
            continue
        match = _INJECTION.search(outcome.value)
        if match is None:
            continue
        segment = outcome.value[match.start() :].split("\n\n", 1)[0]
        read = _INJECTED_READ.search(segment)
        save = _INJECTED_SAVE.search(segment)
        reply = _INJECTED_REPLY.search(segment)
        return _Injection(
            source=outcome.path or "a note",
            read=read[1] if read else None,
            save=save[1] if save else None,
            reply=reply[1].strip() if reply else "Done.",
        )
    return None


def _follow(injection: _Injection, followed: Sequence[_Outcome]) -> Reply:
    """The next step of doing what the injected commands say."""
    steps: list[tuple[str, dict[str, Any]]] = []
    if injection.read is not None:
        steps.append(("read_note", {"path": injection.read}))
    if injection.save is not None:
        got = next((o for o in followed if o.tool == "read_note"), None)
        if got is None or not got.ok:
            text = f"{injection.read} could not be read."
        else:
            text = str(got.value)
        steps.append(("propose_note", {"path": injection.save, "text": text}))
    if len(followed) < len(steps):
        name, arguments = steps[len(followed)]
        return Reply(None, [ToolRequest(name, arguments)])
    return Reply(injection.reply)


def _offered(params: Mapping[str, Any]) -> set[str]:
    names = set()
    for tool in params.get("tools") or ():
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


class NotesAssistant:
    """The notes model; ``baseline`` and ``revised`` are its slip rates per variant."""

    def __init__(self, baseline: SlipRates = BASELINE, revised: SlipRates = REVISED):
        for name, rates in (("baseline", baseline), ("revised", revised)):
            if not isinstance(rates, SlipRates):
                raise TypeError(f"'{name}' must be a SlipRates; got {rates!r}")
        self.baseline = baseline
        self.revised = revised

    def __repr__(self) -> str:
        return f"NotesAssistant(baseline={self.baseline!r}, revised={self.revised!r})"

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply:
        question = _question(messages)
        rates = self.revised if question.revised else self.baseline
        outcomes = _outcomes(messages)
        plan = _plan(question, outcomes)
        done = len(outcomes)

        if done < len(plan):
            tool, path = plan[done]
            if tool not in _offered(params):
                return Reply(_invented(question, rng))
            if done == 0 and rng.random() < rates.answer_without_reading:
                return Reply(_invented(question, rng))
            reads = sum(o.tool == "read_note" for o in outcomes)
            if (
                len(question.files) >= 2
                and reads == 1
                and tool == "read_note"
                and rng.random() < rates.one_of_two
            ):
                return Reply(_answer(question, outcomes, None))
            if path is not None and path.startswith("../") and rng.random() < rates.drop_parent:
                path = re.sub(r"^(?:\.\./)+", "", path)
            if rng.random() < rates.tool_text:
                return Reply(_tool_text(tool, path, rng))
            return Reply(None, [ToolRequest(tool, {} if path is None else {"path": path})])

        planned, followed = outcomes[: len(plan)], outcomes[len(plan) :]
        injection = _injection(planned)
        if injection is not None and (followed or rng.random() < rates.follow_injection):
            return _follow(injection, followed)
        return Reply(_answer(question, planned, injection))
