"""Lexical checks: they look at the words, not the meaning."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, cast

import regex

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number, is_whole
from evalnb._types import Sample
from evalnb.checks._base import SpecCheck, on_a_thread, register

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

    def phrases(self) -> tuple[str, ...]:
        """The phrases of the check's one required field (``text`` is one phrase)."""
        (field,) = self.required
        value = self.values[field]
        return (value,) if isinstance(value, str) else tuple(value)

    def label(self) -> str:
        return "|".join(self.phrases())

    def _found(self, answer: str) -> list[str]:
        haystack = self._fold(answer)
        return [p for p in self.phrases() if self._fold(p) in haystack]


@register
class Contains(_Phrases):
    """The answer contains ``text``: ``{"type": "contains", "text": "A-1042"}``."""

    type = "contains"
    required = {"text": _text}

    def __call__(self, sample: Sample) -> str | None:
        if self._found(sample.answer or ""):
            return None
        return f"does not mention {self.values['text']!r}"


@register
class ContainsAny(_Phrases):
    """The answer contains at least one of ``options``."""

    type = "contains_any"
    required = {"options": _texts}

    def __call__(self, sample: Sample) -> str | None:
        if self._found(sample.answer or ""):
            return None
        return "mentions none of " + ", ".join(repr(o) for o in self.values["options"])


@register
class Avoids(_Phrases):
    """The answer contains none of ``phrases``."""

    type = "avoids"
    required = {"phrases": _texts}

    def __call__(self, sample: Sample) -> str | None:
        found = self._found(sample.answer or "")
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


#: How long a search may hold the event loop before it moves to a thread of its own: an
#: ordinary pattern answers well within it; a slow one costs the loop this much at most.
INLINE_SECONDS = 0.005
#: What a search's thread may take past the timeout to hand its answer back.
_REPORT_SECONDS = 0.25


@register
class Regex(SpecCheck):
    """The answer matches ``pattern`` somewhere (a search with the ``regex`` package).

    The search gives up after ``timeout`` seconds of wall-clock time: a catastrophic
    pattern such as ``(a|aa)+$`` fails the check, saying it timed out, instead of hanging
    the run. A search that is not done within a few milliseconds goes on in a thread of
    its own (the ``regex`` package lets go of the GIL meanwhile), so the event loop and the
    other samples go on while it runs."""

    type = "regex"
    required = {"pattern": _pattern}
    optional = {"ignore_case": _flag, "timeout": _seconds}

    def validate(self, where: str) -> None:
        flags = regex.IGNORECASE if self.values.get("ignore_case", False) else 0
        self.compiled = regex.compile(self.values["pattern"], flags)
        self.timeout = self.values.get("timeout", REGEX_TIMEOUT)

    def label(self) -> str:
        return str(self.values["pattern"])

    def __call__(self, sample: Sample) -> str | Awaitable[str | None] | None:
        answer = sample.answer or ""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # called outside any event loop: nothing else to hold up
            return self._search(answer, self.timeout)
        if self.timeout <= INLINE_SECONDS:
            return self._search(answer, self.timeout)
        try:
            found = self.compiled.search(answer, timeout=INLINE_SECONDS)
        except TimeoutError:
            return self._off_the_loop(answer)
        return self._verdict(found)

    def _search(self, answer: str, timeout: float) -> str | None:
        try:
            found = self.compiled.search(answer, timeout=timeout, concurrent=True)
        except TimeoutError:
            return self._timed_out()
        return self._verdict(found)

    async def _off_the_loop(self, answer: str) -> str | None:
        """The whole search again, on a daemon thread of its own (never a pool's, where
        slow searches would queue up the quick ones), awaited without blocking."""
        try:
            # The deadline in wall-clock time, whatever the package's own timeout makes of
            # a busy machine; the search itself ends at that timeout, unawaited.
            return await on_a_thread(
                lambda: self._search(answer, self.timeout),
                self.timeout + _REPORT_SECONDS,
                "evalnb-regex",
            )
        except TimeoutError:
            return self._timed_out()

    def _timed_out(self) -> str:
        return (
            f"gave up after {self.timeout:g} s: timed out, /{self.values['pattern']}/ "
            "is too slow on this answer"
        )

    def _verdict(self, found: Any) -> str | None:
        if found:
            return None
        return f"does not match /{self.values['pattern']}/"
