"""Word-level differences between two answers, for the side-by-side view (``difflib``)."""

from __future__ import annotations

import difflib
import re

__all__ = ["NEAR", "near_diff", "word_diff"]

_TOKENS = re.compile(r"\s+|[^\s]+")
#: Longer answers are compared on their first tokens (words and spaces) only; the rest of
#: ``other`` follows as one ``"?"`` segment, shown unmarked as not compared.
MAX_WORDS = 2000
#: Two answers are *near* when at least this share of their words match (difflib's
#: ``ratio``): below it a word diff marks nearly everything, and the answers are shown plain.
NEAR = 0.5


def near_diff(base: str, other: str, near: float = NEAR) -> tuple[list[list[str]] | None, float]:
    """The word diff of ``other`` against ``base`` (:func:`word_diff`) when the two are near
    (their similarity at least ``near``), else None; and the similarity, from 0 (no word in
    common) to 1 (the same words), difflib's ``ratio`` over the compared words."""
    segments = word_diff(base, other)
    same = sum(len(_TOKENS.findall(t)) for op, t in segments if op == "=")
    total = len(_TOKENS.findall(base)[:MAX_WORDS]) + len(_TOKENS.findall(other)[:MAX_WORDS])
    ratio = 1.0 if total == 0 else 2.0 * same / total
    return (segments if ratio >= near else None), ratio


def word_diff(base: str, other: str) -> list[list[str]]:
    """``other`` against ``base`` as segments ``[op, text]``: ``"="`` the same, ``"+"``
    only in ``other``, ``"-"`` only in ``base``, ``"?"`` not compared (past
    :data:`MAX_WORDS`). Joining all but the ``-`` texts gives ``other`` back."""
    a = _TOKENS.findall(base)[:MAX_WORDS]
    every = _TOKENS.findall(other)
    b, rest = every[:MAX_WORDS], "".join(every[MAX_WORDS:])
    # The common start and end are cut before difflib sees the rest: answers that differ in
    # a few words (the usual case) cost little however long and repetitive they are.
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    out: list[list[str]] = []
    _add(out, "=", "".join(b[:head]))
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    matcher = difflib.SequenceMatcher(a=middle_a, b=middle_b, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            _add(out, "=", "".join(middle_b[b0:b1]))
            continue
        if op in ("delete", "replace"):
            _add(out, "-", "".join(middle_a[a0:a1]))
        if op in ("insert", "replace"):
            _add(out, "+", "".join(middle_b[b0:b1]))
    _add(out, "=", "".join(b[len(b) - tail :]))
    _add(out, "?", rest)
    return out


def _add(out: list[list[str]], op: str, text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == op:
        out[-1][1] += text
    else:
        out.append([op, text])
