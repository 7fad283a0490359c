"""Racing many variants (``evalnb.Best``) and settling repeats per case
(``evalnb.UntilSettled``): validity and cost, simulated.

Races: each case has a true pass rate (the same for every case, or drawn from a beta
distribution: heterogeneous cases); one variant passes ``gap`` more often than the rest
(or none: all equal); each repeat is a Bernoulli draw and a variant's per-case rate is the
mean of its repeats. The race applies ``Best``'s arithmetic after every case: every pair's
two one-sided betting tests (``elimination_log_capital``, the function ``Best``'s running
tests compute, each bettor at ``delta / (K - 1)``), a variant eliminated once another
variant still in the race has the capital against it at no difference, never the leader;
for a few races of each design with at most 8 variants, ``Best.look`` itself is run on the
same draws and must eliminate the same variants at the same looks. Reported per design:
the share of races that end naming a wrong best (or eliminate the best), with all equal
the share that names a single best, and the median samples against the fixed grid
``power()`` sizes for the same difference at 80% power (every variant x every case; its
level ``1 - delta / (K - 1)``, the family's Bonferroni split, as a fixed design of K
variants needs to name a best), with the share of simulated grids that name the best (each
paired z-test of the top variant against the others rejecting) and the same races cut at
the grid's cases (a race that knows the grid as its horizon).

Adaptive repeats: suites whose cases are stable (always pass or always fail) or flaky
(a true rate drawn uniformly from ``FLAKY``); ``UntilSettled(max=10)``'s verdict per case
against the truth, beside 10 fixed repeats' (flaky when both outcomes appear), and the
frontier every rule lies on: a case whose draws so far agree gives a rule nothing else to
go by, so a rule stops such a case after some ``n`` identical draws (``UntilSettled`` with
``alpha = 2 ** (1 - n)`` is the rule with that ``n``), and a case of rate ``p`` is then
called stable with probability ``p ** n + (1 - p) ** n``.

Reproduce with::

    nice -n 10 .venv/bin/python benchmarks/race.py             # 34 min under load
    nice -n 10 .venv/bin/python benchmarks/race.py --runs 200  # quicker, rougher
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

import evalnb
from evalnb import Best
from evalnb._stopping import CaseOutcomes
from evalnb.analysis._race import elimination_log_capital
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


def draw(rng, runs, k, gap, spread, repeats, cases):
    """Per race, variant and case: the passes among the case's repeats."""
    p = case_rates(rng, (runs, 1, cases), RATE, spread)
    shift = np.zeros((1, k, 1))
    shift[0, 0, 0] = gap  # variant 0 is the best
    return rng.binomial(repeats, np.clip(p + shift, 0, 1))


def simulate(passes, repeats):
    """Per race: the variants left at the end (a bool per variant), the cases each
    variant ran, and the cases looked at. Eliminations are taken as events in time: a
    variant goes at the first look where a variant still in the race rules it out (the
    leader is never ruled out: a bettor stakes on its side only while the mean so far is
    there, so the variant ruled out is never the one with the higher mean)."""
    runs, k, cases = passes.shape
    r = passes / repeats
    i, j = np.triu_indices(k, 1)
    up, down = elimination_log_capital((r[:, i] - r[:, j] + 1) / 2, 0.5)
    limit = math.log((k - 1) / DELTA)
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


def same_as_best(passes, repeats, alive, ran):
    """Run ``Best.look`` itself, after every case, on the first races' draws: it must
    leave the same variants, each having run the same cases."""
    names = [f"v{i}" for i in range(passes.shape[1])]
    yes, no = {"c": True}, {"c": False}
    for race_i in range(passes.shape[0]):
        cases = [
            CaseOutcomes(
                f"c{c}",
                {
                    v: (yes,) * int(passes[race_i, n, c]) + (no,) * (repeats - passes[race_i, n, c])
                    for n, v in enumerate(names)
                },
            )
            for c in range(passes.shape[2])
        ]
        rule, went, last = Best(delta=DELTA), {}, passes.shape[2]
        for c in range(len(cases)):
            decision = rule.look(cases[: c + 1])
            went.update({e["variant"]: e["look"] for e in decision.look["eliminated"]})
            if decision.stop:
                last = c + 1
                break
        left = [v not in went for v in names]
        cases_run = [went.get(v, last) for v in names]
        if left != list(alive[race_i]) or cases_run != list(ran[race_i]):
            raise AssertionError(
                f"Best.look and the simulation differ on race {race_i}: {left}, {cases_run} "
                f"against {list(alive[race_i])}, {list(ran[race_i])}"
            )


