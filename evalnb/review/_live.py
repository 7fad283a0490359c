"""The live number: the human pass rate per variant from the verdicts so far, with its
interval, and how many more labels a narrower one needs.

Read from what the review already holds in memory (the index's outcomes and this
annotator's verdicts, the design's order), not from disk: the panel redraws it after every
verdict. The rate is :func:`evalnb.ppi_rate`'s (the judge corrected by the verdicts, each
weighed by its inclusion probability) where the run has a judge check, else the verdicts
alone; the labels to go are :func:`evalnb.review_plan`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb.analysis._plan import plan_rows
from evalnb.analysis._ppi import estimate_rows
from evalnb.analysis._sampling import POPULATION, REVIEWED, DesignRead
from evalnb.analysis._tally import OutcomeCode
from evalnb.review._queue import Queue

__all__ = ["TARGETS", "LiveNumber", "live_number"]

#: The half-widths the plan offers next, widest first: the first below the current one.
TARGETS = (0.2, 0.15, 0.1, 0.05, 0.03, 0.02, 0.01)
JUDGE = "judge"


@dataclass(frozen=True)
class LiveNumber:
    """``rates``: per variant ``estimate``, ``low``, ``high`` (NaN without an interval);
    ``method`` (``PPI`` or ``verdicts``); ``scope`` and ``note`` (the design's sentence);
    ``labels`` so far; ``target`` (half-width) and ``more`` labels to reach it (NaN when
    none reaches it, or without a plan)."""

    rates: pd.DataFrame
    method: str
    scope: str
    note: str
    labels: int
    target: float
    more: float


def live_number(
    queue: Queue, *, level: float = 0.95, narrowed: str = "narrowed with where="
) -> LiveNumber:
    """The live number of the review over ``queue`` (this annotator's verdicts);
    ``narrowed`` says what made the queue cover part of the run, when it does."""
    index = queue.index
    positions = queue.positions
    try:
        codes = index.outcome(JUDGE)
        method = "PPI"
    except ArgumentError:  # no judge in the run: the verdicts alone
        codes = np.full(len(index), OutcomeCode.PASS, dtype=np.int8)
        method = "verdicts"
    verdict = index.verdict[positions]
    read = _prefix(queue, verdict != OutcomeCode.ABSENT, len(index), narrowed)
    weight = np.zeros(len(positions))
    weight[: len(read.weight)] = read.weight
    human = np.where(
        verdict == OutcomeCode.PASS, 1.0, np.where(verdict == OutcomeCode.FAIL, 0.0, np.nan)
    )
    if read.scope == REVIEWED:
        weight = np.where(np.isfinite(human), 1.0, 0.0)
    scored = codes[positions] <= OutcomeCode.PASS
    rows = pd.DataFrame(
        {
            # integer codes: grouping them is several times faster than the names, and
            # the panel redraws this after every verdict (names put back below)
            "variant": index.codes["variant"][positions].astype(np.int64),
            "case_id": index.codes["case_id"][positions],
            "unit": index.codes["case_id"][positions],
            "judge": (codes[positions] == OutcomeCode.PASS).astype(float),
            "human": np.where(weight > 0, human, np.nan),
            "weight": weight,
            "size": queue.ordering.size[queue.ordering.order] if len(positions) else [],
        }
    )[scored]
    labels = read.labels if read.scope == POPULATION else int(np.isfinite(human).sum())
    if rows.empty or not np.isfinite(rows["human"]).any():
        empty = pd.DataFrame(columns=["variant", "estimate", "low", "high"])
        return LiveNumber(empty, method, read.scope, read.note, labels, np.nan, np.nan)
    out = estimate_rows(rows, read, ["variant"], JUDGE, level)
    if method == "verdicts":
        out["estimate"] = out["human_only"]
        out["low"], out["high"] = out["human_only_low"], out["human_only_high"]
    target, more = np.nan, np.nan
    widths = (out["high"] - out["low"]).to_numpy(float)
    if read.scope == POPULATION and np.isfinite(widths).any():
        half = float(np.nanmax(widths) / 2)
        target = next((t for t in TARGETS if t < half - 1e-9), TARGETS[-1])
        plan = plan_rows(rows, read, ["variant"], JUDGE, width=target, level=level, now=out)
        more = float(plan["more"].max()) if plan["more"].notna().all() else np.nan
    names = np.asarray(index.samples["variant"].cat.categories, dtype=object)
    rates = out[["variant", "estimate", "low", "high"]].assign(
        variant=names[out["variant"].to_numpy(np.int64)]
    )
    return LiveNumber(rates, method, read.scope, read.note, labels, target, more)


def _prefix(queue: Queue, reviewed: np.ndarray, samples: int, narrowed: str) -> DesignRead:
    """The design's complete prefix, from the order in memory: weights ``1 / pi`` along
    the order (0 beyond the first sample not reviewed)."""
    ordering = queue.ordering
    n = len(reviewed)
    labels = int(np.argmin(np.append(reviewed, False)))
    if ordering.design == "queue" or n < samples:
        why = (
            "they were taken in queue order (design 'queue')"
            if ordering.design == "queue"
            else f"the review covers {n} of the {samples} samples ({narrowed})"
        )
        note = f"these verdicts describe the reviewed samples only: {why}"
        return DesignRead(ordering.design, REVIEWED, np.ones(n), labels, note)
    inclusion = ordering.inclusion(labels)[ordering.order]
    with np.errstate(divide="ignore"):
        weight = np.where(np.arange(n) < labels, 1.0 / inclusion, 0.0)
    return DesignRead(ordering.design, POPULATION, weight, labels, "")
