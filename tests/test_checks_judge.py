import asyncio
import dataclasses
import json

import pytest

from evalnb import Case, Completion, Function, OpenAIChat, TargetError, Variant, run, store
from evalnb.checks import arun_checks, build_check
from evalnb.checks.judge import JUDGE, verdict_of
from tests.test_checks import sample

RUBRIC = 'Pass when the reply mentions "A-1042" and never says "guaranteed".'


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Looks right.\nPASS", True),
        ("Wrong order.\nFAIL\n\n", False),
        ("PASS\nActually, hard to say.", None),
        ("pass", None),
        ("PASS.", None),
        ("", None),
    ],
)
def test_only_an_exact_last_line_is_a_verdict(reply, verdict):
    assert verdict_of(reply) is verdict


def judged(reply_or_error):
    async def judge(request):
        if isinstance(reply_or_error, Exception):
            raise reply_or_error
        return Completion(text=reply_or_error, model="fake-judge")

    async def go():
        token = JUDGE.set(Function(judge))
        try:
            return await arun_checks(
                [build_check({"type": "judge", "rubric": RUBRIC})], sample("Order A-1042")
            )
        finally:
            JUDGE.reset(token)

    (result,) = asyncio.run(go())
    return result


def test_an_unclear_reply_or_a_failed_judge_is_a_fail_with_evidence():
    result = judged("It depends.")
    assert (result.outcome, result.detail) == (False, "no clear verdict")
    evidence = json.loads(result.evidence)
    assert evidence["reply"] == "It depends." and evidence["model"] == "fake-judge"
    assert "Order A-1042" in evidence["request"][1]["content"]
    failed = judged(TargetError("HTTP 500: boom"))
    assert failed.outcome is False and failed.detail.startswith(
        "no clear verdict: the judge failed"
    )
    assert judged("Fine.\nPASS").outcome is True


def test_judge_check_needs_a_judge_target(tmp_path):
    case = Case("c", prompt="p", checks=[{"type": "judge", "rubric": RUBRIC}])
    with pytest.raises(ValueError, match="pass judge=<target>"):
        run([case], Function(lambda r: "x"), out=tmp_path / "r", progress=False)


def test_judge_runs_through_the_runner_with_the_stand_in_as_judge(tmp_path, standin):
    cases = [
        Case(
            "order",
            prompt="Where is my order A-1042?",
            checks=[{"type": "judge", "rubric": RUBRIC, "name": "judge"}],
        )
    ]
    out = tmp_path / "r"
    target = OpenAIChat(standin.base_url, "shop-v1")
    judge = OpenAIChat(standin.base_url, "judge", max_retries=2)
    run(cases, target, variants=[Variant("v1")], repeats=20, out=out, judge=judge, progress=False)
    checks = store.read_table(out, "checks").to_pandas()
    samples = store.read_table(out, "samples").to_pandas()
    assert len(checks) == 20 and set(checks.check) == {"judge"}
    assert checks.outcome.notna().all()
    for row in checks.itertuples():
        evidence = json.loads(row.evidence)
        assert evidence["model"] == "judge"
        assert evidence["request"]["messages"][0]["role"] == "system"
    # The stand-in judge follows the rubric most of the time: check it against the answers.
    truth = samples.set_index("repeat").answer.str.contains("A-1042") & ~samples.set_index(
        "repeat"
    ).answer.str.contains("guaranteed", case=False)
    agree = (checks.set_index("repeat").outcome == truth).mean()
    assert agree >= 0.7
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["judge"]["calls"] == 20
    assert manifest["judge"]["target"]["model"] == "judge"


def test_sample_fields_reach_the_judge_unchanged():
    s = dataclasses.replace(sample("<b>answer</b>"), prompt="question?")
    seen = []

    async def judge(request):
        seen.append(request.messages[1]["content"])
        return Completion(text="PASS")

    async def go():
        token = JUDGE.set(Function(judge))
        try:
            return await arun_checks([build_check({"type": "judge", "rubric": "r"})], s)
        finally:
            JUDGE.reset(token)

    asyncio.run(go())
    assert seen == ["Rubric:\nr\n\nQuestion:\nquestion?\n\nAnswer:\n<b>answer</b>"]
