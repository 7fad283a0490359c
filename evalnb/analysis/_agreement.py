"""Agreement across draws and flakiness: do repeated samples of a case give the same answer?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import comb

from evalnb._evidence import normalise_answer
from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis import _display as display
from evalnb.analysis._cluster import clustered_mean, group_ids
from evalnb.analysis._flaky import FLAKY, case_verdicts
from evalnb.analysis._frames import Run
from evalnb.analysis._rates import proportion_interval
from evalnb.analysis._tally import tallies
from evalnb.store import SAMPLES_SCHEMA

__all__ = ["agreement", "normalise_answer"]

NORMALISED = "answer (normalised: strip, collapse white space, casefold)"
_TOLERANCE = 1e-9
#: The result's columns after the ``by`` keys.
COLUMNS = [
    "key",
    "draws",
    "answered",
    "distinct",
    "agreement",
    "pairwise",
    "pairwise_low",
    "pairwise_high",
    "agreement_min",
    "meets_min",
    "mode_1",
    "mode_1_count",
    "mode_2",
    "mode_2_count",
    "check",
    "k",
    "n",
    "incomplete",
    "flaky",
    "at",
    "pass_at_k",
    "pass_at_k_low",
    "pass_at_k_high",
    "pass_hat_k",
    "pass_hat_k_low",
    "pass_hat_k_high",
    "level",
]
#: The estimates :func:`agreement` summarises across cases when ``by`` leaves out the case.
SUMMARISED = ("agreement", "pairwise", "pass_at_k", "pass_hat_k")
PASS_K = ("pass_at_k", "pass_hat_k")
PAIRWISE_METHOD = (
    "pairwise: share of pairs of draws with the same answer (unbiased for the sum of squared "
    "answer shares); interval: Agresti-Coull on the jackknife effective n"
)


def agreement(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] = ("variant", "case_id"),
    *,
    key: str = "canonical",
    check: str = "all",
    at: int | Sequence[int] | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Per case and variant: how often draws agree, and how often they pass.

    ``key`` is the samples column compared across draws. ``"canonical"`` (the form a
    check stored: the expected JSON keys, or the normalised answer) falls back to the
    answer text normalised when the run has no canonical values at all (written before
    the column existed), and the ``key`` column says which was used;
    ``"answer"`` always uses the normalised answer; any other name is used as is.
    Only completed samples have an answer: incomplete draws stay in ``draws`` and
    can never be the mode. ``at`` is the k of pass@k and pass^k: one number, a list
    (one row per k), or None for each row's own number of scored draws.

    ``agreement`` is the **modal share** (the top answer's count over the draws), which
    reads high with few draws (0.56 for a case answering at random among three answers
    with 5 draws); ``pairwise`` is the **pairwise agreement**, the share of pairs of draws
    giving the same answer, ``sum_i c_i (c_i - 1) / (d (d - 1))``: unbiased for the
    chance that two draws agree (1/3 there). Its interval: Agresti-Coull on the jackknife
    effective n, or Clopper-Pearson on the ``d // 2`` disjoint pairs when every pair
    agrees (or none). pass@k and pass^k carry the Wilson interval of ``k / n`` through
    ``1 - (1 - p)^at`` and ``p^at``. With ``by`` leaving out ``case_id``
    (``by="variant"``), each row is the mean across cases of those estimates with an
    interval across cases as :func:`evalnb.suite_rate` takes it (pass@k and pass^k:
    Wilson on the case groups, which holds where they pile up near 0 or 1); cases without a value
    are left out of that mean. ``data`` is a Run, or a frame with one row per sample
    holding the ``by`` columns, the key column, and optionally ``status``, ``outcome``
    and ``agreement_min``.

    Returns:
        DataFrame, one row per group (and k), columns:

        - the ``by`` keys; ``key``: what was compared;
        - ``draws``: samples; ``answered``: draws with a key value;
        - ``distinct``: distinct key values; ``agreement``: the modal share, modal count
          / draws;
        - ``pairwise``: pairwise agreement (unbiased; NaN with fewer than 2 draws);
          ``pairwise_low``, ``pairwise_high``: its interval at ``level``;
        - ``agreement_min``: the case's minimum (metadata), NaN when not set;
        - ``meets_min``: agreement >= agreement_min (NA without a minimum);
        - ``mode_1``, ``mode_1_count``, ``mode_2``, ``mode_2_count``: top answers;
        - ``check``; ``k``: passed; ``n``: scored; ``incomplete``: scored draws that did
          not complete (they fail); ``flaky``: some completed draws pass and some fail
          (a timeout or error alone does not make a case flaky);
        - ``at``: the k used; ``pass_at_k``: chance that at least one of ``at``
          draws passes, the unbiased ``1 - C(n-k, at) / C(n, at)``;
          ``pass_hat_k``: chance that all ``at`` draws pass, ``C(k, at) / C(n, at)``
          (NaN when ``at > n``); ``pass_at_k_low``, ``pass_at_k_high``,
          ``pass_hat_k_low``, ``pass_hat_k_high``: their intervals; ``level``.

        Across cases (``case_id`` not in ``by``): the ``by`` keys, ``key``, ``check``,
        ``at``, ``cases``, ``draws``, then ``agreement``, ``pairwise``, ``pass_at_k`` and
        ``pass_hat_k`` (means across cases), each with ``_low`` and ``_high``, ``level``
        and ``method``.

    >>> evalnb.agreement(run, at=[1, 5])                # doctest: +SKIP
    >>> evalnb.agreement(run, by="variant")             # doctest: +SKIP
    """
    by = _args.names("by", by)
    level = _args.level(level)
    if "case_id" not in by:
        per_case = agreement(data, [*by, "case_id"], key=key, check=check, at=at, level=level)
        return display.shown(_across_cases(per_case, by, level))
    if not isinstance(check, str):
        raise ArgumentError(f"'check' must be one check name (e.g. 'all'); got {check!r}")
    ks = None if at is None else _args.positive_ints("at", at)
    samples, key_label, passes, minimum = _read(data, key, by, check)
    out = _answers(samples, by)
    out.insert(len(by), "key", key_label)
    out = out.merge(passes, on=by, how="left", sort=False)
    out["k"] = out["k"].fillna(0).astype(np.int64)
    out["n"] = out["n"].fillna(0).astype(np.int64)
    out["incomplete"] = out["incomplete"].fillna(0).astype(np.int64)
    out["check"] = check
    # Incomplete draws fail: only completed ones show whether the model itself wavers;
    # flakiness() decides with the same classifier.
    out["flaky"] = case_verdicts(out["k"], out["n"], out["incomplete"]) == FLAKY
    out = out.merge(minimum, on="case_id", how="left", sort=False)
    meets = out["agreement"] >= out["agreement_min"] - _TOLERANCE
    out["meets_min"] = pd.array(meets, dtype="boolean")
    out.loc[out["agreement_min"].isna(), "meets_min"] = pd.NA
    if ks is not None:
        out = out.loc[out.index.repeat(len(ks))].reset_index(drop=True)
        out["at"] = np.tile(ks, len(out) // len(ks) if ks else 0)
    else:
        out["at"] = out["n"]
    out["pass_at_k"], out["pass_hat_k"] = _pass_k(out["k"], out["n"], out["at"])
    _pass_k_intervals(out, level)
    out = out.drop(columns="_variance")
    out["level"] = level
    return display.shown(out[[*by, *COLUMNS]])


def _read(
    data: Any, key: str, by: list[str], check: str
) -> tuple[pd.DataFrame, str, pd.DataFrame, pd.DataFrame]:
    if isinstance(data, Run):
        return _from_run(data, key, by, check)
    if isinstance(data, pd.DataFrame):
        return _from_frame(data, key, by, check)
    raise TypeError(
        f"'data' must be a Run (from evalnb.load) or a pandas DataFrame; got {type(data).__name__}"
    )


def _from_run(
    run: Run, key: str, by: list[str], check: str
) -> tuple[pd.DataFrame, str, pd.DataFrame, pd.DataFrame]:
    unknown = [c for c in by if c not in SAMPLES_SCHEMA.names]
    if unknown:
        raise ArgumentError(
            f"'by' must name samples columns ({', '.join(SAMPLES_SCHEMA.names)}); got {unknown!r}"
        )
    column, label = _key_column(key, _run_columns(run, key))
    frame = run.table("samples", list(dict.fromkeys(["status", column, *by])))
    samples = _keyed(frame, by, column, label)
    passes = tallies(run, by, check=check)[[*by, "k", "n", "incomplete"]]
    cases = run.cases.drop_duplicates("case_id")
    minimum = pd.DataFrame(
        {
            "case_id": pd.Categorical(
                cases["case_id"].astype(object), categories=samples["case_id"].cat.categories
            ),
            "agreement_min": cases["agreement_min"].to_numpy(dtype=float),
        }
    )
    return samples, label, passes, minimum


def _run_columns(run: Run, key: str) -> list[str]:
    """Samples columns that hold data; a run written before ``canonical`` existed has none."""
    available = list(SAMPLES_SCHEMA.names)
    if (
        key == "canonical"
        and "canonical" in available
        and run.table("samples", ["canonical"])["canonical"].notna().sum() == 0
    ):
        available.remove("canonical")
    return available


def _from_frame(
    frame: pd.DataFrame, key: str, by: list[str], check: str
) -> tuple[pd.DataFrame, str, pd.DataFrame, pd.DataFrame]:
    unknown = [c for c in by if c not in frame.columns]
    if unknown:
        raise ArgumentError(f"'by' names columns the frame does not have: {unknown!r}")
    available = list(frame.columns)
    if key == "canonical" and "canonical" in available and frame["canonical"].notna().sum() == 0:
        available.remove("canonical")
    column, label = _key_column(key, available)
    samples = _keyed(frame, by, column, label)
    if "outcome" in frame.columns:
        rows = frame[[*by, "outcome", *(["status"] if "status" in frame.columns else [])]]
        passes = tallies(rows.assign(check=check), by, check=check)[[*by, "k", "n", "incomplete"]]
    else:
        passes = frame[by].drop_duplicates().assign(k=0, n=0, incomplete=0)
    if "agreement_min" in frame.columns:
        minimum = frame.groupby("case_id", observed=True, sort=False)["agreement_min"].first()
        minimum = minimum.reset_index()
    else:
        minimum = pd.DataFrame({"case_id": frame["case_id"].unique(), "agreement_min": np.nan})
    minimum["agreement_min"] = minimum["agreement_min"].astype(float)
    return samples, label, passes, minimum


def _key_column(key: str, available: Sequence[str]) -> tuple[str, str]:
    if not isinstance(key, str):
        raise ArgumentError(f"'key' must be a column name such as 'canonical'; got {key!r}")
    if key == "canonical" and key in available:
        return key, key
    if key in ("canonical", "answer"):
        if "answer" not in available:
            raise ArgumentError(
                f"'key' {key!r} needs an 'answer' column; got columns {list(available)!r}"
            )
        return "answer", NORMALISED
    if key not in available:
        raise ArgumentError(
            f"'key' must be 'canonical', 'answer' or a samples column ({', '.join(available)}); "
            f"got {key!r}"
        )
    return key, key


def _keyed(frame: pd.DataFrame, by: list[str], column: str, label: str) -> pd.DataFrame:
    values = frame[column].astype(object)
    if label == NORMALISED:
        values = values.map(normalise_answer, na_action="ignore")
    if "status" in frame.columns:
        values = values.where(frame["status"].astype(object) == "completed")
    out = frame[by].copy()
    out["_value"] = values.where(values.notna(), None)
    return out


def _answers(samples: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    grouped = samples.groupby(by, observed=True, sort=True, dropna=False)
    out = grouped.agg(draws=("_value", "size"), answered=("_value", "count")).reset_index()
    counts = (
        samples.dropna(subset=["_value"])
        .groupby([*by, "_value"], observed=True, sort=False, dropna=False)
        .size()
        .rename("count")
        .reset_index()
    )
    counts["_value"] = counts["_value"].astype(str)
    counts = counts.sort_values(
        [*by, "count", "_value"], ascending=[*[True] * len(by), False, True]
    )
    counts["_rank"] = counts.groupby(by, observed=True, sort=False).cumcount()
    distinct = counts.groupby(by, observed=True, sort=False).size().rename("distinct")
    out = out.merge(distinct.reset_index(), on=by, how="left", sort=False)
    for rank in (1, 2):
        top = counts[counts["_rank"] == rank - 1][[*by, "_value", "count"]]
        top = top.rename(columns={"_value": f"mode_{rank}", "count": f"mode_{rank}_count"})
        out = out.merge(top, on=by, how="left", sort=False)
        out[f"mode_{rank}_count"] = out[f"mode_{rank}_count"].fillna(0).astype(np.int64)
    out["distinct"] = out["distinct"].fillna(0).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["agreement"] = np.where(out["draws"] > 0, out["mode_1_count"] / out["draws"], np.nan)
    return _pairwise(out, counts, by)


def _pairwise(out: pd.DataFrame, counts: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Pairwise agreement per group, its jackknife variance, and its interval (95%; the
    level is applied again by :func:`_pairwise_interval`)."""
    c = counts["count"].to_numpy(dtype=float)
    sums = counts.assign(pairs=c * (c - 1)).groupby(by, observed=True, sort=False)["pairs"].sum()
    out = out.merge(sums.rename("_pairs").reset_index(), on=by, how="left", sort=False)
    pairs = out["_pairs"].fillna(0.0).to_numpy()
    d = out["draws"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["pairwise"] = np.where(d >= 2, pairs / (d * (d - 1)), np.nan)
    # Leaving out one draw of an answer seen c times removes 2 (c - 1) agreeing ordered pairs.
    left = counts.assign(_c=c)
    left = left.merge(out[[*by, "_pairs"]], on=by, how="left", sort=False)
    u = left["_pairs"].to_numpy() - 2 * (c - 1)
    moments = (
        left.assign(_s1=c * u, _s2=c * u**2)
        .groupby(by, observed=True, sort=False)[["_s1", "_s2"]]
        .sum()
        .reset_index()
    )
    out = out.merge(moments, on=by, how="left", sort=False)
    unanswered = d - out["answered"].to_numpy(dtype=float)
    s1 = out["_s1"].fillna(0.0).to_numpy() + unanswered * pairs
    s2 = out["_s2"].fillna(0.0).to_numpy() + unanswered * pairs**2
    scale = (d - 1) * (d - 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = (d - 1) / d * (s2 - s1**2 / d) / scale**2
    out["_variance"] = np.where(d >= 3, np.maximum(variance, 0.0), np.nan)
    return out.drop(columns=["_pairs", "_s1", "_s2"])


def _pairwise_interval(out: pd.DataFrame, level: float) -> None:
    """``pairwise_low`` and ``pairwise_high`` in place: Agresti-Coull on the jackknife
    effective n (at most the pairs of draws); Clopper-Pearson on the ``d // 2`` disjoint
    pairs when the variance is 0 (every pair agrees, or none)."""
    theta = out["pairwise"].to_numpy(dtype=float)
    d = out["draws"].to_numpy(dtype=float)
    variance = out["_variance"].to_numpy(dtype=float)
    disjoint = np.floor(d / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.minimum(theta * (1 - theta) / variance, d * (d - 1) / 2)
    flat = ~(variance > 1e-15)
    n_eff = np.where(flat, disjoint, n_eff)
    _, low, high = proportion_interval(theta * n_eff, n_eff, level=level, method="agresti_coull")
    bound = ((1 - level) / 2) ** (1 / np.maximum(disjoint, 1))
    low = np.where(flat & (theta >= 1), bound, low)
    high = np.where(flat & (theta <= 0), 1 - bound, high)
    out["pairwise_low"] = np.where(d >= 2, np.fmin(low, theta), np.nan)
    out["pairwise_high"] = np.where(d >= 2, np.fmax(high, theta), np.nan)


def _pass_k_intervals(out: pd.DataFrame, level: float) -> None:
    """Per row, the Wilson interval of ``k / n`` carried through pass@k = 1 - (1 - p)^at
    and pass^k = p^at (both increase with p), holding the estimate; and the pairwise
    agreement's interval."""
    _pairwise_interval(out, level)
    _, low, high = proportion_interval(out["k"], out["n"], level=level, method="wilson")
    at = out["at"].to_numpy(dtype=float)
    shown = np.isfinite(out["pass_at_k"].to_numpy(dtype=float))
    for name, f in (
        ("pass_at_k", lambda p: 1 - (1 - p) ** at),
        ("pass_hat_k", lambda p: p**at),
    ):
        estimate = out[name].to_numpy(dtype=float)
        out[f"{name}_low"] = np.where(shown, np.fmin(f(low), estimate), np.nan)
        out[f"{name}_high"] = np.where(shown, np.fmax(f(high), estimate), np.nan)


def _across_cases(per_case: pd.DataFrame, by: list[str], level: float) -> pd.DataFrame:
    """The mean across cases of each per-case estimate, with an interval across cases."""
    from evalnb.analysis._suite import DEFAULT_METHOD, effective_n

    keys = [*by, "key", "check", "at"]
    ids, out = group_ids(per_case, keys)
    size = len(out)
    cases = per_case["case_id"].astype(object).to_numpy()
    out["cases"] = np.bincount(ids, minlength=size).astype(np.int64)
    out["draws"] = np.bincount(ids, weights=per_case["draws"], minlength=size).astype(np.int64)
    for name in SUMMARISED:
        values = per_case[name].to_numpy(dtype=float)
        keep = np.isfinite(values)
        spread = clustered_mean(values[keep], ids[keep], cases[keep], size)
        mean, se, groups = spread["mean"], spread["se"], spread["groups"].astype(float)
        n_eff, _ = effective_n(mean, se, groups, np.full(size, np.inf), level)
        if name in PASS_K:
            # pass@k and pass^k pile up near 0 or 1 with a long tail of a few cases, where
            # the effective n took a sample without the tail for certainty (0.708 at 20
            # cases, issue 39). A value in [0, 1] with mean p varies at most as a pass or
            # fail does, p (1 - p): Wilson on the case groups is that worst case.
            n_eff = groups
        method = "wilson" if name in PASS_K else DEFAULT_METHOD
        _, low, high = proportion_interval(mean * n_eff, n_eff, level=level, method=method)
        bound = ((1 - level) / 2) ** (1 / np.maximum(groups, 1))
        low = np.where(mean >= 1, bound, low)
        high = np.where(mean <= 0, 1 - bound, high)
        out[name] = mean
        out[f"{name}_low"] = np.fmin(low, mean)
        out[f"{name}_high"] = np.fmax(high, mean)
    out["level"] = level
    out["method"] = (
        "mean of per-case values; interval across cases: Agresti-Coull on the effective n "
        "(agreement: modal share; pairwise: pairwise agreement, unbiased); pass@k and "
        "pass^k: Wilson on the case groups (the largest variance a mean of values in [0, 1] "
        "can have)"
    )
    return out


def _pass_k(passed: Any, scored: Any, at: Any) -> tuple[np.ndarray, np.ndarray]:
    """pass@k = 1 - C(n-c, k) / C(n, k) and pass^k = C(c, k) / C(n, k), exactly."""
    pass_at, pass_hat = [], []
    for c, n, k in zip(passed, scored, at, strict=True):
        if n == 0 or k > n or k < 1:
            pass_at.append(np.nan)
            pass_hat.append(np.nan)
            continue
        total = comb(int(n), int(k), exact=True)
        pass_at.append(1 - comb(int(n - c), int(k), exact=True) / total)
        pass_hat.append(comb(int(c), int(k), exact=True) / total)
    return np.array(pass_at, dtype=float), np.array(pass_hat, dtype=float)
