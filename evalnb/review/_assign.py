"""Several reviewers: which samples each one reviews, stored in the run directory.

:func:`assign_review` deals a run's samples to reviewers: a stated share (``overlap``) goes
to every reviewer, so that their agreement can be measured on it
(:func:`evalnb.calibrate`'s ``annotators``), and the rest is split between them
(``shares``, equal by default), each sample to one. Which samples overlap and who gets the
others are drawn from ``seed`` (a hash of the seed and the sample, so the draw of a sample
never depends on the others): the overlap is a simple random sample of the samples, and so
is each reviewer's share. The assignment is written atomically to
``review-assignment.parquet`` in the run directory; a new assignment replaces it, and the
verdicts already given stay.

:func:`evalnb.annotate` then walks each reviewer's own samples: ``annotate(run, "ana")``
queues ana's share and the overlap and counts her progress against them ("12 of 60 of your
samples reviewed").
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evalnb._exceptions import ArgumentError
from evalnb.analysis import Run, load
from evalnb.store import atomic_file

__all__ = ["ASSIGNMENT", "assign_review", "assigned_samples", "describe", "review_assignment"]

#: The file of the assignment in a run directory.
ASSIGNMENT = "review-assignment.parquet"
_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("case_id", pa.string()),
        pa.field("variant", pa.string()),
        pa.field("repeat", pa.int64()),
        pa.field("reviewer", pa.string()),
        pa.field("shared", pa.bool_()),
    ]
)


def _draw(seed: int, what: str, keys: pd.DataFrame) -> np.ndarray:
    """A uniform number in [0, 1) per sample, from the seed and the sample's key only."""
    out = np.empty(len(keys))
    rows = zip(keys["run_id"], keys["case_id"], keys["variant"], keys["repeat"], strict=True)
    for i, (run_id, case, variant, repeat) in enumerate(rows):
        text = "\0".join((str(seed), what, str(run_id), str(case), str(variant), str(repeat)))
        out[i] = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
    return out


def _shares(reviewers: list[str], shares: Mapping[str, float] | None) -> np.ndarray:
    if shares is None:
        return np.full(len(reviewers), 1 / len(reviewers))
    if not isinstance(shares, Mapping) or sorted(shares) != sorted(reviewers):
        raise ArgumentError(
            f"'shares' must map each reviewer ({', '.join(reviewers)}) to a share; got {shares!r}"
        )
    values = np.array([shares[r] for r in reviewers], dtype=float)
    if not np.isfinite(values).all() or (values < 0).any() or values.sum() <= 0:
        raise ArgumentError(f"'shares' must be non-negative numbers, not all 0; got {shares!r}")
    return np.asarray(values / values.sum())


def assign_review(
    run: Run | str | os.PathLike[str],
    reviewers: Sequence[str],
    *,
    overlap: float = 0.2,
    shares: Mapping[str, float] | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Deal the samples of ``run`` to ``reviewers`` and store the assignment in its run
    directory (each run's, when ``run`` holds several).

    A share ``overlap`` (0 to 1) of the samples, drawn at random, goes to every reviewer;
    each other sample goes to one reviewer, drawn with probabilities ``shares`` (a mapping
    of reviewer to weight; equal by default). With two reviewers and ``overlap=0.2``
    each reviews about 60% of the samples, 20% of them both.

    Returns one row per (sample, reviewer): ``run_id``, ``case_id``, ``variant``,
    ``repeat``, ``reviewer``, ``shared`` (every reviewer has the sample).

    >>> evalnb.assign_review(run, ["ana", "ben"], overlap=0.2, seed=1)    # doctest: +SKIP
    >>> evalnb.annotate(run, "ana")   # ana's samples only                 # doctest: +SKIP
    """
    if isinstance(reviewers, str) or not isinstance(reviewers, Sequence):
        raise ArgumentError(f"'reviewers' must be a list of names; got {reviewers!r}")
    names = [r.strip() if isinstance(r, str) else r for r in reviewers]
    if len(names) < 2 or not all(isinstance(r, str) and r for r in names):
        raise ArgumentError(f"'reviewers' must be two or more names; got {reviewers!r}")
    if len(set(names)) != len(names):
        raise ArgumentError(f"'reviewers' must not repeat a name; got {reviewers!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int | float) or not 0 <= overlap <= 1:
        raise ArgumentError(f"'overlap' must be a share between 0 and 1; got {overlap!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"'seed' must be an integer; got {seed!r}")
    weights = _shares(names, shares)
    run = run if isinstance(run, Run) else load(run)
    keys = run.table("samples", ["status"])[["run_id", "case_id", "variant", "repeat"]]
    keys = keys.astype({"run_id": str, "case_id": str, "variant": str}).reset_index(drop=True)
    shared = _draw(seed, "overlap", keys) < overlap
    owner = np.searchsorted(np.cumsum(weights)[:-1], _draw(seed, "owner", keys), side="right")
    frames = [
        keys[shared | (owner == i)].assign(reviewer=name, shared=shared[shared | (owner == i)])
        for i, name in enumerate(names)
    ]
    out = pd.concat(frames, ignore_index=True)[_SCHEMA.names]
    out["repeat"] = out["repeat"].astype("int64")
    about = {"reviewers": names, "overlap": overlap, "shares": weights.tolist(), "seed": seed}
    for run_id, path in run.paths.items():
        part = out[out["run_id"] == run_id]
        table = pa.Table.from_pandas(part, schema=_SCHEMA, preserve_index=False)
        table = table.replace_schema_metadata({"evalnb": json.dumps(about)})
        with atomic_file(Path(path) / ASSIGNMENT) as handle:
            pq.write_table(table, handle)
    return out


def review_assignment(run: Run | str | os.PathLike[str]) -> pd.DataFrame:
    """The stored assignment of ``run`` (the frame :func:`assign_review` returned; empty
    when none was made)."""
    run = run if isinstance(run, Run) else load(run)
    frames = [
        pq.read_table(Path(path) / ASSIGNMENT).to_pandas()
        for path in run.paths.values()
        if (Path(path) / ASSIGNMENT).is_file()
    ]
    if not frames:
        return _SCHEMA.empty_table().to_pandas()
    return pd.concat(frames, ignore_index=True)


def assigned_samples(run: Run, annotator: str) -> pd.DataFrame | None:
    """The sample keys assigned to ``annotator`` (None: no assignment, or one without this
    reviewer, so the review is of every sample)."""
    assignment = review_assignment(run)
    mine = assignment[assignment["reviewer"] == annotator.strip()]
    if mine.empty:
        return None
    return mine[["run_id", "case_id", "variant", "repeat"]].reset_index(drop=True)


def describe(run: Run) -> dict[str, Any]:
    """What the stored assignment said of itself (reviewers, overlap, shares, seed)."""
    for path in run.paths.values():
        file = Path(path) / ASSIGNMENT
        if file.is_file():
            meta = pq.read_schema(file).metadata or {}
            return dict(json.loads(meta.get(b"evalnb", b"{}")))
    return {}
