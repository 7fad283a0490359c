"""Checks against the case's reference answer (``target``): ``equals``, ``starts_with``,
``includes``, ``fuzzy_match``, ``numeric`` and ``choice``.

They read the target when bound to their case (a case without one is an error before
anything runs), accept any of several acceptable targets (a list), and keep what they read
from the answer in the detail and evidence.
"""

from __future__ import annotations

import abc
import json
import math
from typing import Any

from evalnb._evidence import find_numbers, fuzzy_normalise, normalise_text, parse_choice
from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_number
from evalnb._types import LETTERS, Case, Sample, choice_index
from evalnb.checks._base import Outcome, SpecCheck, register
from evalnb.checks._lexical import _flag

__all__ = ["Choice", "Equals", "FuzzyMatch", "Includes", "Numeric", "StartsWith"]


def _as_text(target: Any) -> str:
    # A number target compares as JSON writes it: 42 as "42", 4.5 as "4.5".
    return target if isinstance(target, str) else json.dumps(target)


class _Reference(SpecCheck):
    """Shared: the case's targets, read when bound."""

    reads_case = True

    def prepare(self, case: Case) -> None:
        self.targets: tuple[Any, ...] = self.targets_of(case)


class _Normalised(_Reference):
    """``equals``, ``starts_with`` and ``includes``: both sides normalised alike."""

    optional = {"ignore_case": _flag, "ignore_whitespace": _flag, "ignore_punctuation": _flag}

    def _normal(self, text: str) -> str:
        return normalise_text(
            text,
            ignore_case=self.values.get("ignore_case", True),
            ignore_whitespace=self.values.get("ignore_whitespace", True),
            ignore_punctuation=self.values.get("ignore_punctuation", True),
        )

    #: How a failure reads: "is not 'Paris'".
    verb = ""

    @abc.abstractmethod
    def _matches(self, answer: str, target: str) -> bool:
        """Whether the normalised answer matches one normalised target."""

    def __call__(self, sample: Sample) -> str | None:
        answer = self._normal(sample.answer or "")
        wanted = [_as_text(t) for t in self.targets]
        if any(self._matches(answer, self._normal(t)) for t in wanted):
            return None
        return f"{self.verb} " + " or ".join(repr(t) for t in wanted)


@register
class Equals(_Normalised):
    """The answer is the target: ``{"type": "equals"}``.

    Both sides are normalised first (each step on unless turned off): ``ignore_case``,
    ``ignore_whitespace`` (ends stripped, runs collapsed), ``ignore_punctuation``
    (punctuation at either end stripped): ``" Paris. "`` equals ``paris``.
    """

    type = "equals"
    verb = "is not"

    def _matches(self, answer: str, target: str) -> bool:
        return answer == target


@register
class StartsWith(_Normalised):
    """The normalised answer starts with the normalised target: ``{"type": "starts_with"}``."""

    type = "starts_with"
    verb = "does not start with"

    def _matches(self, answer: str, target: str) -> bool:
        return answer.startswith(target)


@register
class Includes(_Normalised):
    """The normalised target appears in the normalised answer (as text, not as a whole
    word): ``{"type": "includes"}``."""

    type = "includes"
    verb = "does not include"

    def _matches(self, answer: str, target: str) -> bool:
        return target in answer


@register
class FuzzyMatch(_Reference):
    """openai/evals ``FuzzyMatch``: after :func:`~evalnb._evidence.fuzzy_normalise` (lower
    case, punctuation and the articles a/an/the removed), the answer contains the target or
    the target contains the answer. ``{"type": "fuzzy_match"}``."""

    type = "fuzzy_match"

    def __call__(self, sample: Sample) -> str | None:
        answer = fuzzy_normalise(sample.answer or "")
        for target in self.targets:
            wanted = fuzzy_normalise(_as_text(target))
            if (
                (answer == wanted)
                if not answer or not wanted
                else (wanted in answer or answer in wanted)
            ):
                return None
        return "no fuzzy match with " + " or ".join(repr(_as_text(t)) for t in self.targets)


def _which(value: Any) -> str:
    if value not in ("first", "last"):
        raise ArgumentError("must be 'first' or 'last'")
    return str(value)


