"""compare(): paired per-case differences, a t interval across cases, and a verdict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import confint_proportions_2indep

from evalnb.analysis import compare, compare_cases, load
from evalnb.analysis._story import story
from tests.builders import counts_run, write_run

A_PASSES = [8, 7, 8, 10]
B_PASSES = [9, 10, 10, 10]


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare")
    return counts_run(root / "four", {"A": A_PASSES, "B": B_PASSES}, 10)


@pytest.fixture(scope="module")
def forty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare40")
    return counts_run(root / "forty", {"A": A_PASSES * 10, "B": B_PASSES * 10}, 10)


def test_four_cases_ten_repeats_cannot_tell_yet(four: Path) -> None:
    out = compare(load(four), a="A", b="B")
    assert len(out) == 1
    result = out.iloc[0]
    assert result["diff"] == pytest.approx(0.150)
    assert result["se"] == pytest.approx(0.0645, abs=5e-5)
    assert result["df"] == 3
    # With 4 cases the exact sign-flip test decides (its p, 0.125, is above the t test's) and
    # no shift of the difference can be rejected by it (the smallest p of 4 signs is
    # 2/16): the interval it inverts is all of [-1, 1], beside "can't tell yet".
    assert (result["low"], result["high"]) == (-1.0, 1.0)
    assert result["interval_method"] == "sign-flip over cases, inverted"
    assert not result["bounded"]
    # One p: the frame's p_value is the verdict's (the sign-flip's, 2/8 of the 16 signs),
    # the t's is p_method.
    assert result["p_value"] == result["p_exact"] == pytest.approx(0.25)
    assert result["p_method"] == pytest.approx(0.103, abs=5e-4)
    assert result["verdict"] == "can't tell yet"
    assert (result["cases"], result["repeats_a"], result["repeats_b"]) == (4, 10, 10)
    assert (result["rate_a"], result["rate_b"]) == pytest.approx((0.825, 0.975))
    assert result["mode"] == "random" and result["method"] == "paired t across cases"
    # scipy's paired t test on the per-case rates is the outside reference
    reference = stats.ttest_rel(np.array(B_PASSES) / 10, np.array(A_PASSES) / 10)
    assert result["p_method"] == pytest.approx(reference.pvalue)
    low, high = reference.confidence_interval(0.95)
    t = stats.t.ppf(0.975, 3)
    assert (low, high) == pytest.approx((-0.055, 0.355), abs=5e-4)
    assert (result["diff"] - t * result["se"], result["diff"] + t * result["se"]) == (
        pytest.approx((low, high))
    )
    assert result["correlation"] == pytest.approx(
        stats.pearsonr(np.array(A_PASSES) / 10, np.array(B_PASSES) / 10).statistic
    )


def test_the_same_data_on_forty_cases_says_b_better(forty: Path) -> None:
    result = compare(load(forty), a="A", b="B").iloc[0]
    assert result["verdict"] == "B better"
    assert result["cases"] == 40 and result["df"] == 39
    assert result["low"] > 0
    flipped = compare(load(forty), a="B", b="A").iloc[0]
    assert flipped["verdict"] == "A better" and flipped["diff"] == pytest.approx(-0.15)


def test_overlapping_intervals_are_not_the_test(four: Path) -> None:
    # The shop harness's numbers: an unpaired Newcombe interval for 39/40 vs 33/40 excludes zero,
    # (0.014, 0.296); the case-level paired interval above does not. evalnb reports the
    # paired one, which generalises to new cases.
    # statsmodels confint_proportions_2indep(39, 40, 33, 40, method="newcomb")
    low, high = confint_proportions_2indep(39, 40, 33, 40, method="newcomb")
    assert (low, high) == pytest.approx((0.014, 0.296), abs=5e-4)
    result = compare(load(four)).iloc[0]
    assert result["low"] < 0 < result["high"]


def test_fixed_mode_answers_for_exactly_these_cases(four: Path) -> None:
    result = compare(load(four), a="A", b="B", mode="fixed").iloc[0]
    a, b = np.array(A_PASSES) / 10, np.array(B_PASSES) / 10
    within = a * (1 - a) / 9 + b * (1 - b) / 9
    se = np.sqrt(within.sum()) / 4
    assert result["se"] == pytest.approx(se)
    assert result["df"] == np.inf
    assert result["p_method"] == pytest.approx(2 * stats.norm.sf(0.15 / se))
    assert result["p_value"] == max(result["p_method"], result["p_exact"])
    assert result["mode"] == "fixed" and "fixed cases" in result["method"]
    assert result["bounded"] and np.isnan(result["fixed_low"]) and result["fixed_method"] == ""


def test_an_interval_that_cannot_bound_has_the_fixed_one_beside_it(four: Path) -> None:
    """4 cases: the sign-flip's interval is the whole axis; the fixed-mode interval on these
    cases stands beside it, the same as compare(mode="fixed") gives, and it is named."""
    random = compare(load(four), a="A", b="B").iloc[0]
    fixed = compare(load(four), a="A", b="B", mode="fixed").iloc[0]
    assert not random["bounded"] and random["min_p"] == pytest.approx(0.125)
    assert (random["fixed_low"], random["fixed_high"]) == (fixed["low"], fixed["high"])
    assert random["fixed_method"] == fixed["interval_method"]
    assert -1 < random["fixed_low"] < random["diff"] < random["fixed_high"] < 1
    told = story(random)
    assert told.interval == (
        "4 cases cannot bound the difference at 95% and p = 0.250 (sign-flip over cases)"
    )
    assert told.fixed.startswith("on these 4 cases only: 95% CI 0.0 to +")
    assert told.fixed.endswith(f"pp ({fixed['interval_method']})")
    assert "-100.0" not in told.line("A", "B", "all")


def test_one_sample_per_case_uses_exact_mcnemar(tmp_path: Path) -> None:
    a = [1, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1]
    result = compare(load(counts_run(tmp_path / "once", {"A": a, "B": b}, 1))).iloc[0]
    table = [[5, 0], [6, 1]]  # both pass 5, A only 0, B only 6, neither 1
    # statsmodels mcnemar(table, exact=True): a binomial test on the 6 discordant cases
    assert result["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert result["p_value"] == pytest.approx(stats.binomtest(6, 6).pvalue)
    assert result["method"].startswith("exact McNemar")
    assert result["verdict"] == "B better"


def test_compare_cases_lists_the_cases_that_moved(four: Path) -> None:
    cases = compare_cases(load(four), a="A", b="B")
    assert cases["case_id"].astype(str).tolist() == ["case-01", "case-02", "case-00", "case-03"]
    assert cases["diff"].tolist() == pytest.approx([0.3, 0.2, 0.1, 0.0])
    assert cases[["k_a", "n_a", "k_b", "n_b"]].iloc[0].tolist() == [7, 10, 10, 10]
    assert cases["paired"].all()


def test_cases_only_one_side_ran_are_left_out_and_counted(tmp_path: Path) -> None:
    rows = [
        {"case_id": c, "variant": v, "repeat": r, "checks": {"ok": r < k}}
        for c, v, k in [("x", "A", 3), ("x", "B", 4), ("y", "A", 2), ("y", "B", 4), ("z", "A", 1)]
        for r in range(4)
    ]
    run = load(write_run(tmp_path / "partial", rows))
    result = compare(run, a="A", b="B").iloc[0]
    assert (result["cases"], result["unpaired"]) == (2, 1)
    cases = compare_cases(run, a="A", b="B")
    assert cases["paired"].tolist() == [True, True, False]
    assert cases["case_id"].astype(str).iloc[-1] == "z"


def test_null_simulation_rarely_says_b_better() -> None:
    """Seeded: when nothing changed, "B better" comes up in at most 5% of experiments."""
    rng = np.random.default_rng(7)
    experiments, cases, repeats = 1000, 30, 5
    rates = rng.beta(5, 2, size=(experiments, cases))
    a = rng.random((experiments, cases, repeats)) < rates[:, :, None]
    b = rng.random((experiments, cases, repeats)) < rates[:, :, None]
    size = experiments * cases * repeats
    frame = pd.DataFrame(
        {
            "experiment": np.tile(np.repeat(np.arange(experiments), cases * repeats), 2),
            "case_id": np.tile(np.repeat(np.arange(cases), repeats), experiments * 2),
            "variant": np.repeat(["A", "B"], size),
            "check": "ok",
            "outcome": np.concatenate([a.ravel(), b.ravel()]),
        }
    )
    out = compare(frame, a="A", b="B", by="experiment", check="ok")
    assert len(out) == experiments
    assert (out["verdict"] == "B better").mean() <= 0.05
    assert (out["verdict"] != "can't tell yet").mean() == pytest.approx(0.05, abs=0.02)


def test_compare_errors(four: Path) -> None:
    run = load(four)
    with pytest.raises(ValueError, match=r"'b' must be one of 'A', 'B'; got 'C'"):
        compare(run, a="A", b="C")
    with pytest.raises(ValueError, match=r"'mode' must be one of 'random', 'fixed'; got 'paired'"):
        compare(run, mode="paired")
    with pytest.raises(ValueError, match="'a' and 'b' must differ"):
        compare(run, a="A", b="A")
    with pytest.raises(ValueError, match="'by' must not include 'variant'"):
        compare(run, by="variant")


def test_two_runs_compare_on_run_id(tmp_path: Path) -> None:
    before = counts_run(tmp_path / "monday", {"v": A_PASSES * 10}, 10)
    after = counts_run(tmp_path / "friday", {"v": B_PASSES * 10}, 10)
    result = compare(load([before, after]), a="monday", b="friday", on="run_id").iloc[0]
    assert (result["a"], result["b"], result["cases"]) == ("monday", "friday", 40)
    assert result["diff"] == pytest.approx(0.15) and result["verdict"] == "B better"


def _fixed_frame(passes_a: list[int], passes_b: list[int], repeats: int) -> pd.DataFrame:
    rows = [
        {"case_id": f"c{i}", "variant": side, "check": "ok", "outcome": r < k}
        for i, pair in enumerate(zip(passes_a, passes_b, strict=True))
        for side, k in zip("AB", pair, strict=True)
        for r in range(repeats)
    ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("passes_a", "passes_b"), [([2, 0], [3, 3]), ([0, 0], [3, 1]), ([3, 1, 3], [3, 0, 0])]
)
def test_at_p_exactly_alpha_the_verdict_and_its_interval_agree(
    passes_a: list[int], passes_b: list[int]
) -> None:
    """Fixed mode, 3 repeats (issue 39): the exact conditional p is 1/20 exactly. For
    A 2/3, 0/3 and B 3/3, 3/3: given each case's total passes, B's passes are 2 or 3 with
    1/2 each in the first case (hypergeometric, 6 draws, 5 passes) and 0..3 with 1/20,
    9/20, 9/20, 1/20 in the second, so B's total of 6 and the equally unlikely 2 each have
    1/2 x 1/20: p = 1/20 (R's mantelhaen.test(exact = TRUE) sums the same tables). Summed
    two ways it was 0.05000000000000001 for the verdict and 0.049999999999999975 in the
    interval's inversion; p = alpha does not reject, and the interval holds 0."""
    out = compare(_fixed_frame(passes_a, passes_b, 3), a="A", b="B", check="ok", mode="fixed")
    row = out.iloc[0]
    assert row["p_exact"] == pytest.approx(0.05, rel=1e-12)
    assert row["verdict"] == "can't tell yet"
    assert row["low"] <= 0 <= row["high"]
    assert row["interval_method"].endswith("inverted")


def test_the_verdict_and_the_interval_agree_in_every_fixed_design_of_three_repeats() -> None:
    """Every 2- and 3-case table of 3 repeats a side: "can't tell yet" exactly when the
    interval holds 0."""
    rng = np.random.default_rng(39)
    frames = []
    for trial in range(300):
        cases = int(rng.integers(2, 4))
        frame = _fixed_frame(
            list(rng.integers(0, 4, cases)), list(rng.integers(0, 4, cases)), 3
        ).assign(trial=trial)
        frames.append(frame)
    out = compare(pd.concat(frames), "trial", a="A", b="B", check="ok", mode="fixed")
    holds_zero = (out["low"] <= 0) & (out["high"] >= 0)
    assert ((out["verdict"] == "can't tell yet") == holds_zero).all()
    assert (out["verdict"] != "can't tell yet").sum() > 0
