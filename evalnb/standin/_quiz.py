"""``quiz``: answers questions that have a reference answer, with a known error rate.

It reads the last user message and knows three kinds of question:

- arithmetic: two numbers joined by ``+``, ``-``, ``*``, ``x``, ``×``, ``/``, ``plus``,
  ``minus``, ``times`` or ``divided by`` ("What is 17 times 25?" is 425);
- shopping: "A mug costs $12.50. What do 4 mugs cost?" is $50.00;
- the facts in :data:`FACTS`, known by their key words in any order ("What is the capital
  of France?" is Paris, "Which planet is the largest?" is Jupiter...).

A multiple-choice question lists its choices on lines of their own after the question
(``A. Mars`` or ``B) Jupiter``); the quiz finds the right answer as above and picks the
letter whose text it is, wherever the choices were shuffled to.

True error rate: each reply is wrong with probability 0.30, or 0.10 when any message of
the conversation asks to "check your work" (any case), whatever the question and the
temperature. A wrong reply is a wrong number (off by a few units), a wrong fact from the
fact's own list, or another letter. The wording varies between draws and every wording
is read correctly by the ``numeric`` (the last number), ``fuzzy_match`` and ``choice``
checks, so their true pass rates are exactly 0.70 and 0.90. A question it does not know
gets "I don't know." and never varies.
"""

from __future__ import annotations

import operator
import random
import re
from collections.abc import Callable, Sequence

from evalnb.standin._assistant import Messages, Params, Reply, last_user_text, text_of

__all__ = ["FACTS", "Quiz"]

#: What the quiz knows: the key words of a question (all must appear, as whole words, in
#: any order), the answer, and the wrong answers it may give.
FACTS: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("capital", "france"), "Paris", ("Lyon", "Marseille")),
    (("capital", "japan"), "Tokyo", ("Kyoto", "Osaka")),
    (("capital", "australia"), "Canberra", ("Sydney", "Melbourne")),
    (("largest", "planet"), "Jupiter", ("Saturn", "Neptune")),
    (("red", "planet"), "Mars", ("Venus", "Mercury")),
    (("symbol", "gold"), "Au", ("Ag", "Gd")),
    (("wrote", "hamlet"), "William Shakespeare", ("Christopher Marlowe", "Ben Jonson")),
    (("boil", "water"), "100", ("90", "110")),
)

_OPERATIONS: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "plus": operator.add,
    "-": operator.sub,
    "minus": operator.sub,
    "*": operator.mul,
    "x": operator.mul,
    "×": operator.mul,
    "times": operator.mul,
    "/": operator.truediv,
    "divided by": operator.truediv,
}
_NUMBER = r"(\d+(?:\.\d+)?)"
_ARITHMETIC = re.compile(
    rf"{_NUMBER}\s*(\+|-|\*|×|x|/|plus|minus|times|divided by)\s*{_NUMBER}", re.I
)
_SHOPPING = re.compile(
    r"costs?\s+\$(\d+(?:\.\d{2})?)\b.*?\b(?:do|does|would)\s+(\d+)\s+\w+\s+cost", re.I | re.S
)
_CHOICE = re.compile(r"^\s*\(?([A-Z])[.)]\s+(.+?)\s*$", re.M)
_CAREFUL = re.compile(r"check your work", re.I)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}".rstrip("0")


def _money(value: float) -> str:
    return f"${value:,.2f}"


class _Known:
    """The right answer to one question, and how to say it or get it wrong."""

    def __init__(self, answer: str, wrong: Callable[[random.Random], str], work: str = ""):
        self.answer = answer
        self.wrong = wrong
        self.work = work


def _know(question: str) -> _Known | None:
    shopping = _SHOPPING.search(question)
    if shopping:
        price, count = float(shopping[1]), int(shopping[2])
        total = price * count
        return _Known(
            _money(total),
            lambda rng: _money(total + rng.choice((-5.0, -1.0, 1.0, 2.5))),
            f"{count} x {_money(price)}",
        )
    arithmetic = _ARITHMETIC.search(question)
    if arithmetic:
        a, b = float(arithmetic[1]), float(arithmetic[3])
        op = arithmetic[2].lower()
        if op in ("/", "divided by") and b == 0:
            return None
        value = _OPERATIONS[op](a, b)
        return _Known(
            _number(value),
            lambda rng: _number(value + rng.choice((-10, -2, -1, 1, 2, 10))),
            arithmetic[0],
        )
    words = set(re.findall(r"\w+", question.lower()))
    for keys, answer, wrong in FACTS:
        if words.issuperset(keys):
            return _Known(answer, _one_of(wrong))
    return None


def _one_of(options: Sequence[str]) -> Callable[[random.Random], str]:
    return lambda rng: rng.choice(options)


_SAY = ("{x}", "The answer is {x}.", "It's {x}.")
_SAY_WORKED = ("{work} = {x}, so the answer is {x}.",)
_SAY_LETTER = (
    "ANSWER: {letter}",
    "({letter})",
    "{letter}. {text}",
    "The answer is {letter} because {other} is wrong.",
    "It is {text}.\nANSWER: {letter}",
)


class Quiz:
    """The quiz assistant: wrong 30% of the time, 10% when told to check its work."""

    error_rate = 0.30
    careful_error_rate = 0.10

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply:
        text = last_user_text(messages)
        careful = any(_CAREFUL.search(text_of(m)) for m in messages)
        choices = _CHOICE.findall(text)
        first = _CHOICE.search(text)
        question = text[: first.start()] if first and len(choices) >= 2 else text
        known = _know(question)
        if known is None:
            return Reply("I don't know.")
        wrong = rng.random() < (self.careful_error_rate if careful else self.error_rate)
        if len(choices) >= 2:
            return self._choose(choices, known, wrong, rng)
        said = known.wrong(rng) if wrong else known.answer
        wordings = _SAY + (_SAY_WORKED if known.work and not wrong else ())
        return Reply(rng.choice(wordings).format(x=said, work=known.work))

    def _choose(
        self,
        choices: list[tuple[str, str]],
        known: _Known,
        wrong: bool,
        rng: random.Random,
    ) -> Reply:
        letters = [letter for letter, _ in choices]
        right = [letter for letter, text in choices if _same(text, known.answer)]
        if not right:
            return Reply("I don't know.")
        others = [letter for letter in letters if letter != right[0]]
        letter = rng.choice(others) if wrong else right[0]
        other = rng.choice([x for x in letters if x != letter])
        text = dict(choices)[letter]
        return Reply(rng.choice(_SAY_LETTER).format(letter=letter, other=other, text=text))


def _same(choice: str, answer: str) -> bool:
    return choice.strip().rstrip(".").casefold() == answer.casefold()
