"""Exact tests for few cases: the sign-flip test over cases, the exact conditional test of
K 2x2 tables, and the exact McNemar test's interval and power.

These are the tests whose smallest possible p-value is known before any data is seen,
which is what lets :func:`evalnb.compare` say when a design cannot reach significance.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

__all__ = [
    "conditional_interval",
    "conditional_mcnemar_interval",
    "mcnemar_power",
    "rejects",
    "sign_flip_interval",
    "sign_flip_min_p",
    "sign_flip_p",
    "stratified_exact_p",
]

#: Sign-flip p-values are enumerated exactly up to this many non-zero values (2**16 signs).
MAX_EXACT = 16
# Relative tolerance for "at least as extreme", as R's fisher.test and mantelhaen.test use.
_RELATIVE = 1 + 1e-7
_ZERO = 1e-12
#: A p-value within this relative distance of alpha is alpha: two sums of the same tail
#: differ in the last bits (0.05000000000000001 and 0.049999999999999975, issue 39), and
#: 1 - 0.95 is 0.050000000000000044, so "p < alpha" alone lets float noise decide.
_AT_ALPHA = 1e-9


def rejects(p: np.ndarray | float, alpha: np.ndarray | float) -> np.ndarray:
    """Whether a test with p-value ``p`` rejects at ``alpha``: ``p < alpha`` with p exactly
    alpha (up to rounding) not rejecting. Every verdict and every inverted interval of
    :func:`evalnb.compare` decides with it, so they cannot split at p = alpha."""
    p, alpha = np.asarray(p, dtype=float), np.asarray(alpha, dtype=float)
    return np.asarray(p < alpha * (1 - _AT_ALPHA))


def sign_flip_p(values: Sequence[np.ndarray]) -> np.ndarray:
    """Two-sided exact sign-flip p-value of the mean, one per array of values.

    Under "no difference" each case's (or group's) difference is as likely to have either
    sign, so the p-value is the share of the ``2**m`` sign assignments whose absolute sum
    is at least the observed one (``m`` non-zero values; zeros cannot change sign). This
    is ``scipy.stats.permutation_test(..., permutation_type="samples")`` with every
    assignment enumerated; with values in {-1, 0, 1} it is the exact McNemar test.
    Arrays with more than :data:`MAX_EXACT` non-zero values get NaN.
    """
    out = np.full(len(values), np.nan)
    by_size: dict[int, list[tuple[int, np.ndarray]]] = {}
    for i, v in enumerate(values):
        v = np.asarray(v, dtype=float)
        v = v[np.abs(v) > _ZERO]
        if len(v) == 0:
            out[i] = 1.0
        elif len(v) <= MAX_EXACT:
            by_size.setdefault(len(v), []).append((i, v))
    for size, items in by_size.items():
        signs = 1 - 2 * ((np.arange(2**size)[:, None] >> np.arange(size)) & 1)
        for start in range(0, len(items), max(1, 2**20 // 2**size)):
            chunk = items[start : start + max(1, 2**20 // 2**size)]
            stacked = np.stack([v for _, v in chunk])
            sums = np.abs(stacked @ signs.T)
            observed = np.abs(stacked.sum(axis=1))[:, None]
            p = (sums >= observed - 1e-9 * np.maximum(observed, 1)).mean(axis=1)
            out[[i for i, _ in chunk]] = p
    return out


def sign_flip_min_p(nonzero: np.ndarray | int) -> np.ndarray:
    """The smallest p-value a two-sided sign-flip test of ``m`` values can give: 2 / 2**m."""
    return np.minimum(1.0, 2.0 ** (1 - np.asarray(nonzero, dtype=float)))


def stratified_exact_p(
    k_a: np.ndarray, n_a: np.ndarray, k_b: np.ndarray, n_b: np.ndarray
) -> tuple[float, float]:
    """Exact conditional test that A and B pass equally often in every case (stratum).

    Given each case's total passes, B's passes are hypergeometric under the null; the
    null distribution of B's total is their convolution (the exact test of a common odds
    ratio of 1 in K 2x2 tables, as R's ``mantelhaen.test(exact = TRUE)``). Two-sided: the
    sum of the probabilities no larger than the observed one. With one case it is
    Fisher's exact test; with one sample per case and side it is the exact McNemar test.
    Returns ``(p, smallest p any outcome with these totals could give)``.
    """
    distribution, low = _null_total(k_a, n_a, k_b, n_b)
    observed = int(np.sum(k_b)) - low
    if len(distribution) == 1:
        return 1.0, 1.0
    cut = distribution[observed] * _RELATIVE
    p = float(min(1.0, distribution[distribution <= cut].sum()))
    # The most extreme outcomes are the least likely ones: the smallest p any outcome gives.
    order = np.sort(distribution)
    smallest = float(min(1.0, order[order <= order[0] * _RELATIVE].sum()))
    return p, smallest


def _null_total(
    k_a: np.ndarray, n_a: np.ndarray, k_b: np.ndarray, n_b: np.ndarray
) -> tuple[np.ndarray, int]:
    """The null distribution of B's total passes given each case's total, and its smallest
    value: the convolution of the per-case hypergeometric distributions."""
    distribution = np.ones(1)
    low = 0
    for ka, na, kb, nb in zip(k_a, n_a, k_b, n_b, strict=True):
        total, size = int(ka + kb), int(na + nb)
        first = max(0, total - int(na))
        last = min(total, int(nb))
        if first == last:
            low += first
            continue
        distribution = np.convolve(distribution, _hypergeom(size, total, int(nb)))
        low += first
    return distribution, low


@functools.lru_cache(maxsize=4096)
def _hypergeom(size: int, total: int, drawn: int) -> np.ndarray:
    """P(B passes x) for x from its smallest to its largest possible value (scipy)."""
    first, last = max(0, total - (size - drawn)), min(total, drawn)
    pmf = stats.hypergeom.pmf(np.arange(first, last + 1), size, total, drawn)
    pmf.flags.writeable = False
    return np.asarray(pmf)


def conditional_mcnemar_interval(
    b_only: int, a_only: int, cases: int, level: float
) -> tuple[float, float]:
    """Interval for the paired difference (B - A) that agrees with the exact McNemar test.

    Conditional on the ``d = b_only + a_only`` discordant cases, as the test is: the
    Clopper-Pearson interval for the share of them that favour B, ``theta``, maps to the
    difference ``(2 theta - 1) d / cases``. It excludes 0 exactly when the test rejects.
    With no discordant case the difference is 0 and the interval is +-(the Clopper-Pearson
    upper bound on the discordant share, 0 of ``cases``).
    """
    discordant = b_only + a_only
    if cases == 0:
        return math.nan, math.nan
    if discordant == 0:
        _, upper = proportion_confint(0, cases, alpha=1 - level, method="beta")
        return -float(upper), float(upper)
    low, high = proportion_confint(b_only, discordant, alpha=1 - level, method="beta")
    if b_only == 0:
        low = 0.0
    if b_only == discordant:
        high = 1.0
    scale = discordant / cases
    return float((2 * low - 1) * scale), float((2 * high - 1) * scale)


def mcnemar_power(cases: int, b_only: float, a_only: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test with ``cases`` pairs.

    ``b_only`` and ``a_only`` are the chances that a case passes for B only and for A only.
    The number ``d`` of discordant cases is binomial; given it, the cases favouring B are
    binomial with ``b_only / (b_only + a_only)``. The test (statsmodels
    ``mcnemar(exact=True)``, the binomial test at 1/2) rejects when ``x <= c_d`` or
    ``x >= d - c_d``, ``c_d`` the largest ``x`` with ``P(X <= x) < alpha / 2``.
    """
    share = b_only + a_only
    if share <= 0 or cases < 1:
        return 0.0
    favour = b_only / share
    d = np.arange(1, cases + 1)
    critical = stats.binom.ppf(alpha / 2, d, 0.5) - 1
    # ppf's result can sit a rounding error off: step down while the tail is not below alpha/2
    critical = np.where(stats.binom.cdf(critical, d, 0.5) < alpha / 2, critical, critical - 1)
    reject = stats.binom.cdf(critical, d, favour) + stats.binom.sf(d - critical - 1, d, favour)
    reject = np.where(critical >= 0, reject, 0.0)
    return float(min(1.0, np.sum(stats.binom.pmf(d, cases, share) * reject)))


