"""scores(): the mean of graded check scores with the case as the unit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalnb._types import CheckResult, Sample
from evalnb.analysis import load
from evalnb.analysis._scores import scores
from evalnb.store import RunWriter, create_run_dir, write_json_atomic
from tests.builders import T0, manifest

# Scores of the graded check per variant and case, one per repeat.
SCORES = {
    "A": {"c1": [1.0, 0.75, 1.0], "c2": [0.5, 0.25, 0.5], "c3": [0.0, 0.25, 0.0], "c4": [1.0] * 3},
    "B": {"c1": [1.0] * 3, "c2": [0.75, 0.75, 1.0], "c3": [0.5, 0.25, 0.5], "c4": [1.0] * 3},
}


def scored_run(
    path: Path,
    table: Mapping[str, Mapping[str, Sequence[float]]],
    groups: Mapping[str, str] | None = None,
) -> Path:
    """A run whose samples carry a graded ``judge`` score and a pass/fail ``contains``."""
    case_ids = list(next(iter(table.values())))
    repeats = len(next(iter(next(iter(table.values())).values())))
    cases = [{"id": c, "group": (groups or {}).get(c, c)} for c in case_ids]
    create_run_dir(path)
    write_json_atomic(path / "manifest.json", manifest(path.name, cases, list(table), repeats))
    samples, results = [], []
    for variant, per_case in table.items():
        for case_id, values in per_case.items():
            for repeat, value in enumerate(values):
                sample = Sample(
                    run_id=path.name,
                    case_id=case_id,
                    variant=variant,
                    repeat=repeat,
                    order=len(samples),
                    started_at=T0 + dt.timedelta(seconds=len(samples)),
                    latency_ms=1.0,
                    status="completed",
                    error=None,
                    answer="a",
                    prompt="q",
                    request=None,
                    response=None,
                )
                samples.append(sample)
                results.append(
                    (sample, CheckResult("judge", "judge", value >= 0.5, "", None, value))
                )
                results.append((sample, CheckResult("contains", "contains", True, "")))
    RunWriter(path).write(samples, results)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    return load(scored_run(tmp_path_factory.mktemp("scores") / "r", SCORES))


def test_the_suite_score_is_the_mean_of_case_means_with_a_t_interval_across_cases(run) -> None:
    out = scores(run).set_index("variant")
    assert list(out["check"]) == ["judge", "judge"]  # only graded checks have scores
    case_means = np.array([np.mean(v) for v in SCORES["A"].values()])
    se = case_means.std(ddof=1) / np.sqrt(4)
    # scipy.stats.t.interval(0.95, df=3, loc=mean, scale=se), clipped to [0, 1]
    low, high = stats.t.interval(0.95, 3, loc=case_means.mean(), scale=se)
    a = out.loc["A"]
    assert a["estimate"] == pytest.approx(case_means.mean())
    assert a["se"] == pytest.approx(se)
    assert (a["low"], a["high"]) == pytest.approx((max(low, 0), min(high, 1)))
    assert (a["cases"], a["groups"], a["samples"], a["repeats"]) == (4, 4, 12, 3.0)
    assert a["method"] == "t across cases" and a["level"] == 0.95
    assert out["low"].min() >= 0 and out["high"].max() <= 1


def test_per_case_rows_have_an_interval_across_repeats(run) -> None:
    out = scores(run, by=["variant", "case_id"]).set_index(["variant", "case_id"])
    c1 = out.loc[("A", "c1")]
    values = np.array(SCORES["A"]["c1"])
    se = values.std(ddof=1) / np.sqrt(3)
    low, high = stats.t.interval(0.95, 2, loc=values.mean(), scale=se)
    assert c1["estimate"] == pytest.approx(values.mean())
    assert (c1["low"], c1["high"]) == pytest.approx((max(low, 0), min(high, 1)))
    assert c1["method"] == "t across repeats" and c1["samples"] == 3
    # every repeat the same: no spread, so no interval (never a zero-width certainty)
    c4 = out.loc[("A", "c4")]
    assert c4["estimate"] == 1.0 and np.isnan(c4["low"]) and np.isnan(c4["high"])
    assert c4["method"] == "none"


def test_cases_that_share_a_group_are_clustered(tmp_path: Path) -> None:
    groups = {"c1": "g1", "c2": "g1", "c3": "g2", "c4": "g2"}
    out = scores(load(scored_run(tmp_path / "g", SCORES, groups))).set_index("variant")
    means = np.array([np.mean(v) for v in SCORES["A"].values()])
    residuals = means - means.mean()
    sums = np.array([residuals[:2].sum(), residuals[2:].sum()])
    # CR1 with G = 2 groups: G / (G - 1) * sum of squared group sums / C^2
    se = np.sqrt(2 / 1 * (sums**2).sum() / 16)
    assert out.loc["A", "groups"] == 2 and out.loc["A", "se"] == pytest.approx(se)
    low, high = stats.t.interval(0.95, 1, loc=means.mean(), scale=se)
    assert (out.loc["A", "low"], out.loc["A", "high"]) == pytest.approx((max(low, 0), min(high, 1)))


def test_one_case_gives_no_interval(tmp_path: Path) -> None:
    single = {"A": {"only": [0.2, 0.4, 0.9]}}
    (row,) = scores(load(scored_run(tmp_path / "one", single))).itertuples()
    assert row.estimate == pytest.approx(0.5) and row.cases == 1
    assert np.isnan(row.low) and np.isnan(row.high) and row.method == "none"


def test_a_frame_of_scores_works_and_checks_are_named(run) -> None:
    frame = run.checks
    from_frame = scores(frame[["variant", "case_id", "check", "score"]])
    from_run = scores(run)
    columns = ["variant", "check", "cases", "samples", "estimate", "low", "high"]
    pd.testing.assert_frame_equal(
        from_frame[columns].astype({"variant": str}),
        from_run[columns].astype({"variant": str}),
        check_dtype=False,
    )
    with pytest.raises(
        ValueError, match=r"'check' must name graded checks: 'judge'; got \['contains'\]"
    ):
        scores(run, check="contains")
    with pytest.raises(ValueError, match="missing \\['score'\\]"):
        scores(frame[["variant", "case_id", "check"]])
