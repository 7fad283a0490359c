"""Flakiness verdicts: is a case stable, or does it pass on some draws and fail on others?

Per case and variant, the case's own pass rate over its repeats, with an exact
(Clopper-Pearson) interval (statsmodels ``proportion_confint(method="beta")``):

- ``flaky``: it passed on some draws and failed on others. The exact interval then
  excludes both 0 and 1 at any level: the case is certainly neither always-pass nor
  always-fail, whatever the number of repeats;
- ``stable-pass``: every scored draw passed; the interval's lower end says how stable
  that is with these repeats (5 of 5 passes: at least 48% at 95%; 50 of 50: 93%);
- ``stable-fail``: every scored draw failed (likewise the upper end);
- ``unscored``: no scored draw (left out, never a pass);
- ``incomplete``: every scored draw was incomplete (a timeout, an error): the target
  never answered, which says nothing about the model.

Incomplete samples fail their checks, as everywhere, and stay in ``k / n`` and its
interval; but a timeout is not the model wavering. The verdict reads the completed draws
alone, as :func:`evalnb.agreement`'s ``flaky`` does: a case that passed every completed
draw is ``stable-pass`` however many draws timed out, and its ``detail`` names them
(``passed all 29 completed repeats; 1 incomplete (timeout, error...), not a model
failure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from evalnb.analysis import _args
from evalnb.analysis._frames import Run
from evalnb.analysis._tally import require_cases, tallies

__all__ = ["FLAKY", "INCOMPLETE", "STABLE_FAIL", "STABLE_PASS", "case_verdicts", "flakiness"]

STABLE_PASS = "stable-pass"
STABLE_FAIL = "stable-fail"
FLAKY = "flaky"
UNSCORED = "unscored"
INCOMPLETE = "incomplete"
METHOD = "exact Clopper-Pearson interval on the case's own pass rate (statsmodels, beta)"


def flakiness(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    check: str | Sequence[str] | None = "all",
    level: float = 0.95,
) -> pd.DataFrame:
    """Per case and variant: ``stable-pass``, ``flaky``, ``stable-fail``, ``unscored`` or
    ``incomplete`` (no scored draw completed), judged on the completed draws.

    Returns:
        DataFrame, one row per ``by`` group, variant, case and check, columns: the ``by``
        keys, ``variant``, ``case_id``, ``check``; ``k`` (passing draws), ``n`` (scored
        draws), ``incomplete`` (of them, not completed: failed, but not by the model),
        ``unscored``; ``completed`` (``n - incomplete``: the draws the verdict rests on);
        ``rate`` (k / n); ``low``, ``high`` (exact interval on k / n at ``level``);
        ``level``; ``verdict``; ``detail`` (one line, the repeats and the incomplete ones
        named); ``method``.

    >>> evalnb.flakiness(run).query("verdict == 'flaky'")  # doctest: +SKIP
    """
    level = _args.level(level)
    by = _args.names("by", by)
    require_cases(data, "flakiness is judged per case")
    keys = [*by, "variant", "case_id"]
    counts = tallies(data, keys, check=check)
    k = counts["k"].to_numpy(dtype=np.int64)
    n = counts["n"].to_numpy(dtype=np.int64)
    scored = n > 0
    low = np.full(len(counts), np.nan)
    high = np.full(len(counts), np.nan)
    if scored.any():
        lo, hi = proportion_confint(k[scored], n[scored], alpha=1 - level, method="beta")
        low[scored], high[scored] = lo, hi
    incomplete = counts["incomplete"].to_numpy(dtype=np.int64)
    verdict = case_verdicts(k, n, incomplete)
    out = counts[[*keys, "check", "k", "n", "incomplete", "unscored"]].copy()
    out["completed"] = n - incomplete
    with np.errstate(invalid="ignore", divide="ignore"):
        out["rate"] = np.where(scored, k / np.maximum(n, 1), np.nan)
    out["low"], out["high"], out["level"] = low, high, level
    out["verdict"] = verdict
    out["detail"] = [
        _detail(v, int(kk), int(nn), int(ii), lo, hi, level)
        for v, kk, nn, ii, lo, hi in zip(verdict, k, n, incomplete, low, high, strict=True)
    ]
    out["method"] = METHOD
    from evalnb.analysis._settled import settled_intervals

    return settled_intervals(data, out.reset_index(drop=True))


def case_verdicts(k: Any, n: Any, incomplete: Any = 0) -> np.ndarray:
    """The verdict of each case from its passing (``k``), scored (``n``) and incomplete
    draws: the one rule every consumer (the gate, reports, JUnit, and
    :func:`evalnb.agreement`'s ``flaky``) uses. Only completed draws show whether the
    model wavers; a case none of whose scored draws completed is ``incomplete``."""
    k, n = np.asarray(k), np.asarray(n)
    completed = n - np.asarray(incomplete)
    verdicts: np.ndarray = np.select(
        [n <= 0, completed <= 0, k >= completed, k == 0],
        [UNSCORED, INCOMPLETE, STABLE_PASS, STABLE_FAIL],
        default=FLAKY,
    )
    return verdicts


def _detail(
    verdict: str, k: int, n: int, incomplete: int, low: float, high: float, level: float
) -> str:
    at = f"{level * 100:g}%"
    done = n - incomplete
    if verdict == UNSCORED:
        return "no scored repeat"
    if verdict == INCOMPLETE:
        return f"none of {n} repeats completed (timeout, error...): nothing on the model"
    repeats, aside, of = f"{n} repeats", "", f"{at} exact"
    if incomplete:
        repeats = f"{done} completed repeat{'s' if done != 1 else ''}"
        aside = f"; {incomplete} incomplete (timeout, error...), not a model failure"
        of = f"{at} exact, of all {n}"
    if verdict == STABLE_PASS:
        return f"passed all {repeats}{aside}: rate at least {low:.0%} ({of})"
    if verdict == STABLE_FAIL:
        return f"failed all {repeats}{aside}: rate at most {high:.0%} ({of})"
    return f"passed {k} of {repeats}{aside}: rate {low:.0%} to {high:.0%} ({of})"
