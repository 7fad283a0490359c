"""The overview: one row per case, one cell per variant, built from :func:`evalnb.rates`.

Each cell holds the case's ``k`` of ``n`` for the chosen check, its Wilson interval, the
unscored and incomplete counts, whether the draws disagree (flaky: ``0 < k < n``) and the
human verdicts given on its samples. The row adds the case's group, split and tags, the
per-case difference between two chosen variants (B - A) and whether the variants disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from evalnb._exceptions import ArgumentError

__all__ = ["CELL_FIELDS", "SORTS", "Grid", "answers_differ", "build_grid"]

#: Per variant, the columns of a cell (``<field>:<variant>`` in the grid).
CELL_FIELDS = (
    "k",
    "n",
    "unscored",
    "incomplete",
    "estimate",
    "low",
    "high",
    "flaky",
    "human_pass",
    "human_fail",
)
#: Columns the overview sorts by besides each variant's rate (``rate:<variant>``).
SORTS = ("case_id", "diff", "absdiff", "flaky", "incomplete", "group", "split")


@dataclass
class Grid:
    """The overview as one frame (a row per case) and what it was made from."""

    frame: pd.DataFrame
    variants: list[str]
    check: str
    method: str
    level: float


def build_grid(
    cell: pd.DataFrame,
    cases: pd.DataFrame,
    variants: Sequence[str],
    check: str,
    verdict_counts: pd.DataFrame,
    pair: tuple[str, str],
    level: float,
) -> Grid:
    """The grid of ``check`` over every case of ``cases`` (``run.cases``) and variant, from
    ``cell``: :func:`evalnb.rates` of the run by case and variant."""
    cell = cell.copy()
    method = str(cell["method"].iat[0]) if len(cell) else "wilson"
    cell["case_id"] = cell["case_id"].astype(str)
    cell["variant"] = cell["variant"].astype(str)
    cell["flaky"] = (cell["k"] > 0) & (cell["k"] < cell["n"])
    cell = cell.merge(verdict_counts, on=["case_id", "variant"], how="left")
    for column in ("human_pass", "human_fail"):
        cell[column] = cell[column].fillna(0).astype(int)
    frame = pd.DataFrame(
        {
            "case_id": cases["case_id"].astype(str).to_numpy(),
            "group": cases["group"].astype(str).to_numpy(),
            "split": cases["split"].astype(str).to_numpy(),
            "tags": [", ".join(str(t) for t in tags) for tags in cases["tags"]],
        }
    ).drop_duplicates("case_id", ignore_index=True)
    wide = cell.set_index(["case_id", "variant"])[list(CELL_FIELDS)].unstack("variant")
    wide = wide.reindex(frame["case_id"])
    columns = {}
    for variant in variants:
        for field in CELL_FIELDS:
            columns[f"{field}:{variant}"] = (
                wide[(field, variant)].to_numpy()
                if (field, variant) in wide.columns
                else np.full(len(frame), np.nan)
            )
    frame = pd.concat([frame, pd.DataFrame(columns, index=frame.index)], axis=1)
    for field in ("k", "n", "unscored", "incomplete", "human_pass", "human_fail"):
        for variant in variants:
            frame[f"{field}:{variant}"] = frame[f"{field}:{variant}"].fillna(0).astype(int)
    for variant in variants:
        frame[f"flaky:{variant}"] = (
            frame[f"flaky:{variant}"].astype("boolean").fillna(False).astype(bool)
        )
    a, b = pair
    frame["diff"] = frame[f"estimate:{b}"] - frame[f"estimate:{a}"] if a != b else np.nan
    frame["absdiff"] = frame["diff"].abs()
    frame["flaky"] = frame[[f"flaky:{v}" for v in variants]].any(axis=1)
    frame["incomplete"] = frame[[f"incomplete:{v}" for v in variants]].sum(axis=1)
    estimates = frame[[f"estimate:{v}" for v in variants]]
    spread = estimates.max(axis=1, skipna=True) - estimates.min(axis=1, skipna=True)
    frame["different"] = spread.fillna(0).to_numpy() > 0
    return Grid(frame, list(variants), check, method, level)


def sort_grid(
    frame: pd.DataFrame, sort: str, descending: bool, variants: Sequence[str]
) -> pd.DataFrame:
    """``frame`` sorted by ``sort`` (one of :data:`SORTS` or ``rate:<variant>``); cases
    without a value go last either way, ties keep the case order."""
    column = _sort_column(sort, variants)
    values = frame[column]
    if values.dtype == object:
        values = values.astype(str)
    order = values.sort_values(ascending=not descending, kind="stable", na_position="last")
    return frame.loc[order.index]


def _sort_column(sort: str, variants: Sequence[str]) -> str:
    if sort in SORTS:
        return sort
    if sort.startswith("rate:") and sort[5:] in variants:
        return "estimate:" + sort[5:]
    options = ", ".join(repr(s) for s in [*SORTS, *(f"rate:{v}" for v in variants)])
    raise ArgumentError(f"'sort' must be one of {options}; got {sort!r}")


def answers_differ(
    case: np.ndarray,
    variant: np.ndarray,
    answers: pa.Array,
    completed: np.ndarray,
    *,
    cases: int,
    variants: int,
) -> np.ndarray:
    """Per case code (``0 .. cases - 1``): whether its variants' answers differ. ``case`` and
    ``variant`` are each sample's codes, ``answers`` its text (an Arrow string array) and
    ``completed`` whether it completed. Two variants' answers differ when a completed answer
    of one (spaces at its ends aside) is not among the other's, or when one has a completed
    answer and the other none; repeats that give the same answers in another order or number
    do not differ."""
    case, variant = case.astype(np.int64), variant.astype(np.int64)
    done = np.asarray(completed, dtype=bool)
    text = pc.utf8_trim_whitespace(pc.filter(answers, pa.array(done)).fill_null(""))
    codes = pc.dictionary_encode(text).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    span = int(codes.max(initial=0)) + 1
    c, v = case[done], variant[done]
    # each distinct (case, answer, variant) once; per (case, answer) how many variants gave it
    given = np.unique((c * span + codes) * variants + v) // variants
    pairs, count = np.unique(given, return_counts=True)
    pair_case = pairs // span
    answering = np.bincount(np.unique(c * variants + v) // variants, minlength=cases)
    present = np.bincount(np.unique(case * variants + variant) // variants, minlength=cases)
    differ = np.zeros(cases, dtype=bool)
    differ[pair_case[count < answering[pair_case]]] = True
    differ |= (answering > 0) & (answering < present)
    return differ
