"""``evalnb export``: CSV/JSONL rows, Every Eval Ever records valid against its schema,
and verdicts as Inspect ``precomputed_scores`` read back by Inspect's own code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

import evalnb
from evalnb.cli import main
from evalnb.interop import import_inspect_log

DATA = Path(__file__).parents[1] / "data"
LOG = DATA / "peers" / "inspect_logs" / "popularity_scored.eval"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    import_inspect_log(LOG, tmp_path / "run")
    return tmp_path / "run"


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_one_row_per_sample_with_checks_and_case_fields(fmt, run_dir, tmp_path) -> None:
    out = tmp_path / f"rows.{fmt}"
    assert main(["export", str(run_dir), "--format", fmt, "--out", str(out)]) == 0
    rows = pd.read_csv(out) if fmt == "csv" else pd.read_json(out, lines=True)
    assert len(rows) == 10
    assert {"case_id", "repeat", "answer", "check:match", "group", "split", "target"} <= set(rows)
    assert rows["check:match"].sum() == evalnb.load(run_dir).checks["outcome"].sum()
    assert json.loads(rows["target"][0]) == " Yes"


def test_eee_records_validate_against_the_every_eval_ever_schema(run_dir, tmp_path) -> None:
    aggregate_schema = json.loads((DATA / "eee/eval.schema.json").read_text())
    instance_schema = json.loads((DATA / "eee/instance_level_eval.schema.json").read_text())
    assert aggregate_schema["version"] == "0.2.3"
    assert main(["export", str(run_dir), "--format", "eee", "--out", str(tmp_path / "eee")]) == 0
    found = sorted((tmp_path / "eee").rglob("*.json"))
    assert len(found) == 1, found
    (aggregate_path,) = found
    aggregate = json.loads(aggregate_path.read_text())
    jsonschema.validate(aggregate, aggregate_schema)
    lines = (tmp_path / "eee" / aggregate["detailed_evaluation_results"]["file_path"]).read_text()
    records = [json.loads(line) for line in lines.splitlines()]
    for record in records:
        jsonschema.validate(record, instance_schema)
    assert len(records) == 10 and {r["metadata"]["repeat"] for r in records} == {"0"}
    results = {r["evaluation_name"]: r for r in aggregate["evaluation_results"]}
    suite = evalnb.suite_rate(evalnb.load(run_dir), check=None).set_index("check")
    assert set(results) == set(suite.index)
    for check, result in results.items():
        assert result["score_details"]["score"] == pytest.approx(suite.loc[check, "estimate"])
        interval = result["score_details"]["uncertainty"]["confidence_interval"]
        assert interval["lower"] == pytest.approx(suite.loc[check, "low"])
        assert suite.loc[check, "method"] in interval["method"]  # the method is named
        assert result["score_details"]["details"]["cases"] == "10"


def _verdicts(run_dir: Path) -> None:
    from evalnb.review._state import ReviewState

    panel = ReviewState(run_dir, "ana")
    panel.record("pass")
    panel.next()
    panel.record("fail")
    panel.next()
    panel.record("needs_review")


def _read_back(path: Path) -> list[dict]:
    """The records as Inspect's precomputed_scores scorer reads them (its own reader)."""
    code = (
        "import json, sys\n"
        "from inspect_ai.scorer._precomputed import _read_scores_file\n"
        "found = _read_scores_file(sys.argv[1])\n"
        "print(json.dumps([{'id': k[0], 'epoch': k[1], 'value': s.value,"
        " 'explanation': s.explanation} for k, s in found.items()]))\n"
    )
    given = os.environ.get("INSPECT_AI_PYTHON")  # `make test` sets it: then it must work
    python = given or sys.executable
    done = subprocess.run([python, "-c", code, str(path)], capture_output=True, text=True)
    if not given and "No module named 'inspect_ai'" in done.stderr:
        pytest.skip(
            "Inspect is not installed (pip install 'evalnb[inspect]' or set INSPECT_AI_PYTHON; "
            "make test does)"
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_inspect_scores_round_trip_through_inspects_reader(run_dir, tmp_path) -> None:
    _verdicts(run_dir)
    out = tmp_path / "scores.jsonl"
    assert main(["export", str(run_dir), "--format", "inspect-scores", "--out", str(out)]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [w["value"] for w in written] == ["C", "I"]  # needs_review is no verdict
    found = _read_back(out)
    assert sorted((f["id"], f["epoch"], f["value"]) for f in found) == sorted(
        (w["id"], w["epoch"], w["value"]) for w in written
    )
