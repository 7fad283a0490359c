"""gate(): an explicit policy, every rule listed; `evalnb gate` exits 0, 1 or 2."""

from __future__ import annotations

import argparse
import io
import json
import warnings
from pathlib import Path

import pytest

from evalnb.analysis import GatePolicy, gate, load
from evalnb.cli._analyse import add_gate_arguments, gate_command
from evalnb.store import write_json_atomic
from tests.builders import CASES, counts_run, invoice_rows, manifest, write_run


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    return counts_run(root / "shop", {"v1": [8, 7, 8, 10], "v2": [9, 10, 10, 10]}, 10)


def cli(*argv: str) -> tuple[int, str, str]:
    parser = add_gate_arguments(argparse.ArgumentParser(prog="evalnb gate"))
    out, err = io.StringIO(), io.StringIO()
    code = gate_command(parser.parse_args(list(argv)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_every_rule_is_listed_with_its_numbers(shop: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the few-cases warning goes into the detail instead
        result = gate(load(shop), policy={"min_rate": 0.9, "every_case_passes": True})
    assert result["rule"].tolist() == [
        "run_complete", "min_rate", "min_rate", "every_case_passes", "every_case_passes",
    ]  # fmt: skip
    rates = result[result["rule"] == "min_rate"].set_index("variant")
    assert rates.loc["v1", "value"] == pytest.approx(0.825) and not rates.loc["v1", "passed"]
    assert rates.loc["v2", "passed"]
    assert "33/40 samples, 4 cases" in rates.loc["v1", "detail"]
    assert "too few cases" in rates.loc["v1", "detail"]
    assert result[result["rule"] == "every_case_passes"]["passed"].all()
    assert list(result.columns) == [
        "rule", "variant", "check", "value", "op", "threshold", "passed", "detail",
    ]  # fmt: skip


def test_per_case_rules_name_the_failing_cases(shop: Path) -> None:
    result = gate(load(shop), policy=GatePolicy(min_case_rate=0.75, variants=("v1",)))
    rule = result[result["rule"] == "min_case_rate"].iloc[0]
    assert not rule["passed"] and rule["value"] == pytest.approx(0.7)
    assert rule["detail"] == "1 of 4 cases below: case-01 (7/10)"


def test_no_worse_than_uses_the_paired_comparison(shop: Path) -> None:
    result = gate(load(shop), policy={"no_worse_than": "v2"})
    rule = result[result["variant"] == "v1"].iloc[0]
    assert rule["rule"] == "no_worse_than v2"
    assert rule["passed"]  # four cases: can't tell yet, so not shown worse
    assert "can't tell yet (4 cases x 10 repeats)" in rule["detail"]


def test_agreement_rule_uses_case_minimums(tmp_path: Path) -> None:
    run = load(write_run(tmp_path / "drawn", invoice_rows(canonical=False), cases=CASES))
    result = gate(run, policy={"agreement": True})
    rule = result[result["rule"] == "agreement"].iloc[0]
    assert not rule["passed"] and rule["value"] == 1
    assert "refund_abstain_v1 (0.80 < 1.00; pairwise 0.60)" in rule["detail"]
    assert "modal share" in rule["detail"]  # the detail names the estimate it compares
    assert gate(run, policy={"agreement": 0.8}).query("rule == 'agreement'")["passed"].all()


def test_an_interrupted_run_fails_unless_allowed(tmp_path: Path) -> None:
    path = counts_run(tmp_path / "cut", {"v": [10] * 10}, 2)
    data = manifest("cut", [{"id": f"case-{i:02d}"} for i in range(10)], ["v"], 2, "interrupted")
    write_json_atomic(path / "manifest.json", data)
    assert cli(str(path), "--min-rate", "0.5")[0] == 1
    assert cli(str(path), "--min-rate", "0.5", "--allow-interrupted")[0] == 0


def test_cli_exit_codes(shop: Path, tmp_path: Path) -> None:
    code, out, _ = cli(str(shop), "--min-rate", "0.8", "--every-case-passes")
    assert code == 0 and out.rstrip().endswith("gate: PASS (5 rules)")
    code, out, _ = cli(str(shop), "--min-rate", "0.9")
    assert code == 1 and "gate: FAIL (1 of 3 rules failed)" in out
    assert out.splitlines()[2].startswith("min_rate") and "FAIL" in out.splitlines()[2]
    code, _, err = cli(str(shop))
    assert code == 2 and "no rules" in err
    code, _, err = cli(str(tmp_path / "missing"), "--min-rate", "0.5")
    assert code == 2 and "not a run directory" in err
    code, _, err = cli(str(shop), "--min-rate", "1.5")
    assert code == 2 and "'min_rate' must be a number between 0 and 1; got 1.5" in err
    code, _, err = cli(str(shop), "--agreement", "lots")
    assert code == 2 and "--agreement must be a number" in err
    with pytest.raises(SystemExit) as stop:
        cli(str(shop), "--min-rate", "high")
    assert stop.value.code == 2


def test_policy_file_and_flags_override(shop: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"min_rate": 0.99, "variants": ["v2"]}))
    assert cli(str(shop), "--policy", str(policy))[0] == 1
    assert cli(str(shop), "--policy", str(policy), "--min-rate", "0.9")[0] == 0
    policy.write_text(json.dumps({"min_rat": 0.9}))
    code, _, err = cli(str(shop), "--policy", str(policy))
    assert code == 2 and "got ['min_rat']" in err


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="no rules"):
        GatePolicy()
    with pytest.raises(ValueError, match=r"'split' must be one of 'dev', 'heldout'; got 'test'"):
        GatePolicy(min_rate=0.5, split="test")
    with pytest.raises(ValueError, match=r"'every_case_passes' must be true or false; got 'yes'"):
        GatePolicy(every_case_passes="yes")  # type: ignore[arg-type]


def test_an_empty_run_does_not_pass(tmp_path: Path) -> None:
    path = write_run(tmp_path / "empty", [], cases=[{"id": "a"}])
    result = gate(load(path), policy={"min_rate": 0.5, "every_case_passes": True})
    assert result["rule"].tolist() == ["run_complete", "min_rate", "every_case_passes"]
    assert result["passed"].tolist() == [True, False, False]
    assert cli(str(path), "--min-rate", "0.5")[0] == 1


def test_rules_on_held_out_cases_only(tmp_path: Path) -> None:
    from tests.builders import counts_rows

    rows = counts_rows({"v1": [2, 2, 9, 9], "v2": [9, 9, 10, 10]}, 10)
    cases = [{"id": f"case-{i:02d}", "split": "dev" if i < 2 else "heldout"} for i in range(4)]
    run = load(write_run(tmp_path / "split", rows, cases=cases))
    policy = {"min_rate": 0.85, "split": "heldout", "no_worse_than": "v1"}
    result = gate(run, policy=policy).set_index(["rule", "variant"])
    assert result.loc[("min_rate", "v1"), "value"] == pytest.approx(0.9)  # dev cases left out
    assert result["passed"].all()
    assert "2 cases" in result.loc[("min_rate", "v1"), "detail"]
