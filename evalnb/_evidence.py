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
import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb._types import LETTERS, Action, ToolCall

__all__ = [
    "Evidence",
    "Number",
    "canonical_answer",
    "evidence_from",
    "extract_json",
    "extract_json_value",
    "find_numbers",
    "fuzzy_normalise",
    "normalise_answer",
    "normalise_text",
    "parse_choice",
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
        raise ArgumentError(f"tool call without a function name: {json.dumps(call)[:80]}")
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
            raise ArgumentError(f"trace line {number} is not JSON ({exc.msg})") from None
        if not isinstance(event, dict):
            raise ArgumentError(f"trace line {number} is not an object")
        kind, body = event.get("event"), event.get("body")
        if kind == "request":
            messages = body.get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list):
                raise ArgumentError(f"trace line {number}: request without a messages list")
            for i, message in enumerate(messages):
                if i < len(history):
                    if message != history[i]:
                        raise ArgumentError(
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
                    raise ArgumentError(f"tool result at message {i} answers no preceding call")
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


def extract_json_value(answer: str) -> tuple[Any, str]:
    """Any JSON value in the answer: ``(value, "")`` or ``(None, problem)``.

    The whole answer (stripped) is read first, so ``42``, ``"yes"``, ``null`` and
    ``[1, 2]`` count. Otherwise the same leniency as :func:`extract_json`, with arrays
    too: from the first ``{`` or ``[`` to the last ``}`` or ``]``, so prose or a code fence
    around one value is allowed. ``value`` may be ``None`` itself (the JSON ``null``):
    tell the cases apart by the problem.
    """
    text = answer.strip()
    try:
        return json.loads(text), ""
    except json.JSONDecodeError:
        pass
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    end = max(text.rfind("}"), text.rfind("]"))
    if not starts or end < min(starts):
        return None, "no JSON value in the answer"
    try:
        return json.loads(text[min(starts) : end + 1]), ""
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg} at column {exc.colno})"


def _strip_punctuation(text: str, spaces: bool) -> str:
    def strippable(ch: str) -> bool:
        return unicodedata.category(ch)[0] == "P" or (spaces and ch.isspace())

    start, end = 0, len(text)
    while start < end and strippable(text[start]):
        start += 1
    while end > start and strippable(text[end - 1]):
        end -= 1
    return text[start:end]