def _walk(
    p_of: Callable[[np.ndarray], np.ndarray], start: float, end: float, alpha: float
) -> float:
    """From ``start``, where the test accepts, towards ``end``: the last value the test
    accepts (``p >= alpha``) before the first it rejects, on a grid of 200 steps that
    holds 0, then by bisection; ``end`` when it never rejects."""
    steps = np.linspace(start, end, 201)
    if min(start, end) < 0 < max(start, end):
        steps = np.append(steps, 0.0)
        steps = steps[np.argsort(np.abs(steps - start), kind="stable")]
    rejected = np.flatnonzero(rejects(p_of(steps), alpha))
    if len(rejected) == 0:
        return float(end)
    if rejected[0] == 0:
        return float(start)
    inside, outside = float(steps[rejected[0] - 1]), float(steps[rejected[0]])
    for _ in range(40):
        middle = (inside + outside) / 2
        if not rejects(p_of(np.array([middle]))[0], alpha):
            inside = middle
        else:
            outside = middle
    return inside


def _at_zero(
    p_of: Callable[[np.ndarray], np.ndarray], p_zero: float
) -> Callable[[np.ndarray], np.ndarray]:
    """``p_of`` with the test's own p at "no difference": an interval built by inverting a
    test holds 0 exactly when the verdict's p does not reject, even where two ways of
    summing the same tail differ in the last bit (0.05000000000000001 against
    0.049999999999999975 at p = alpha, issue 39)."""

    def shared(points: np.ndarray) -> np.ndarray:
        out = p_of(points)
        return np.where(points == 0, p_zero, out)

    return shared


