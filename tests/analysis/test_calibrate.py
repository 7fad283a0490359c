"""calibrate(): a check against human verdicts, and annotators against each other."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa

from evalnb._types import CheckResult, Sample
from evalnb.analysis import Calibration, calibrate, load
from evalnb.store import RunWriter, VerdictStore, create_run_dir, write_json_atomic
from tests.builders import T0, manifest, write_run, write_verdicts

# Human pass/fail rows, judge pass/fail columns.
TABLE = [[20, 5], [2, 73]]


def judge_rows(table: list[list[int]]) -> list[tuple[str, bool]]:
    """(human verdict, judge outcome) pairs making up ``table``."""
    pairs = []
    for human, row in zip(("pass", "fail"), table, strict=True):
        for judge, count in zip((True, False), row, strict=True):
            pairs += [(human, judge)] * count
    return pairs


def case(i: int) -> str:
    return f"c{i:03d}"


@pytest.fixture
def judged(tmp_path: Path) -> Path:
    """100 cases, one sample each; the judge and a person split as in TABLE.

    One sample per case: the samples are independent, so the asymptotic kappa interval,
    Wilson and exact McNemar are the right references. (Before issue 17 this was 100
    repeats of one case, which calibrate treated as independent: now intervals over one
    case are undefined, see test_statistics_corners.py.)
    """
    pairs = judge_rows(TABLE)
    path = write_run(
        tmp_path / "judged",
        [
            {"case_id": case(i), "variant": "v", "repeat": 0, "checks": {"judge": judge}}
            for i, (_, judge) in enumerate(pairs)
        ],
    )
    # every sample reviewed in a random review's order: a census, each label weighs 1
    write_verdicts(
        path,
        [
            {"case_id": case(i), "variant": "v", "repeat": 0, "annotator": "ana", "verdict": h}
            | {"design": "random", "seed": 0, "rank": i, "population": len(pairs)}
            | {"size": 1 / len(pairs), "threshold": float(i + 1), "inclusion": 1.0}
            for i, (h, _) in enumerate(pairs)
        ],
    )
    return path


def test_pinned_to_an_outside_reference(judged: Path) -> None:
    result = calibrate(load(judged), check="judge")
    assert isinstance(result, Calibration)
    row = result.summary.iloc[0]
    # statsmodels cohens_kappa([[20, 5], [2, 73]]): kappa 0.8056, ASE 0.0703,
    # 95% limits 0.6678 and 0.9433 (the layout of SAS PROC FREQ's AGREE output).
    assert row["kappa"] == pytest.approx(0.806, abs=5e-4)
    assert row["kappa_low"] == pytest.approx(0.668, abs=5e-4)
    assert row["kappa_high"] == pytest.approx(0.943, abs=5e-4)
    assert (row["n"], row["agree"], row["agreement"]) == (100, 93, 0.93)
    assert row[["tp", "fn", "fp", "tn"]].tolist() == [20, 5, 2, 73]
    # statsmodels proportion_confint(20, 25, method="wilson") = (0.6087, 0.9114)
    assert row["tpr"] == 0.8
    assert (row["tpr_low"], row["tpr_high"]) == pytest.approx((0.60869, 0.91139), abs=1e-5)
    # statsmodels proportion_confint(73, 75, method="wilson") = (0.9079, 0.9927)
    assert (row["tnr_low"], row["tnr_high"]) == pytest.approx((0.90789, 0.99266), abs=1e-5)
    # exact McNemar on 5 against 2: two-sided binomial, 2 * P(X <= 2 | 7, 1/2) = 58/128
    assert row["mcnemar_p"] == pytest.approx(58 / 128)
    assert (row["level"], row["method"]) == (0.95, "wilson")
    assert len(result.disagreements) == 7
    assert result.annotators.empty


def test_a_frame_of_pairs_gives_the_same_numbers(judged: Path) -> None:
    frame = pd.DataFrame(judge_rows(TABLE), columns=["verdict", "outcome"])
    from_frame = calibrate(frame, design="random").summary.iloc[0]
    from_run = calibrate(judged).summary.iloc[0]
    for column in ("n", "kappa", "kappa_low", "kappa_high", "tpr", "tnr", "mcnemar_p"):
        assert from_frame[column] == pytest.approx(from_run[column]), column


def test_the_interval_follows_the_level(judged: Path) -> None:
    wide = calibrate(judged, level=0.99).summary.iloc[0]
    narrow = calibrate(judged, level=0.9).summary.iloc[0]
    assert wide["kappa_low"] < 0.668 < narrow["kappa_low"] < narrow["kappa"]
    assert wide["level"] == 0.99


def test_needs_review_unscored_and_unreviewed_are_left_out_and_counted(tmp_path: Path) -> None:
    path = write_run(
        tmp_path / "r",
        [
            {"case_id": "c", "variant": "v", "repeat": 0, "checks": {"judge": True}},
            {"case_id": "c", "variant": "v", "repeat": 1, "checks": {"judge": False}},
            {"case_id": "c", "variant": "v", "repeat": 2, "checks": {"judge": True}},
            {"case_id": "c", "variant": "v", "repeat": 3, "checks": {"judge": None}},
            {"case_id": "c", "variant": "v", "repeat": 4, "checks": {"judge": False}},
        ],
    )
    write_verdicts(
        path,
        [
            {"case_id": "c", "variant": "v", "repeat": 0, "annotator": "ana", "verdict": "pass"},
            {
                "case_id": "c",
                "variant": "v",
                "repeat": 1,
                "annotator": "ana",
                "verdict": "pass",
                "reason": "fine <b>really</b>",
            },
            {
                "case_id": "c",
                "variant": "v",
                "repeat": 2,
                "annotator": "ana",
                "verdict": "needs_review",
            },
            {"case_id": "c", "variant": "v", "repeat": 3, "annotator": "ana", "verdict": "fail"},
        ],
    )
    row = calibrate(path).summary.iloc[0]
    assert row[["n", "needs_review", "unscored", "unreviewed"]].tolist() == [2, 1, 1, 1]
    disagreements = calibrate(path).disagreements
    assert disagreements[["repeat", "verdict", "outcome", "reason"]].values.tolist() == [
        [1, "pass", False, "fine <b>really</b>"]
    ]
    assert disagreements.loc[0, "detail"] == "judge: failed"
    page = calibrate(path)._repr_html_()
    assert "<b>really</b>" not in page and "disagreeing samples" in page


def test_the_latest_verdict_counts(judged: Path) -> None:
    store = VerdictStore(judged)
    for i in range(25, 27):  # two human fails the judge also failed...
        store.save(case(i + 2), "v", 0, annotator="ana", verdict="pass")  # ...now passes
    row = calibrate(judged).summary.iloc[0]
    assert row[["tp", "fn", "fp", "tn"]].tolist() == [20, 7, 2, 71]


def _judge_run(path: Path) -> Path:
    """Judge checks named per case (as the judge names them), of type ``judge``."""
    cases = [{"id": "a"}, {"id": "b"}]
    create_run_dir(path)
    write_json_atomic(path / "manifest.json", manifest(path.name, cases, ["v"], 2))
    outcomes = {("a", 0): True, ("a", 1): False, ("b", 0): True, ("b", 1): None}
    rows = []
    for i, ((case, repeat), outcome) in enumerate(outcomes.items()):
        sample = Sample(
            run_id=path.name, case_id=case, variant="v", repeat=repeat, order=i, started_at=T0,
            latency_ms=1.0, status="completed", error=None, answer="x", prompt="p",
            request=None, response=None,
        )  # fmt: skip
        rows.append((sample, CheckResult(f"judge:rubric of {case}", "judge", outcome, "")))
        rows.append((sample, CheckResult("short", "word_count", repeat == 0, "")))
    RunWriter(path).write([s for s, _ in rows[::2]], rows)
    return path


def test_check_may_be_a_type_a_name_or_all(tmp_path: Path) -> None:
    path = _judge_run(tmp_path / "types")
    write_verdicts(
        path,
        [
            {"case_id": c, "variant": "v", "repeat": r, "annotator": "ana", "verdict": "pass"}
            for c in "ab"
            for r in range(2)
        ],
    )
    by_type = calibrate(path, check="judge").summary.iloc[0]
    assert by_type[["n", "tp", "fn", "unscored"]].tolist() == [3, 2, 1, 1]
    by_name = calibrate(path, check="judge:rubric of a").summary.iloc[0]
    assert by_name[["n", "tp", "fn"]].tolist() == [2, 1, 1]
    every = calibrate(path, check="all").summary.iloc[0]
    # b/1: judge unscored, "short" failed: every scored check did not pass
    assert every[["n", "tp", "fn"]].tolist() == [4, 2, 2]
    with pytest.raises(
        ValueError, match=r"'check' must be a check type or name \(.*'judge'.*; got 'jugde'"
    ):
        calibrate(path, check="jugde")


def test_two_annotators_cohen_and_three_fleiss(judged: Path) -> None:
    rng = np.random.default_rng(7)
    votes = {}
    base = np.array([h for h, _ in judge_rows(TABLE)], dtype=object)
    for name, flip in (("bo", 0.1), ("cy", 0.2)):
        changed = rng.random(len(base)) < flip
        votes[name] = np.where(changed, np.where(base == "pass", "fail", "pass"), base)
    votes["bo"][0] = "needs_review"
    for name, verdicts in votes.items():
        write_verdicts(
            judged,
            [
                {"case_id": case(i), "variant": "v", "repeat": 0, "annotator": name, "verdict": v}
                for i, v in enumerate(verdicts)
            ],
        )
    two = calibrate(judged, annotator=["ana", "bo"])
    assert two.summary["annotator"].tolist() == ["ana", "bo"]
    pair = two.annotators.iloc[0]
    assert (pair["annotators"], pair["method"], pair["raters"]) == ("ana, bo", "cohen", 2)
    assert (pair["n"], pair["needs_review"]) == (99, 1)
    assert pair["low"] < pair["kappa"] < pair["high"]

    three = calibrate(judged).annotators
    assert three["method"].tolist() == ["cohen", "cohen", "cohen", "fleiss"]
    fleiss = three.iloc[-1]
    judged_by_all = np.column_stack([base[1:], votes["bo"][1:], votes["cy"][1:]])
    passes = (judged_by_all == "pass").sum(axis=1)
    expected = fleiss_kappa(np.column_stack([passes, 3 - passes]), method="fleiss")
    assert fleiss["kappa"] == pytest.approx(expected)
    assert fleiss["n"] == 99 and np.isnan(fleiss["low"])
    assert fleiss["agree"] == int(((passes == 0) | (passes == 3)).sum())


def test_errors_name_the_argument(judged: Path) -> None:
    with pytest.raises(
        ValueError, match=r"'annotator' must be among those with verdicts \('ana'\); got \['zed'\]"
    ):
        calibrate(judged, annotator="zed")
    with pytest.raises(ValueError, match=r"'level' must be a number between 0 and 1"):
        calibrate(judged, level=95)
    with pytest.raises(ValueError, match=r"missing \['outcome'\]"):
        calibrate(pd.DataFrame({"verdict": ["pass"]}))


def test_kappa_without_variety_has_no_interval() -> None:
    same = pd.DataFrame({"verdict": ["pass"] * 5, "outcome": [True] * 5})
    row = calibrate(same, design="random").summary.iloc[0]
    assert row["agreement"] == 1.0 and np.isnan(row["kappa"]) and row["mcnemar_p"] == 1.0
    # the person failed everything: kappa is 0 whatever the check did, with no interval
    strict = pd.DataFrame({"verdict": ["fail"] * 4, "outcome": [True, False, False, False]})
    row = calibrate(strict, design="random").summary.iloc[0]
    assert row["kappa"] == 0 and np.isnan(row["kappa_low"]) and np.isnan(row["kappa_high"])


def test_the_display_says_one_line_per_annotator_and_cautions_below_ten_cases(
    tmp_path: Path, judged: Path
) -> None:
    page = calibrate(judged)._repr_html_()
    (line,) = re.findall(r"<div><b>judge</b> vs <b>ana</b> on 100 cases.*?</div>", page)
    for words in ("agreement", "kappa", "95% CI", "TPR", "TNR", "McNemar p"):
        assert words in line
    assert "too wide" not in page
    assert page.index("<details>") > page.index(line)  # the tables a click away
    path = write_run(
        tmp_path / "two",
        [
            {"case_id": f"c{i}", "variant": "v", "repeat": 0, "checks": {"judge": i == 0}}
            for i in range(2)
        ],
    )
    write_verdicts(
        path,
        [
            {"case_id": f"c{i}", "variant": "v", "repeat": 0, "annotator": "ana", "verdict": v}
            | {"design": "random", "seed": 0, "rank": i, "population": 2, "size": 0.5}
            | {"threshold": float(i + 1)}
            for i, v in enumerate(("pass", "fail"))
        ],
    )
    page = calibrate(path)._repr_html_()
    assert "only 2 reviewed cases: these intervals are too wide to lean on" in page
