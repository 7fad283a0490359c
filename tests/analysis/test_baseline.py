"""A run against last week's run: compare_runs and ``evalnb gate --baseline``, on the stand-in."""

from __future__ import annotations

import json

import pytest

import evalnb
from evalnb._exceptions import ArgumentError
from evalnb.analysis._compare import compare
from evalnb.analysis._runs import NO_WORSE, WORSE, compare_runs
from evalnb.cli import main
from evalnb.standin import StandIn

SHOP = evalnb.cases.suites.path("shop.jsonl")


@pytest.fixture(scope="module")
def weeks(tmp_path_factory):
    """Last week on shop-v2 (true pass rate 0.90); this week on shop-v1 (0.70) and shop-v2.

    A server of its own, so the draws do not depend on which other tests ran first.
    """
    root = tmp_path_factory.mktemp("weeks")
    with StandIn(seed=0) as server:
        for name, model in [("last", "shop-v2"), ("v1", "shop-v1"), ("v2", "shop-v2")]:
            evalnb.run(
                SHOP,
                evalnb.OpenAIChat(server.base_url, model),
                variants=["prompt"],
                repeats=25,
                out=root / name,
                progress=False,
            )
    return root


def test_gate_baseline_says_worse_when_the_model_regressed(weeks, capsys):
    code = main(
        [
            "gate",
            str(weeks / "v1"),
            "--baseline",
            str(weeks / "last"),
            "--no-worse-than",
            "0.05",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith("baseline"))
    assert "FAIL" in line and ": worse (4 cases x 25 repeats, fixed cases)" in line
    assert out.rstrip().endswith("gate: FAIL (1 of 2 rules failed)")


def test_gate_baseline_same_model_is_not_called_worse(weeks, capsys):
    code = main(
        [
            "gate",
            str(weeks / "v2"),
            "--baseline",
            str(weeks / "last"),
            "--no-worse-than",
            "0.05",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("baseline"))
    assert "pass" in line
    assert ": no worse (" in line or ": can't tell yet (" in line


def test_compare_runs_is_compare_paired_by_case(weeks):
    result = compare_runs(weeks / "last", weeks / "v1")
    row = result.iloc[0]
    assert (row["variant"], row["a"], row["b"], row["verdict"]) == ("prompt", "last", "v1", WORSE)
    assert (row["cases"], row["repeats_a"], row["repeats_b"]) == (4, 25, 25)
    # The same numbers as compare() on both runs loaded together, runs as the sides.
    both = compare(
        evalnb.load([weeks / "last", weeks / "v1"]), a="last", b="v1", on="run_id", mode="fixed"
    ).iloc[0]
    for column in ("diff", "se", "low", "high", "p_value", "p_exact", "rate_a", "rate_b"):
        assert row[column] == pytest.approx(both[column]), column
    assert row["rate_a"] > row["rate_b"]
    assert row["high"] < 0
    assert "exact conditional test" in row["exact_method"]


def test_a_margin_wider_than_the_drop_is_never_worse(weeks):
    row = compare_runs(weeks / "last", weeks / "v1", margin=0.5).iloc[0]
    assert row["verdict"] != WORSE
    assert row["margin"] == 0.5


def test_random_mode_with_four_cases_cannot_decide(weeks):
    row = compare_runs(weeks / "last", weeks / "v1", mode="random").iloc[0]
    assert row["verdict"] == "can't tell yet"
    assert "add cases" in row["note"]


def test_a_run_against_itself_is_no_worse(weeks):
    row = compare_runs(weeks / "v2", weeks / "v2").iloc[0]
    assert row["diff"] == 0
    # every per-case difference is 0: the floor standard error, never certainty
    assert row["se"] > 0 and row["low"] < 0
    assert row["verdict"] in (NO_WORSE, "can't tell yet")


def test_runs_sharing_a_run_id_stay_apart(tmp_path):
    # CI often reuses one --out name, so last week's run has this week's run id
    with StandIn(seed=2) as server:
        for week, model in [("week1", "shop-v2"), ("week2", "shop-v1")]:
            evalnb.run(
                SHOP,
                evalnb.OpenAIChat(server.base_url, model),
                repeats=25,
                out=tmp_path / week / "current",
                progress=False,
            )
    row = compare_runs(tmp_path / "week1" / "current", tmp_path / "week2" / "current").iloc[0]
    assert row["a"] == row["b"] == "current"
    assert row["cases"] == 4 and row["repeats_a"] == row["repeats_b"] == 25
    assert row["verdict"] == WORSE


def test_cases_in_one_run_only_are_named_and_changed_cases_flagged(tmp_path):
    cases = [json.loads(line) for line in SHOP.read_text().splitlines()]
    old_cases = cases[:3]
    new_cases = [dict(cases[0], prompt="Where is my order A-1042 please?"), *cases[1:2], cases[3]]
    for name, rows in [("old", old_cases), ("new", new_cases)]:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with StandIn(seed=1) as server:
        for name in ("old", "new"):
            evalnb.run(
                tmp_path / f"{name}.jsonl",
                evalnb.OpenAIChat(server.base_url, "shop-v2"),
                repeats=3,
                out=tmp_path / name,
                progress=False,
            )
    row = compare_runs(tmp_path / "old", tmp_path / "new").iloc[0]
    assert row["cases"] == 2
    assert (row["only_new"], row["only_old"]) == (1, 1)
    assert row["unmatched"] == (
        f"only in the new run: {cases[3]['id']}; only in the baseline: {cases[2]['id']}"
    )
    assert row["changed"] == 1
    assert f"1 case definitions changed: {cases[0]['id']}" in row["note"]


def test_gate_baseline_errors_are_one_line(weeks, tmp_path, capsys):
    code = main(["gate", str(weeks / "v1"), "--baseline", str(tmp_path / "missing")])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "the baseline run" in err and "missing" in err
    code = main(
        ["gate", str(weeks / "v1"), "--baseline", str(weeks / "last"), "--no-worse-than", "2"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "between 0 and 1; got '2'" in err


def test_compare_runs_refuses_several_runs_as_one_side(weeks):
    both = evalnb.load([weeks / "last", weeks / "v1"])
    with pytest.raises(ArgumentError, match=r"'b' \(the new run\) must be one run; got 2 runs"):
        compare_runs(weeks / "last", both)
