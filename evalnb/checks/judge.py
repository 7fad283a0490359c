"""The judge: a second model reads the answer against a rubric.

Its reply's last non-empty line must be exactly ``PASS`` or ``FAIL``; anything else,
or a judge that fails to answer, is a fail ("no clear verdict"). The judge's request and
reply are kept as the check's evidence. The judge target is given to ``run(judge=...)``
or ``score(judge=...)`` and reaches the checks through :data:`JUDGE`.
"""

from __future__ import annotations

import contextvars
import json
from typing import Any

from evalnb._exceptions import TargetError
from evalnb._types import Case, Request, Sample, Variant
from evalnb.checks._base import Outcome, SpecCheck, register
from evalnb.checks.lexical import _text

__all__ = ["JUDGE", "JUDGE_SYSTEM", "Judge", "judge_messages"]

#: The judge target for checks running in this context (set by the runner and score).
JUDGE: contextvars.ContextVar[Any] = contextvars.ContextVar("evalnb_judge", default=None)

JUDGE_SYSTEM = (
    "You grade one answer against a rubric. Explain briefly, then end with a line that is "
    "exactly PASS or FAIL."
)


def judge_messages(rubric: str, prompt: str, answer: str) -> list[dict[str, str]]:
    """The conversation sent to the judge."""
    user = f"Rubric:\n{rubric}\n\nQuestion:\n{prompt}\n\nAnswer:\n{answer}"
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def verdict_of(reply: str) -> bool | None:
    """True for PASS, False for FAIL, None when the last line is neither."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return {"PASS": True, "FAIL": False}.get(last)


@register
class Judge(SpecCheck):
    """``{"type": "judge", "rubric": "Names order A-1042 and promises nothing."}``"""

    type = "judge"
    required = {"rubric": _text}

    def label(self) -> str:
        rubric = " ".join(self.values["rubric"].split())
        return rubric if len(rubric) <= 40 else rubric[:39] + "…"

    async def __call__(self, sample: Sample) -> Outcome:
        target = JUDGE.get()
        if target is None:
            raise RuntimeError("no judge target: pass judge=... to run() or score()")
        messages = judge_messages(self.values["rubric"], sample.prompt, sample.answer or "")
        request = Request(
            Case(f"judge:{sample.case_id}", messages=messages),
            Variant("judge"),
            sample.repeat,
            tuple(messages),
            {},
        )
        try:
            completion = await target.complete(request)
        except TargetError as exc:
            evidence = {"request": messages, "error": str(exc)}
            return Outcome(False, f"no clear verdict: the judge failed ({exc})", evidence)
        sent = completion.request
        if isinstance(sent, str):
            sent = json.loads(sent)
        evidence = {
            "request": sent if sent is not None else messages,
            "reply": completion.text,
            "model": completion.model,
        }
        verdict = verdict_of(completion.text)
        if verdict is None:
            return Outcome(False, "no clear verdict", evidence)
        if verdict:
            return Outcome(True, "", evidence)
        reasons = [line.strip() for line in completion.text.splitlines() if line.strip()][:-1]
        reason = " ".join(reasons)
        return Outcome(False, reason[:200] if reason else "the judge said FAIL", evidence)
