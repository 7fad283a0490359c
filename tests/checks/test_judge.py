import asyncio
import dataclasses
import json

import pytest

from evalnb import (
    Case,
    CasesError,
    Completion,
    Function,
    OpenAIChat,
    TargetError,
    Variant,
    load_cases,
    run,
    store,
)
from evalnb.checks import arun_checks, build_check
from evalnb.checks._judge import JUDGE, verdict_of
from tests.builders import sample

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


def graded(reply, spec, case=None):
    async def judge(request):
        graded.sent = request.messages
        return Completion(text=reply, model="fake-judge")

    async def go():
        token = JUDGE.set(Function(judge))
        try:
            return await arun_checks([build_check(spec, case=case)], sample("Paris"))
        finally:
            JUDGE.reset(token)

    (result,) = asyncio.run(go())
    return result


@pytest.mark.parametrize(
    ("reply", "outcome", "score", "detail"),
    [
        ("Close enough.\nGRADE: 4", True, 0.75, "grade 4/5"),
        ("GRADE: 5", True, 1.0, "grade 5/5"),
        ("Mostly wrong.\nGRADE: 2", False, 0.25, "grade 2/5: score 0.25 < threshold 0.5"),
        ("GRADE: 6", False, 0.0, "no clear verdict"),  # out of the scale
        ("GRADE: 4\nI think.", False, 0.0, "no clear verdict"),  # not the last line
        ("PASS", False, 0.0, "no clear verdict"),
    ],
)
def test_a_graded_judge_maps_its_grade_to_a_score(reply, outcome, score, detail):
    result = graded(reply, {"type": "judge", "rubric": "r", "scale": 5})
    assert (result.outcome, result.score, result.detail) == (outcome, score, detail)
    assert "on a scale of 1 (worst) to 5 (best)" in graded.sent[0]["content"]


def test_a_graded_judge_passes_at_its_threshold():
    spec = {"type": "judge", "rubric": "r", "scale": 5, "threshold": 0.75}
    assert graded("GRADE: 4", spec).outcome is True
    assert graded("GRADE: 3", spec).detail == "grade 3/5: score 0.5 < threshold 0.75"
    assert graded("PASS", {"type": "judge", "rubric": "r"}).score is None  # pass/fail: no score
    with pytest.raises(ValueError, match=r"'check\.threshold' needs a graded 'scale'"):
        build_check({"type": "judge", "rubric": "r", "threshold": 0.5})
    with pytest.raises(ValueError, match=r"'check\.scale' must be 'pass_fail' or a whole number"):
        build_check({"type": "judge", "rubric": "r", "scale": 1})


def test_the_rubric_reads_target_vars_and_context_from_its_case():
    case = Case(
        "c",
        vars={"city": "Paris"},
        target="Paris",
        context=["Paris is the capital of France."],
    )
    rubric = 'Says "{{ target }}" about {{ vars.city }} ({{ city }}); facts: {{ context[0] }}'
    result = graded("Fine.\nPASS", {"type": "judge", "rubric": rubric}, case)
    assert result.outcome is True
    assert graded.sent[1]["content"].startswith(
        'Rubric:\nSays "Paris" about Paris (Paris); facts: Paris is the capital of France.'
    )
    # A rubric that needs its case cannot run without one: it fails, saying why.
    unbound = graded("PASS", {"type": "judge", "rubric": rubric})
    assert unbound.outcome is False and "the rubric uses case fields" in unbound.detail


def test_a_rubric_variable_the_case_lacks_is_an_error_naming_case_check_and_variable(tmp_path):
    path = tmp_path / "cases.jsonl"
    rows = [
        {
            "id": "a",
            "prompt": "p",
            "target": "x",
            "checks": [{"type": "judge", "rubric": "{{ target }}"}],
        },
        {"id": "b", "prompt": "p", "checks": [{"type": "judge", "rubric": "Says {{ vars.city }}"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(CasesError) as info:
        load_cases(path)
    assert str(info.value) == (f"{path}:2: 'checks[0].rubric': variable 'vars.city' is undefined")


def test_a_graded_judge_runs_on_the_stand_in_and_its_scores_are_stored(tmp_path, standin):
    cases = [
        Case(
            "order",
            prompt="Where is my order A-1042?",
            target="A-1042",
            checks=[
                {
                    "type": "judge",
                    "scale": 5,
                    "rubric": 'Pass when the reply mentions "{{ target }}".',
                }
            ],
        )
    ]
    out = tmp_path / "r"
    target = OpenAIChat(standin.base_url, "shop-v1")
    judge = OpenAIChat(standin.base_url, "judge", max_retries=2)
    result = run(cases, target, variants=["v1"], repeats=40, out=out, judge=judge, progress=False)
    checks = store.read_table(out, "checks").to_pandas()
    samples = store.read_table(out, "samples").to_pandas()
    assert set(checks.check) == {"judge"} and checks.score.notna().all()
    assert set(checks.score) <= {0.0, 0.25, 0.75, 1.0}  # grades 1, 2, 4, 5 of 5
    # The stand-in grades 5 or 1 and is one off 5% of the time: the threshold 0.5 keeps
    # the verdict, so outcome and score agree with the answers but for unclear replies.
    truth = samples.set_index("repeat").answer.str.contains("A-1042")
    graded_rows = checks.set_index("repeat")
    agree = ((graded_rows.score >= 0.5) == truth).mean()
    assert agree >= 0.85
    assert ((graded_rows.score >= 0.5) == graded_rows.outcome).all()
    mean = checks.score.mean()
    assert result.scores["v1"]["judge"] == pytest.approx(mean)
    assert f"(mean score {mean:.2f})" in result.summary()