def fixed_names_best(passes, repeats, k, cases):
    """Whether a fixed grid of the first ``cases`` cases names variant 0 best: its paired
    z-test against each other variant rejects at two-sided ``delta / (K - 1)``."""
    r = passes[:, :, :cases] / repeats
    d = r[:, :1] - r[:, 1:]
    sd = d.std(axis=-1, ddof=1)
    z = d.mean(axis=-1) / np.where(sd > 0, sd, np.inf) * math.sqrt(cases)
    return (z > stats.norm.ppf(1 - DELTA / (2 * (k - 1)))).all(axis=1)


def races(rng, runs):
    print(f"## Racing K variants to the best ({runs} races a design, delta {DELTA})\n")
    print(
        "| variants | best by | spread | repeats | fixed grid (cases, samples) | grid names the "
        "best | wrong best | best eliminated | race names the best | median samples | ratio | "
        "ratio to the grid for +5 | cut at the grid's cases: names the best, median ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    worst, ratios, checked = 0.0, [], 0
    for k, gap, spread, repeats in DESIGNS:
        cases, samples = fixed_grid(k, gap, spread, repeats)
        smallest = fixed_grid(k, 0.05, spread, repeats)[1]
        alive, ran, looked, grid = _chunked(rng, runs, k, gap, spread, repeats, 2 * cases)
        single = alive.sum(axis=1) == 1
        wrong = (single & ~alive[:, 0]).mean()
        lost = (~alive[:, 0]).mean()
        used = ran.sum(axis=1) * repeats
        median = float(np.median(used))
        worst = max(worst, lost)
        ratios.append(median / samples)
        cut = float(np.median(np.minimum(ran, cases).sum(axis=1) * repeats)) / samples
        named_cut = (single & alive[:, 0] & (looked <= cases)).mean()
        checked += k <= 8 and repeats == 5
        print(
            f"| {k} | +{gap * 100:.0f} | {spread} | {repeats} | {cases}, {samples} | "
            f"{grid.mean():.3f} | {wrong:.3f} | {lost:.3f} | {(single & alive[:, 0]).mean():.3f} "
            f"| {median:.0f} | {median / samples:.2f}x | {median / smallest:.2f}x | "
            f"{named_cut:.3f}, {cut:.2f}x |",
            flush=True,
        )
    mc = 3 * math.sqrt(DELTA * (1 - DELTA) / runs)
    print(
        f"\nLargest share eliminating the best {worst:.3f} (delta {DELTA}, + 3 MC s.e. "
        f"{DELTA + mc:.3f}); samples against the fixed grid {min(ratios):.2f}x to "
        f"{max(ratios):.2f}x (median {np.median(ratios):.2f}x). Best.look itself matched the "
        f"simulation on {CHECKED} races of each of {checked} designs.\n"
    )


def nulls(rng, runs):
    print(f"## All variants equal ({runs} races a design, up to 500 cases)\n")
    print("| variants | spread | repeats | names a single best | any elimination |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for k, _, spread, repeats in NULLS:
        alive, _, _, _ = _chunked(rng, runs, k, 0.0, spread, repeats, 500)
        single = (alive.sum(axis=1) == 1).mean()
        worst = max(worst, single)
        print(f"| {k} | {spread} | {repeats} | {single:.3f} | {(~alive).any(axis=1).mean():.3f} |")
    print(f"\nLargest share naming a single best {worst:.3f} (delta {DELTA}).\n")


#: Races of each design (with at most 8 variants and 5 repeats) that Best.look replays.
CHECKED = 2


def _chunked(rng, runs, k, gap, spread, repeats, cases):
    size = max(1, int(2e7 // (k * k * cases)))
    parts = []
    for start in range(0, runs, size):
        passes = draw(rng, min(size, runs - start), k, gap, spread, repeats, cases)
        alive, ran, looked = simulate(passes, repeats)
        if start == 0 and k <= 8 and repeats == 5 and gap > 0:
            same_as_best(passes[:CHECKED], repeats, alive[:CHECKED], ran[:CHECKED])
        grid = fixed_names_best(passes, repeats, k, cases // 2)
        parts.append((alive, ran, looked, grid))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


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
    frontier(rng, runs, cases)


def frontier(rng, runs, cases):
    """Every rule calls a case whose draws agree stable after some n of them: the cost
    and misclassification of each n (UntilSettled with alpha = 2 ** (1 - n)), against 10
    fixed repeats, and its per-case error at rate 1/2 (2 ** (1 - n))."""
    print(
        "The frontier: a case whose draws so far all agree is called stable after n of "
        f"them ({runs} suites of {cases} cases a row):\n"
    )
    print(
        "| n | rule | error at rate 1/2 | samples ratio at 5%, 10%, 20% flaky "
        "| misclassified minus fixed 10 at 5%, 10%, 20% flaky |"
    )
    print("|---|---|---|---|---|")
    suites = []
    for share in (0.05, 0.10, 0.20):
        flaky = rng.random((runs, cases)) < share
        stable_rate = (rng.random((runs, cases)) < 0.7).astype(float)
        p = np.where(flaky, rng.uniform(*FLAKY, size=(runs, cases)), stable_rate)
        draws = rng.random((runs, cases, 10)) < p[..., None]
        fixed = (_called_flaky(draws, np.full((runs, cases), 10)) != flaky).mean()
        suites.append((flaky, draws, fixed))
    for needed in range(3, 11):
        rule = UntilSettled(max=10, alpha=2.0 ** (1 - needed))
        ratios, misses = [], []
        for flaky, draws, fixed in suites:
            n = rule.draws_needed(draws)
            ratios.append(f"{n.mean() / 10:.2f}x")
            misses.append(f"{100 * ((_called_flaky(draws, n) != flaky).mean() - fixed):+.2f}")
        print(
            f"| {needed} | `{rule!r}` | {2.0 ** (1 - needed):.4f} | {', '.join(ratios)} | "
            f"{', '.join(misses)} points |"
        )
    print()


def agreeing_cases():
    """Why a race does not stop a case's repeats where the variants agree: the expected
    per-case difference it then measures, exactly, for two kinds of case (half each).
    Rule: one repeat on each side; if they agree, stop (difference 0), else draw to 5."""
    print("Repeats stopped where both sides agree, inside a race (exact expectations):\n")
    print("| case kind | rate a | rate b | true difference a - b | measured difference |")
    print("|---|---|---|---|---|")
    kinds = [(0.95, 0.80), (0.50, 0.60)]
    true, measured = [], []
    for i, (pa, pb) in enumerate(kinds):
        e = 0.0
        for xa, xb in ((1, 0), (0, 1)):  # the first draws disagree: 4 more on each side
            chance = (pa if xa else 1 - pa) * (pb if xb else 1 - pb)
            e += chance * ((xa - xb) + 4 * (pa - pb)) / 5
        true.append(pa - pb)
        measured.append(e)
        print(f"| {i + 1} (half the cases) | {pa} | {pb} | {pa - pb:+.4f} | {e:+.4f} |")
    print(
        f"\nOver the suite: true {np.mean(true):+.4f}, measured {np.mean(measured):+.4f}: the "
        "rule measures a different mean, here of the other sign.\n"
    )


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
    if args.only in (None, "settled"):
        agreeing_cases()
    for part in (settled, nulls, races):
        if args.only in (None, part.__name__):
            part(rng, args.runs)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
