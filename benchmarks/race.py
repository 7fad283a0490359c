"""Racing many variants (``evalnb.Best``) and settling repeats per case
(``evalnb.UntilSettled``): validity and cost, simulated.

Races: each case has a true pass rate (the same for every case, or drawn from a beta
distribution: heterogeneous cases); one variant passes ``gap`` more often than the rest
(or none: all equal); each repeat is a Bernoulli draw and a variant's per-case rate is the
mean of its repeats. The race applies ``Best``'s arithmetic after every case: every pair's
hedged betting capital (``betting_log_capital``, the function ``Best``'s running sequences
compute, at ``2 * delta / (K - 1)`` a pair), a variant eliminated once another variant
still in the race has the capital against it at no difference, never the leader. Reported
per design: the share of races that end naming a wrong best (or eliminate the best), with
all equal the share that names a single best, and the median samples against the fixed
grid ``power()`` sizes for the same difference at 80% power (every variant x every case;
its level ``1 - delta / (K - 1)``, the family's Bonferroni split, as a fixed design of K
variants needs to name a best).

Adaptive repeats: suites whose cases are stable (always pass or always fail) or flaky
(a true rate drawn uniformly from ``FLAKY``); ``UntilSettled(max=10)``'s verdict per case
against the truth, beside 10 fixed repeats' (flaky when both outcomes appear).

Reproduce with::

    nice -n 10 .venv/bin/python benchmarks/race.py             # about 10 minutes
    nice -n 10 .venv/bin/python benchmarks/race.py --runs 200  # quicker, rougher
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import evalnb
from evalnb.analysis._sequence import betting_log_capital
from evalnb.analysis._settled import UntilSettled

DELTA = 0.05
RATE = 0.6
#: (variants, gap, spread of the case rates, repeats)
DESIGNS = [
    (k, gap, spread, r)
    for r in (5, 1)
    for gap in (0.10, 0.05)
    for k in (4, 8, 16)
    for spread in (0.0, 0.5)
]  # cheapest first: a long benchmark's table fills in order of cost
NULLS = [(k, 0.0, spread, r) for k in (4, 8, 16) for spread in (0.0, 0.5) for r in (1, 5)]
#: The flaky cases' true rates.
FLAKY = (0.1, 0.9)


def case_rates(rng, shape, rate, spread):
    if spread == 0:
        return np.full(shape, rate)
    concentration = 1 / spread**2
    return rng.beta(rate * concentration, (1 - rate) * concentration, size=shape)


def fixed_grid(k, gap, spread, repeats):
    """The cases and samples of power()'s fixed design: every variant x every case."""
    p = case_rates(np.random.default_rng(1), 200_000, RATE, spread)
    within = float(np.mean(p * (1 - p)))
    shifted = np.clip(p + gap, 0, 1)
    between = float(np.var(shifted - p))
    fixed = evalnb.power(
        rate=RATE,
        diff=gap,
        repeats=repeats,
        within_var=within,
        between_var=between,
        level=1 - DELTA / (k - 1),
    ).iloc[0]
    cases = int(fixed["cases"])
    return cases, k * cases * repeats


def simulate(rng, runs, k, gap, spread, repeats, cases):
    """Per race: the variants left at the end (a bool per variant), the cases each
    variant ran, and the cases looked at. Eliminations are taken as events in time: a
    variant goes at the first look where a variant still in the race rules it out (the
    leader is never ruled out: a pair's sequence excludes 0 only on the side of its mean,
    so the variant ruled out is never the one with the higher mean)."""
    p = case_rates(rng, (runs, 1, cases), RATE, spread)
    shift = np.zeros((1, k, 1))
    shift[0, 0, 0] = gap  # variant 0 is the best
    r = rng.binomial(repeats, np.clip(p + shift, 0, 1)) / repeats  # (runs, k, cases)
    i, j = np.triu_indices(k, 1)
    alpha = 2 * DELTA / (k - 1)
    up, down = betting_log_capital((r[:, i] - r[:, j] + 1) / 2, 0.5, alpha=alpha)
    limit = math.log(2 / alpha)
    never = cases + 1
    first = np.full((runs, k, k), never)  # first[:, a, b]: the look at which a rules out b
    first[:, i, j] = np.where((up >= limit).any(-1), (up >= limit).argmax(-1) + 1, never)
    first[:, j, i] = np.where((down >= limit).any(-1), (down >= limit).argmax(-1) + 1, never)
    alive = np.ones((runs, k), dtype=bool)
    ran = np.full((runs, k), cases)
    looked = np.full(runs, cases)
    for _ in range(k - 1):
        by_alive = np.where(alive[:, :, None], first, never).min(axis=1)
        at = np.where(alive, by_alive, never)
        when = at.min(axis=1)
        going = alive & (at == when[:, None]) & (when[:, None] < never)
        going &= (going.sum(axis=1) < alive.sum(axis=1))[:, None]
        ran = np.where(going, when[:, None], ran)
        alive &= ~going
        stopped = (alive.sum(axis=1) == 1) & (looked == cases) & going.any(axis=1)
        looked = np.where(stopped, when, looked)
    ran = np.where(alive, looked[:, None], ran)
    return alive, ran, looked


