"""Pass rates that say what their denominator is, with a binomial interval per row."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from evalnb.analysis import _args
from evalnb.analysis import _display as display
from evalnb.analysis._frames import Run
from evalnb.analysis._sampling import REVIEWED, read_design
from evalnb.analysis._tally import tallies
from evalnb.store import latest_verdicts

__all__ = ["proportion_interval", "rates"]


def rates(
    data: Run | pd.DataFrame,
    by: str | Sequence[str] | None = ("variant", "case_id"),
    *,
    check: str | Sequence[str] | None = None,
    source: str = "checks",
    level: float = 0.95,
    method: str = "wilson",
) -> pd.DataFrame:
    """Pass rate and interval per ``by`` group and check.

    ``data`` is a Run or a frame (long check outcomes, verdicts, or counts). ``by``
    takes sample fields (``variant``, ``case_id``, ``run_id``, ``status``, ``model``...)
    and case fields (``split``, ``group``, ``tags`` (a case counts once under each tag),
    ``metadata.<key>``). ``check`` picks check names; ``"all"`` is the derived "every
    scored check passed". ``source="verdicts"`` rates human verdicts instead: the latest
    verdict per (sample, annotator) counts, and ``annotator`` may be used in ``by``.
    Verdicts from a Run are read with the design the review took them under
    (:func:`evalnb.annotate`): a stratified or active review weighs each by ``1 / pi``
    (``estimate`` the weighted share, the interval on the Kish effective count); verdicts
    with no probability design (queue order, a ``where=`` review, none recorded) keep
    their counts and get no interval, and a note says why. ``method`` is ``"wilson"`` (the
    score interval in closed form, equal to statsmodels ``proportion_confint``'s), or
    ``"agresti_coull"``, ``"beta"`` (Clopper-Pearson) or ``"jeffreys"`` from statsmodels
    ``proportion_confint``.

    Returns:
        DataFrame, one row per group and check, columns:

        - the ``by`` keys, then ``check``;
        - ``cases``: distinct cases in the row;
        - ``k``: passed; ``n``: scored, the denominator;
        - ``unscored`` (checks): outcomes that were null, left out of ``n``;
        - ``needs_review`` and ``unreviewed`` (verdicts): left out of ``n``;
        - ``incomplete``: rows in ``n`` whose sample did not complete (they fail);
        - ``estimate`` (``k / n``), ``low``, ``high``: the interval at ``level``;
        - ``level``, ``method``;
        - ``design``, ``scope`` (``source="verdicts"`` on a Run): the review's design and
          whether the interval speaks of the run (``population``) or there is none
          (``reviewed samples``);
        - ``pooled``: True when the row pools several cases, so its interval treats
          every sample as an independent trial; use :func:`evalnb.suite_rate` for an
          interval across cases.

    >>> evalnb.rates(run, by="variant", check="all")    # doctest: +SKIP
    """
    level = _args.level(level)
    _args.choice("method", method, _args.INTERVAL_METHODS)
    out = tallies(data, by, check=check, source=source)
    estimate, low, high = proportion_interval(out["k"], out["n"], level=level, method=method)
    out["estimate"] = estimate
    out["low"] = low
    out["high"] = high
    out["level"] = level
    out["method"] = method
    out["pooled"] = (out["cases"].fillna(2) > 1).astype(bool)
    unchecked, unrun = _cases_without_checks(data) if source == "checks" else ([], [])
    design_note = ""
    if source == "verdicts" and isinstance(data, Run):
        out, design_note = _by_design(data, out, _args.names("by", by), level, method)
    notes = [
        f"{len(ids)} of the run's cases {what}, so no rate counts them: {_listed(ids)}"
        for ids, what in (
            (unchecked, "have no check"),
            (unrun, "were not run (a rule stopped the run first, or it was interrupted)"),
        )
        if ids
    ]
    notes += [design_note] if design_note else []
    if not notes:
        return display.shown(out)
    for note in notes:
        display.caution(note)
    note = "; ".join(notes)
    return display.result(out, lambda frame: display.note_html(note))


def _by_design(
    run: Run, out: pd.DataFrame, by: list[str], level: float, method: str
) -> tuple[pd.DataFrame, str]:
    """``out`` (verdict rates of ``run``) read with the review's design: weighted by
    ``1 / pi`` under unequal inclusion probabilities, no interval without a design."""
    samples = len(run.table("samples", ["status"]))
    latest = latest_verdicts(run.table("verdicts"))
    read = read_design(latest, samples)
    out = out.assign(design=read.design, scope=read.scope)
    if read.scope == REVIEWED:
        out["low"], out["high"] = np.nan, np.nan
        return out, read.note
    weight = read.weight
    used = weight[weight > 0]
    if not len(used) or float(used.max() - used.min()) <= 1e-12 * float(used.max()):
        return out, read.note  # every label weighs alike: the plain share is the rate
    keys = [c for c in by if c in latest.columns]
    if keys != by:
        out["low"], out["high"] = np.nan, np.nan
        note = (
            f"the {read.design} design weighs each verdict by 1 / inclusion probability; "
            f"rates by {by!r} are not weighed (only sample key columns and 'annotator' are): "
            "no interval; evalnb.ppi_rate weighs them"
        )
        return out, note
    rows = latest.assign(
        _w=weight,
        _k=weight * (latest["verdict"] == "pass"),
        _w2=weight**2,
    )[latest["verdict"].isin(["pass", "fail"]).to_numpy() & (weight > 0)]
    sums = rows.groupby(keys, observed=True)[["_w", "_k", "_w2"]].sum() if keys else None
    if sums is None:
        sums = rows[["_w", "_k", "_w2"]].sum().to_frame().T
    share = sums["_k"] / sums["_w"]
    effective = sums["_w"] ** 2 / sums["_w2"]
    estimate, low, high = proportion_interval(
        share * effective, effective, level=level, method=method
    )
    found = pd.DataFrame({"_e": estimate, "_l": low, "_h": high}, index=sums.index)
    if keys:
        at = (
            pd.MultiIndex.from_frame(out[keys].astype(object))
            if len(keys) > 1
            else (out[keys[0]].astype(object))
        )
        matched = found.reindex(at)
    else:
        matched = found.reindex([0] * len(out))
    out["estimate"] = matched["_e"].to_numpy()
    out["low"], out["high"] = matched["_l"].to_numpy(), matched["_h"].to_numpy()
    note = (
        f"the {read.design} design's verdicts weigh 1 / inclusion probability: estimate is "
        "the weighted share, its interval on the Kish effective count"
    )
    return out, "; ".join(n for n in (read.note, note) if n)


def _listed(ids: list[str]) -> str:
    return ", ".join(repr(c) for c in ids[:5]) + (", ..." if len(ids) > 5 else "")


def _cases_without_checks(data: Run | pd.DataFrame) -> tuple[list[str], list[str]]:
    """The ids of a run's cases that ran but no stored check result names (none of their
    checks applied, or they have none), and of those that never ran (a stopping rule ended
    the run first): either way they are in no denominator, and a rate must say so."""
    if not isinstance(data, Run) or data.cases.empty:
        return [], []
    checked = set(data.table("checks", ["case_id"])["case_id"].astype(str))
    ran = set(data.table("samples", ["case_id"])["case_id"].astype(str))
    cases = {str(c) for c in data.cases["case_id"]}
    return sorted((cases & ran) - checked), sorted(cases - ran)


def proportion_interval(
    k: Any, n: Any, *, level: float = 0.95, method: str = "wilson"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, low, high)`` arrays for counts ``k`` of ``n``; NaN where ``n`` is 0.

    Counts may be fractional (an effective sample size); the Wilson interval is the closed
    form below, the other methods come from statsmodels ``proportion_confint``; the lower
    bound is exactly 0 when ``k`` is 0 and the upper bound exactly 1 when ``k`` is ``n``
    (the Jeffreys convention too).
    """
    level = _args.level(level)
    _args.choice("method", method, _args.INTERVAL_METHODS)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    estimate = np.full(n.shape, np.nan)
    low = np.full(n.shape, np.nan)
    high = np.full(n.shape, np.nan)
    ok = n > 0
    if ok.any():
        estimate[ok] = k[ok] / n[ok]
        if method == "wilson":
            low[ok], high[ok] = wilson_interval(k[ok], n[ok], level=level)
        else:
            # statsmodels loads scipy: only for the methods that need it, so that reading a
            # run and its Wilson rates stays light.
            from statsmodels.stats.proportion import proportion_confint

            low[ok], high[ok] = proportion_confint(k[ok], n[ok], alpha=1 - level, method=method)
        # No passes: the lower bound is 0, not rounding noise (Wilson gives 2.8e-17 for 0/7,
        # statsmodels' Jeffreys 1e-4); all passed: the upper bound is 1.
        low[ok] = np.where(k[ok] <= 0, 0.0, low[ok])
        high[ok] = np.where(k[ok] >= n[ok], 1.0, high[ok])
    return estimate, low, high


def wilson_interval(k: np.ndarray, n: np.ndarray, *, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval for ``k`` of ``n`` (``n > 0``), ``(low, high)``.

    Wilson, E. B. (1927), "Probable inference, the law of succession, and statistical
    inference", JASA 22(158), 209-212: with ``z`` the normal quantile at ``1 - (1 -
    level) / 2`` and ``p = k / n``, the centre is ``(p + z^2 / 2n) / (1 + z^2 / n)`` and
    the half-width ``z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)``; the same
    formula as statsmodels ``proportion_confint(method="wilson")``.
    """
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    z2n = z * z / n
    denominator = 1 + z2n
    centre = (p + z2n / 2) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z2n / (4 * n)) / denominator
    return centre - half, centre + half