def normalise_text(
    text: str,
    *,
    ignore_case: bool = True,
    ignore_whitespace: bool = True,
    ignore_punctuation: bool = True,
) -> str:
    """The form ``equals``, ``starts_with`` and ``includes`` compare.

    ``ignore_whitespace`` strips the ends and collapses runs of white space to one space;
    ``ignore_punctuation`` strips punctuation (Unicode category P: ``.``, ``!``, quotes,
    brackets...) from both ends, never from inside (with the white space between, unless
    white space counts); ``ignore_case`` casefolds. ``"  Paris. "`` and ``"paris"`` are
    equal with all three on.
    """
    if ignore_whitespace:
        text = " ".join(text.split())
    if ignore_punctuation:
        text = _strip_punctuation(text, spaces=ignore_whitespace)
    if ignore_case:
        text = text.casefold()
    return text


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def fuzzy_normalise(text: str) -> str:
    """openai/evals ``normalize``: lower case, ASCII punctuation removed, the articles
    a/an/the removed, white space collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _ASCII_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@dataclass(frozen=True)
class Number:
    """A number found in text: its ``value``, the ``text`` it was read from, and whether
    a ``%`` followed it."""

    value: float
    text: str
    percent: bool


_NUMBER = re.compile(
    r"""
    (?<![\w.])                             # not inside a word or after a decimal point
    (?P<sign>[-+\u2212])?
    (?P<currency>[$\u20ac\u00a3\u00a5])?
    (?P<sign2>[-+\u2212])?
    (?P<digits>\d{1,3}(?:,\d{3})+(?!\d)|\d+)?
    (?P<fraction>\.\d+)?
    (?P<exponent>[eE][-+]?\d+)?
    (?P<percent>\s?%)?
    """,
    re.VERBOSE,
)


def find_numbers(text: str) -> list[Number]:
    """Every number in ``text``, in order.

    Read: a sign (``-3``, also the Unicode minus), a currency symbol (``$19.50``,
    ``-$3``), thousands separated by commas (``1,234.5``), a fraction (``.5``), an
    exponent (``1e3``, ``3.0e2``) and a trailing ``%``. A hyphen after a letter or digit
    is not a sign (``A-1042`` is 1042, ``3-5`` is 3 and 5); a full stop that ends a
    sentence is not a decimal point (``costs $4.`` is 4).
    """
    found = []
    for match in _NUMBER.finditer(text):
        digits, fraction = match["digits"], match["fraction"]
        if not digits and not fraction:
            continue
        sign = match["sign"] or match["sign2"] or ""
        plain = ((digits or "0").replace(",", "")) + (fraction or "") + (match["exponent"] or "")
        value = float(plain)
        if sign in ("-", "\u2212"):
            value = -value
        found.append(Number(value, match.group(0).strip(), bool(match["percent"])))
    return found


_ANSWER_LINE = re.compile(r"\banswer\s*[:=]\s*\**\s*\(?\s*([a-z])\s*\)?(?![a-z])", re.I)
_BARE = re.compile(r"^\s*\**\s*\(?\s*([a-z])\s*\)?\s*[.):]?\s*\**\s*$", re.I)
_LEADING = re.compile(r"^\s*(?:\(([A-Za-z])\)|([A-Z])[.)])\s")
_PHRASE = re.compile(r"\b(?i:answer|choice|option)\s+(?:(?i:is)\s+)?(?:\(([A-Za-z])\)|([A-Z])\b)")


def parse_choice(answer: str, choices: Sequence[str]) -> tuple[int | None, str]:
    """The position (in the order shown) of the choice an answer picks, and how it was read.

    Tried in order; the first that finds a letter decides:

    1. ``ANSWER: B`` (any case, last such line; ``ANSWER: (B)``, ``**ANSWER: B**``);
    2. the whole answer is one letter: ``B``, ``(b)``, ``B.``, ``B)``;
    3. the answer starts with a lettered choice: ``B. Jupiter``, ``B) ...``, ``(b) ...``;
    4. the first phrase ``answer is B`` / ``option (c)`` / ``choice B`` (a bare letter must
       be a capital there, so "the answer is a ..." is not A);
    5. fallback, no letter: the answer contains the text of exactly one choice (openai/evals
       normalisation, whole words).

    Returns ``(index, how)``; ``index`` is None when nothing was found or the letter is
    not one of the choices (``how`` says which).
    """
    letters = LETTERS[: len(choices)]

    def picked(letter: str, how: str) -> tuple[int | None, str]:
        letter = letter.upper()
        if letter not in letters:
            return None, f"letter {letter} is not one of the choices ({letters[0]}-{letters[-1]})"
        return letters.index(letter), how

    lines = _ANSWER_LINE.findall(answer)
    if lines:
        return picked(lines[-1], "ANSWER line")
    bare = _BARE.match(answer)
    if bare:
        return picked(bare[1], "a single letter")
    leading = _LEADING.match(answer)
    if leading:
        return picked(leading[1] or leading[2], "a leading letter")
    phrase = _PHRASE.search(answer)
    if phrase:
        return picked(phrase[1] or phrase[2], "an 'answer is' phrase")
    said = f" {fuzzy_normalise(answer)} "
    named = [i for i, c in enumerate(choices) if f" {fuzzy_normalise(c)} " in said]
    if len(named) == 1:
        return named[0], "the text of one choice"
    if named:
        return None, "no letter, and the answer names several choices"
    return None, "no choice letter found in the answer"


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