def races(rng, runs):
    print(f"## Racing K variants to the best ({runs} races a design, delta {DELTA})\n")
    print(
        "| variants | best by | spread | repeats | fixed grid (cases, samples) | wrong best "
        "| best eliminated | undecided at 2x the grid's cases | median samples | ratio | "
        "ratio to the grid for +5 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst, ratios = 0.0, []
    for k, gap, spread, repeats in DESIGNS:
        cases, samples = fixed_grid(k, gap, spread, repeats)
        smallest = fixed_grid(k, 0.05, spread, repeats)[1]
        alive, ran, _ = _chunked(rng, runs, k, gap, spread, repeats, 2 * cases)
        single = alive.sum(axis=1) == 1
        wrong = (single & ~alive[:, 0]).mean()
        lost = (~alive[:, 0]).mean()
        used = ran.sum(axis=1) * repeats
        median = float(np.median(used))
        worst = max(worst, lost)
        ratios.append(median / samples)
        print(
            f"| {k} | +{gap * 100:.0f} | {spread} | {repeats} | {cases}, {samples} | "
            f"{wrong:.3f} | {lost:.3f} | {(~single).mean():.3f} | {median:.0f} | "
            f"{median / samples:.2f}x | {median / smallest:.2f}x |",
            flush=True,
        )
    mc = 3 * math.sqrt(DELTA * (1 - DELTA) / runs)
    print(
        f"\nLargest share eliminating the best {worst:.3f} (delta {DELTA}, + 3 MC s.e. "
        f"{DELTA + mc:.3f}); samples against the fixed grid {min(ratios):.2f}x to "
        f"{max(ratios):.2f}x (median {np.median(ratios):.2f}x).\n"
    )


def nulls(rng, runs):
    print(f"## All variants equal ({runs} races a design, up to 500 cases)\n")
    print("| variants | spread | repeats | names a single best | any elimination |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for k, _, spread, repeats in NULLS:
        alive, _, _ = _chunked(rng, runs, k, 0.0, spread, repeats, 500)
        single = (alive.sum(axis=1) == 1).mean()
        worst = max(worst, single)
        print(f"| {k} | {spread} | {repeats} | {single:.3f} | {(~alive).any(axis=1).mean():.3f} |")
    print(f"\nLargest share naming a single best {worst:.3f} (delta {DELTA}).\n")


def _chunked(rng, runs, k, gap, spread, repeats, cases):
    size = max(1, int(2e7 // (k * k * cases)))
    parts = [
        simulate(rng, min(size, runs - s), k, gap, spread, repeats, cases)
        for s in range(0, runs, size)
    ]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def settled(rng, runs, cases=200):
    rule = UntilSettled(max=10, alpha=0.05)
    print(
        f"## Adaptive repeats: {rule!r} against 10 fixed repeats ({runs} suites of "
        f"{cases} cases a row; flaky rates uniform on {FLAKY})\n"
    )
    print(
        "| flaky share | fixed 10: misclassified | settled: misclassified | difference "
        "| settled: samples | ratio to fixed | suite rate bias: fixed, settled "
        "| flaky cases above 1/2: rate bias, fixed, settled |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for share in (0.05, 0.10, 0.20):
        flaky = rng.random((runs, cases)) < share
        stable_rate = (rng.random((runs, cases)) < 0.7).astype(float)
        p = np.where(flaky, rng.uniform(*FLAKY, size=(runs, cases)), stable_rate)
        draws = rng.random((runs, cases, 10)) < p[..., None]
        fixed = _called_flaky(draws, np.full((runs, cases), 10))
        n = rule.draws_needed(draws)
        adaptive = _called_flaky(draws, n)
        miss_fixed = (fixed != flaky).mean()
        miss_adaptive = (adaptive != flaky).mean()
        taken = np.arange(10) < n[..., None]
        rate_settled = (draws & taken).sum(axis=-1) / n
        truth = p.mean(axis=1)
        bias_fixed = float((draws.mean(axis=-1).mean(axis=1) - truth).mean())
        bias_settled = float((rate_settled.mean(axis=1) - truth).mean())
        high = flaky & (p > 0.5)
        high_fixed = float((draws.mean(axis=-1) - p)[high].mean())
        high_settled = float((rate_settled - p)[high].mean())
        print(
            f"| {share:.2f} | {miss_fixed:.4f} | {miss_adaptive:.4f} | "
            f"{100 * (miss_adaptive - miss_fixed):+.2f} points | {n.mean():.2f} a case | "
            f"{n.mean() / 10:.2f}x | {100 * bias_fixed:+.2f}, {100 * bias_settled:+.2f} points "
            f"| {100 * high_fixed:+.2f}, {100 * high_settled:+.2f} points |"
        )
    print()
    print(
        "Per-case error under continuous looks: a case passing at ``true rate`` called "
        "stable (the guarantee covers rates from tol to 1 - tol):\n"
    )
    print("| true rate | called stable | alpha |")
    print("|---|---|---|")
    for rate in (0.5, 0.6, 0.8):
        draws = rng.random((runs * 50, 1, 10)) < rate
        n = rule.draws_needed(draws)
        stable = ~_called_flaky(draws, n)
        print(f"| {rate:.3f} | {stable.mean():.4f} | {rule.alpha} |")
    print()


def _called_flaky(draws, n):
    """Flaky when both outcomes appear among a case's first ``n`` draws."""
    taken = np.arange(draws.shape[-1]) < n[..., None]
    passes = (draws & taken).sum(axis=-1)
    return (passes > 0) & (passes < n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--only", choices=["settled", "nulls", "races"], default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    for part in (settled, nulls, races):
        if args.only in (None, part.__name__):
            part(rng, args.runs)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
