"""Flakiness verdicts: is a case stable, or does it pass on some draws and fail on others?

Per case and variant, the case's own pass rate over its repeats, with an exact
(Clopper-Pearson) interval (statsmodels ``proportion_confint(method="beta")``):

- ``flaky``: it passed on some draws and failed on others. The exact interval then
  excludes both 0 and 1 at any level: the case is certainly neither always-pass nor
  always-fail, whatever the number of repeats;
- ``stable-pass``: every scored draw passed; the interval's lower end says how stable
  that is with these repeats (5 of 5 passes: at least 48% at 95%; 50 of 50: 93%);
- ``stable-fail``: every scored draw failed (likewise the upper end);
- ``unscored``: no scored draw (left out, never a pass).

Incomplete samples fail their checks, as everywhere, and count as failing draws.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from evalnb.analysis import _args
from evalnb.analysis._frames import Run
from evalnb.analysis._tally import require_cases, tallies

__all__ = ["FLAKY", "STABLE_FAIL", "STABLE_PASS", "case_verdicts", "flakiness"]

STABLE_PASS = "stable-pass"
STABLE_FAIL = "stable-fail"
FLAKY = "flaky"
UNSCORED = "unscored"
METHOD = "exact Clopper-Pearson interval on the case's own pass rate (statsmodels, beta)"


def flakiness(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    check: str | Sequence[str] | None = "all",
    level: float = 0.95,
) -> pd.DataFrame:
    """Per case and variant: ``stable-pass``, ``flaky``, ``stable-fail`` or ``unscored``.

    Returns:
        DataFrame, one row per ``by`` group, variant, case and check, columns: the ``by``
        keys, ``variant``, ``case_id``, ``check``; ``k`` (passing draws), ``n`` (scored
        draws: the repeats the verdict rests on), ``incomplete`` (of them, not
        completed), ``unscored``; ``rate`` (k / n); ``low``, ``high`` (exact interval at
        ``level``); ``level``; ``verdict``; ``detail`` (one line, the repeats named);
        ``method``.

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
    verdict = case_verdicts(k, n)
    out = counts[[*keys, "check", "k", "n", "incomplete", "unscored"]].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out["rate"] = np.where(scored, k / np.maximum(n, 1), np.nan)
    out["low"], out["high"], out["level"] = low, high, level
    out["verdict"] = verdict
    out["detail"] = [
        _detail(v, int(kk), int(nn), lo, hi, level)
        for v, kk, nn, lo, hi in zip(verdict, k, n, low, high, strict=True)
    ]
    out["method"] = METHOD
    from evalnb.analysis._settled import settled_intervals

    return settled_intervals(data, out.reset_index(drop=True))


def case_verdicts(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The verdict of each case from its passing (``k``) and scored (``n``) draws: the one
    rule every consumer (the gate, reports, JUnit) uses."""
    k, n = np.asarray(k), np.asarray(n)
    verdicts: np.ndarray = np.select(
        [n <= 0, k == n, k == 0], [UNSCORED, STABLE_PASS, STABLE_FAIL], default=FLAKY
    )
    return verdicts


def _detail(verdict: str, k: int, n: int, low: float, high: float, level: float) -> str:
    at = f"{level * 100:g}%"
    if verdict == UNSCORED:
        return "no scored repeat"
    if verdict == STABLE_PASS:
        return f"passed all {n} repeats: rate at least {low:.0%} ({at} exact)"
    if verdict == STABLE_FAIL:
        return f"failed all {n} repeats: rate at most {high:.0%} ({at} exact)"
    return f"passed {k} of {n} repeats: rate {low:.0%} to {high:.0%} ({at} exact)"
