"""Graded scores: the mean score of graded checks, with the case as the unit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis._cluster import clustered_mean, group_ids
from evalnb.analysis._frames import KEY, Run
from evalnb.analysis._tally import CASE_FIELDS, case_field
from evalnb.store import SAMPLES_SCHEMA

__all__ = ["scores"]

#: Standard errors below this are treated as zero (no spread to build an interval on).
_ZERO = 1e-12


def scores(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    *,
    check: str | Sequence[str] | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Mean score of graded checks per ``by`` group and check.

    Only check results with a ``score`` count (graded checks: a judge with a ``scale``, a
    Python check with a ``threshold``); an incomplete sample scored 0, so it stays in. The
    case is the unit, as for :func:`evalnb.suite_rate`:

    - ``by`` without ``case_id`` (the suite): the estimate is the mean of per-case mean
      scores; its standard error is taken across cases, clustered by the case ``group``
      when cases share one; the interval is Student's t with ``groups - 1`` degrees of
      freedom, clipped to [0, 1]. ``method`` is ``"t across cases"``.
    - ``by`` with ``case_id``: the mean of the case's samples, with a t interval across its
      repeats (``"t across repeats"``).

    With one case (or one repeat), or no spread at all, there is no standard error to
    build on: ``low`` and ``high`` are NaN and ``method`` is ``"none"``, never a zero-width
    interval.

    ``data`` is a Run or a long frame with ``check``, ``score``, ``case_id`` and the ``by``
    columns (``group`` too, to cluster). ``by`` takes check-table keys (``variant``,
    ``run_id``), sample fields (``model``...) and case fields (``split``, ``group``,
    ``metadata.<key>``).

    Returns:
        DataFrame, one row per group and check, columns:

        - the ``by`` keys, then ``check``;
        - ``cases``: cases with a score; ``groups``: distinct case groups among them;
        - ``samples``: scores in the row; ``repeats``: ``samples / cases``;
        - ``estimate``: the mean score (of per-case means across cases);
        - ``se``: its standard error; ``low``, ``high``: the interval at ``level``;
        - ``level``, ``method``.

    >>> evalnb.scores(run, by="variant", check="judge")    # doctest: +SKIP
    """
    by = _args.names("by", by)
    level = _args.level(level)
    if "check" in by:
        raise ArgumentError("'by' must not include 'check': every result has a 'check' column")
    rows = _score_rows(data, by)
    rows = rows[rows["score"].notna()]
    graded = list(dict.fromkeys(str(c) for c in rows["check"]))
    if check is not None:
        wanted = _args.names("check", check)
        unknown = [c for c in wanted if c not in graded]
        if unknown:
            options = ", ".join(repr(c) for c in graded) or "none (no graded check results)"
            raise ArgumentError(f"'check' must name graded checks: {options}; got {unknown!r}")
        rows = rows[rows["check"].astype(str).isin(wanted)]
    rows = rows.assign(check=rows["check"].astype(str), score=rows["score"].astype(float))
    if "case_id" in by:
        return _per_case(rows, by, level)
    return _across_cases(rows, by, level)


def _score_rows(data: Run | pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        need = ["check", "score", "case_id", *by]
        missing = [c for c in dict.fromkeys(need) if c not in data.columns]
        if missing:
            raise ArgumentError(
                f"'data' must hold check scores (columns 'check', 'score', 'case_id' and the "
                f"'by' keys); missing {missing!r} in {list(data.columns)!r}"
            )
        frame = data.copy()
        if "group" not in frame.columns:
            frame["group"] = frame["case_id"]
        return frame
    if not isinstance(data, Run):
        raise TypeError(
            f"'data' must be a Run (from evalnb.load) or a pandas DataFrame; got "
            f"{type(data).__name__}"
        )
    frame = data.table("checks", ["score"])
    sample_columns = [c for c in by if c not in KEY and c in SAMPLES_SCHEMA.names]
    if sample_columns:
        samples = data.table("samples", sample_columns)
        frame = frame.merge(samples, on=KEY, how="left")
    for field in ("group", *[c for c in by if c not in frame.columns]):
        if field not in CASE_FIELDS and not field.startswith("metadata."):
            raise ArgumentError(f"'by' must name check keys, sample or case fields; got {field!r}")
        frame[field] = case_field(data, frame, field)
    return frame


def _t_interval(
    mean: np.ndarray, se: np.ndarray, df: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    usable = (df >= 1) & (se > _ZERO)
    with np.errstate(invalid="ignore"):
        t = stats.t.ppf(0.5 + level / 2, np.maximum(df, 1))
    low = np.where(usable, np.clip(mean - t * se, 0, 1), np.nan)
    high = np.where(usable, np.clip(mean + t * se, 0, 1), np.nan)
    return low, high, usable


def _per_case(rows: pd.DataFrame, by: list[str], level: float) -> pd.DataFrame:
    keys = [*by, "check"]
    grouped = rows.groupby(keys, observed=True, sort=True)["score"]
    out = grouped.agg(samples="size", estimate="mean", sd="std").reset_index()
    out.insert(len(keys), "cases", 1)
    out.insert(len(keys) + 1, "groups", 1)
    n = out["samples"].to_numpy(dtype=float)
    se = (out["sd"] / np.sqrt(n)).fillna(0.0).to_numpy()
    low, high, usable = _t_interval(out["estimate"].to_numpy(), se, n - 1, level)
    out = out.drop(columns="sd")
    out.insert(out.columns.get_loc("samples") + 1, "repeats", out["samples"].astype(float))
    out["se"] = np.where(n > 1, se, np.nan)
    out["low"], out["high"] = low, high
    out["level"] = level
    out["method"] = np.where(usable, "t across repeats", "none")
    return out


def _across_cases(rows: pd.DataFrame, by: list[str], level: float) -> pd.DataFrame:
    keys = [*by, "check"]
    per_case = (
        rows.groupby([*keys, "case_id", "group"], observed=True, sort=True)["score"]
        .agg(["mean", "size"])
        .reset_index()
    )
    ids, out = group_ids(per_case, keys)
    size = len(out)
    spread = clustered_mean(
        per_case["mean"].to_numpy(dtype=float),
        ids,
        per_case["group"].astype(object).to_numpy(),
        size,
    )
    samples = np.bincount(ids, weights=per_case["size"].to_numpy(dtype=float), minlength=size)
    se = np.nan_to_num(spread["se"], nan=0.0)
    low, high, usable = _t_interval(spread["mean"], se, spread["df"], level)
    out["cases"] = spread["cases"]
    out["groups"] = spread["groups"]
    out["samples"] = samples.astype(np.int64)
    out["repeats"] = samples / spread["cases"]
    out["estimate"] = spread["mean"]
    out["se"] = spread["se"]
    out["low"], out["high"] = low, high
    out["level"] = level
    out["method"] = np.where(usable, "t across cases", "none")
    return out