def sign_flip_interval(sums: np.ndarray, sizes: np.ndarray, level: float) -> tuple[float, float]:
    """The interval the sign-flip test inverts: every shift ``delta`` of the mean per-case
    difference that the test of the shifted values (each unit's sum less ``delta`` times
    its cases) does not reject at ``1 - level``, as a hull that holds 0 exactly when the
    test of no difference does not reject (Lehmann & Romano, *Testing Statistical
    Hypotheses*, 3.5). ``sums`` and ``sizes``: per unit (case or group), the summed
    per-case differences and the number of cases. NaN with more than
    :data:`MAX_EXACT` units."""
    sums, sizes = np.asarray(sums, dtype=float), np.asarray(sizes, dtype=float)
    m = len(sums)
    if m == 0 or m > MAX_EXACT:
        return math.nan, math.nan
    alpha = 1 - level
    signs = 1 - 2 * ((np.arange(2**m)[:, None] >> np.arange(m)) & 1)
    flipped_sums, flipped_sizes = signs @ sums, signs @ sizes
    total, count = float(sums.sum()), float(sizes.sum())
    chunk = max(1, 2**22 // 2**m)

    def p_of(delta: np.ndarray) -> np.ndarray:
        out = np.empty(len(delta))
        for start in range(0, len(delta), chunk):
            d = delta[start : start + chunk]
            flipped = np.abs(flipped_sums[:, None] - d[None, :] * flipped_sizes[:, None])
            observed = np.abs(total - d * count)
            out[start : start + chunk] = np.mean(
                flipped >= observed - 1e-9 * np.maximum(observed, 1), axis=0
            )
        return out

    shared = _at_zero(p_of, float(sign_flip_p([sums])[0]))
    estimate = total / count
    low, high = _walk(shared, estimate, -1.0, alpha), _walk(shared, estimate, 1.0, alpha)
    if not rejects(shared(np.zeros(1))[0], alpha):
        low, high = min(low, 0.0), max(high, 0.0)
    return low, high


def conditional_interval(
    k_a: np.ndarray, n_a: np.ndarray, k_b: np.ndarray, n_b: np.ndarray, level: float
) -> tuple[float, float]:
    """The interval the exact conditional test inverts, on the scale of the mean per-case
    difference (B - A).

    Given each case's total passes, B's passes follow Fisher's noncentral hypergeometric
    distribution with a common odds ratio ``psi``; its total is the null convolution tilted
    by ``psi^x``. The set of ``psi`` the two-sided test does not reject (the hull holding 1
    exactly when the test of no difference does not reject) maps to the mean per-case
    difference its conditional expectation gives, which is 0 at ``psi = 1`` and increases
    with ``psi`` (the conditional interval of R's ``mantelhaen.test(exact = TRUE)``, on
    the difference's scale). NaN when no case could move (every outcome is fixed)."""
    distribution, low_total = _null_total(k_a, n_a, k_b, n_b)
    if len(distribution) == 1:
        return math.nan, math.nan
    alpha = 1 - level
    with np.errstate(divide="ignore"):
        log_null = np.log(distribution)
    support = np.arange(len(distribution))
    observed = int(np.sum(k_b)) - low_total
    chunk = max(1, 2**22 // len(distribution))

    def p_of(log_psi: np.ndarray) -> np.ndarray:
        out = np.empty(len(log_psi))
        for start in range(0, len(log_psi), chunk):
            lp = log_null[None, :] + log_psi[start : start + chunk, None] * support[None, :]
            prob = np.exp(lp - lp.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            cut = prob[:, observed : observed + 1] * _RELATIVE
            out[start : start + chunk] = np.minimum(1.0, np.where(prob <= cut, prob, 0).sum(1))
        return out

    shared = _at_zero(p_of, stratified_exact_p(k_a, n_a, k_b, n_b)[0])
    edge = 40.0
    coarse = np.linspace(-edge, edge, 161)
    start = float(coarse[np.argmax(shared(coarse))])
    low, high = _walk(shared, start, -edge, alpha), _walk(shared, start, edge, alpha)
    if not rejects(shared(np.zeros(1))[0], alpha):
        low, high = min(low, 0.0), max(high, 0.0)
    diff = [_conditional_difference(k_a, n_a, k_b, n_b, x, edge) for x in (low, high)]
    return diff[0], diff[1]


def _conditional_difference(
    k_a: np.ndarray, n_a: np.ndarray, k_b: np.ndarray, n_b: np.ndarray, log_psi: float, edge: float
) -> float:
    """The mean per-case difference B - A when B's passes in each case are their expected
    value under a common odds ratio ``exp(log_psi)`` (at the grid's edge: the extreme)."""
    total = 0.0
    for ka, na, kb, nb in zip(k_a, n_a, k_b, n_b, strict=True):
        passes, size = int(ka + kb), int(na + nb)
        first, last = max(0, passes - int(na)), min(passes, int(nb))
        if first == last or abs(log_psi) >= edge:
            expected = float(first if log_psi <= -edge else last if log_psi >= edge else first)
        else:
            x = np.arange(first, last + 1)
            weight = np.log(_hypergeom(size, passes, int(nb))) + log_psi * x
            weight = np.exp(weight - weight.max())
            expected = float(np.sum(x * weight) / np.sum(weight))
        total += expected / nb - (passes - expected) / na
    return total / len(k_a)
