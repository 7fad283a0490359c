"""A reference answer read out of the answer by a regex (lm-evaluation-harness's
``regex`` + ``take_first`` filters followed by ``exact_match``).

``{"type": "extract_match", "pattern": "The answer is (\\\\-?[0-9\\\\.\\\\,]+).",
"group_select": 0, "ignore_case": true, "regexes_to_ignore": [","]}``: every match of
``pattern`` is found; ``group_select`` picks one (0 the first, -1 the last); a match with
groups gives its first non-empty group. No match reads ``[invalid]``, as lm-eval's filter
does. The read text and the case's target are both stripped of ``regexes_to_ignore``,
lower-cased with ``ignore_case`` and stripped of punctuation with
``ignore_punctuation``, then compared for equality. Without ``pattern`` the whole answer
is compared.
"""

from __future__ import annotations

import json
import string
from typing import Any

import regex

from evalnb._exceptions import ArgumentError
from evalnb._types import Case, Sample
from evalnb.checks._base import Outcome, SpecCheck, register
from evalnb.checks._lexical import REGEX_TIMEOUT, _flag

__all__ = ["INVALID", "ExtractMatch", "JsonMatch"]

#: What lm-eval's regex filter gives when nothing matches.
INVALID = "[invalid]"


def _pattern(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ArgumentError("must be a non-empty regular expression")
    try:
        regex.compile(value)
    except regex.error as exc:
        raise ArgumentError(f"is not a valid regular expression ({exc})") from None
    return value


def _group(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError("must be a whole number (0 the first match, -1 the last)")
    return value


def _patterns(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ArgumentError("must be a list of regular expressions")
    return tuple(_pattern(v) for v in value)


@register
class ExtractMatch(SpecCheck):
    """The text a regex reads from the answer equals the target (see the module)."""

    type = "extract_match"
    optional = {
        "pattern": _pattern,
        "group_select": _group,
        "ignore_case": _flag,
        "ignore_punctuation": _flag,
        "regexes_to_ignore": _patterns,
    }
    reads_case = True

    def prepare(self, case: Case) -> None:
        self.targets = [t if isinstance(t, str) else str(t) for t in self.targets_of(case)]

    def label(self) -> str:
        return str(self.values.get("pattern", "the whole answer"))

    def extract(self, answer: str) -> str:
        pattern = self.values.get("pattern")
        if pattern is None:
            return answer
        try:
            found = regex.findall(pattern, answer, timeout=REGEX_TIMEOUT)
        except TimeoutError:
            return INVALID
        if not found:
            return INVALID
        index = self.values.get("group_select", 0)
        try:
            match = found[index]
        except IndexError:
            return INVALID
        if isinstance(match, tuple):
            match = next((m for m in match if m), "")
        return str(match).strip()

    def normal(self, text: str) -> str:
        for ignored in self.values.get("regexes_to_ignore", ()):
            text = regex.sub(ignored, "", text, timeout=REGEX_TIMEOUT)
        if self.values.get("ignore_case", False):
            text = text.lower()
        if self.values.get("ignore_punctuation", False):
            text = text.translate(str.maketrans("", "", string.punctuation))
        return text

    def __call__(self, sample: Sample) -> Outcome:
        read = self.extract(sample.answer or "")
        got = self.normal(read)
        evidence = {"extracted": read}
        if any(got == self.normal(t) for t in self.targets):
            return Outcome(True, f"read {read!r}", evidence)
        expected = " or ".join(repr(t) for t in self.targets)
        return Outcome(False, f"read {read!r}; expected {expected}", evidence)


@register
class JsonMatch(SpecCheck):
    """openai/evals ``JsonMatch``: the answer parsed as JSON equals one of the targets
    parsed as JSON (key order and white space do not matter): ``{"type": "json_match"}``."""

    type = "json_match"
    reads_case = True

    def prepare(self, case: Case) -> None:
        self.wanted = []
        for target in self.targets_of(case):
            try:
                self.wanted.append(json.loads(target) if isinstance(target, str) else target)
            except json.JSONDecodeError:
                raise ArgumentError(
                    f"'{self.where}' (json_match): the target {target!r} is not JSON"
                ) from None

    def __call__(self, sample: Sample) -> Outcome:
        try:
            got = json.loads(sample.answer or "")
        except json.JSONDecodeError as exc:
            return Outcome(False, f"the answer is not JSON ({exc.msg})")
        if any(got == wanted for wanted in self.wanted):
            return Outcome(True, "equal as JSON")
        return Outcome(
            False, "not equal as JSON to " + " or ".join(json.dumps(w) for w in self.wanted)
        )
