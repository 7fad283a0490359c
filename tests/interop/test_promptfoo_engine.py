"""promptfoo's meaning from promptfoo: imported assertions graded by promptfoo's own
``runAssertion`` (each stored check naming the engine), the fallback listed when promptfoo is
hidden, and results files read by ``failureReason`` with every assertion's verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalnb
from evalnb.checks import run_checks
from evalnb.checks._promptfoo import find_promptfoo
from evalnb.checks._trust import require_trust
from evalnb.interop import import_promptfoo, import_promptfoo_results

DATA = Path(__file__).parents[1] / "data"
FEATURES = DATA / "promptfoo_features/features/promptfooconfig.yaml"
FAILED = DATA / "peers/promptfoo_results/echo-failed/failed-output.json"

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

needs_promptfoo = pytest.mark.skipif(
    find_promptfoo() is None, reason="promptfoo is not installed (make promptfoo installs it)"
)


def _sample(answer: str, case: evalnb.Case) -> evalnb.Sample:
    return evalnb.Sample(
        run_id="r",
        case_id=case.id,
        variant="v",
        repeat=0,
        order=0,
        started_at="2026-01-01T00:00:00+00:00",
        latency_ms=5.0,
        status="completed",
        error=None,
        answer=answer,
        prompt="Topic: gravity. Category: physics.",
        request=None,
        response=None,
    )


@needs_promptfoo
def test_every_assertion_is_graded_by_promptfoo_and_says_so(tmp_path):
    result = import_promptfoo(FEATURES, tmp_path / "suite")
    engine = find_promptfoo()
    assert engine is not None and result.engine == engine.name == "promptfoo 0.121.20"
    record = json.loads((tmp_path / "suite/imported.json").read_text())
    assert record["engine"] == engine.name and record["fallback"] == []
    # select-best compares the variants' answers: graded by promptfoo too, per group.
    assert result.unsupported == []
    mapped = {n.name: n.how for n in result.mapped}
    assert "matchesComparisonBoolean" in mapped["select-best"]
    cases = {c.id: c for c in evalnb.load_cases(tmp_path / "suite/cases.yaml")}
    # The bare prompt path is read as the file, as promptfoo reads it.
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    assert experiment.variants[0].template.startswith("You are a patient tutor. Explain {{topic}}")
    # CSV __expected values are trimmed after the colon, as promptfoo trims them.
    csv_checks = [c.spec["assertion"] for c in cases["test-1"].checks]
    assert {"type": "icontains", "value": "volcanoes"} in csv_checks
    types = {c.spec["assertion"]["type"] for case in cases.values() for c in case.checks}
    assert types >= {"rouge-n", "factuality", "levenshtein", "assert-set", "g-eval", "javascript"}
    assert "select-best" in types
    assert {c.type for case in cases.values() for c in case.checks} == {"promptfoo"}


@needs_promptfoo
def test_promptfoo_grades_default_test_values_with_each_tests_vars(tmp_path):
    import_promptfoo(FEATURES, tmp_path / "suite")
    case = {c.id: c for c in evalnb.load_cases(tmp_path / "suite/cases.yaml")}["test-4"]
    answer = "Topic: gravity. Category: physics. Masses attract each other."
    results = {r.check: r for r in run_checks(case.checks, _sample(answer, case), case)}
    # defaultTest's icontains "{{topic}}" is rendered with this test's topic, gravity.
    assert results["icontains"].outcome is True
    rouge = results["rouge-n"]  # against this test's summary, threshold 0.2
    assert rouge.outcome is True and rouge.score is not None and rouge.score >= 0.2
    assert results["starts-with"].outcome is True and results["not-contains"].outcome is True
    for result in results.values():
        assert json.loads(result.evidence or "{}")["engine"] == "promptfoo 0.121.20"
    # No judge given: the model-graded ones fail, saying why (never a silent pass).
    assert results["factuality"].outcome is False and "judge" in results["factuality"].detail


@needs_promptfoo
def test_a_one_line_iife_javascript_is_graded_as_promptfoo_grades_it(tmp_path):
    import_promptfoo(FEATURES, tmp_path / "suite")
    case = {c.id: c for c in evalnb.load_cases(tmp_path / "suite/cases.yaml")}["test-3"]
    iife = [c for c in case.checks if c.name == "javascript"]
    require_trust([iife], True, "run")  # promptfoo runs this JavaScript: the test's own
    short = run_checks(iife, _sample("Plants make sugar.", case), case)[0]
    good = run_checks(iife, _sample("Plants make sugar from light and water.", case), case)[0]
    assert short.outcome is False and good.outcome is True


def test_with_promptfoo_hidden_every_assertion_is_listed_as_graded_by_the_fallback(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    result = import_promptfoo(FEATURES, tmp_path / "suite")
    assert result.engine is None
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    stored = [c for case in cases for c in case.checks]
    record = json.loads((tmp_path / "suite/imported.json").read_text())
    # Every stored check is one fallback entry; every assertion left out is listed too.
    assert len(record["fallback"]) == len(stored) == 14
    assert all("promptfoo is not here" in f["how"] for f in record["fallback"])
    refused = [u["name"] for u in record["unsupported"]]
    assert refused.count("rouge-n") == 4 and "levenshtein" in refused
    assert all("install promptfoo" in u["reason"] for u in record["unsupported"][:2])
    assert [a["name"] for a in record["approximated"]] == ["provider openai:chat:gpt-4o-mini"]
    assert "fallback (14): graded by evalnb's own translation" in result.summary()
    # defaultTest's icontains "{{topic}}" goes with each test, rendered with its topic.
    first = {c.name: c.spec for c in cases[0].checks}
    assert first["icontains-2"] == {
        "name": "icontains-2",
        "type": "contains",
        "text": "volcanoes",
        "ignore_case": True,
    }


def test_results_read_failure_reason_and_every_assertion(tmp_path):
    """A real promptfoo 0.121.20 results file: rows whose assertion failed (failureReason
    1, promptfoo's error text set) and a row whose transform failed (2)."""
    import_promptfoo_results(FAILED, tmp_path / "run")
    run = evalnb.load(tmp_path / "run")
    samples = run.samples.set_index("case_id")
    assert samples.loc["test-1", "status"] == "completed"  # its regex failed, not an error
    assert samples.loc["test-2", "status"] == "completed"
    assert samples.loc["test-3", "status"] == "error"
    checks = {(r["case_id"], r["check"]): r for r in run.checks.to_dict("records")}
    assert checks[("test-1", "icontains")]["outcome"] is True
    regex = checks[("test-1", "regex")]
    assert regex["outcome"] is False and regex["detail"] == 'Expected output to match regex "^Sun"'
    javascript = checks[("test-2", "javascript")]
    assert javascript["outcome"] is False and javascript["score"] == pytest.approx(0.16)
    # The error row has no assertion result: one promptfoo check, failed as incomplete.
    error = checks[("test-3", "promptfoo")]
    assert error["outcome"] is False and error["detail"] == "incomplete sample: error"
    rows = json.loads(FAILED.read_text())["results"]["results"]
    assert [json.loads(r)["cost"] for r in samples.sort_values("order")["response"]] == [
        row["cost"] for row in rows
    ]
