"""rates(): denominators that say what they are, and binomial intervals pinned to statsmodels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalnb.analysis import load, proportion_interval, rates
from tests.builders import counts_run, write_run, write_verdicts


def row(frame: pd.DataFrame, **keys: str) -> pd.Series:
    match = frame
    for key, value in keys.items():
        match = match[match[key].astype(str) == value]
    assert len(match) == 1, match
    return match.iloc[0]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The published shop run (simple-evals harness): v1 passes 8, 7, 8, 10 of 10; v2 9, 10, 10, 10.
    root = tmp_path_factory.mktemp("shop")
    return counts_run(root / "shop", {"v1": [8, 7, 8, 10], "v2": [9, 10, 10, 10]}, 10)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # statsmodels proportion_confint(k, n, alpha=0.05, method="wilson")
        (8, 10, 0.4902, 0.9433),
        (7, 10, 0.3968, 0.8922),
        (10, 10, 0.7225, 1.0),
        (33, 40, 0.6805, 0.9125),
        (39, 40, 0.8712, 0.9956),
    ],
)
def test_wilson_intervals_match_the_reference(k: int, n: int, low: float, high: float) -> None:
    estimate, lo, hi = proportion_interval([k], [n])
    assert estimate[0] == pytest.approx(k / n)
    assert lo[0] == pytest.approx(low, abs=5e-5)
    assert hi[0] == pytest.approx(high, abs=5e-5)


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_the_closed_form_wilson_is_statsmodels_wilson(level: float) -> None:
    # The closed form stands in for statsmodels proportion_confint(method="wilson") so that
    # rates need no scipy; fractional counts (effective sample sizes) included.
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(41)
    n = np.concatenate([np.arange(1, 60), rng.uniform(0.5, 5_000, 2_000)])
    k = np.concatenate(
        [rng.integers(1, 60, 59) % np.arange(1, 60), rng.uniform(0, 1, 2_000) * n[59:]]
    )
    _, low, high = proportion_interval(k, n, level=level)
    ref_low, ref_high = proportion_confint(k, n, alpha=1 - level, method="wilson")
    assert low == pytest.approx(np.where(k <= 0, 0.0, ref_low), abs=1e-13)
    assert high == pytest.approx(np.where(k >= n, 1.0, ref_high), abs=1e-13)


def test_rates_per_case_and_pooled_use_the_reference_numbers(shop: Path) -> None:
    run = load(shop)
    per_case = rates(run, check="ok")
    assert list(per_case["k"]) == [8, 7, 8, 10, 9, 10, 10, 10]
    case = row(per_case, variant="v1", case_id="case-01")
    assert (case["low"], case["high"]) == pytest.approx((0.3968, 0.8922), abs=5e-5)
    assert not per_case["pooled"].any()
    pooled = rates(run, by="variant", check="all")
    v1, v2 = row(pooled, variant="v1"), row(pooled, variant="v2")
    assert (v1["k"], v1["n"], v1["cases"]) == (33, 40, 4)
    assert (v1["low"], v1["high"]) == pytest.approx((0.6805, 0.9125), abs=5e-5)
    assert (v2["low"], v2["high"]) == pytest.approx((0.8712, 0.9956), abs=5e-5)
    assert pooled["pooled"].all()
    assert list(pooled.columns) == [
        "variant", "check", "cases", "k", "n", "unscored", "incomplete",
        "estimate", "low", "high", "level", "method", "pooled",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "low", "high"),
    [
        # statsmodels proportion_confint(8, 10, alpha=0.1, method=...)
        ("agresti_coull", 0.5327, 0.9395),
        ("beta", 0.4931, 0.9632),
        ("jeffreys", 0.5475, 0.9398),
    ],
)
def test_other_interval_methods_and_levels(
    shop: Path, method: str, low: float, high: float
) -> None:
    out = rates(load(shop), check="ok", level=0.90, method=method)
    case = row(out, variant="v1", case_id="case-00")
    assert (case["low"], case["high"]) == pytest.approx((low, high), abs=5e-4)
    assert case["method"] == method and case["level"] == 0.90


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    rows = [
        # completed, the term check does not apply to this case: unscored, not a pass
        {
            "case_id": "refusal",
            "variant": "v",
            "repeat": 0,
            "checks": {"action": True, "terms": None},
        },
        {
            "case_id": "refusal",
            "variant": "v",
            "repeat": 1,
            "checks": {"action": False, "terms": None},
        },
        # incomplete: the runner wrote the applicable check False, the other null
        {
            "case_id": "refusal",
            "variant": "v",
            "repeat": 2,
            "status": "timeout",
            "checks": {"action": False, "terms": None},
        },
        {"case_id": "fact", "variant": "v", "repeat": 0, "checks": {"action": True, "terms": True}},
        {
            "case_id": "fact",
            "variant": "v",
            "repeat": 1,
            "status": "error",
            "checks": {"action": False, "terms": False},
        },
        # a case with no checks at all has no rows, not even "all"
        {"case_id": "nochecks", "variant": "v", "repeat": 0, "checks": {}},
    ]
    cases = [
        {"id": "refusal", "split": "heldout", "tags": ["safety", "tools"], "group": "g1"},
        {"id": "fact", "split": "dev", "tags": ["tools"], "group": "g1", "metadata": {"level": 2}},
        {"id": "nochecks"},
    ]
    return write_run(tmp_path / "mixed", rows, cases=cases)


def test_unscored_rows_leave_the_denominator(mixed: Path) -> None:
    out = rates(load(mixed), by="case_id")
    terms = row(out, case_id="refusal", check="terms")
    assert (terms["k"], terms["n"], terms["unscored"]) == (0, 0, 3)
    assert pd.isna(terms["estimate"]) and pd.isna(terms["low"])
    fact = row(out, case_id="fact", check="terms")
    assert (fact["k"], fact["n"], fact["unscored"]) == (1, 2, 0)


def test_incomplete_rows_stay_in_the_denominator_and_fail(mixed: Path) -> None:
    out = rates(load(mixed), by="case_id")
    action = row(out, case_id="refusal", check="action")
    assert (action["k"], action["n"], action["incomplete"]) == (1, 3, 1)
    assert action["estimate"] == pytest.approx(1 / 3)
    every = row(out, case_id="fact", check="all")
    assert (every["k"], every["n"], every["incomplete"]) == (1, 2, 1)


def test_all_is_every_scored_check_passed(mixed: Path) -> None:
    out = rates(load(mixed), by="case_id", check="all")
    refusal = row(out, case_id="refusal")
    # repeat 0: action True and terms null -> True; repeat 1: False; repeat 2 (timeout): False
    assert (refusal["k"], refusal["n"], refusal["unscored"]) == (1, 3, 0)
    assert "nochecks" not in set(out["case_id"].astype(str))


def test_by_case_fields_split_tags_group_and_metadata(mixed: Path) -> None:
    run = load(mixed)
    by_split = rates(run, by=["split"], check="action")
    assert row(by_split, split="heldout")["n"] == 3
    assert row(by_split, split="dev")["n"] == 2
    by_tag = rates(run, by="tags", check="action")
    assert row(by_tag, tags="tools")[["n", "cases"]].tolist() == [5, 2]
    assert row(by_tag, tags="safety")[["n", "cases"]].tolist() == [3, 1]
    by_group = rates(run, by="group", check="action")
    assert row(by_group, group="g1")["n"] == 5
    by_level = rates(run, by="metadata.level", check="action")
    assert sorted(by_level["n"].tolist()) == [2, 3]
    by_status = rates(run, by=["status"], check="action")
    assert row(by_status, status="timeout")["incomplete"] == 1


def test_a_frame_gives_the_same_rates_as_the_run(mixed: Path) -> None:
    run = load(mixed)
    frame = run.checks.merge(run.samples[["run_id", "case_id", "variant", "repeat", "status"]])
    from_frame = rates(frame, by=["variant", "case_id"])
    from_run = rates(run, by=["variant", "case_id"])
    columns = ["case_id", "check", "k", "n", "unscored", "incomplete"]
    left = from_frame[columns].astype({"case_id": str, "check": str})
    right = from_run[columns].astype({"case_id": str, "check": str})
    key = ["case_id", "check"]
    pd.testing.assert_frame_equal(
        left.sort_values(key).reset_index(drop=True), right.sort_values(key).reset_index(drop=True)
    )


def test_rates_of_a_counts_frame_pool_them_again(shop: Path) -> None:
    per_case = rates(load(shop), check="ok")
    pooled = rates(per_case, by="variant")
    assert row(pooled, variant="v2")[["k", "n", "cases"]].tolist() == [39, 40, 4]


def test_verdict_rates_use_the_latest_verdict_per_annotator(tmp_path: Path) -> None:
    rows = [{"case_id": "c", "variant": "v", "repeat": r, "checks": {"x": True}} for r in range(5)]
    rows.append(
        {"case_id": "c", "variant": "v", "repeat": 5, "status": "error", "checks": {"x": False}}
    )
    path = write_run(tmp_path / "reviewed", rows)
    write_verdicts(
        path,
        [
            {"case_id": "c", "variant": "v", "repeat": 0, "annotator": "ana", "verdict": "fail"},
            {"case_id": "c", "variant": "v", "repeat": 1, "annotator": "ana", "verdict": "pass"},
            {
                "case_id": "c",
                "variant": "v",
                "repeat": 2,
                "annotator": "ana",
                "verdict": "needs_review",
            },
            {"case_id": "c", "variant": "v", "repeat": 5, "annotator": "ana", "verdict": "fail"},
            {"case_id": "c", "variant": "v", "repeat": 1, "annotator": "bo", "verdict": "fail"},
        ],
    )
    # ana changes her mind about repeat 0 later: the latest verdict counts
    write_verdicts(
        path,
        [
            {
                "case_id": "c",
                "variant": "v",
                "repeat": 0,
                "annotator": "ana",
                "verdict": "pass",
                "minute": 5,
            }
        ],
    )
    run = load(path)
    overall = rates(run, by="variant", source="verdicts").iloc[0]
    assert overall["check"] == "verdict"
    # verdicts: ana pass (r0), ana pass (r1), bo fail (r1), ana fail (r5, incomplete)
    assert overall[["k", "n", "needs_review", "unreviewed", "incomplete"]].tolist() == [
        2,
        4,
        1,
        2,
        1,
    ]
    per = rates(run, by=["annotator"], source="verdicts")
    ana, bo = row(per, annotator="ana"), row(per, annotator="bo")
    assert ana[["k", "n", "needs_review", "unreviewed"]].tolist() == [2, 3, 1, 2]
    assert bo[["k", "n", "needs_review", "unreviewed"]].tolist() == [0, 1, 0, 5]
    assert "unscored" not in per.columns


def test_verdict_rates_from_a_frame(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "case_id": ["a", "a", "a", "b"],
            "variant": "v",
            "repeat": [0, 1, 2, 0],
            "verdict": ["pass", "fail", None, "needs_review"],
        }
    )
    out = rates(frame, by="case_id", source="verdicts")
    assert row(out, case_id="a")[["k", "n", "unreviewed"]].tolist() == [1, 2, 1]
    assert row(out, case_id="b")[["n", "needs_review"]].tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"'verdict' values must be one of .*got \['maybe'\]"):
        rates(frame.assign(verdict="maybe"), source="verdicts")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "wald"}, r"'method' must be one of 'wilson', .*; got 'wald'"),
        ({"level": 95}, r"'level' must be a number between 0 and 1 .*; got 95"),
        ({"source": "humans"}, r"'source' must be one of 'checks', 'verdicts'; got 'humans'"),
        ({"check": "nope"}, r"'check' must be one of 'ok', 'all'; got \['nope'\]"),
        ({"by": "colour"}, r"'by' must name sample or case fields .*; got \['colour'\]"),
        ({"by": ["variant", "check"]}, r"'by' must not include 'check'"),
    ],
)
def test_errors_name_the_parameter_the_choices_and_the_value(
    shop: Path, kwargs: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        rates(load(shop), **kwargs)


def test_frame_errors_say_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"missing \['outcome'\]"):
        rates(pd.DataFrame({"check": ["x"], "case_id": ["a"]}))
    with pytest.raises(
        ValueError, match=r"'by' names columns the frame does not have: \['variant'\]"
    ):
        rates(pd.DataFrame({"check": ["x"], "case_id": ["a"], "outcome": [True]}))
    with pytest.raises(TypeError, match="'data' must be a Run"):
        rates([1, 2, 3])


def test_a_case_with_no_check_is_named_in_the_note(tmp_path: Path) -> None:
    import html
    import json
    import warnings

    import evalnb

    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": "checked", "prompt": "say hi", "checks": [{"type": "contains", "text": "hi"}]},
        {"id": "bare", "prompt": "say hi"},
    ]
    cases.write_text("".join(json.dumps(row) + "\n" for row in rows))
    evalnb.run(
        cases, evalnb.Function(lambda r: "hi"), repeats=2, out=tmp_path / "r", progress=False
    )
    run = load(tmp_path / "r")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = rates(run, by="variant")
    said = [str(w.message) for w in caught]
    assert said == ["1 of the run's cases have no check, so no rate counts them: 'bare'"]
    assert said[0] in html.unescape(out._repr_html_())
    assert out["cases"].tolist() == [1, 1] and out["n"].tolist() == [2, 2]
