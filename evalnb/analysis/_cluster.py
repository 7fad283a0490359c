"""The mean of per-case values and its standard error across cases, clustered by group.

Cases that share a ``group`` are not independent draws, so the standard error sums
residuals within each group before squaring (the CR1 cluster-robust estimator):
``se^2 = G / (G - 1) * sum_g (sum_{c in g} (x_c - mean))^2 / C^2`` with ``G`` groups
and ``C`` cases, and ``G - 1`` degrees of freedom. When every case is its own group
this is the ordinary ``sd / sqrt(C)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def group_ids(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """A dense id per distinct ``keys`` row, and the key values of each id (sorted)."""
    if not keys:
        return np.zeros(len(frame), dtype=np.int64), pd.DataFrame(
            index=range(1 if len(frame) else 0)
        )
    ids = frame.groupby(keys, observed=True, sort=True, dropna=False).ngroup().to_numpy()
    _, first = np.unique(ids, return_index=True)
    return ids, frame[keys].iloc[first].reset_index(drop=True)


def clustered_mean(
    values: np.ndarray, ids: np.ndarray, clusters: np.ndarray, size: int
) -> dict[str, np.ndarray]:
    """Per id: ``cases``, ``groups``, ``mean``, ``se`` (NaN with one group), ``df``."""
    cases = np.bincount(ids, minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(ids, weights=values, minlength=size) / cases
    residual = values - mean[ids]
    cluster_codes = pd.factorize(pd.Series(clusters, dtype=object))[0].astype(np.int64)
    pair = ids * (cluster_codes.max(initial=0) + 1) + cluster_codes
    pairs, pair_index = np.unique(pair, return_inverse=True)
    pair_id = pairs // (cluster_codes.max(initial=0) + 1)
    cluster_sum = np.bincount(pair_index, weights=residual, minlength=len(pairs))
    squares = np.bincount(pair_id, weights=cluster_sum**2, minlength=size)
    groups = np.bincount(pair_id, minlength=size).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.where(groups > 1, groups / (groups - 1) * squares / cases**2, np.nan)
    return {
        "cases": cases.astype(np.int64),
        "groups": groups.astype(np.int64),
        "mean": mean,
        "se": np.sqrt(variance),
        "df": groups - 1,
    }
