"""Coverage and false-alarm tables of evalnb's statistics, by seeded simulation (issue 17).

Every row runs evalnb's own public functions: each design's simulated experiments go in as
one frame of counts with an ``experiment`` column and come out of ``suite_rate``,
``compare``, ``power``, ``ppi_rate`` or ``calibrate`` in one call (``by="experiment"``),
so the numbers are those functions' behaviour, not a re-implementation's.

1. ``suite_rate``: how often the 95% interval covers the true mean pass rate, for
   C in {3, 5, 10, 30} cases, {1, 5, 25} repeats, per-case rates from Beta(8,2), Beta(2,2),
   Beta(0.5,0.5), Beta(20,2), with cases alone or in groups of two (a group's cases share a
   group rate), and which method each row chose;
2. ``compare``: how often a verdict appears when nothing changed (A and B have the same
   per-case rates; two-sided, so "B better" or "A better"), random and fixed mode,
   C in {2, 3, 5, 10, 30}, including the few-case null where each case truly moves +-0.2;
3. ``power``: predicted against simulated ``compare`` power for few cases and one repeat;
4. ``ppi_rate``: coverage of the prediction-powered interval for the human pass rate,
   with a judge that errs per case and is biased upwards;
5. ``calibrate``: kappa interval coverage and McNemar's false rejections with a judge that
   errs per case (20 cases x 10 repeats);
6. the beta-binomial interval against a numerical integration of the same model.

Reproduce (a few minutes on 2 cores)::

    .venv/bin/python benchmarks/coverage.py                  # 1,000 experiments a row
    .venv/bin/python benchmarks/coverage.py --experiments 200 # a quick look
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import integrate, special, stats

from evalnb.analysis import agreement, calibrate, compare, power, ppi_rate, suite_rate
from evalnb.analysis._betabinomial import beta_binomial_interval

SHAPES = [(8, 2), (2, 2), (0.5, 0.5), (20, 2)]
LEVEL = 0.95
Z = stats.norm.ppf(0.5 + LEVEL / 2)

#: Populations of cases for the suite-interval candidates: every case at one rate, case rates
#: from a Beta, and two kinds of case (a share ``q`` at one rate, the rest at another).
POPULATIONS: list[tuple[str, tuple[float, ...]]] = [
    ("equal", (0.01,)),
    ("equal", (0.1,)),
    ("equal", (0.5,)),
    ("equal", (0.9,)),
    ("equal", (0.99,)),
    ("Beta", (9.9, 0.1)),
    ("Beta", (0.1, 9.9)),
    ("Beta", (8, 2)),
    ("Beta", (0.5, 0.5)),
    ("two-point", (0.8, 1.0, 0.05)),
    ("two-point", (0.9, 1.0, 0.9)),
]
CANDIDATE_CASES = (2, 3, 5, 10, 30, 100, 500)
CANDIDATE_REPEATS = (1, 3, 10, 25, 50)
#: The beta-binomial candidates run on a grid per experiment: only up to this many cases,
#: and on the first 500 experiments of a cell (Monte Carlo se up to 0.022 instead of 0.011).
BETA_BINOMIAL_UP_TO = 10
BETA_BINOMIAL_EXPERIMENTS = 500


def population(
    rng: np.random.Generator, kind: str, values: tuple[float, ...], shape: tuple[int, int]
) -> tuple[np.ndarray, float]:
    """True per-case rates of ``shape`` (experiments x cases) and their mean, the truth."""
    if kind == "equal":
        return np.full(shape, values[0]), values[0]
    if kind == "Beta":
        a, b = values
        return rng.beta(a, b, size=shape), a / (a + b)
    q, first, other = values
    return np.where(rng.random(shape) < q, first, other), q * first + (1 - q) * other


def population_label(kind: str, values: tuple[float, ...]) -> str:
    if kind == "equal":
        return f"all {values[0]:g}"
    if kind == "Beta":
        return f"Beta({values[0]:g},{values[1]:g})"
    return f"{values[0]:.0%} at {values[1]:g}, rest {values[2]:g}"


def korn_graubard(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson on the design-effect n, df-adjusted (Korn & Graubard 1998), as Inspect's
    clustered interval: ``n* = n_eff (t_{N-1} / t_{G-1})^2``; ``n_eff = N`` when ``se`` is 0."""
    cases = k.shape[1]
    rates = k / n
    p = rates.mean(axis=1)
    se = rates.std(axis=1, ddof=1) / np.sqrt(cases)
    samples = cases * n
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where(se > 1e-12, np.minimum(p * (1 - p) / se**2, samples), samples)
    tail = 0.5 + LEVEL / 2
    n_eff = n_eff * (stats.t.ppf(tail, samples - 1) / stats.t.ppf(tail, max(cases - 1, 1))) ** 2
    x = p * n_eff
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(x > 0, stats.beta.ppf(1 - tail, x, n_eff - x + 1), 0.0)
        high = np.where(x < n_eff, stats.beta.ppf(tail, x + 1, n_eff - x), 1.0)
    return low, high


def cluster_bootstrap(
    k: np.ndarray, n: int, rng: np.random.Generator, resamples: int = 500
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap resampling whole cases (one set of resamples for every experiment)."""
    cases = k.shape[1]
    weights = rng.multinomial(cases, np.full(cases, 1 / cases), size=resamples).T / cases
    means = (k / n) @ weights
    tail = (1 - LEVEL) / 2
    return np.quantile(means, tail, axis=1), np.quantile(means, 1 - tail, axis=1)


def logit_prior_beta_binomial(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The beta-binomial interval with a prior uniform in logit(rho) (mass on small rho)."""
    experiments, cases = k.shape
    ids = np.repeat(np.arange(experiments), cases)
    draws = np.full(k.size, n)
    return beta_binomial_interval(k.ravel(), draws, ids, experiments, LEVEL, "logit-uniform")


def candidate_intervals(
    k: np.ndarray, n: int, rng: np.random.Generator
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every candidate's interval for each experiment (a row of ``k``)."""
    frame = frame_of(k, n, np.arange(k.shape[1])).drop(columns="group")
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name, method in (
            ("Agresti-Coull, n_eff (default)", "agresti_coull"),
            ("Wilson, n_eff", "wilson"),
            ("Clopper-Pearson, n_eff", "beta"),
        ):
            row = suite_rate(frame, by="experiment", check="ok", method=method)
            out[name] = (row["low"].to_numpy(), row["high"].to_numpy())
        out["Korn-Graubard"] = korn_graubard(k, n)
        out["cluster bootstrap"] = cluster_bootstrap(k, n, rng)
        if k.shape[1] <= BETA_BINOMIAL_UP_TO:
            few = k[:BETA_BINOMIAL_EXPERIMENTS]
            part = frame[frame["experiment"] < len(few)]
            row = suite_rate(part, by="experiment", check="ok", method="beta-binomial")
            out["beta-binomial, uniform rho"] = (row["low"].to_numpy(), row["high"].to_numpy())
            out["beta-binomial, logit-uniform rho"] = logit_prior_beta_binomial(few, n)
    return out


def candidates_table(
    experiments: int,
    seed: int,
    cases_grid: tuple[int, ...] = CANDIDATE_CASES,
    repeats_grid: tuple[int, ...] = CANDIDATE_REPEATS,
) -> pd.DataFrame:
    """Coverage, Monte Carlo standard error, width and "excludes its estimate" per candidate,
    cases, repeats and population."""
    rows = []
    for cases in cases_grid:
        for repeats in repeats_grid:
            for number, (kind, values) in enumerate(POPULATIONS):
                rng = np.random.default_rng([seed, 30, cases, repeats, number])
                rates, truth = population(rng, kind, values, (experiments, cases))
                k = rng.binomial(repeats, rates)
                estimate = (k / repeats).mean(axis=1)
                for name, (low, high) in candidate_intervals(k, repeats, rng).items():
                    runs = len(low)
                    covered = float(np.mean((low <= truth) & (truth <= high)))
                    rows.append(
                        {
                            "cases": cases,
                            "repeats": repeats,
                            "population": population_label(kind, values),
                            "candidate": name,
                            "coverage": covered,
                            "experiments": runs,
                            "MC se": np.sqrt(covered * (1 - covered) / runs),
                            "width": float(np.mean(high - low)),
                            "excludes estimate": float(
                                np.mean(
                                    (low > estimate[:runs] + 1e-9) | (high < estimate[:runs] - 1e-9)
                                )
                            ),
                        }
                    )
    return pd.DataFrame(rows)


def candidates_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per candidate: the range of coverage, the cells below 0.93, the cells above 0.975 from
    10 cases up, how often it excluded its estimate, and its mean width relative to the
    default's on the same cells."""
    default = "Agresti-Coull, n_eff (default)"
    keys = ["cases", "repeats", "population"]
    base = table[table["candidate"] == default].set_index(keys)["width"]
    rows = []
    for name, part in table.groupby("candidate", sort=False):
        ten = part[part["cases"] >= 10]
        ratio = part.set_index(keys)["width"] / base.reindex(part.set_index(keys).index)
        rows.append(
            {
                "candidate": name,
                "cells": len(part),
                "min coverage": part["coverage"].min(),
                "max coverage": part["coverage"].max(),
                "below 0.93": int((part["coverage"] < 0.93).sum()),
                "above 0.975, >= 10 cases": int((ten["coverage"] > 0.975).sum()),
                "excludes estimate (max share)": part["excludes estimate"].max(),
                "width / default's": float(ratio.mean()),
            }
        )
    return pd.DataFrame(rows)


def case_rates(
    rng: np.random.Generator,
    shape: tuple[float, float],
    experiments: int,
    cases: int,
    grouped: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-case true rates (mean a / (a + b)) and each case's group (pairs when grouped)."""
    group = np.arange(cases) // 2 if grouped else np.arange(cases)
    if not grouped:
        return rng.beta(*shape, size=(experiments, cases)), group
    # A group's rate from the Beta; its cases scatter around it (concentration 10), so the
    # mean of case rates is still a / (a + b) and cases of a group move together.
    shared = rng.beta(*shape, size=(experiments, int(group.max()) + 1))[:, group]
    shared = np.clip(shared, 1e-6, 1 - 1e-6)
    return rng.beta(10 * shared, 10 * (1 - shared)), group


def frame_of(k: np.ndarray, n: int, group: np.ndarray, variant: str | None = None) -> pd.DataFrame:
    experiments, cases = k.shape
    out = pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(experiments), cases),
            "case_id": np.tile(np.arange(cases), experiments),
            "group": np.tile(group, experiments),
            "check": "ok",
            "k": k.ravel(),
            "n": n,
        }
    )
    if variant is not None:
        out.insert(1, "variant", variant)
    return out


