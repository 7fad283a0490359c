"""The hierarchical beta-binomial interval for a suite rate from few cases.

Model: each case (or group) ``g`` has its own pass rate ``p_g ~ Beta`` with mean ``mu``
and intra-case correlation ``rho`` (``alpha = mu (1 - rho) / rho``, ``beta = (1 - mu)
(1 - rho) / rho``); its ``n_g`` draws pass ``k_g ~ Binomial(n_g, p_g)`` times. The suite
rate is ``mu``. Priors: ``mu ~ Uniform(0, 1)`` and ``rho ~ Uniform(0, 1)``, independent.
The interval is the equal-tailed credible interval of the marginal posterior of ``mu``,
computed on a grid (Bowyer, Aitchison & Ivanova 2025 recommend such Bayesian intervals
below a few hundred data points; with a handful of cases the central limit theorem the t
interval leans on does not hold).

The grid: ``mu = sin(theta)^2`` with ``theta`` evenly spaced (the posterior of ``mu`` has
about the same width in ``theta`` wherever it sits, so the points follow it towards 0 and
1), and ``logit(rho)`` evenly spaced on [-14, 10] (a trapezoid rule in that variable; the
prior mass left outside is below 1e-4). The beta-binomial likelihood is evaluated in the
form ``prod_{j<k} (mu (1 - rho) + j rho) ...`` (Griffiths 1973), which stays exact as
``rho`` goes to 0, where the Beta function form cancels catastrophically.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

__all__ = ["PRIORS", "beta_binomial_interval", "grid"]

_RHO_POINTS = 64
_LOGIT_RHO = (-14.0, 10.0)
# About 2 * 16 grid points per posterior standard deviation of theta, whatever the data size.
_THETA_PER_ROOT_N = 25
_THETA_MIN, _THETA_MAX = 1000, 4000
# Cells of (groups x grid) held at once.
_CHUNK = 2**22


#: Priors on the intra-case correlation ``rho``: uniform on (0, 1), or uniform in
#: ``logit(rho)`` over the grid's range (most mass on small correlations).
PRIORS = ("uniform", "logit-uniform")


def grid(
    samples: float, prior: str = "uniform"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(mu, mu_edges, mu_weight, rho, rho_weight)`` for groups of up to ``samples`` draws.

    ``mu_weight`` and ``rho_weight`` are prior mass per grid cell (uniform on ``mu``;
    ``prior`` on ``rho``, one of :data:`PRIORS`).
    """
    points = int(np.clip(_THETA_PER_ROOT_N * math.sqrt(max(samples, 1.0)), _THETA_MIN, _THETA_MAX))
    step = (math.pi / 2) / points
    theta = (np.arange(points) + 0.5) * step
    mu = np.sin(theta) ** 2
    edges = np.sin(np.arange(points + 1) * step) ** 2
    mu_weight = np.diff(edges)
    logit = np.linspace(*_LOGIT_RHO, _RHO_POINTS)
    rho = 1 / (1 + np.exp(-logit))
    rho_weight = (rho * (1 - rho) if prior == "uniform" else np.ones_like(rho)) * (
        logit[1] - logit[0]
    )
    rho_weight[[0, -1]] /= 2
    return mu, edges, mu_weight, rho, rho_weight


def _log_pmf(n: int, ks: list[int], mu: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Beta-binomial log pmf of each ``k`` in ``ks`` of ``n``, on the (mu x rho) grid."""
    pass_step = np.outer(mu, 1 - rho)  # mu (1 - rho)
    fail_step = np.outer(1 - mu, 1 - rho)
    total_step = np.broadcast_to(1 - rho, pass_step.shape)
    wanted = sorted(set(ks) | {n - k for k in ks})
    passes: dict[int, np.ndarray] = {}
    fails: dict[int, np.ndarray] = {}
    acc_pass = np.zeros(pass_step.shape)
    acc_fail = np.zeros(pass_step.shape)
    acc_total = np.zeros(pass_step.shape)
    for j in range(n + 1):
        if j in wanted:
            passes[j] = acc_pass.copy()
            fails[j] = acc_fail.copy()
        if j == n:
            break
        if j < max(wanted):
            acc_pass += np.log(pass_step + j * rho)
            acc_fail += np.log(fail_step + j * rho)
        acc_total += np.log(total_step + j * rho)
    out = np.empty((len(ks), mu.size * rho.size))
    for i, k in enumerate(ks):
        choose = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
        out[i] = (choose + passes[k] + fails[n - k] - acc_total).ravel()
    return out


def beta_binomial_interval(
    k: np.ndarray,
    n: np.ndarray,
    ids: np.ndarray,
    size: int,
    level: float,
    prior: str = "uniform",
) -> tuple[np.ndarray, np.ndarray]:
    """Per id, the ``level`` equal-tailed posterior interval of ``mu``.

    The lower bound is 0 when nothing passed and the upper bound 1 when everything did.

    ``k`` and ``n`` are passes and draws per cluster (case or group); ``ids`` says which
    result each cluster belongs to. Ids with no cluster get NaN. ``prior`` is the prior
    on ``rho`` (:data:`PRIORS`).
    """
    k = np.asarray(k, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    low = np.full(size, np.nan)
    high = np.full(size, np.nan)
    present = np.unique(ids)
    if len(present) == 0:
        return low, high
    totals = np.bincount(ids, weights=n, minlength=size)
    mu, edges, mu_weight, rho, rho_weight = grid(float(totals.max()), prior)
    pairs, pair_index = np.unique(np.column_stack([n, k]), axis=0, return_inverse=True)
    pair_index = pair_index.ravel()
    table = np.empty((len(pairs), mu.size * rho.size))
    for draws in np.unique(pairs[:, 0]):
        rows = np.flatnonzero(pairs[:, 0] == draws)
        table[rows] = _log_pmf(int(draws), [int(x) for x in pairs[rows, 1]], mu, rho)
    tail = (1 - level) / 2
    chunk = max(1, _CHUNK // table.shape[1])
    for start in range(0, len(present), chunk):
        these = present[start : start + chunk]
        position = np.full(size, -1)
        position[these] = np.arange(len(these))
        keep = position[ids] >= 0
        counts = np.zeros((len(these), len(pairs)))
        np.add.at(counts, (position[ids[keep]], pair_index[keep]), 1.0)
        log_post = counts @ table
        log_post -= log_post.max(axis=1, keepdims=True)
        marginal = np.exp(log_post).reshape(len(these), mu.size, rho.size) @ rho_weight
        mass = marginal * mu_weight
        cdf = np.concatenate([np.zeros((len(these), 1)), np.cumsum(mass, axis=1)], axis=1)
        cdf /= cdf[:, -1:]
        for row, g in enumerate(these):
            low[g] = np.interp(tail, cdf[row], edges)
            high[g] = np.interp(1 - tail, cdf[row], edges)
    # As for the Jeffreys interval: no passes at all, the lower bound is 0; every draw
    # passed, the upper bound is 1 (else the interval would sit beside the estimate).
    passes = np.bincount(ids, weights=k, minlength=size)
    low = np.where((passes == 0) & np.isfinite(low), 0.0, low)
    high = np.where((passes == totals) & np.isfinite(high), 1.0, high)
    return low, high
