"""What a run cost: stored token counts priced by a table the user supplies.

evalnb bundles no prices (they change, and differ by provider). A price table is a TOML
file, US dollars per million tokens, one table per model name as the server reports it::

    [models."gpt-4o-mini"]
    input = 0.15
    output = 0.60
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb._prices import load_prices, price_of
from evalnb.analysis import _args
from evalnb.analysis._frames import Run

__all__ = ["costs", "load_prices"]

_TOKENS = ["prompt_tokens", "completion_tokens"]


def costs(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = "variant",
    *,
    prices: Mapping[str, tuple[float, float]] | str | os.PathLike[str],
) -> pd.DataFrame:
    """Tokens and cost per ``by`` group (``None``: the whole run; add ``case_id`` and
    ``repeat`` for one row per sample), from the token counts stored per sample and the
    ``prices`` (a price table file, or a mapping of model to (input, output) dollars per
    million tokens).

    A sample is priced by its ``model`` (as the server reported it). A sample without
    token counts, or of a model the table lacks, is ``unpriced``: it adds nothing to
    ``cost``, which is then a lower bound, and ``note`` says so. A sample served from a
    development cache (``cached``) cost nothing: it is priced at zero and counted in
    ``cached``.

    Returns:
        DataFrame, one row per group: the ``by`` keys, ``samples``, ``prompt_tokens``,
        ``completion_tokens``, ``priced``, ``unpriced``, ``cached``, ``cost`` (dollars) and
        ``note``.
    """
    if not isinstance(prices, Mapping):
        prices = load_prices(prices)
    by = _args.names("by", by)
    if isinstance(data, Run):
        frame = data.table("samples", ["model", *_TOKENS, "cached", *by])
    else:
        frame = data
    missing = [c for c in ["model", *_TOKENS, *by] if c not in frame.columns]
    if missing:
        raise ArgumentError(
            f"'data' must have the columns {missing!r}; it has {list(frame.columns)!r}"
        )
    model = frame["model"].astype(object)
    rates = model.map(lambda m: price_of(prices, m) or (np.nan, np.nan))
    rate_in = rates.map(lambda r: r[0]).astype(float)
    rate_out = rates.map(lambda r: r[1]).astype(float)
    tokens_in = frame["prompt_tokens"].astype(float)
    tokens_out = frame["completion_tokens"].astype(float)
    cost = (tokens_in * rate_in + tokens_out * rate_out) / 1e6
    cached = (
        frame["cached"].astype("boolean").fillna(False).astype(bool)
        if "cached" in frame.columns
        else pd.Series(False, index=frame.index)
    )
    cost = cost.mask(cached, 0.0)
    work = pd.DataFrame(
        {
            **{key: frame[key] for key in by},
            "samples": 1,
            "prompt_tokens": tokens_in.fillna(0).astype(np.int64),
            "completion_tokens": tokens_out.fillna(0).astype(np.int64),
            "priced": cost.notna().astype(np.int64),
            "cached": cached.astype(np.int64),
            "cost": cost.fillna(0.0),
        }
    )
    if by:
        out = work.groupby(by, observed=True, sort=True).sum().reset_index()
    else:
        out = work.sum().to_frame().T.astype(work.dtypes.to_dict())
    out["unpriced"] = out["samples"] - out["priced"]
    unknown = sorted({str(m) for m in model[~cached].dropna() if price_of(prices, m) is None})
    out["note"] = np.where(
        out["unpriced"] > 0,
        "cost is a lower bound: unpriced samples (no token counts, or a model the table "
        f"lacks{': ' + ', '.join(unknown) if unknown else ''})",
        "",
    )
    tokens = ["prompt_tokens", "completion_tokens"]
    return out[[*by, "samples", *tokens, "priced", "unpriced", "cached", "cost", "note"]]
