"""Issue 17, item 11: the human pass rate from a judge corrected by human verdicts (PPI)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalnb.analysis import load, ppi_compare, ppi_rate
from tests.builders import write_run, write_verdicts


def judged(
    rng: np.random.Generator,
    cases: int,
    repeats: int,
    reviewed: float,
    lift: float = 0.0,
    variants: tuple[str, ...] = ("v",),
) -> pd.DataFrame:
    """Per sample: the person's verdict (on a random share ``reviewed`` of samples) and a
    judge that errs per case: lenient on some cases, strict on others, more lenient on
    average (so the judge's own rate is biased upwards)."""
    human_rate = rng.beta(3, 2, size=cases)
    error = rng.beta(1, 6, size=cases)
    lenient = rng.random(cases) < 0.7
    frames = []
    for i, variant in enumerate(variants):
        rate = np.clip(human_rate + lift * i, 0, 1)
        human = rng.random((cases, repeats)) < rate[:, None]
        flip = rng.random((cases, repeats)) < error[:, None]
        wrong = flip & np.where(lenient[:, None], ~human, human)
        judge = np.where(wrong, ~human, human)
        seen = rng.random((cases, repeats)) < reviewed
        frames.append(
            pd.DataFrame(
                {
                    "variant": variant,
                    "case_id": np.repeat(np.arange(cases), repeats),
                    "repeat": np.tile(np.arange(repeats), cases),
                    "outcome": judge.ravel(),
                    "verdict": np.where(seen, np.where(human, "pass", "fail"), None).ravel(),
                    "truth": np.repeat(rate, repeats),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def test_with_every_sample_reviewed_it_is_the_suite_rate_of_the_verdicts() -> None:
    frame = judged(np.random.default_rng(1), 12, 6, reviewed=1.0)
    row = ppi_rate(frame, design="random").iloc[0]
    human = (frame["verdict"] == "pass").groupby(frame["case_id"]).mean().to_numpy()
    assert row["estimate"] == pytest.approx(human.mean())
    assert row["se"] == pytest.approx(human.std(ddof=1) / np.sqrt(12))
    assert row["human_only"] == pytest.approx(human.mean())
    assert (row["reviewed"], row["samples"], row["cases"]) == (72, 72, 12)


def test_a_perfect_judge_needs_no_correction() -> None:
    frame = judged(np.random.default_rng(2), 15, 4, reviewed=0.3)
    reviewed = frame["verdict"].notna()
    # on every reviewed sample the judge says what the person says
    truthful = frame.assign(outcome=frame["outcome"].where(~reviewed, frame["verdict"] == "pass"))
    row = ppi_rate(truthful, design="random").iloc[0]
    judge = truthful["outcome"].astype(float).groupby(truthful["case_id"]).mean()
    assert row["correction"] == pytest.approx(0.0)
    assert row["estimate"] == pytest.approx(judge.mean())
    # no label disagrees, which is not a judge without errors: the correction's variance
    # is that of 1 disagreement in L + 2 labels (Agresti & Caffo 2000), beside the judge's
    labels = int(reviewed.sum())
    share = 1 / (labels + 2)
    floor = share * (1 - share) / labels
    assert row["se"] == pytest.approx(np.sqrt(judge.var(ddof=1) / 15 + floor))


def test_labels_that_show_no_disagreement_do_not_make_the_judge_certain() -> None:
    """Issue 39: 20 labels of 250 samples, human rate 0.8, a judge passing 30% of the human
    fails (a bias of +0.06). When no label disagrees the correction once had standard error
    0 and the interval was the judge's own, which missed the human rate; now it holds it."""
    rng = np.random.default_rng(39)
    misses = []
    for _ in range(400):
        human = rng.random((50, 5)) < rng.beta(8, 2, size=50)[:, None]
        judge = human | (rng.random((50, 5)) < 0.3)
        seen = np.zeros(250, dtype=bool)
        seen[rng.choice(250, 20, replace=False)] = True
        if (judge.ravel()[seen] != human.ravel()[seen]).any():
            continue
        frame = pd.DataFrame(
            {
                "case_id": np.repeat(np.arange(50), 5),
                "outcome": judge.ravel(),
                "verdict": np.where(seen, np.where(human.ravel(), "pass", "fail"), None),
            }
        )
        row = ppi_rate(frame, by=None, design="random").iloc[0]
        assert row["correction"] == 0
        misses.append(not row["low"] <= 0.8 <= row["high"])
    assert len(misses) > 50 and np.mean(misses) < 0.07


def test_one_sample_per_case_is_the_textbook_ppi_estimate() -> None:
    """With one sample per case PPI's mean estimate (Angelopoulos et al. 2023) is
    mean(f, all) - mean(f - y, reviewed); with the reviewed samples inside the whole set its
    variance is var(f)/N + var(f - y)/n - 2 cov(f, f - y)/N (written here from those sums)."""
    rng = np.random.default_rng(4)
    frame = judged(rng, 400, 1, reviewed=0.25)
    row = ppi_rate(frame, design="random").iloc[0]
    f = frame["outcome"].to_numpy(float)
    seen = frame["verdict"].notna().to_numpy()
    gap = f[seen] - (frame["verdict"][seen] == "pass").to_numpy(float)
    big_n, n = len(f), int(seen.sum())
    assert row["estimate"] == pytest.approx(f.mean() - gap.mean())
    covariance = np.sum((f[seen] - f.mean()) * (gap - gap.mean())) / n
    variance = f.var() / big_n + gap.var() / n - 2 * covariance / big_n
    # the CR1 small-sample factor N / (N - 1) on the whole
    assert row["se"] == pytest.approx(np.sqrt(variance * big_n / (big_n - 1)))
    # the t quantile on the reviewed cases less one: the correction rests on them
    assert row["df"] == n - 1
    critical = stats.t.ppf(0.975, n - 1)
    assert row["low"] == pytest.approx(row["estimate"] - critical * row["se"])


def test_ppi_coverage_and_gain_quick() -> None:
    """Seeded quick row of benchmarks/coverage.py: 30 cases x 5 repeats, a fifth of the
    samples reviewed, a judge biased upwards. The judge alone misses the human rate; PPI
    covers it about 95% of the time and is narrower than the verdicts alone."""
    rng = np.random.default_rng(5)
    covered, judge_covered, narrower = [], [], []
    truth = 3 / 5
    for _ in range(200):
        row = ppi_rate(judged(rng, 30, 5, reviewed=0.2), design="random").iloc[0]
        covered.append(row["low"] <= truth <= row["high"])
        judge_covered.append(abs(row["judge_rate"] - truth) < abs(row["estimate"] - truth))
        narrower.append(row["high"] - row["low"] < row["human_only_high"] - row["human_only_low"])
    assert 0.9 <= np.mean(covered) <= 0.99
    assert np.mean(narrower) > 0.5


def test_ppi_compare_pairs_cases(tmp_path: Path) -> None:
    frame = judged(np.random.default_rng(6), 30, 4, reviewed=0.3, lift=0.15, variants=("a", "b"))
    row = ppi_compare(frame, a="a", b="b", design="random").iloc[0]
    rates = ppi_rate(frame, design="random").set_index("variant")
    assert row["diff"] == pytest.approx(rates.loc["b", "estimate"] - rates.loc["a", "estimate"])
    assert (row["cases"], row["groups"]) == (30, 30) and row["low"] < row["diff"] < row["high"]
    # with the same cases on both sides the pairing makes the interval narrower than the two
    # rates' intervals would
    unpaired = np.hypot(rates.loc["a", "se"], rates.loc["b", "se"])
    assert row["se"] < unpaired
    assert row["verdict"] in ("B better", "can't tell yet")
    with pytest.raises(ValueError, match=r"'b' must be one of 'a', 'b'; got 'c'"):
        ppi_compare(frame, a="a", b="c")


def test_a_run_with_verdicts_gives_the_same_numbers_as_its_frame(tmp_path: Path) -> None:
    frame = judged(np.random.default_rng(7), 8, 3, reviewed=0.5)
    rows = [
        {
            "case_id": f"c{r.case_id}",
            "variant": "v",
            "repeat": int(r.repeat),
            "checks": {"judge": bool(r.outcome)},
        }
        for r in frame.itertuples()
    ]
    path = write_run(tmp_path / "judged", rows)
    write_verdicts(
        path,
        [
            {
                "case_id": f"c{r.case_id}",
                "variant": "v",
                "repeat": int(r.repeat),
                "annotator": "ana",
                "verdict": r.verdict,
            }
            for r in frame.itertuples()
            if isinstance(r.verdict, str)
        ],
    )
    # verdicts saved with no design describe the reviewed samples only, from a run or a frame
    from_run = ppi_rate(load(path), check="judge").iloc[0]
    from_frame = ppi_rate(frame).iloc[0]
    for column in ("estimate", "judge_rate", "reviewed", "samples", "human_only"):
        assert from_run[column] == pytest.approx(from_frame[column]), column
    for row in (from_run, from_frame):
        assert row["scope"] == "reviewed samples" and row["design"] == "none"
        assert np.isnan(row["low"]) and np.isnan(row["high"]) and np.isnan(row["se"])
        assert "no design is recorded" in row["note"]
    assert from_run["estimate"] == pytest.approx(from_run["human_only"])
    with pytest.raises(ValueError, match=r"'annotator' must be among those with verdicts"):
        ppi_rate(load(path), annotator="zed")
