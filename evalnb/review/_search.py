"""Search over prompts, answers and check details: words, or a regular expression.

The texts are kept as Arrow arrays and matched by Arrow's compute kernels, which run in C++
over the whole column: words with ``match_substring`` (case-insensitive, every word
somewhere in the sample's prompt, answer or a check's detail), a regular expression with
``match_substring_regex``, whose engine (RE2) runs in linear time, so no pattern can
backtrack without end. A pattern is first compiled by the ``regex`` package, which names
what is wrong with a bad one; a pattern RE2 does not take (backreferences, lookaround) is
run by ``regex`` text by text under one time budget (its ``timeout``), and stopped, in one
line, when it takes longer.

Fields every sample has one of a few values of (its case, variant, status, the outcome of
its checks, its verdict) are :class:`Labels`: a word or a pattern is matched against the
few values, then the matches spread to the samples through their codes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import regex

__all__ = ["BUDGET_S", "Labels", "SearchError", "Texts", "search"]

#: The time a regular expression RE2 cannot run may take over the whole run, in seconds.
BUDGET_S = 1.0


class SearchError(ValueError):
    """A query that cannot be run: a bad pattern, or one that took too long (one line)."""


@dataclass
class Texts:
    """The searchable texts: per sample its ``prompt`` and ``answer``, per check row its
    ``detail`` with the position of the sample it belongs to (``detail_sample``)."""

    prompt: pa.Array
    answer: pa.Array
    detail: pa.Array
    detail_sample: np.ndarray
    samples: int
    _lower: dict[str, pa.Array] = field(default_factory=dict)

    def lower(self, name: str) -> pa.Array:
        """Field ``name`` in lower case, made at the first word search and kept (a plain
        substring match over it is several times faster than a case-insensitive one)."""
        if name not in self._lower:
            self._lower[name] = pc.utf8_lower(getattr(self, name))
        return self._lower[name]


@dataclass(frozen=True)
class Labels:
    """A field with a few values: the values (``names``) and each sample's code into them
    (-1: none)."""

    names: Sequence[str]
    codes: np.ndarray

    def spread(self, hit: Callable[[str], bool]) -> np.ndarray:
        """The samples whose value ``hit`` holds for."""
        found = np.array([hit(name) for name in self.names] + [False], dtype=bool)
        return np.asarray(found[self.codes])


def search(
    query: str,
    *,
    samples: int,
    texts: Texts | None = None,
    labels: Sequence[Labels] = (),
    use_regex: bool = False,
    budget: float = BUDGET_S,
) -> np.ndarray:
    """A boolean mask over the ``samples``: those that hold every word of ``query``
    (case-insensitive), or match the pattern, in their ``texts`` or one of their ``labels``."""
    if use_regex:
        return _regex(query, samples, texts, labels, budget)
    keep = np.ones(samples, dtype=bool)
    for word in query.lower().split():
        found = np.zeros(samples, dtype=bool)
        if texts is not None:
            found |= _found(texts, functools.partial(_substring, texts, word))
        for field_ in labels:
            found |= field_.spread(functools.partial(_has_word, word))
        keep &= found
    return keep


def _has_word(word: str, name: str) -> bool:
    return word in name.lower()


def _substring(texts: Texts, word: str, name: str) -> pa.Array:
    return pc.match_substring(texts.lower(name), word)


def _found(texts: Texts, match: Callable[[str], pa.Array]) -> np.ndarray:
    """Samples where ``match`` (an Arrow kernel over a field, by name) holds in any field."""
    found = np.zeros(texts.samples, dtype=bool)
    for name in ("prompt", "answer"):
        found |= _mask(match(name))
    found[texts.detail_sample[_mask(match("detail"))]] = True
    return found


def _mask(result: pa.Array) -> np.ndarray:
    return np.asarray(result.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def _regex(
    query: str, samples: int, texts: Texts | None, labels: Sequence[Labels], budget: float
) -> np.ndarray:
    try:
        pattern = regex.compile(query, regex.IGNORECASE)
    except regex.error as exc:
        raise SearchError(f"bad regular expression {query!r}: {exc}") from None
    found = np.zeros(samples, dtype=bool)
    for field_ in labels:
        found |= field_.spread(lambda name: pattern.search(name, timeout=budget) is not None)
    if texts is None:
        return found
    try:
        return found | _found(  # type: ignore[no-any-return]
            texts,
            lambda name: pc.match_substring_regex(getattr(texts, name), query, ignore_case=True),
        )
    except pa.ArrowInvalid:
        pass  # a pattern RE2 does not take: the regex package runs it, bounded in time
    deadline = time.monotonic() + budget
    fields = ((texts.prompt, None), (texts.answer, None), (texts.detail, texts.detail_sample))
    for column, owner in fields:
        hits = _matches(pattern, column.to_pylist(), deadline, budget, query)
        found[hits if owner is None else owner[hits]] = True
    return found


def _matches(
    pattern: regex.Pattern[str], values: list[object], deadline: float, budget: float, query: str
) -> np.ndarray:
    """Positions of ``values`` the pattern finds something in; each distinct text once."""
    seen: dict[str, bool] = {}
    hits = []
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value:
            continue
        if value not in seen:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                seen[value] = pattern.search(value, timeout=left) is not None
            except TimeoutError:
                raise SearchError(
                    f"regular expression {query!r} stopped after {budget:g} s (it backtracks "
                    "too much); make it more specific"
                ) from None
        if seen[value]:
            hits.append(i)
    return np.asarray(hits, dtype=np.int64)
