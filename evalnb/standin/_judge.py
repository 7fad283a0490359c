"""``judge``: a grader with known flaws, for calibrating the judge check.

It reads the rubric, question and answer the judge check sends, and understands two
kinds of rule in the rubric: ``mentions "X"`` (also ``names``, ``includes``) and
``never says "Y"`` (also ``avoids``, ``does not say``), case-insensitively. The true
verdict is PASS when every rule holds. Then, per response: with probability 0.05 it
gives an unclear reply with no verdict line, and otherwise with probability 0.05 it
states the wrong verdict. A rubric with no rule it understands is graded PASS when the
answer is not empty.

Asked for a grade (a system message "on a scale of 1 (worst) to N", as the graded judge
check sends), the true grade is ``1 + round((N - 1) * f)`` with ``f`` the share of rules
that hold (N when there are none and the answer is not empty), and it replies ``GRADE:
k``: unclear (no grade line) with probability 0.05, otherwise one grade off (towards the
middle) with probability 0.05. So with one rule and N = 5 the true grades are 5 and 1,
stated 4 and 2 when off: a threshold of 0.5 still separates them.

Asked to compare (promptfoo's ``select-best`` prompt: "which best fits the following
criteria", then ``<Text index="i">`` pieces), it replies with the index of the piece that
holds most of the criteria's rules; among equals, the shortest piece, then the first in
text order, so the choice does not depend on the order the pieces come in. A comparison has
no flaws: two graders that ask it the same question get the same index, whatever draw it is.
"""

from __future__ import annotations

import random
import re

from evalnb.standin._assistant import Messages, Params, Reply, last_user_text, text_of

__all__ = ["Judge"]

_MUST = re.compile(r'\b(?:mentions|names|includes)\s+"([^"]+)"', re.IGNORECASE)
_MUST_NOT = re.compile(r'\b(?:never says|avoids|does not say)\s+"([^"]+)"', re.IGNORECASE)
_PARTS = re.compile(r"Rubric:\n(?P<rubric>.*?)\n\nQuestion:\n.*?\n\nAnswer:\n(?P<answer>.*)", re.S)
_SCALE = re.compile(r"on a scale of 1 \(worst\) to (\d+)")
_COMPARE = re.compile(
    r"which best fits the following criteria: (?P<criteria>.*?)\n\nHere are", re.S
)
_PIECE = re.compile(r'<Text index="(\d+)">\n?(.*?)\n?</Text>', re.S)


def _held(rules: tuple[list[str], list[str]], text: str) -> int:
    """How many of the rules (must mention, must not say) ``text`` holds."""
    folded = text.casefold()
    must, must_not = rules
    return sum(x.casefold() in folded for x in must) + sum(
        y.casefold() not in folded for y in must_not
    )


def _best(prompt: str) -> Reply | None:
    """The index a comparison asks for, or None when ``prompt`` is not one."""
    asked = _COMPARE.search(prompt)
    if asked is None:
        return None
    criteria = asked["criteria"]
    rules = (_MUST.findall(criteria), _MUST_NOT.findall(criteria))
    pieces = [(int(i), text.strip()) for i, text in _PIECE.findall(prompt)]
    if not pieces:
        return Reply("There is nothing to compare.")
    index, _ = min(pieces, key=lambda p: (-_held(rules, p[1]), len(p[1]), p[1], p[0]))
    return Reply(str(index))


class Judge:
    """Grades by the rubric's rules; unclear 5% of the time, wrong 5% of the rest."""

    unclear_rate = 0.05
    error_rate = 0.05

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply:
        best = _best("\n".join(text_of(m) for m in messages))
        if best is not None:
            return best
        parts = _PARTS.search(last_user_text(messages))
        if parts is None:
            return Reply("I was not given a rubric and an answer to grade.")
        rubric, answer = parts["rubric"], parts["answer"].casefold()
        must, must_not = _MUST.findall(rubric), _MUST_NOT.findall(rubric)
        problems = [f'it does not mention "{x}"' for x in must if x.casefold() not in answer]
        problems += [f'it says "{y}"' for y in must_not if y.casefold() in answer]
        passed = not problems if (must or must_not) else bool(answer.strip())
        scale = _SCALE.search(" ".join(text_of(m) for m in messages if m.get("role") == "system"))
        if rng.random() < self.unclear_rate:
            return Reply("The answer is partly there; a person should look at it.")
        if scale is not None:
            top = int(scale[1])
            rules = len(must) + len(must_not)
            share = (rules - len(problems)) / rules if rules else float(passed)
            grade = 1 + round((top - 1) * share)
            if rng.random() < self.error_rate:
                grade = grade - 1 if grade > (top + 1) / 2 else grade + 1
            reason = "; ".join(problems) or "the answer meets the rubric"
            return Reply(f"Graded: {reason}.\nGRADE: {max(1, min(top, grade))}")
        if rng.random() < self.error_rate:
            passed = not passed
        reason = (
            "The answer meets the rubric."
            if passed
            else "Fails: " + "; ".join(problems or ["it does not meet the rubric"]) + "."
        )
        return Reply(f"{reason}\n{'PASS' if passed else 'FAIL'}")
