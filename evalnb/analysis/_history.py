"""Runs over time: the suite rate of every run and variant, and where it moved.

A weekly run of the same cases is a time series of suite rates. Each rate is
:func:`evalnb.suite_rate` of its own run (the case is the unit); each run is compared
with the run before it by :func:`evalnb.compare_runs` (paired per case), so a move is
marked only when the paired test finds one, never from two intervals that overlap.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb._prices import Prices
from evalnb.analysis import _args
from evalnb.analysis._cost import costs
from evalnb.analysis._frames import Run, load
from evalnb.analysis._runs import WORSE, compare_runs
from evalnb.analysis._suite import suite_rate
from evalnb.store import Manifest, is_run_dir

__all__ = ["BETTER", "UNCHANGED", "history", "run_dirs"]

BETTER = "better"
#: No move the paired test can show (it may still be there, undetected).
UNCHANGED = "no change shown"


def run_dirs(folder: str | os.PathLike[str]) -> list[Path]:
    """The run directories directly under ``folder`` (those with a ``manifest.json``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ArgumentError(f"{folder}: not a directory of runs")
    found = sorted(p for p in folder.iterdir() if is_run_dir(p))
    if not found:
        raise ArgumentError(f"{folder}: holds no run directory (a folder with a manifest.json)")
    return found


def history(
    runs: str | os.PathLike[str] | Iterable[str | os.PathLike[str] | Run],
    *,
    check: str = "all",
    level: float = 0.95,
    margin: float = 0.0,
    prices: Prices | str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """One row per run and variant, in time order (the runs' start times).

    ``runs`` is a folder whose sub-folders are runs (``runs/``), or run directories or
    :class:`Run` objects. Each row holds the run's suite rate for ``check`` with its
    interval (:func:`evalnb.suite_rate`) and, from the second run on, the paired
    comparison with the run before it (:func:`evalnb.compare_runs`, ``mode="fixed"``:
    on these cases): ``change`` is "worse" when the earlier run is better beyond
    ``margin``, "better" when the later one is, "no change shown" otherwise.

    Returns:
        DataFrame, one row per run and variant:

        - ``run_id``, ``path``, ``started_at`` (UTC), ``status``, ``variant``, ``check``;
        - ``model``: the models the server reported for the variant's samples; ``server``:
          what the server said of itself (its ``Server`` header), as the manifest records;
        - ``cases``, ``repeats``, ``samples``, ``k``, ``estimate``, ``low``, ``high``,
          ``level``, ``method`` (of the interval, from ``suite_rate``);
        - ``previous``: the run compared with; ``diff``, ``diff_low``, ``diff_high``: this
          run's rate minus the previous one's, paired per case, with its interval;
          ``change``; ``compared``: the cases both runs share;
        - ``cost``: dollars (with ``prices``; NaN without); ``note``: anything to know
          (few cases, unmatched or changed cases, unpriced samples).

    >>> evalnb.history("runs/")  # doctest: +SKIP
    """
    level = _args.level(level)
    margin = _args.fraction("margin", margin)
    loaded = [_one(value) for value in _listed(runs)]
    loaded.sort(key=lambda pair: (_manifest(pair[1]).started_at or "", pair[0]))
    rows: list[dict[str, Any]] = []
    before: tuple[str, Run] | None = None
    for path, run in loaded:
        rows += _rows(path, run, before, check, level, margin, prices)
        before = (path, run)
    return pd.DataFrame(rows, columns=_COLUMNS)


_COLUMNS = [
    "run_id",
    "path",
    "started_at",
    "status",
    "variant",
    "check",
    "model",
    "server",
    "cases",
    "repeats",
    "samples",
    "k",
    "estimate",
    "low",
    "high",
    "level",
    "method",
    "previous",
    "diff",
    "diff_low",
    "diff_high",
    "change",
    "compared",
    "cost",
    "note",
]


def _listed(runs: Any) -> list[Any]:
    if isinstance(runs, str | os.PathLike):
        path = Path(runs)
        return [path] if is_run_dir(path) else list(run_dirs(path))
    if isinstance(runs, Run):
        return [runs]
    listed = list(runs)
    if not listed:
        raise ArgumentError("'runs' must name at least one run; got none")
    return listed


def _one(value: Any) -> tuple[str, Run]:
    if isinstance(value, Run):
        if len(value.manifests) != 1:
            raise ArgumentError(f"'runs' must hold single runs; got one of {len(value.manifests)}")
        return next(iter(value.manifests)), value
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"'runs' must hold run directories or Runs; got {type(value).__name__}")
    try:
        return str(value), load(value)
    except (EvalnbError, OSError) as exc:
        raise ArgumentError(f"the run {str(value)!r}: {exc}") from None


def _manifest(run: Run) -> Manifest:
    return run.info


def _server(manifest: Manifest) -> str:
    target = manifest.target or {}
    server = target.get("server") or {}
    return str(server.get("server_header") or server.get("error") or target.get("type") or "")


def _rows(
    path: str,
    run: Run,
    before: tuple[str, Run] | None,
    check: str,
    level: float,
    margin: float,
    prices: Prices | str | os.PathLike[str] | None,
) -> list[dict[str, Any]]:
    manifest = _manifest(run)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = suite_rate(run, "variant", check=check, level=level).set_index("variant")
    warned = sorted({str(w.message).removeprefix("suite_rate: ") for w in caught})
    samples = run.table("samples", ["model"])
    models = samples.groupby("variant", observed=True)["model"].agg(
        lambda m: ", ".join(sorted({str(v) for v in m.dropna()}))
    )
    paired = pd.DataFrame()
    if before is not None:
        worse = compare_runs(before[1], run, check=check, level=level, margin=margin)
        better = compare_runs(run, before[1], check=check, level=level, margin=margin)
        reverse = better.set_index("variant")["verdict"].rename("verdict_reverse")
        paired = worse.set_index("variant").join(reverse)
    spent = costs(run, prices=prices).set_index("variant") if prices is not None else None
    rows = []
    for variant in (str(v) for v in run.variants):
        rate = suite.loc[variant] if variant in suite.index else None
        notes = [*warned]
        row: dict[str, Any] = {
            "run_id": manifest.run_id,
            "path": path,
            "started_at": pd.Timestamp(manifest.started_at),
            "status": manifest.status,
            "variant": variant,
            "check": check,
            "model": models.get(variant, ""),
            "server": _server(manifest),
            "level": level,
        }
        for column in ("cases", "repeats", "samples", "k", "estimate", "low", "high", "method"):
            row[column] = rate[column] if rate is not None else np.nan
        if rate is not None and rate["note"]:
            notes.append(str(rate["note"]))
        if before is not None and variant in paired.index:
            pair = paired.loc[variant]
            row.update(
                previous=next(iter(before[1].manifests)),
                diff=pair["diff"],
                diff_low=pair["low"],
                diff_high=pair["high"],
                compared=pair["cases"],
                change=WORSE
                if pair["verdict"] == WORSE
                else BETTER
                if pair["verdict_reverse"] == WORSE
                else UNCHANGED,
            )
            notes += [str(pair[c]) for c in ("unmatched", "note") if pair[c]]
        if spent is not None and variant in spent.index:
            row["cost"] = spent.loc[variant, "cost"]
            if spent.loc[variant, "note"]:
                notes.append(str(spent.loc[variant, "note"]))
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows
