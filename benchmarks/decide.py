"""Run until decided: validity and efficiency of evalnb's anytime-valid sequence.

Simulates per-case paired differences (B - A) the way a run produces them (each case has
its own true pass rate, each repeat is a Bernoulli draw, the case's difference is the
difference of its two pass rates) and applies the same test the runner's rule applies
after every case (``betting_log_capital`` at no difference; ``Decided`` reads the same
capital through the interval on its grid, which contains the point exactly when the test
does not reject).

1. Validity: with no true difference, the share of runs ending "better" (either side),
   looking after every case, in 24 designs (10-500 cases, 1-10 repeats, rates 0.05-0.99,
   homogeneous and heterogeneous cases); beside it the naive rule (a paired t test re-run
   after every case from the third) on the same data, and the without-replacement form
   run to the last case with repeat noise (why ``Decided`` does not use it).
2. Family-wise error with 3 and 6 variants against one baseline (alpha split).
3. Grouped cases (issue 39): with no true difference but case groups whose effects average
   0 in the population (each group moves every one of its cases by +-delta), the share of
   runs ending "better" when the sequence takes each case as a unit (as ``Decided`` did)
   and when it takes the group (the mean of its cases' differences), as ``Decided`` does
   now: the runner draws groups whole and looks after each.
4. Efficiency: ``power()``'s fixed design for +10 points at 80% power; the samples the
   sequence needs to decide when the truth is +20, +10 and 0 (cases available: 10x the
   fixed design; with no difference the run ends at 2x the fixed design's cases, a budget).

Reproduce with::

    nice -n 10 .venv/bin/python benchmarks/decide.py            # about 2 minutes
    nice -n 10 .venv/bin/python benchmarks/decide.py --runs 500 # quicker, rougher
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

import evalnb
from evalnb.analysis._sequence import betting_log_capital

ALPHA = 0.05

#: (cases, repeats, mean rate, spread of the case rates: 0 every case the same)
DESIGNS = [
    (10, 1, 0.5, 0.0),
    (10, 10, 0.9, 0.3),
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
    (300, 10, 0.05, 0.5),
    (400, 1, 0.5, 0.9),
    (400, 2, 0.9, 0.0),
    (500, 1, 0.5, 0.0),
    (500, 3, 0.15, 0.6),
    (500, 10, 0.7, 0.5),
]


def case_rates(rng, shape, rate, spread):
    if spread == 0:
        return np.full(shape, rate)
    concentration = 1 / spread**2
    return rng.beta(rate * concentration, (1 - rate) * concentration, size=shape)


def differences(rng, runs, cases, repeats, rate, spread, sides=2, shift=0.0):
    """Per-case differences of sides 1.. against side 0; side k's true rate is the case's
    rate plus ``shift`` (clipped to [0, 1])."""
    p = case_rates(rng, (runs, cases), rate, spread)
    out = []
    a = rng.binomial(repeats, p) / repeats
    for _ in range(sides - 1):
        b = rng.binomial(repeats, np.clip(p + shift, 0, 1)) / repeats
        out.append(b - a)
    return np.stack(out)


def first_decision(d, alpha):
    """Per run: the number of cases at the first look that excludes 0 (0: never), and
    the side (+1 B better, -1 A better, 0 undecided)."""
    up, down = betting_log_capital((d + 1) / 2, 0.5, alpha=alpha)
    limit = math.log(2 / alpha)
    hit = (up >= limit) | (down >= limit)
    any_hit = hit.any(axis=-1)
    at = np.where(any_hit, hit.argmax(axis=-1) + 1, 0)
    rows = np.arange(d.shape[0])
    side = np.where(any_hit, np.where(up[rows, np.maximum(at - 1, 0)] >= limit, 1, -1), 0)
    return at, side


def naive(d, alpha):
    t = np.arange(1, d.shape[-1] + 1)
    mean = np.cumsum(d, axis=-1) / t
    var = (np.cumsum(d**2, axis=-1) - t * mean**2) / np.maximum(t - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(np.abs(mean / np.sqrt(var / t)), np.maximum(t - 1, 1))
    p = np.where((t >= 3) & (var > 1e-12), p, 1.0)
    return (p < alpha).any(axis=-1)


def without_replacement_at_the_end(d, alpha):
    """The WoR sequence run to the last case: does it exclude 0?"""
    n = d.shape[-1]
    up, down = betting_log_capital((d + 1) / 2, 0.5, alpha=alpha, population=n)
    limit = math.log(2 / alpha)
    return ((up >= limit) | (down >= limit)).any(axis=-1)


def validity(rng, runs):
    print(f"## Validity: no true difference, a look after every case ({runs} runs a design)\n")
    print(
        "| cases | repeats | rate | spread | sequence: ends better | naive t after every case |"
        " WoR sequence to the last case |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for cases, repeats, rate, spread in DESIGNS:
        d = differences(rng, runs, cases, repeats, rate, spread)[0]
        at, _ = first_decision(d, ALPHA)
        share = (at > 0).mean()
        worst = max(worst, share)
        wor = without_replacement_at_the_end(d, ALPHA).mean() if cases <= 100 else math.nan
        wor_cell = "" if math.isnan(wor) else f"{wor:.3f}"
        print(
            f"| {cases} | {repeats} | {rate} | {spread} | {share:.3f} | "
            f"{naive(d, ALPHA).mean():.3f} | {wor_cell} |"
        )
    mc = 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    print(f"\nLargest share {worst:.3f}; alpha {ALPHA} + 3 MC s.e. = {ALPHA + mc:.3f}.\n")


def family(rng, runs):
    print(f"## Family-wise error, several variants against one baseline ({runs} runs)\n")
    print("| variants | cases | repeats | rate | spread | any false 'better' |")
    print("|---|---|---|---|---|---|")
    for k in (3, 6):
        for cases, repeats, rate, spread in [
            (50, 3, 0.5, 0.5),
            (200, 1, 0.8, 0.0),
            (100, 5, 0.3, 0.3),
        ]:
            d = differences(rng, runs, cases, repeats, rate, spread, sides=k + 1)
            hits = np.stack([first_decision(d[j], ALPHA / k)[0] > 0 for j in range(k)])
            print(
                f"| {k} | {cases} | {repeats} | {rate} | {spread} | {hits.any(axis=0).mean():.3f} |"
            )
    print()


#: (groups, cases per group, repeats, delta: each group's cases move by +delta or -delta)
GROUPED = [
    (5, 40, 3, 0.3),
    (5, 40, 1, 0.1),
    (10, 20, 3, 0.2),
    (20, 10, 1, 0.2),
    (20, 10, 10, 0.3),
    (50, 4, 3, 0.1),
    (100, 2, 5, 0.1),
    (200, 3, 1, 0.05),
]


def grouped_differences(rng, runs, groups, per_group, repeats, delta):
    """Per-case differences in draw order (groups shuffled, a group's cases together) and
    each case's group. Case rates are Beta(2, 2); in a group B's rate is the case's plus
    delta / 2 and A's minus it, or the reverse, with equal chance: the population mean
    difference is 0 (clipping is symmetric about 1/2)."""
    cases = groups * per_group
    p = rng.beta(2, 2, size=(runs, cases))
    sign = np.repeat(rng.choice([-1.0, 1.0], size=(runs, groups)), per_group, axis=1)
    a = rng.binomial(repeats, np.clip(p - sign * delta / 2, 0, 1)) / repeats
    b = rng.binomial(repeats, np.clip(p + sign * delta / 2, 0, 1)) / repeats
    return b - a


def grouped(rng, runs):
    print(f"## Grouped cases, no true difference ({runs} runs a design)\n")
    print(
        "| groups | cases per group | repeats | group effect +- | cases as units: ends better "
        "| groups as units (Decided): ends better |"
    )
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for groups, per_group, repeats, delta in GROUPED:
        d = grouped_differences(rng, runs, groups, per_group, repeats, delta)
        by_case = (first_decision(d, ALPHA)[0] > 0).mean()
        means = d.reshape(runs, groups, per_group).mean(axis=2)
        by_group = (first_decision(means, ALPHA)[0] > 0).mean()
        worst = max(worst, by_group)
        print(f"| {groups} | {per_group} | {repeats} | {delta} | {by_case:.3f} | {by_group:.3f} |")
    mc = 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    print(
        f"\nLargest share with groups as units {worst:.3f}; alpha + 3 MC s.e. = {ALPHA + mc:.3f}.\n"
    )


def efficiency(rng, runs):
    print(f"## Efficiency against power()'s fixed design for +10 points ({runs} runs)\n")
    print(
        "| rate A | repeats | spread | fixed design (cases, samples) | truth | decided "
        "'B better' | decided 'A better' | median samples to decision | ratio to fixed |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for rate, repeats, spread in [(0.6, 1, 0.0), (0.6, 3, 0.0), (0.7, 5, 0.0), (0.6, 3, 0.3)]:
        pilot = differences(np.random.default_rng(0), 1, 20000, repeats, rate, spread)[0, 0]
        within = float(
            np.mean(
                case_rates(np.random.default_rng(1), 20000, rate, spread)
                * (1 - case_rates(np.random.default_rng(1), 20000, rate, spread))
            )
        )
        between = max(0.0, float(pilot.var()) - 2 * within / repeats) if spread else 0.0
        fixed = evalnb.power(
            rate=rate, diff=0.1, repeats=repeats, within_var=within, between_var=between
        ).iloc[0]
        cases = int(fixed["cases"])
        for truth, available in ((0.2, 10 * cases), (0.1, 10 * cases), (0.0, 2 * cases)):
            d = differences(rng, runs, available, repeats, rate, spread, shift=truth)[0]
            at, side = first_decision(d, ALPHA)
            used = np.where(at > 0, at, available)
            median = float(np.median(used)) * 2 * repeats
            print(
                f"| {rate} | {repeats} | {spread} | {cases}, {2 * cases * repeats} | "
                f"+{truth * 100:.0f} | {(side > 0).mean():.3f} | {(side < 0).mean():.3f} | "
                f"{median:.0f} | {median / (2 * cases * repeats):.2f}x |"
            )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    validity(rng, args.runs)
    family(rng, args.runs)
    grouped(rng, args.runs)
    efficiency(rng, max(200, args.runs // 2))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
