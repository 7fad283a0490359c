"""``evalnb import inspect-log``: real Inspect logs become run directories every part of
evalnb reads, and the counts equal counting the log's own scores."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path

import pytest

import evalnb
from evalnb.cli import main
from evalnb.interop import import_inspect_log

# The files of ../shared/peers, kept in the repository so the tests never depend on it.
PEERS = Path(__file__).resolve().parents[1] / "data" / "peers" / "shared"
DATA = Path(__file__).parents[1] / "data" / "peers" / "inspect_logs"


def _count_log(path: Path) -> tuple[Counter, Counter, int]:
    """Per case: scores read C, scores present; and how many scores the log holds — read
    with zipfile/json only, not with the importer."""
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as z:
            samples = [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/")]
    else:
        samples = json.loads(path.read_text())["samples"]
    passed, scored, total = Counter(), Counter(), 0
    for sample in samples:
        for score in (sample.get("scores") or {}).values():
            total += 1
            scored[str(sample["id"])] += 1
            passed[str(sample["id"])] += score["value"] == "C"
    return passed, scored, total


def _count_run(run: evalnb.Run) -> tuple[Counter, Counter]:
    checks = run.checks.dropna(subset=["outcome"])
    passed = Counter(
        {
            str(k): int(v)
            for k, v in checks.groupby("case_id", observed=True)["outcome"].sum().items()
        }
    )
    scored = Counter(
        {str(k): int(v) for k, v in checks.groupby("case_id", observed=True).size().items()}
    )
    return +passed, +scored


@pytest.mark.parametrize(
    "log",
    [
        PEERS / "inspect/popularity_log.eval",
        DATA / "popularity_scored.eval",
        DATA / "mmlu_choices.eval",
        DATA / "security_guide.json",
    ],
    ids=lambda p: p.name,
)
def test_per_case_pass_counts_equal_the_logs_own_scores(log: Path, tmp_path: Path) -> None:
    result = import_inspect_log(log, tmp_path / "run")
    run = evalnb.load(tmp_path / "run")
    passed, scored, total = _count_log(log)
    assert _count_run(run) == (passed, scored)
    assert int(run.checks["outcome"].notna().sum()) == total
    assert len(run.samples) == result.counts["samples"]
    manifest = run.manifest
    assert manifest["source"] == "inspect" and manifest["provenance"]["task"]
    assert manifest["target"] == {"type": "inspect-log", "model": manifest["provenance"]["model"]}


def test_the_peers_log_holds_no_scores_so_its_scorer_is_unscored(tmp_path: Path) -> None:
    log = PEERS / "inspect/popularity_log.eval"
    import_inspect_log(log, tmp_path / "run")
    run = evalnb.load(tmp_path / "run")
    # The log names the match() scorer but stores no score: null, never a pass.
    assert set(run.checks["check"]) == {"match"} and run.checks["outcome"].isna().all()
    assert len(run.samples) == 10 and set(run.samples["status"]) == {"completed"}
    assert run.samples["prompt_tokens"].sum() == 620  # the header's model_usage total


def test_an_imported_log_works_with_every_analysis(tmp_path: Path, capsys) -> None:
    run_dir = tmp_path / "run"
    assert (
        main(["import", "inspect-log", str(DATA / "popularity_scored.eval"), "--out", str(run_dir)])
        == 0
    )
    assert "10 cases, 1 epochs, 10 samples" in capsys.readouterr().out
    run = evalnb.load(run_dir)
    rates = evalnb.rates(run)
    suite = evalnb.suite_rate(run)
    assert suite.loc[0, "cases"] == 10 and suite.loc[0, "method"]
    assert not rates.empty and not evalnb.agreement(run).empty
    assert main(["report", str(run_dir)]) == 0
    assert "match" in capsys.readouterr().out
    assert main(["gate", str(run_dir), "--min-rate", "0.0"]) == 0
    from evalnb.review._state import ReviewState

    panel = ReviewState(run_dir, "ana")
    assert panel.count == 10 and panel.shown is not None


def test_a_sample_with_an_error_is_incomplete_and_fails_its_scorers(tmp_path: Path) -> None:
    data = json.loads((DATA / "security_guide.json").read_text())
    data["samples"][1]["error"] = {"message": "RuntimeError: the model timed out", "traceback": ""}
    log = tmp_path / "errored.json"
    log.write_text(json.dumps(data))
    import_inspect_log(log, tmp_path / "run")
    run = evalnb.load(tmp_path / "run")
    errored = run.samples[run.samples["status"] == "error"]
    assert len(errored) == 1 and "timed out" in errored["error"].iloc[0]
    check = run.checks[run.checks["case_id"] == errored["case_id"].iloc[0]]
    assert check["outcome"].tolist() == [False] and "incomplete" in check["detail"].iloc[0]
    rates = evalnb.rates(run, by="variant")
    assert rates.loc[rates["check"] == "model_graded_fact", "incomplete"].tolist() == [1]


PROMPTFOO = Path(__file__).parents[1] / "data" / "peers" / "promptfoo_results"


def test_promptfoo_results_early_format(tmp_path: Path) -> None:
    source = PROMPTFOO / "simple-test-output.json"
    assert main(["import", "promptfoo-results", str(source), "--out", str(tmp_path / "run")]) == 0
    run = evalnb.load(tmp_path / "run")
    rows = json.loads(source.read_text())["results"]
    assert len(run.samples) == len(rows) == 4
    assert sorted(run.variants) == sorted({r["prompt"]["display"] for r in rows})
    assert run.checks["outcome"].sum() == sum(r["success"] for r in rows)
    assert run.samples["prompt_tokens"].sum() == 86  # the file's stats


def test_promptfoo_results_repeats_errors_and_assertions(tmp_path: Path, capsys) -> None:
    source = PROMPTFOO / "v3-repeat-output.json"
    assert main(["import", "promptfoo-results", str(source), "--out", str(tmp_path / "run")]) == 0
    run = evalnb.load(tmp_path / "run")
    assert run.manifest["source"] == "promptfoo" and run.manifest["repeats"] == 2
    assert sorted(run.samples["repeat"].tolist()) == [0, 0, 0, 0, 1, 1, 1, 1]
    rows = json.loads(source.read_text())["results"]["results"]
    passed = Counter()
    for r in rows:
        for c in (r.get("gradingResult") or {}).get("componentResults") or []:
            passed[f"test-{r['testIdx'] + 1}"] += c["pass"] and not r.get("error")
    assert _count_run(run)[0] == +passed
    errored = run.samples[run.samples["status"] == "error"]
    assert len(errored) == 1 and "429" in errored["error"].iloc[0]
    assert main(["report", str(tmp_path / "run")]) == 0
    assert "icontains" in capsys.readouterr().out
    assert not evalnb.compare(run).empty