def suite_table(experiments: int, seed: int) -> pd.DataFrame:
    rows = []
    for grouped in (False, True):
        for cases in (3, 5, 10, 30):
            for repeats in (1, 5, 25):
                for shape in SHAPES:
                    rng = np.random.default_rng([seed, cases, repeats, int(shape[0] * 10), grouped])
                    rates, group = case_rates(rng, shape, experiments, cases, grouped)
                    frame = frame_of(rng.binomial(repeats, rates), repeats, group)
                    if not grouped:
                        frame = frame.drop(columns="group")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)
                        out = suite_rate(frame, by="experiment", check="ok", level=LEVEL)
                    truth = shape[0] / sum(shape)
                    covered = (out["low"] <= truth) & (truth <= out["high"])
                    methods = out["method"].value_counts()
                    rows.append(
                        {
                            "groups": "pairs" if grouped else "none",
                            "cases": cases,
                            "repeats": repeats,
                            "rates": f"Beta({shape[0]:g},{shape[1]:g})",
                            "method": " / ".join(
                                f"{m} {c / len(out):.0%}" for m, c in methods.items()
                            ),
                            "coverage": covered.mean(),
                            "width": (out["high"] - out["low"]).mean(),
                        }
                    )
    return pd.DataFrame(rows)


def compare_table(experiments: int, seed: int) -> pd.DataFrame:
    rows = []
    designs = [(c, r, shape) for c in (2, 3, 5, 10, 30) for r in (1, 5, 25) for shape in SHAPES]
    designs += [(c, r, "+-0.2") for c in (4, 5, 10) for r in (25, 100)]
    for number, (cases, repeats, shape) in enumerate(designs):
        rng = np.random.default_rng([seed, number])
        if shape == "+-0.2":
            # each case truly moves by +0.2 or -0.2: no difference on average (random mode's null)
            rate_a = np.full((experiments, cases), 0.5)
            rate_b = 0.5 + 0.2 * rng.choice([-1, 1], size=(experiments, cases))
            label, modes = "0.5, each case +-0.2", ("random",)
        else:
            rate_a = rate_b = rng.beta(*shape, size=(experiments, cases))
            label, modes = f"Beta({shape[0]:g},{shape[1]:g})", ("random", "fixed")
        group = np.arange(cases)
        frame = pd.concat(
            [
                frame_of(rng.binomial(repeats, rate_a), repeats, group, "A"),
                frame_of(rng.binomial(repeats, rate_b), repeats, group, "B"),
            ]
        ).drop(columns="group")
        for mode in modes:
            out = compare(frame, a="A", b="B", by="experiment", check="ok", mode=mode, level=LEVEL)
            false = int((out["verdict"] != "can't tell yet").sum())
            rows.append(
                {
                    "mode": mode,
                    "cases": cases,
                    "repeats": repeats,
                    "rates": label,
                    "false verdict": false / len(out),
                    # Monte Carlo error: the Clopper-Pearson 95% interval of that share
                    "MC low": float(stats.binomtest(false, len(out)).proportion_ci().low),
                    "B better": (out["verdict"] == "B better").mean(),
                    "min_p": out["min_p"].iloc[0],
                }
            )
    return pd.DataFrame(rows)


def power_table(experiments: int, seed: int) -> pd.DataFrame:
    rows = []
    for cases in (4, 6, 8, 10, 20):
        for repeats in (1, 5, 25):
            rng = np.random.default_rng([seed, cases, repeats, 7])
            between = 0.0 if repeats == 1 else 0.04
            shape = (experiments, cases)
            moved = np.clip(0.7 + np.sqrt(between) * rng.standard_normal(shape), 0, 1)
            frame = pd.concat(
                [
                    frame_of(
                        rng.binomial(repeats, np.full(shape, 0.5)), repeats, np.arange(cases), "A"
                    ),
                    frame_of(rng.binomial(repeats, moved), repeats, np.arange(cases), "B"),
                ]
            ).drop(columns="group")
            out = compare(frame, a="A", b="B", by="experiment", check="ok", level=LEVEL)
            achieved = (out["verdict"] == "B better").mean()
            predicted = power(
                rate=0.5, diff=0.2, cases=cases, repeats=repeats, between_var=between, level=LEVEL
            ).iloc[0]
            rows.append(
                {
                    "cases": cases,
                    "repeats": repeats,
                    "between sd": np.sqrt(between),
                    "power()": predicted["power"],
                    "compare, simulated": achieved,
                    "method": predicted["method"].split(" (")[0].split(":")[0],
                }
            )
    return pd.DataFrame(rows)


def judged(
    rng: np.random.Generator, experiments: int, cases: int, repeats: int, reviewed: float
) -> pd.DataFrame:
    """Human verdicts with true per-case rates Beta(3, 2) (mean 0.6), on a random share of
    the samples; a judge that errs per case (error rate Beta(2, 6), mean 0.25), lenient on
    90% of cases: biased upwards by about 0.08."""
    shape = (experiments, cases)
    human_rate = rng.beta(3, 2, size=shape)
    error = rng.beta(2, 6, size=shape)
    lenient = rng.random(shape) < 0.9
    human = rng.random((*shape, repeats)) < human_rate[..., None]
    flip = rng.random((*shape, repeats)) < error[..., None]
    judge = np.where(flip & np.where(lenient[..., None], ~human, human), ~human, human)
    seen = rng.random((*shape, repeats)) < reviewed
    return pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(experiments), cases * repeats),
            "case_id": np.tile(np.repeat(np.arange(cases), repeats), experiments),
            "outcome": judge.ravel(),
            "verdict": np.where(seen, np.where(human, "pass", "fail"), None).ravel(),
        }
    )


