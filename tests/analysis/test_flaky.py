"""Flakiness verdicts per case: stable-pass, flaky, stable-fail from the case's own
repeats (exact interval), in the gate, the report and JUnit."""

from __future__ import annotations

import pytest
from junitparser import JUnitXml

import evalnb
from evalnb.cli._ci import case_rows, junit_xml
from tests.builders import counts_run, write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # 4 cases x 5 repeats: v1 passes 5, 3, 0, 5 times; v2 passes 5, 5, 0, 1 times
    path = tmp_path_factory.mktemp("flaky") / "r"
    counts_run(path, {"v1": [5, 3, 0, 5], "v2": [5, 5, 0, 1]}, 5)
    return evalnb.load(path)


def test_each_case_gets_a_verdict_with_an_exact_interval(run):
    table = evalnb.flakiness(run)
    v1 = table[table["variant"].astype(str) == "v1"].set_index("case_id")
    assert list(v1["verdict"]) == ["stable-pass", "flaky", "stable-fail", "stable-pass"]
    assert (v1["n"] == 5).all() and v1.loc["case-01", "k"] == 3
    # statsmodels proportion_confint(5, 5, alpha=0.05, method="beta") = (0.4782, 1.0)
    assert v1.loc["case-00", "low"] == pytest.approx(0.4781762, abs=1e-6)
    # proportion_confint(3, 5, method="beta") = (0.1466, 0.9473)
    assert (v1.loc["case-01", "low"], v1.loc["case-01", "high"]) == pytest.approx(
        (0.1466328, 0.9472550), abs=1e-6
    )
    assert v1.loc["case-00", "detail"] == "passed all 5 repeats: rate at least 48% (95% exact)"
    assert v1.loc["case-01", "detail"] == "passed 3 of 5 repeats: rate 15% to 95% (95% exact)"
    assert v1.loc["case-02", "detail"] == "failed all 5 repeats: rate at most 52% (95% exact)"
    assert "Clopper-Pearson" in v1["method"].iloc[0]


def test_the_gate_can_require_no_flaky_case(run):
    result = evalnb.gate(run, policy={"no_flaky": True})
    rows = result[result["rule"] == "no_flaky"].set_index("variant")
    assert not rows.loc["v1", "passed"] and not rows.loc["v2", "passed"]
    assert rows.loc["v1", "detail"] == "1 of 4 cases flaky: case-01 (3/5)"
    only_v1_stable = evalnb.gate(run, policy={"no_flaky": True, "variants": ["v1"]})
    assert list(only_v1_stable["rule"]) == ["run_complete", "no_flaky"]
    with pytest.raises(evalnb.ArgumentError, match="'no_flaky' must be true or false"):
        evalnb.gate(run, policy={"no_flaky": "yes"})


def test_junit_and_the_report_carry_the_verdict(run, tmp_path):
    per_case = evalnb.rates(run, by=["variant", "case_id"], check="all")
    cases = case_rows(per_case, None, no_flaky=True)
    assert list(cases["verdict"]) == [
        "stable-pass",
        "flaky",
        "stable-fail",
        "stable-pass",
        "stable-pass",
        "stable-pass",
        "stable-fail",
        "flaky",
    ]
    result = evalnb.gate(run, policy={"no_flaky": True})
    path = tmp_path / "gate.xml"
    path.write_text(junit_xml(result, cases))
    suites = list(JUnitXml.fromfile(str(path)))
    by_name = {(c.classname, c.name): c for c in suites[1]}
    flaky = by_name[("evalnb.cases._files.v1", "case-01")]
    assert not flaky.is_passed
    assert "3/5 passed (0.600); passes at least once, not flaky; flaky over 5 repeats" in (
        flaky.result[0].message
    )
    assert by_name[("evalnb.cases._files.v1", "case-00")].is_passed
    text = evalnb.report_text(run)
    assert "3/5 0.60 (0.23 to 0.88) flaky" in text  # Wilson 95% for 3/5, then the verdict
    assert "stable-pass" in text and "see evalnb.flakiness" in text


def test_a_stable_case_with_one_timeout_is_not_called_flaky_and_says_why(tmp_path):
    """30 repeats; case-00 passes every completed draw and times out once, case-01 fails
    once on a completed draw, case-02 never completes. flakiness() and agreement() name
    the same cases flaky, and the timeout is named apart from the model's failures."""
    rows = []
    for r in range(30):
        timeout = r == 7
        rows.append(
            {
                "case_id": "case-00",
                "variant": "v1",
                "repeat": r,
                "status": "timeout" if timeout else "completed",
                "answer": None if timeout else "yes",
                "checks": {"ok": not timeout},
            }
        )
        rows.append({"case_id": "case-01", "variant": "v1", "repeat": r, "checks": {"ok": r != 3}})
        rows.append(
            {
                "case_id": "case-02",
                "variant": "v1",
                "repeat": r,
                "status": "error",
                "answer": None,
                "checks": {"ok": False},
            }
        )
    run = evalnb.load(write_run(tmp_path / "r", rows))
    table = evalnb.flakiness(run).set_index("case_id")
    assert list(table["verdict"]) == ["stable-pass", "flaky", "incomplete"]
    stable = table.loc["case-00"]
    assert (stable["k"], stable["n"], stable["incomplete"], stable["completed"]) == (29, 30, 1, 29)
    assert stable["detail"].startswith(
        "passed all 29 completed repeats; 1 incomplete (timeout, error...), not a model failure"
    )
    # statsmodels proportion_confint(29, 30, method="beta")[0] = 0.8278: the rate keeps
    # the timeout in its denominator, as every rate does
    assert stable["low"] == pytest.approx(0.827822, abs=1e-5)
    assert table.loc["case-02", "detail"].startswith("none of 30 repeats completed")
    flaky = evalnb.agreement(run, key="answer").set_index("case_id")["flaky"]
    assert list(flaky) == [False, True, False]
    # the gate counts the model's flaky case only
    rows = evalnb.gate(run, policy={"no_flaky": True})
    assert rows.loc[rows["rule"] == "no_flaky", "value"].item() == 1.0
