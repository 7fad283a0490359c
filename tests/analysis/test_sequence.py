"""The anytime-valid confidence sequence: against confseq, and valid however often it is
looked at (simulated with fixed seeds; ``benchmarks/decide.py`` runs the longer version)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalnb import ArgumentError, Decided, confidence_sequence
from evalnb._stopping import CaseOutcomes
from evalnb.analysis._sequence import GRID, betting_log_capital, betting_sequence

# 40 draws in {0, 1/2, 1}: numpy default_rng(7).choice([0, .5, 1], p=[.1, .6, .3], size=40)
IID = [0.5, 1, 1, 0.5, 0.5, 1, 0, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1, 1, 0.5, 1]
IID += [0.5, 0.5, 0.5, 0, 0, 0.5, 0.5, 1, 0.5, 0.5, 0.5, 0.5, 0, 0.5, 0.5, 0.5, 0.5, 0, 1, 0.5]
WOR = [1, 0.25, 0.25, 0.5, 0, 0.5, 1, 0, 1, 1, 0.25, 0.25, 0, 0, 0.25, 0.5, 0.5, 0, 0.5, 1]


def test_matches_confseq_hedged_capital_with_replacement():
    # confseq 0.0.11 (github gostevehoward/confseq 70b1ef3) betting.hedged_cs(IID,
    # alpha=0.05, breaks=2000, running_intersection=True) at 5, 10, 20 and 40 draws;
    # confseq widens each end by one grid step (1/2000), evalnb does not.
    low, high, _ = betting_sequence(np.array(IID), alpha=0.05, truncations=(0.5,))
    at = [4, 9, 19, 39]
    step = 1 / GRID
    np.testing.assert_allclose(low[at] - step, [0.21, 0.332, 0.451, 0.4565], atol=1e-9)
    np.testing.assert_allclose(
        np.minimum(high[at] + step, 1), [1.0, 0.9365, 0.846, 0.725], atol=1e-9
    )


def test_the_diversified_capital_matches_confseq_betting_cs():
    # confseq 0.0.11 betting.betting_cs(IID, alpha=0.05, breaks=2000, theta=1/2,
    # running_intersection=True, trunc_scale=0.9, lambdas_fns_positive=[min(predmix,
    # 0.5/m), predmix], lambdas_fns_negative=[min(predmix, 0.5/(1-m)), predmix]), predmix
    # = lambda_predmix_eb(x, alpha=0.025): bets capped at 1/2 and 9/10, capital shared.
    low, high, _ = betting_sequence(np.array(IID), alpha=0.05)
    at = [4, 9, 19, 39]
    np.testing.assert_allclose(low[at] - 1 / GRID, [0.2675, 0.344, 0.452, 0.4575], atol=1e-9)
    np.testing.assert_allclose(
        np.minimum(high[at] + 1 / GRID, 1), [1.0, 0.9365, 0.8545, 0.7395], atol=1e-9
    )


def test_matches_confseq_without_replacement():
    # confseq 0.0.11 betting.hedged_cs(WOR, alpha=0.1, N=30, breaks=2000,
    # running_intersection=True) at 5, 10 and 20 draws.
    low, high, _ = betting_sequence(np.array(WOR), alpha=0.1, population=30, truncations=(0.5,))
    at = [4, 9, 19]
    np.testing.assert_allclose(low[at] - 1 / GRID, [0.139, 0.275, 0.3145], atol=1e-9)
    np.testing.assert_allclose(high[at] + 1 / GRID, [0.81, 0.7395, 0.593], atol=1e-9)


def test_the_interval_and_the_test_agree_at_zero_and_at_the_margin():
    rng = np.random.default_rng(3)
    for _ in range(20):
        d = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.05, 0.1, 0.5, 0.2, 0.15], size=80)
        seq = confidence_sequence(d, alpha=0.05, margin=0.3)
        log_up, log_down = betting_log_capital((d + 1) / 2, 0.5, alpha=0.05)
        rejected = np.maximum.accumulate(np.maximum(log_up, log_down)) >= math.log(2 / 0.05)
        decided = seq["verdict"].isin(["B better", "A better"]).to_numpy()
        np.testing.assert_array_equal(decided, rejected)
        assert ((seq["low"] <= seq["estimate"] + 1e-9) | decided).all()
        # anytime-valid p below alpha exactly when a side is declared better
        np.testing.assert_array_equal(seq["p_value"].to_numpy() <= 0.05, decided)


def test_sequence_frame_columns_and_running_intersection():
    d = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 6
    seq = confidence_sequence(d, alpha=0.05)
    assert list(seq.columns) == [
        "cases",
        "groups",
        "estimate",
        "low",
        "high",
        "p_value",
        "level",
        "verdict",
        "unit",
        "method",
    ]
    assert (seq["groups"] == seq["cases"]).all() and (seq["unit"] == "case").all()
    assert seq["low"].is_monotonic_increasing and seq["high"].is_monotonic_decreasing
    assert seq["verdict"].iloc[-1] == "B better" and seq["verdict"].iloc[0] == "can't tell yet"
    assert "betting confidence sequence" in seq["method"].iloc[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"a": "v1", "b": "v1"}, "'b' must name variants other than"),
        ({"a": "v1", "b": []}, "'a' must name a variant"),
        ({"a": "v1", "b": "v2", "alpha": 0.7}, "'alpha' must be a number in (0, 0.5); got 0.7"),
        ({"a": "v1", "b": "v2", "margin": 0}, "'margin' must be None or a number in (0, 1)"),
    ],
)
def test_bad_rules_name_the_argument(kwargs, message):
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Decided(**kwargs)


def test_bad_differences_are_refused():
    with pytest.raises(
        ArgumentError, match=r"'differences' must be a list of numbers in \[-1, 1\]"
    ):
        confidence_sequence([0.5, 2.0])


def test_decided_looks_at_case_rates_with_incomplete_samples_as_fails():
    rule = Decided(a="v1", b=["v2", "v3"], alpha=0.05)
    assert rule.alpha_each == 0.025 and rule.variants == ("v1", "v2", "v3")
    fail, ok, unscored = {"c": False}, {"c": True}, {"c": None}
    cases = [
        CaseOutcomes(
            f"k{i}",
            {"v1": (fail, fail), "v2": (ok, ok), "v3": (ok, unscored) if i else (unscored,)},
        )
        for i in range(30)
    ]
    decision = rule.look(cases)
    by_b = {c["b"]: c for c in decision.look["comparisons"]}
    # v3's first case has no scored sample: it is left out, not a pass
    assert by_b["v2"]["cases"] == 30 and by_b["v3"]["cases"] == 29
    assert by_b["v2"]["verdict"] == "B better" and decision.stop
    assert decision.look["samples"] == 30 * 2 + 30 * 2 + 29 * 2 + 1


# -- validity: no true difference, a look after every case ---------------------------

#: (cases, repeats, mean rate, spread of case rates: 0 = every case the same)
DESIGNS = [
    (10, 1, 0.5, 0.0),
    (10, 5, 0.9, 0.3),
    (20, 1, 0.05, 0.0),
    (20, 3, 0.3, 0.5),
    (30, 10, 0.99, 0.0),
    (40, 2, 0.7, 0.8),
    (50, 1, 0.5, 0.5),
    (50, 5, 0.2, 0.2),
    (60, 10, 0.5, 0.9),
    (80, 1, 0.95, 0.0),
    (100, 1, 0.5, 0.0),
    (100, 3, 0.6, 0.6),
    (100, 10, 0.1, 0.3),
    (150, 2, 0.8, 0.4),
    (200, 1, 0.3, 0.0),
    (200, 5, 0.5, 0.7),
    (250, 1, 0.99, 0.5),
    (300, 3, 0.4, 0.2),
    (400, 1, 0.5, 0.9),
    (500, 1, 0.5, 0.0),
    (500, 10, 0.7, 0.5),
]


def case_rates(rng, shape, rate, spread):
    """Per-case true rates around ``rate``: ``spread`` 0 all equal, towards 1 a Beta whose
    concentration falls (cases from nearly always to nearly never passing)."""
    if spread == 0:
        return np.full(shape, rate)
    concentration = 1 / spread**2
    return rng.beta(rate * concentration, (1 - rate) * concentration, size=shape)


def null_differences(rng, runs, cases, repeats, rate, spread, sides=2):
    """``sides - 1`` per-case differences against side 0, no true difference anywhere."""
    p = case_rates(rng, (runs, cases), rate, spread)
    rates = rng.binomial(repeats, p[None].repeat(sides, axis=0)) / repeats
    return rates[1:] - rates[0]


def falsely_decided(d, alpha):
    """Per run: does the sequence ever exclude 0 (either side declared better)?"""
    up, down = betting_log_capital((d + 1) / 2, 0.5, alpha=alpha)
    return (np.maximum(up, down) >= math.log(2 / alpha)).any(axis=-1)


def naive_decided(d, alpha):
    """The naive rule: a paired t test over the cases so far, after every case."""
    t = np.arange(1, d.shape[-1] + 1)
    mean = np.cumsum(d, axis=-1) / t
    var = (np.cumsum(d**2, axis=-1) - t * mean**2) / np.maximum(t - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = mean / np.sqrt(var / t)
        p = 2 * stats.t.sf(np.abs(z), np.maximum(t - 1, 1))
    p = np.where((t >= 3) & (var > 1e-12), p, 1.0)
    return (p < alpha).any(axis=-1)


def test_no_true_difference_ends_better_at_most_alpha_in_21_designs():
    rng = np.random.default_rng(20261202)
    runs, alpha = 600, 0.05
    worst_naive = 0.0
    for cases, repeats, rate, spread in DESIGNS:
        d = null_differences(rng, runs, cases, repeats, rate, spread)[0]
        share = falsely_decided(d, alpha).mean()
        # alpha plus three Monte Carlo standard errors
        assert share <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs), (cases, repeats, share)
        worst_naive = max(worst_naive, naive_decided(d, alpha).mean())
    assert worst_naive > 2 * alpha  # what the sequence avoids: peeking at a fixed-n test


@pytest.mark.parametrize("variants", [3, 6])
def test_family_wise_error_with_several_variants(variants):
    rng = np.random.default_rng(variants)
    runs, alpha = 600, 0.05
    for cases, repeats, rate, spread in [(50, 3, 0.5, 0.5), (200, 1, 0.8, 0.0)]:
        d = null_differences(rng, runs, cases, repeats, rate, spread, sides=variants + 1)
        each = np.stack([falsely_decided(d[k], alpha / variants) for k in range(variants)])
        share = each.any(axis=0).mean()
        assert share <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs), (variants, share)


def test_a_sequence_inside_the_margin_is_equivalent_and_stops_the_rule():
    rng = np.random.default_rng(11)
    d = rng.choice([-0.5, 0, 0.5], p=[0.1, 0.8, 0.1], size=300)
    seq = confidence_sequence(d, alpha=0.05, margin=0.15)
    first = seq.index[seq["verdict"] == "equivalent"][0]
    row = seq.loc[first]
    assert -0.15 < row["low"] <= 0 <= row["high"] < 0.15
    assert (seq.loc[: first - 1, "verdict"] == "can't tell yet").all()
    assert confidence_sequence(d, alpha=0.05)["verdict"].eq("can't tell yet").all()
    ok, half = {"c": True}, {"c": False}
    cases = [
        CaseOutcomes(f"k{i}", {"v1": (ok, half), "v2": (half, ok) if i % 2 else (ok, half)})
        for i in range(200)
    ]
    decision = Decided(a="v1", b="v2", margin=0.15).look(cases)
    assert decision.stop and decision.look["comparisons"][0]["verdict"] == "equivalent"


def test_one_case_at_a_time_gives_the_batch_numbers_exactly():
    rng = np.random.default_rng(5)
    for _ in range(10):
        d = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.1, 0.15, 0.4, 0.2, 0.15], size=200)
        seq = confidence_sequence(d, alpha=0.05, margin=0.1)
        low, high, log_e = betting_sequence((d + 1) / 2, alpha=0.05, points=(0.45, 0.55))
        np.testing.assert_array_equal(seq["low"].to_numpy(), 2 * low - 1)
        np.testing.assert_array_equal(seq["high"].to_numpy(), 2 * high - 1)
        np.testing.assert_allclose(seq["p_value"], np.minimum(1, np.exp(-log_e)))


def test_a_rule_looking_again_continues_or_starts_afresh():
    ok, fail = {"c": True}, {"c": False}
    cases = [
        CaseOutcomes(f"k{i}", {"v1": (fail if i % 3 else ok,), "v2": (ok if i % 4 else fail,)})
        for i in range(60)
    ]
    rule = Decided(a="v1", b="v2")
    looks = [rule.look(cases[:n]).look for n in range(1, 61)]
    again = rule.look(cases[:30]).look  # a shorter prefix: recomputed, the same numbers
    assert again == looks[29] == Decided(a="v1", b="v2").look(cases[:30]).look
    assert looks[-1] == Decided(a="v1", b="v2").look(cases).look
