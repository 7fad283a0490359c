"""The judge: a second model reads the answer against a rubric.

With ``scale: "pass_fail"`` (the default) its reply's last non-empty line must be exactly
``PASS`` or ``FAIL``; with ``scale: N`` (a whole number from 2) it grades from 1 to N and
its last line must be exactly ``GRADE: k``, scored ``(k - 1) / (N - 1)`` and passing at
``threshold`` (default 0.5). Anything else, or a judge that fails to answer, is a fail
("no clear verdict"; a graded judge scores 0). The rubric is a template: ``{{ target }}``,
``{{ context }}``, ``{{ vars.x }}`` (or ``{{ x }}``) and ``{{ choices }}`` come from the
case, checked before anything runs. The judge's request and reply are kept as the check's
evidence. The judge target is given to ``run(judge=...)`` or ``score(judge=...)`` and
reaches the checks through :data:`JUDGE`.
"""

from __future__ import annotations

import contextvars
import json
import re
from typing import Any, cast

from evalnb._exceptions import ArgumentError, TargetError
from evalnb._numbers import is_whole
from evalnb._types import Case, Request, Sample, Variant, check_template, render_template
from evalnb.checks._base import Outcome, SpecCheck, register, threshold_value
from evalnb.checks._lexical import _text

__all__ = ["JUDGE", "JUDGE_SYSTEM", "Judge", "graded_system", "judge_messages"]

#: The judge target for checks running in this context (set by the runner and score).
JUDGE: contextvars.ContextVar[Any] = contextvars.ContextVar("evalnb_judge", default=None)

JUDGE_SYSTEM = (
    "You grade one answer against a rubric. Explain briefly, then end with a line that is "
    "exactly PASS or FAIL."
)


def graded_system(scale: int) -> str:
    """The judge's instructions for a 1-to-``scale`` grade."""
    return (
        f"You grade one answer against a rubric on a scale of 1 (worst) to {scale} (best). "
        f"Explain briefly, then end with a line that is exactly GRADE: followed by the grade."
    )


def judge_messages(
    rubric: str, prompt: str, answer: str, scale: int | None = None
) -> list[dict[str, str]]:
    """The conversation sent to the judge (``scale``: None for pass/fail)."""
    user = f"Rubric:\n{rubric}\n\nQuestion:\n{prompt}\n\nAnswer:\n{answer}"
    system = JUDGE_SYSTEM if scale is None else graded_system(scale)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def verdict_of(reply: str) -> bool | None:
    """True for PASS, False for FAIL, None when the last line is neither."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return {"PASS": True, "FAIL": False}.get(last)


_GRADE = re.compile(r"GRADE: (\d+)")


def grade_of(reply: str, scale: int) -> int | None:
    """The grade on the reply's last non-empty line (exactly ``GRADE: k``, 1 <= k <=
    ``scale``), or None."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    match = _GRADE.fullmatch(lines[-1]) if lines else None
    grade = int(match[1]) if match else None
    return grade if grade is not None and 1 <= grade <= scale else None


def _scale(value: Any) -> str | int:
    if value == "pass_fail" or is_whole(value, 2, 100):
        return cast(str | int, value)
    raise ArgumentError("must be 'pass_fail' or a whole number of grades from 2 to 100")


@register
class Judge(SpecCheck):
    """``{"type": "judge", "rubric": "Names order A-1042 and promises nothing."}``, or graded:
    ``{"type": "judge", "scale": 5, "threshold": 0.75, "rubric": "Agrees with
    {{ target }}."}``."""

    type = "judge"
    required = {"rubric": _text}
    optional = {"scale": _scale, "threshold": threshold_value}
    reads_case = True

    def validate(self, where: str) -> None:
        scale = self.values.get("scale", "pass_fail")
        self.scale: int | None = None if scale == "pass_fail" else int(scale)
        if self.scale is None and "threshold" in self.values:
            raise ArgumentError(f"'{where}.threshold' needs a graded 'scale' (a number of grades)")
        self.graded = self.scale is not None
        self.threshold = self.values.get("threshold", self.threshold)
        try:
            check_template(self.values["rubric"])
        except ValueError as exc:
            raise ArgumentError(f"'{where}.rubric' {exc}") from None
        # A rubric that uses no case field works unbound too; one that does is rendered
        # when the check is bound to its case.
        try:
            self.rubric: str | None = render_template(self.values["rubric"], {})
        except ValueError:
            self.rubric = None

    def prepare(self, case: Case) -> None:
        try:
            self.rubric = render_template(self.values["rubric"], case.rubric_context())
        except ValueError as exc:
            raise ArgumentError(f"'{self.where}.rubric': {exc}") from None

    def label(self) -> str:
        rubric = " ".join(self.values["rubric"].split())
        return rubric if len(rubric) <= 40 else rubric[:39] + "…"

    async def __call__(self, sample: Sample) -> Outcome:
        target = JUDGE.get()
        if target is None:
            raise RuntimeError("no judge target: pass judge=... to run() or score()")
        if self.rubric is None:
            raise RuntimeError(
                "the rubric uses case fields: build the check with its case "
                "(build_checks(specs, case=...)) or let the runner bind it"
            )
        messages = judge_messages(self.rubric, sample.prompt, sample.answer or "", self.scale)
        request = Request(
            Case(f"judge:{sample.case_id}", messages=messages),
            Variant("judge"),
            sample.repeat,
            tuple(messages),
            {},
        )
        zero = 0.0 if self.scale is not None else None
        try:
            completion = await target.complete(request)
        except TargetError as exc:
            failed = {"request": messages, "error": str(exc)}
            return Outcome(False, f"no clear verdict: the judge failed ({exc})", failed, zero)
        sent = completion.request
        if isinstance(sent, str):
            sent = json.loads(sent)
        evidence: dict[str, Any] = {
            "request": sent if sent is not None else messages,
            "reply": completion.text,
            "model": completion.model,
        }
        if self.scale is not None:
            grade = grade_of(completion.text, self.scale)
            if grade is None:
                return Outcome(False, "no clear verdict", evidence, 0.0)
            evidence["grade"] = grade
            score = (grade - 1) / (self.scale - 1)
            passed = score >= self.threshold
            detail = f"grade {grade}/{self.scale}" + (
                "" if passed else f": score {score:g} < threshold {self.threshold:g}"
            )
            return Outcome(passed, detail, evidence, score)
        verdict = verdict_of(completion.text)
        if verdict is None:
            return Outcome(False, "no clear verdict", evidence)
        if verdict:
            return Outcome(True, "", evidence)
        reasons = [line.strip() for line in completion.text.splitlines() if line.strip()][:-1]
        reason = " ".join(reasons)
        return Outcome(False, reason[:200] if reason else "the judge said FAIL", evidence)