def ppi_table(experiments: int, seed: int) -> pd.DataFrame:
    rows = []
    truth = 0.6
    for cases in (10, 30, 100):
        for repeats in (1, 5):
            for reviewed in (0.1, 0.3):
                rng = np.random.default_rng([seed, cases, repeats, int(reviewed * 10)])
                out = ppi_rate(
                    judged(rng, experiments, cases, repeats, reviewed),
                    by="experiment",
                    design="random",
                )
                out = out[np.isfinite(out["low"])]
                covered = (out["low"] <= truth) & (truth <= out["high"])
                human = (out["human_only_low"] <= truth) & (truth <= out["human_only_high"])
                rows.append(
                    {
                        "cases": cases,
                        "repeats": repeats,
                        "reviewed": reviewed,
                        "rows with an interval": len(out) / experiments,
                        "PPI coverage": covered.mean(),
                        "PPI width": (out["high"] - out["low"]).mean(),
                        "verdicts alone: coverage": human.mean(),
                        "verdicts alone: width": (
                            out["human_only_high"] - out["human_only_low"]
                        ).mean(),
                        "judge alone: bias": (out["judge_rate"] - truth).mean(),
                    }
                )
    return pd.DataFrame(rows)


def calibration_table(experiments: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng([seed, 5])
    # population kappa and TPR of the generator below (one million cases, exact within a case)
    size = 1_000_000
    h, e, lenient = rng.beta(2, 2, size), rng.beta(1, 5, size), rng.random(size) < 0.5
    both = np.mean(h * (1 - np.where(lenient, 0, e)))
    human_only = np.mean(h * np.where(lenient, 0, e))
    judge_only = np.mean((1 - h) * np.where(lenient, e, 0))
    neither = 1 - both - human_only - judge_only
    first, second = both + human_only, both + judge_only
    expected = first * second + (1 - first) * (1 - second)
    kappa = (both + neither - expected) / (1 - expected)
    tpr = both / first
    rows = []
    for _ in range(experiments):
        cases, repeats = 20, 10
        human_rate, error = rng.beta(2, 2, cases), rng.beta(1, 5, cases)
        lean = rng.random(cases) < 0.5
        human = rng.random((cases, repeats)) < human_rate[:, None]
        flip = rng.random((cases, repeats)) < error[:, None]
        judge = np.where(flip & np.where(lean[:, None], ~human, human), ~human, human)
        frame = pd.DataFrame(
            {
                "case_id": np.repeat(np.arange(cases), repeats),
                "verdict": np.where(human.ravel(), "pass", "fail"),
                "outcome": judge.ravel(),
            }
        )
        for unit, data in (
            ("cases", frame),
            ("samples (as before)", frame.drop(columns="case_id")),
        ):
            row = calibrate(data).summary.iloc[0]
            rows.append(
                {
                    "unit": unit,
                    "kappa covered": row["kappa_low"] <= kappa <= row["kappa_high"],
                    "TPR covered": row["tpr_low"] <= tpr <= row["tpr_high"],
                    "McNemar rejects": row["mcnemar_p"] < 1 - LEVEL,
                }
            )
    out = pd.DataFrame(rows).groupby("unit", sort=False).mean().reset_index()
    return out.rename(
        columns={
            "kappa covered": "kappa interval coverage",
            "TPR covered": "TPR interval coverage",
            "McNemar rejects": "McNemar false rejections",
        }
    )


def pin_table() -> pd.DataFrame:
    rows = []
    for k, n in (([7, 9, 4, 8, 10, 6], [10] * 6), ([3, 8, 5, 9, 4], [4, 8, 6, 10, 5])):
        frame = pd.DataFrame({"case_id": range(len(k)), "check": "ok", "k": k, "n": n})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            row = suite_rate(frame, by=None, check="ok", method="beta-binomial").iloc[0]
        karr, narr = np.array(k), np.array(n)

        def density(mu: float, karr: np.ndarray = karr, narr: np.ndarray = narr) -> float:
            def like(rho: float) -> float:
                a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
                return float(np.exp(stats.betabinom.logpmf(karr, narr, a, b).sum()))

            return integrate.quad(like, 0, 1, limit=200)[0]

        mus = np.linspace(0, 1, 1201)
        values = np.array([0.0, *(density(m) for m in mus[1:-1]), 0.0])
        cdf = integrate.cumulative_simpson(values, x=mus, initial=0)
        cdf /= cdf[-1]
        rows.append(
            {
                "cases: passed/draws": ", ".join(f"{a}/{b}" for a, b in zip(k, n, strict=True)),
                "evalnb low": row["low"],
                "integrated low": np.interp(0.025, cdf, mus),
                "evalnb high": row["high"],
                "integrated high": np.interp(0.975, cdf, mus),
            }
        )
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """A Markdown table, floats to 3 decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float | np.floating):
            return "" if np.isnan(value) else f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * table.shape[1]]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(False)]
    return "\n".join(lines)


def show(title: str, table: pd.DataFrame, started: float) -> None:
    print(f"\n### {title} ({time.perf_counter() - started:.0f} s)\n")
    print(markdown(table))
    sys.stdout.flush()


def verdicts_table(experiments: int, seed: int) -> pd.DataFrame:
    """How often the interval shown beside a verdict disagrees with it (excludes 0 beside
    "can't tell yet", or holds 0 beside a verdict), 3-9 cases, both modes, with no change
    and with +20 points on every case (rates from Beta(4, 4), 10 repeats)."""
    rows = []
    for cases in range(3, 10):
        for mode in ("random", "fixed"):
            for lift in (0.0, 0.2):
                rng = np.random.default_rng([seed, 30, cases, int(lift * 10), mode == "fixed"])
                rate_a = rng.beta(4, 4, size=(experiments, cases))
                rate_b = np.clip(rate_a + lift, 0, 1)
                group = np.arange(cases)
                frame = pd.concat(
                    [
                        frame_of(rng.binomial(10, rate_a), 10, group, "A"),
                        frame_of(rng.binomial(10, rate_b), 10, group, "B"),
                    ]
                ).drop(columns="group")
                out = compare(frame, a="A", b="B", by="experiment", check="ok", mode=mode)
                decided = out["verdict"] != "can't tell yet"
                excludes = (out["low"] > 0) | (out["high"] < 0)
                rows.append(
                    {
                        "mode": mode,
                        "cases": cases,
                        "lift": lift,
                        "experiments": len(out),
                        "verdict": decided.mean(),
                        "interval and verdict disagree": (decided != excludes).mean(),
                        "interval shown": out["interval_method"].mode().iloc[0],
                    }
                )
    return pd.DataFrame(rows)


def agreement_table(experiments: int, seed: int) -> pd.DataFrame:
    """Modal share and pairwise agreement against the true chance that two draws agree, and
    the coverage of the per-case and the across-cases (20 cases) intervals."""
    designs = [
        ("three equally likely", np.array([1, 1, 1]) / 3),
        ("0.8 / 0.1 / 0.1", np.array([0.8, 0.1, 0.1])),
        ("0.5 / 0.5", np.array([0.5, 0.5])),
        ("five equally likely", np.full(5, 0.2)),
    ]
    rows = []
    for name, shares in designs:
        truth = float(np.sum(shares**2))
        for draws in (5, 10, 25):
            rng = np.random.default_rng([seed, 31, draws, len(shares), int(shares[0] * 10)])
            cases = 20
            answers = rng.choice(len(shares), p=shares, size=(experiments, cases, draws))
            frame = pd.DataFrame(
                {
                    "experiment": np.repeat(np.arange(experiments), cases * draws),
                    "case_id": np.tile(np.repeat(np.arange(cases), draws), experiments),
                    "answer": answers.ravel().astype(str),
                }
            )
            per_case = agreement(frame, by=["experiment", "case_id"], key="answer")
            suite = agreement(frame, by="experiment", key="answer")
            covered = (per_case["pairwise_low"] <= truth) & (truth <= per_case["pairwise_high"])
            across = (suite["pairwise_low"] <= truth) & (truth <= suite["pairwise_high"])
            rows.append(
                {
                    "answers": name,
                    "draws": draws,
                    "true agreement": truth,
                    "modal share": per_case["agreement"].mean(),
                    "pairwise": per_case["pairwise"].mean(),
                    "pairwise MC se": per_case["pairwise"].std() / np.sqrt(len(per_case)),
                    "per-case coverage": covered.mean(),
                    "across 20 cases: coverage": across.mean(),
                    "across: MC se": np.sqrt(across.mean() * (1 - across.mean()) / len(suite)),
                }
            )
    return pd.DataFrame(rows)


def ppi_labels_table(experiments: int, seed: int) -> pd.DataFrame:
    """PPI coverage with an exact number of random labels (the issue's 20 over 50 x 5)."""
    rows = []
    for cases, repeats, labels in ((50, 5, 20), (50, 5, 40), (100, 1, 10), (100, 1, 30)):
        rng = np.random.default_rng([seed, 32, cases, repeats, labels])
        frame = judged(rng, experiments, cases, repeats, 1.0)
        seen = np.argsort(rng.random((experiments, cases * repeats)), axis=1) < labels
        frame.loc[~seen.ravel(), "verdict"] = None
        out = ppi_rate(frame, by="experiment", design="random")
        out = out[np.isfinite(out["low"])]
        covered = ((out["low"] <= 0.6) & (out["high"] >= 0.6)).mean()
        rows.append(
            {
                "cases": cases,
                "repeats": repeats,
                "labels": labels,
                "experiments": len(out),
                "PPI coverage": covered,
                "MC se": np.sqrt(covered * (1 - covered) / len(out)),
                "width": (out["high"] - out["low"]).mean(),
                "note cautions": out["note"].str.contains("may run narrow").mean(),
            }
        )
    return pd.DataFrame(rows)


def one_way_judged(
    rng: np.random.Generator, experiments: int, rate: float, mode: str, error: float, labels: int
) -> pd.DataFrame:
    """50 cases x 5 repeats, human per-case rates Beta(10 rate, 10 (1 - rate)); a judge that
    errs on a share ``error`` of the samples it can err on: human fails it passes
    ("lenient"), human passes it fails ("strict"), or both; ``labels`` random samples
    reviewed (issue 39: with a high rate and a one-way judge, no label may disagree)."""
    cases, repeats = 50, 5
    shape = (experiments, cases)
    human_rate = rng.beta(10 * rate, 10 * (1 - rate), size=shape)
    human = rng.random((*shape, repeats)) < human_rate[..., None]
    flip = rng.random((*shape, repeats)) < error
    can_err = {"lenient": ~human, "strict": human, "both": np.ones_like(human)}[mode]
    judge = np.where(flip & can_err, ~human, human)
    seen = np.argsort(rng.random((experiments, cases * repeats)), axis=1) < labels
    return pd.DataFrame(
        {
            "experiment": np.repeat(np.arange(experiments), cases * repeats),
            "case_id": np.tile(np.repeat(np.arange(cases), repeats), experiments),
            "outcome": judge.ravel(),
            "verdict": np.where(seen.ravel(), np.where(human.ravel(), "pass", "fail"), None),
        }
    )


def ppi_few_labels_table(experiments: int, seed: int) -> pd.DataFrame:
    """PPI coverage with 10, 20 and 40 random labels over 50 cases x 5 repeats, human rates
    0.6-0.95, a judge erring one way or both ways on 10% or 30% of the samples it can err
    on, against the true mean human rate of the population (issue 39)."""
    rows = []
    for rate in (0.6, 0.8, 0.9, 0.95):
        for mode in ("lenient", "strict", "both"):
            for error in (0.1, 0.3):
                for labels in (10, 20, 40):
                    key = [seed, 39, int(rate * 100), len(mode), int(error * 10), labels]
                    rng = np.random.default_rng(key)
                    frame = one_way_judged(rng, experiments, rate, mode, error, labels)
                    out = ppi_rate(frame, by="experiment", design="random")
                    shown = np.isfinite(out["low"])
                    covered = (out["low"] <= rate) & (rate <= out["high"])
                    rows.append(
                        {
                            "human rate": rate,
                            "judge errs": mode,
                            "error": error,
                            "labels": labels,
                            "with an interval": shown.mean(),
                            "coverage": covered[shown].mean(),
                            "MC se": np.sqrt(covered[shown].var() / max(shown.sum(), 1)),
                            "width": (out["high"] - out["low"])[shown].mean(),
                        }
                    )
    return pd.DataFrame(rows)


def per_case_pass_k(passed: np.ndarray, draws: int, at: int) -> tuple[np.ndarray, np.ndarray]:
    """The unbiased per-case pass@k and pass^k from ``passed`` of ``draws`` (Chen et al. 2021)."""
    total = special.comb(draws, at)
    return 1 - special.comb(draws - passed, at) / total, special.comb(passed, at) / total


def across_case_candidates(
    values: np.ndarray, rng: np.random.Generator
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Intervals for the mean across cases of per-case values in [0, 1], one per row."""
    from evalnb.analysis._rates import proportion_interval
    from evalnb.analysis._suite import effective_n

    cases = values.shape[1]
    mean = values.mean(axis=1)
    se = values.std(axis=1, ddof=1) / np.sqrt(cases)
    groups = np.full(len(mean), float(cases))
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    n_eff, _ = effective_n(mean, se, groups, np.full(len(mean), np.inf), LEVEL)
    _, low, high = proportion_interval(mean * n_eff, n_eff, level=LEVEL, method="agresti_coull")
    bound = ((1 - LEVEL) / 2) ** (1 / cases)
    out["Agresti-Coull on the effective n (0.3)"] = (
        np.fmin(np.where(mean >= 1, bound, low), mean),
        np.fmax(np.where(mean <= 0, 1 - bound, high), mean),
    )
    _, low, high = proportion_interval(
        mean * cases, np.full(len(mean), cases), level=LEVEL, method="wilson"
    )
    out["Wilson on the cases (Bernoulli bound)"] = (low, high)
    weights = rng.multinomial(cases, np.full(cases, 1 / cases), size=1000).T / cases
    means = values @ weights
    tail = (1 - LEVEL) / 2
    out["cluster bootstrap, percentile"] = (
        np.quantile(means, tail, axis=1),
        np.quantile(means, 1 - tail, axis=1),
    )
    t = stats.t.ppf(0.5 + LEVEL / 2, cases - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = special.logit(mean)
        half = t * se / (mean * (1 - mean))
        inner = (mean > 0) & (mean < 1) & (se > 1e-12)
    out["t on the logit scale (delta method)"] = (
        np.where(inner, special.expit(centre - half), np.where(mean >= 1, bound, 0.0)),
        np.where(inner, special.expit(centre + half), np.where(mean <= 0, 1 - bound, 1.0)),
    )
    capped = np.minimum(n_eff, cases * (stats.norm.ppf(0.5 + LEVEL / 2) / t) ** 2 * 4)
    _, low, high = proportion_interval(mean * capped, capped, level=LEVEL, method="wilson")
    out["Wilson on the effective n, capped at 4x the cases"] = (
        np.fmin(np.where(mean >= 1, bound, low), mean),
        np.fmax(np.where(mean <= 0, 1 - bound, high), mean),
    )
    return out


def pass_k_table(experiments: int, seed: int) -> pd.DataFrame:
    """Coverage of across-case pass@k / pass^k intervals, 5-20 cases x 10 draws, case rates
    from Beta with means 0.5-0.97 (skewed: concentration 2; milder: 10), k = 1, 3, 5; the
    truth is the population mean of 1 - (1 - p)^k and p^k, from the Beta's moments."""
    rows = []
    draws = 10
    for cases in (5, 10, 20):
        for mean_rate in (0.5, 0.7, 0.9, 0.97):
            for concentration in (2.0, 10.0):
                a, b = mean_rate * concentration, (1 - mean_rate) * concentration
                key = [seed, 395, cases, int(mean_rate * 100), int(concentration)]
                rng = np.random.default_rng(key)
                rates = rng.beta(a, b, size=(experiments, cases))
                passed = rng.binomial(draws, rates)
                for at in (1, 3, 5):
                    pass_at, pass_hat = per_case_pass_k(passed, draws, at)
                    truths = {
                        "pass@k": 1 - np.exp(special.betaln(a, b + at) - special.betaln(a, b)),
                        "pass^k": np.exp(special.betaln(a + at, b) - special.betaln(a, b)),
                    }
                    for what, values in (("pass@k", pass_at), ("pass^k", pass_hat)):
                        if at == 1 and what == "pass^k":
                            continue
                        truth = truths[what]
                        for name, (low, high) in across_case_candidates(values, rng).items():
                            rows.append(
                                {
                                    "cases": cases,
                                    "rate": mean_rate,
                                    "concentration": concentration,
                                    "k": at,
                                    "statistic": what,
                                    "truth": truth,
                                    "candidate": name,
                                    "coverage": np.mean((low <= truth) & (truth <= high)),
                                    "width": np.mean(high - low),
                                }
                            )
    return pd.DataFrame(rows)


def pass_k_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per candidate: the range of coverage over the designs, cells below 0.93, width."""
    return (
        table.groupby("candidate", sort=False)
        .agg(
            designs=("coverage", "size"),
            lowest=("coverage", "min"),
            mean=("coverage", "mean"),
            below_093=("coverage", lambda c: int((c < 0.93).sum())),
            width=("width", "mean"),
        )
        .reset_index()
    )


def pass_k_evalnb_table(experiments: int, seed: int) -> pd.DataFrame:
    """The same designs through ``agreement(frame, by="experiment", at=[1, 3, 5])``: the
    coverage of evalnb's own across-case pass@k and pass^k intervals."""
    rows = []
    draws = 10
    for cases in (5, 10, 20):
        for mean_rate in (0.5, 0.7, 0.9, 0.97):
            for concentration in (2.0, 10.0):
                a, b = mean_rate * concentration, (1 - mean_rate) * concentration
                rng = np.random.default_rng([seed, 396, cases, int(mean_rate * 100)])
                rates = rng.beta(a, b, size=(experiments, cases))
                passed = rng.random((experiments, cases, draws)) < rates[..., None]
                frame = pd.DataFrame(
                    {
                        "experiment": np.repeat(np.arange(experiments), cases * draws),
                        "case_id": np.tile(np.repeat(np.arange(cases), draws), experiments),
                        "outcome": passed.ravel(),
                        "answer": np.where(passed.ravel(), "yes", "no"),
                    }
                )
                out = agreement(frame, by="experiment", key="answer", at=[1, 3, 5])
                for at, part in out.groupby("at"):
                    at = int(at)
                    for what, column, truth in (
                        ("pass@k", "pass_at_k", 1 - _beta_moment(a, b, 0, at)),
                        ("pass^k", "pass_hat_k", _beta_moment(a, b, at, 0)),
                    ):
                        if at == 1 and what == "pass^k":
                            continue
                        low, high = part[f"{column}_low"], part[f"{column}_high"]
                        covered = (low <= truth) & (truth <= high)
                        rows.append(
                            {
                                "cases": cases,
                                "rate": mean_rate,
                                "concentration": concentration,
                                "k": at,
                                "statistic": what,
                                "truth": truth,
                                "coverage": covered.mean(),
                                "width": (high - low).mean(),
                            }
                        )
    return pd.DataFrame(rows)


def _beta_moment(a: float, b: float, up: int, down: int) -> float:
    """E[p^up (1 - p)^down] for p ~ Beta(a, b)."""
    return float(np.exp(special.betaln(a + up, b + down) - special.betaln(a, b)))


#: The skewed, many-repeat corner (issue 39): case rates near 0 or 1 carried by a few cases.
SKEWED: list[tuple[str, tuple[float, ...]]] = [
    ("Beta", (0.05, 4.95)),
    ("Beta", (4.95, 0.05)),
    ("Beta", (0.1, 9.9)),
    ("Beta", (9.9, 0.1)),
    ("Beta", (0.2, 19.8)),
    ("Beta", (19.8, 0.2)),
    ("two-point", (0.02, 0.5, 1.0)),
    ("two-point", (0.05, 0.7, 1.0)),
    ("two-point", (0.1, 0.9, 0.999)),
    ("two-point", (0.01, 0.0, 0.99)),
]


def suite_skewed_table(experiments: int, seed: int) -> pd.DataFrame:
    """``suite_rate`` in the skewed corner: 50-200 cases x 25-50 repeats, case rates from
    :data:`SKEWED`, with and without Hall's skewness-corrected interval beside it."""
    from evalnb.analysis import _suite

    rows = []
    for cases in (50, 100, 200):
        for repeats in (25, 50):
            for number, (kind, values) in enumerate(SKEWED):
                rng = np.random.default_rng([seed, 397, cases, repeats, number])
                rates, truth = population(rng, kind, values, (experiments, cases))
                k = rng.binomial(repeats, rates)
                frame = frame_of(k, repeats, np.arange(cases)).drop(columns="group")
                row: dict[str, object] = {
                    "cases": cases,
                    "repeats": repeats,
                    "population": population_label(kind, values),
                }
                for label, start in (("coverage", _suite.SKEWED_FROM), ("before", 10**9)):
                    _suite.SKEWED_FROM, kept = start, _suite.SKEWED_FROM
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)
                        out = suite_rate(frame, by="experiment", check="ok", level=LEVEL)
                    _suite.SKEWED_FROM = kept
                    row[label] = float(((out["low"] <= truth) & (truth <= out["high"])).mean())
                    row[f"width ({label})"] = float((out["high"] - out["low"]).mean())
                rows.append(row)
    return pd.DataFrame(rows)


def show_candidates(args: argparse.Namespace) -> None:
    step = time.perf_counter()
    cases = tuple(int(c) for c in args.cases.split(",")) if args.cases else CANDIDATE_CASES
    table = candidates_table(args.experiments, args.seed, cases)
    if args.long:
        show("0. suite interval candidates, one line per cell and candidate", table, step)
    else:
        wide = table.pivot_table(
            index=["cases", "repeats", "population"],
            columns="candidate",
            values="coverage",
            sort=False,
        ).reset_index()
        show(
            "0. suite interval candidates: coverage of the true mean (Monte Carlo se "
            f"<= {np.sqrt(0.25 / args.experiments):.3f})",
            wide,
            step,
        )
    show("0. candidates in summary", candidates_summary(table), step)


def show_suite(args: argparse.Namespace) -> None:
    step = time.perf_counter()
    suite = suite_table(args.experiments, args.seed)
    short = {"beta-binomial": "bb", "agresti_coull": "ac"}
    suite["cell"] = [
        f"{c:.3f} " + "/".join(short[m.split(" ")[0]] for m in method.split(" / "))
        for c, method in zip(suite["coverage"], suite["method"], strict=True)
    ]
    wide = suite.pivot(index=["groups", "cases", "repeats"], columns="rates", values="cell")
    wide = wide[[f"Beta({a:g},{b:g})" for a, b in SHAPES]].reset_index()
    show(
        "1. suite_rate: 95% interval coverage of the true mean (ac: Agresti-Coull on the "
        "effective n, the default)",
        suite.drop(columns="cell") if args.long else wide,
        step,
    )
    for method, rows in suite.groupby(suite["method"].str.split(" ").str[0]):
        outside = rows[(rows["coverage"] < 0.93) | (rows["coverage"] > 0.97)]
        print(
            f"\n{method}: coverage {rows['coverage'].min():.3f}-{rows['coverage'].max():.3f} "
            f"over {len(rows)} designs; outside 0.93-0.97: {len(outside)} "
            f"({(outside['coverage'] < 0.93).sum()} below)"
        )


def show_compare(args: argparse.Namespace) -> None:
    step = time.perf_counter()
    table = compare_table(args.experiments, args.seed)
    wide = table.pivot(index=["mode", "cases", "repeats"], columns="rates", values="false verdict")
    wide = wide.reindex(columns=[c for c in dict.fromkeys(table["rates"])]).reset_index()
    wide = wide.sort_values(["mode", "cases", "repeats"], ascending=[False, True, True])
    rates = [c for c in wide.columns if c not in ("mode", "cases", "repeats")]
    wide[rates] = wide[rates].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    show(
        "2. compare: share of experiments with a verdict when nothing changed "
        "(two-sided, level 5%)",
        table if args.long else wide,
        step,
    )
    above = table[table["MC low"] > 1 - LEVEL]
    worst = table.loc[table["false verdict"].idxmax()]
    print(
        f"\nworst false-verdict rate: {worst['false verdict']:.3f} ({worst['mode']}, "
        f"{worst['cases']} cases x {worst['repeats']} repeats, {worst['rates']}; Monte Carlo "
        f"95% interval from {worst['MC low']:.3f}); designs above 5% beyond Monte Carlo "
        f"error: {len(above)}; largest 'B better' share: {table['B better'].max():.3f}"
    )


def timed(title: str, make: Callable[[], pd.DataFrame]) -> None:
    started = time.perf_counter()
    show(title, make(), started)


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "candidates": show_candidates,
    "suite": show_suite,
    "compare": show_compare,
    "power": lambda args: timed(
        "3. power() against simulated compare",
        lambda: power_table(args.experiments, args.seed),
    ),
    "ppi": lambda args: timed(
        "4. ppi_rate: coverage of the human pass rate",
        lambda: ppi_table(args.experiments, args.seed),
    ),
    "calibrate": lambda args: timed(
        "5. calibrate: a judge that errs per case, 20 cases x 10 repeats",
        lambda: calibration_table(max(100, args.experiments // 2), args.seed),
    ),
    "verdicts": lambda args: timed(
        "7. compare: the interval shown beside the verdict, 3-9 cases x 10 repeats",
        lambda: verdicts_table(args.experiments, args.seed),
    ),
    "agreement": lambda args: timed(
        "8. agreement: modal share, pairwise agreement and their intervals (20 cases)",
        lambda: agreement_table(args.experiments, args.seed),
    ),
    "ppi-labels": lambda args: timed(
        "9. ppi_rate with an exact number of random labels",
        lambda: ppi_labels_table(args.experiments, args.seed),
    ),
    "ppi-few": lambda args: timed(
        "10. ppi_rate with 10, 20, 40 labels and a one-way judge (issue 39)",
        lambda: ppi_few_labels_table(args.experiments, args.seed),
    ),
    "pass-k-candidates": lambda args: timed(
        "11. across-case pass@k / pass^k: the candidate intervals (issue 39)",
        lambda: pass_k_summary(pass_k_table(args.experiments, args.seed)),
    ),
    "pass-k": lambda args: timed(
        "12. agreement(): across-case pass@k / pass^k, 5-20 cases x 10 draws (issue 39)",
        lambda: pass_k_evalnb_table(args.experiments, args.seed),
    ),
    "suite-skewed": lambda args: timed(
        "13. suite_rate in the skewed corner, 50-200 cases x 25-50 repeats (issue 39)",
        lambda: suite_skewed_table(args.experiments, args.seed),
    ),
    "pin": lambda args: timed("6. beta-binomial interval against numerical integration", pin_table),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=2000, help="experiments per row")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--long", action="store_true", help="one line per design")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"sections, comma-separated: {', '.join(SECTIONS)}",
    )
    parser.add_argument("--cases", default="", help="candidates: the cases grid (e.g. 2,3,5)")
    args = parser.parse_args()
    wanted = [s for s in args.only.split(",") if s]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"--only must name sections among {', '.join(SECTIONS)}; got {unknown[0]!r}")
    start = time.perf_counter()
    print(
        f"evalnb statistics benchmark: {args.experiments} experiments a row, seed {args.seed}, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    for name in wanted:
        SECTIONS[name](args)
    print(f"\ntotal: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
