"""Latency per group: median and 95th percentile as order statistics, incomplete included."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb.analysis import _args
from evalnb.analysis._frames import Run
from evalnb.analysis._tally import CASE_FIELDS, case_field
from evalnb.store import SAMPLES_SCHEMA

__all__ = ["latency"]

# "inverted_cdf" picks an observed value: the ceil(q * n)-th smallest. At q = 0.5 that is
# the lower middle observation for an even n; at q = 0.95 it is the nearest-rank p95.
PERCENTILE_METHOD: Final = "inverted_cdf"


def latency(data: Run | pd.DataFrame, by: str | Sequence[str] | None = "variant") -> pd.DataFrame:
    """Latency of whole attempts per ``by`` group, incomplete samples included.

    ``data`` is a Run or a frame with ``latency_ms`` (and optionally ``status``) and
    the ``by`` columns. Percentiles are observed values, never interpolated: the
    median is the lower middle observation for an even count, the p95 is the
    nearest rank (``ceil(0.95 n)``-th smallest).

    Returns:
        DataFrame, one row per group, columns: the ``by`` keys; ``n``: samples with a
        latency; ``incomplete``: how many of those did not complete; ``missing``:
        samples without a latency (left out); ``median_ms``, ``p95_ms``, ``max_ms``.
    """
    by = _args.names("by", by)
    if isinstance(data, Run):
        frame = latency_samples(data, by)
    elif isinstance(data, pd.DataFrame):
        missing = [c for c in [*by, "latency_ms"] if c not in data.columns]
        if missing:
            raise ArgumentError(
                f"'data' must have the columns {missing!r}; it has {list(data.columns)!r}"
            )
        frame = data
    else:
        raise TypeError(
            f"'data' must be a Run (from evalnb.load) or a pandas DataFrame; got "
            f"{type(data).__name__}"
        )
    values = pd.to_numeric(frame["latency_ms"], errors="coerce").astype(float)
    status = frame["status"].astype(object) if "status" in frame.columns else None
    work = pd.DataFrame({c: frame[c] for c in by})
    work["_ms"] = values.to_numpy()
    work["_incomplete"] = (
        ((status != "completed") & status.notna()).to_numpy() if status is not None else False
    )
    work["_incomplete"] &= work["_ms"].notna()
    rows = []
    groups = work.groupby(by, observed=True, sort=True, dropna=False) if by else [((), work)]
    for keys, group in groups:
        keys = keys if isinstance(keys, tuple) else (keys,)
        observed = group["_ms"].dropna().to_numpy()
        if len(observed):
            median, p95 = np.percentile(observed, [50, 95], method=PERCENTILE_METHOD)
            top = observed.max()
        else:
            median = p95 = top = np.nan
        rows.append(
            {
                **dict(zip(by, keys, strict=True)),
                "n": len(observed),
                "incomplete": int(group["_incomplete"].sum()),
                "missing": int(group["_ms"].isna().sum()),
                "median_ms": median,
                "p95_ms": p95,
                "max_ms": top,
            }
        )
    columns = [*by, "n", "incomplete", "missing", "median_ms", "p95_ms", "max_ms"]
    out = pd.DataFrame(rows, columns=columns)
    for c in by:
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            out[c] = pd.Categorical(out[c], categories=frame[c].cat.categories)
    return out


def latency_samples(run: Run, by: list[str]) -> pd.DataFrame:
    """Samples with ``latency_ms``, ``status`` and the ``by`` keys (case fields joined in)."""
    sample_level = [c for c in by if c in SAMPLES_SCHEMA.names]
    case_level = [c for c in by if c not in sample_level]
    unknown = [c for c in case_level if c not in CASE_FIELDS and not c.startswith("metadata.")]
    if unknown or "tags" in case_level:
        raise ArgumentError(
            f"'by' must name samples columns or case fields (group, split, review, "
            f"metadata.<key>); got {unknown or ['tags']!r}"
        )
    frame = run.table("samples", list(dict.fromkeys(["latency_ms", "status", *sample_level])))
    for field in case_level:
        frame[field] = case_field(run, frame, field)
    return frame
