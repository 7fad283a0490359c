"""Lexical checks: they look at the words, not the meaning."""

from __future__ import annotations

from typing import Any, cast

import regex

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number, is_whole
from evalnb._types import Sample
from evalnb.checks._base import SpecCheck, register

__all__ = ["Avoids", "Contains", "ContainsAny", "Regex", "WordCount"]


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ArgumentError("must be a non-empty string")
    return value


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (_text(value),)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise ArgumentError("must be a non-empty string or a non-empty list of non-empty strings")
    return tuple(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError("must be true or false")
    return value


def _count(value: Any) -> int:
    if not is_whole(value, 0):
        raise ArgumentError("must be a whole number >= 0")
    return cast(int, value)


def _pattern(value: Any) -> str:
    _text(value)
    try:
        regex.compile(value)
    except regex.error as exc:
        raise ArgumentError(f"must be a valid regular expression ({exc})") from None
    return cast(str, value)


class _Phrases(SpecCheck):
    """Shared matching: case-insensitive substring search unless ``ignore_case`` is false."""

    optional = {"ignore_case": _flag}

    def _fold(self, text: str) -> str:
        return text.casefold() if self.values.get("ignore_case", True) else text

    def _found(self, answer: str, phrases: tuple[str, ...]) -> list[str]:
        haystack = self._fold(answer)
        return [p for p in phrases if self._fold(p) in haystack]


@register
class Contains(_Phrases):
    """The answer contains ``text``: ``{"type": "contains", "text": "A-1042"}``."""

    type = "contains"
    required = {"text": _text}

    def label(self) -> str:
        return str(self.values["text"])

    def __call__(self, sample: Sample) -> str | None:
        if self._found(sample.answer or "", (self.values["text"],)):
            return None
        return f"does not mention {self.values['text']!r}"


@register
class ContainsAny(_Phrases):
    """The answer contains at least one of ``options``."""

    type = "contains_any"
    required = {"options": _texts}

    def label(self) -> str:
        return "|".join(self.values["options"])

    def __call__(self, sample: Sample) -> str | None:
        if self._found(sample.answer or "", self.values["options"]):
            return None
        return "mentions none of " + ", ".join(repr(o) for o in self.values["options"])


@register
class Avoids(_Phrases):
    """The answer contains none of ``phrases``."""

    type = "avoids"
    required = {"phrases": _texts}

    def label(self) -> str:
        return "|".join(self.values["phrases"])

    def __call__(self, sample: Sample) -> str | None:
        found = self._found(sample.answer or "", self.values["phrases"])
        return "says " + ", ".join(repr(p) for p in found) if found else None


@register
class WordCount(SpecCheck):
    """The answer has between ``min`` and ``max`` words (either bound optional)."""

    type = "word_count"
    optional = {"min": _count, "max": _count}

    def validate(self, where: str) -> None:
        low, high = self.values.get("min"), self.values.get("max")
        if low is None and high is None:
            raise ArgumentError(f"'{where}' needs 'min', 'max' or both for a 'word_count' check")
        if low is not None and high is not None and low > high:
            raise ArgumentError(f"'{where}.min' must be <= 'max'; got min={low}, max={high}")

    def label(self) -> str:
        low, high = self.values.get("min"), self.values.get("max")
        if low is None:
            return f"<={high}"
        return f">={low}" if high is None else f"{low}-{high}"

    def __call__(self, sample: Sample) -> str | None:
        words = len((sample.answer or "").split())
        low, high = self.values.get("min"), self.values.get("max")
        if (low is not None and words < low) or (high is not None and words > high):
            return f"{words} words; expected {self.label()}"
        return None


def _seconds(value: Any) -> float:
    if not is_number(value, 0, open_low=True):
        raise ArgumentError("must be a number of seconds > 0")
    return float(value)


#: Seconds one regex search may take before the check gives up (and fails, saying so).
REGEX_TIMEOUT = 2.0


@register
class Regex(SpecCheck):
    """The answer matches ``pattern`` somewhere (a search with the ``regex`` package, which
    gives up after ``timeout`` seconds: a catastrophic pattern such as ``(a+)+$`` fails the
    check instead of hanging the run)."""

    type = "regex"
    required = {"pattern": _pattern}
    optional = {"ignore_case": _flag, "timeout": _seconds}

    def validate(self, where: str) -> None:
        flags = regex.IGNORECASE if self.values.get("ignore_case", False) else 0
        self.compiled = regex.compile(self.values["pattern"], flags)
        self.timeout = self.values.get("timeout", REGEX_TIMEOUT)

    def label(self) -> str:
        return str(self.values["pattern"])

    def __call__(self, sample: Sample) -> str | None:
        try:
            found = self.compiled.search(sample.answer or "", timeout=self.timeout)
        except TimeoutError:
            return f"gave up after {self.timeout:g} s: /{self.values['pattern']}/ is too slow here"
        if found:
            return None
        return f"does not match /{self.values['pattern']}/"