def _tolerance(value: Any) -> float:
    if not is_number(value, 0) or not math.isfinite(value):
        raise ArgumentError("must be a number >= 0")
    return float(value)


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


@register
class Numeric(_Reference):
    """A number read from the answer equals the target within a tolerance.

    ``{"type": "numeric", "abs_tol": 0.01}``. The number read is the last one in the answer
    (``"which": "first"`` for the first), read by :func:`~evalnb._evidence.find_numbers`:
    ``$1,234.50``, ``-3``, ``3.0e2``; with ``"percent": true`` a number followed by ``%``
    counts as a fraction (``50%`` is 0.5). It passes when ``math.isclose(read, target,
    rel_tol, abs_tol)`` (defaults ``rel_tol`` 1e-9, ``abs_tol`` 0) for some target; a
    target may be a number or a string holding one. The value read is in the detail
    (``read 1234.5``) and the evidence.
    """

    type = "numeric"
    optional = {
        "which": _which,
        "percent": _flag,
        "abs_tol": _tolerance,
        "rel_tol": _tolerance,
    }

    def prepare(self, case: Case) -> None:
        super().prepare(case)
        numbers = []
        for target in self.targets:
            if is_number(target):
                numbers.append(float(target))
                continue
            found = find_numbers(target)
            if len(found) != 1 or found[0].text != target.strip():
                raise ArgumentError(
                    f"'{self.where}' (numeric) needs a number as the case's 'target'; "
                    f"got {target!r}"
                )
            numbers.append(found[0].value)
        self.numbers = tuple(numbers)

    def label(self) -> str:
        return str(self.values.get("which", "last"))

    def __call__(self, sample: Sample) -> Outcome:
        found = find_numbers(sample.answer or "")
        if not found:
            return Outcome(False, "no number in the answer")
        number = found[0] if self.values.get("which") == "first" else found[-1]
        value = number.value
        if number.percent and self.values.get("percent", False):
            value /= 100
        evidence = {"value": value, "text": number.text}
        rel, tol = self.values.get("rel_tol", 1e-9), self.values.get("abs_tol", 0.0)
        if any(math.isclose(value, t, rel_tol=rel, abs_tol=tol) for t in self.numbers):
            return Outcome(True, f"read {_shown(value)}", evidence)
        expected = " or ".join(_shown(t) for t in self.numbers)
        return Outcome(False, f"read {_shown(value)}; expected {expected}", evidence)


@register
class Choice(_Reference):
    """The multiple-choice letter the answer picks is the target.

    ``{"type": "choice"}`` on a case with ``choices``; the target is a letter (in the case's
    own order) or a choice's text, or a list of them. The letter is read by
    :func:`~evalnb._evidence.parse_choice` (``ANSWER: B``, a lone ``(b)``, a leading ``B.``,
    "the answer is B", and as a fallback the text of exactly one choice) in the order the
    sample showed the choices; a shuffled sample's stored ``choice_order`` maps it back.
    """

    type = "choice"

    def prepare(self, case: Case) -> None:
        super().prepare(case)
        if not case.choices:
            raise ArgumentError(f"'{self.where}' (choice) needs the case's 'choices'")
        self.choices = tuple(case.choices)
        # Case validation has already made sure every target names a choice.
        self.correct = {
            index
            for index in (choice_index(t, self.choices) for t in self.targets)
            if index is not None
        }

    def __call__(self, sample: Sample) -> Outcome:
        order = sample.choice_order or tuple(range(len(self.choices)))
        if sorted(order) != list(range(len(self.choices))):
            return Outcome(False, f"the sample's choice order {list(order)} does not fit the case")
        shown = [self.choices[i] for i in order]
        position, how = parse_choice(sample.answer or "", shown)
        expected = " or ".join(repr(self.choices[i]) for i in sorted(self.correct))
        if position is None:
            return Outcome(False, f"{how}; expected {expected}")
        picked = order[position]
        said = f"answered {LETTERS[position]} ({self.choices[picked]!r}, by {how})"
        evidence = {"letter": LETTERS[position], "index": picked, "choice": self.choices[picked]}
        if picked in self.correct:
            return Outcome(True, said, evidence)
        return Outcome(False, f"{said}; expected {expected}", evidence)
