"""From stored outcomes to tallies: the one place that decides what is counted.

Every rate is built from *rows*, one per (sample, check), or per (sample, annotator)
for human verdicts. Each row has an :class:`OutcomeCode` and its sample either completed or
not; :func:`classify` turns the two into the row's class, and a group's tallies are the
counts of its rows per class:

=============  ====================================================================
``k``          passed
``n``          scored: in the denominator (pass or fail)
``unscored``   outcome null (the check does not apply): left out of ``n``
``incomplete`` scored, and the sample is not completed (it failed, and stays in n)
=============  ====================================================================

Verdicts count ``needs_review`` (left out of ``n``) and ``unreviewed`` (samples with
no verdict, left out of ``n``) instead of ``unscored``. The derived check ``all`` is
True when every scored check of a sample is True, False when any is False, and null
when all are null; a sample with no check rows has no ``all`` row. :func:`every_check`
derives it, for a Run and for a frame alike, and :func:`check_outcomes` gives it per
sample to the judge's calibration, PPI and the review queue.

Grouping works on integer codes (categorical codes, or ``pd.factorize``) combined into
one id per group and counted with a single ``np.bincount``: runs of millions of rows
are tallied without building per-row keys or large temporaries.
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from evalnb._exceptions import ArgumentError, StoreError
from evalnb.analysis._args import choice, names
from evalnb.analysis._frames import KEY, VERDICTS, Run
from evalnb.store import SAMPLES_SCHEMA, UNREVIEWED

ALL = "all"
VERDICT = "verdict"
SOURCES = ("checks", "verdicts")
COUNTS = {
    "checks": ["k", "n", "unscored", "incomplete"],
    "verdicts": ["k", "n", "needs_review", "unreviewed", "incomplete"],
}
CASE_FIELDS = ("group", "split", "tags", "review", "agreement_min")
_CHECK_LEVEL = ("check", "check_type", "outcome", "detail")


class OutcomeCode(IntEnum):
    """What one row says: a check's outcome, a person's verdict, or a sample's ``all``.

    Ordered so that the smallest outcome among a sample's check rows is its ``all``: any
    fail fails it, else any pass passes it, else it is unscored. A verdict of
    ``needs_review`` is UNSCORED (left out of ``n``, counted as ``needs_review``); a
    sample without a verdict, or without any check row, is ABSENT.
    """

    FAIL = 0
    PASS = 1
    UNSCORED = 2
    ABSENT = 3

    @property
    def label(self) -> str:
        """How a person reads it in a list: ``fail``, ``pass``, ``unscored``, ``none``."""
        return "none" if self is OutcomeCode.ABSENT else self.name.lower()


#: Row classes: 2 * outcome + (1 if the sample did not complete), see :func:`classify`.
CLASSES = 2 * len(OutcomeCode)


def classify(outcome: np.ndarray, incomplete: np.ndarray) -> np.ndarray:
    """The class each row is counted in: its :class:`OutcomeCode` and whether its sample
    completed, as ``2 * outcome + incomplete`` (int8, ``0 <= class < CLASSES``).

    This is the one rule behind every tally: ``k`` counts PASS rows, ``n`` PASS and FAIL
    rows, ``incomplete`` the PASS and FAIL rows of samples that did not complete,
    ``unscored`` (``needs_review`` for verdicts) the UNSCORED rows and ``unreviewed`` the
    ABSENT ones. A Run and a frame, checks and verdicts, all come through here.
    """
    return (2 * outcome.astype(np.int8) + incomplete.astype(np.int8)).astype(np.int8)


def check_outcome(outcome: pd.Series) -> np.ndarray:
    """Check outcomes as :class:`OutcomeCode` codes (int8): False FAIL, True PASS, null UNSCORED."""
    return np.asarray(
        outcome.astype("boolean").to_numpy(dtype=np.int8, na_value=OutcomeCode.UNSCORED)
    )


def verdict_outcome(verdict: pd.Series) -> np.ndarray:
    """Verdicts as :class:`OutcomeCode` codes (int8): ``pass``, ``fail``, ``needs_review``
    UNSCORED, no verdict ABSENT."""
    value = verdict.astype(object)
    return np.select(
        [value.eq("pass"), value.eq("fail"), value.eq("needs_review")],
        [OutcomeCode.PASS, OutcomeCode.FAIL, OutcomeCode.UNSCORED],
        default=OutcomeCode.ABSENT,
    ).astype(np.int8)


def every_check(outcome: np.ndarray, sample: np.ndarray, samples: int) -> np.ndarray:
    """Per sample (``samples`` of them), the derived ``all`` of its rows' outcomes: the
    smallest (see :class:`OutcomeCode`); ABSENT for a sample with no row. ``sample`` holds
    each row's sample position."""
    every = np.full(samples, OutcomeCode.ABSENT, dtype=np.int8)
    np.minimum.at(every, sample, outcome)
    return every


def classify_checks(
    outcome: np.ndarray, incomplete: np.ndarray, sample: np.ndarray | None = None, samples: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check rows and their samples' ``all``, classified by :func:`classify`.

    ``outcome`` (:func:`check_outcome` codes) and ``incomplete`` are per row; ``sample``
    gives each row's sample position among ``samples`` (None: no ``all`` is derived).
    Returns the rows' classes, the positions of the samples with a row, and the class of
    each one's ``all`` (incomplete when any of its rows is).
    """
    rows = classify(outcome, incomplete)
    if sample is None:
        return rows, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8)
    every = every_check(outcome, sample, samples)
    broken = np.zeros(samples, dtype=bool)
    broken[sample[incomplete]] = True
    present = np.flatnonzero(every != OutcomeCode.ABSENT).astype(sample.dtype)
    return rows, present, classify(every[present], broken[present])


def tallies(
    data: Run | pd.DataFrame, by: Any, *, check: Any = None, source: str = "checks"
) -> pd.DataFrame:
    """Counts per ``by`` keys and check: the keys, ``check``, ``cases`` and the counts.

    ``data`` is a Run, a long frame of check outcomes (``check``, ``outcome`` and
    sample columns), a frame of verdicts (``verdict``), or a frame that already
    holds counts (``k`` and ``n``, e.g. from :func:`evalnb.rates`).
    """
    by = names("by", by)
    choice("source", source, SOURCES)
    if "check" in by:
        raise ArgumentError("'by' must not include 'check': every result has a 'check' column")
    if isinstance(data, Run):
        return _run_tallies(data, by, check, source)
    if isinstance(data, pd.DataFrame):
        return _frame_tallies(data, by, check, source)
    raise TypeError(
        f"'data' must be a Run (from evalnb.load) or a pandas DataFrame; got {type(data).__name__}"
    )


def has_column(data: Run | pd.DataFrame, name: str) -> bool:
    """Whether ``name`` can be used in ``by`` for this data."""
    if isinstance(data, Run):
        return name in CASE_FIELDS or name in SAMPLES_SCHEMA.names
    return name in data.columns


# -- grouping on codes --------------------------------------------------------------------


class _Factor:
    """One grouping column as integer codes and the values they stand for."""

    def __init__(self, name: str, values: Any):
        self.name = name
        categorical = isinstance(values, pd.Series) and isinstance(
            values.dtype, pd.CategoricalDtype
        )
        if categorical and not values.isna().any():
            self.codes = values.cat.codes.to_numpy()
            self.values = values.cat.categories
            self.dtype = values.dtype
            return
        codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=False)
        self.codes, self.values, self.dtype = codes, uniques, None

    @property
    def size(self) -> int:
        return max(len(self.values), 1)

    def column(self, codes: np.ndarray) -> Any:
        if self.dtype is not None:
            return pd.Categorical.from_codes(codes, dtype=self.dtype)
        return self.values.take(codes)


def _combine(factors: list[_Factor], start: np.ndarray | None = None) -> np.ndarray:
    """One id per row from several factors (mixed radix), computed in place."""
    base = 1 if start is None else int(start.max(initial=0)) + 1
    span = base * math.prod(f.size for f in factors)
    if span >= 2**63:
        raise ArgumentError(
            f"too many groups to count ({', '.join(f.name for f in factors)}); use fewer 'by' keys"
        )
    dtype = np.int32 if span < 2**31 else np.int64
    ids: npt.NDArray[np.signedinteger[Any]]
    if start is None:
        ids = np.zeros(len(factors[0].codes) if factors else 0, dtype=dtype)
    else:
        ids = start.astype(dtype, copy=False)
    for factor in factors:
        ids *= factor.size
        ids += factor.codes
    return ids


def _count(
    ids: np.ndarray, sizes: list[int], classes: np.ndarray, n_classes: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """Rows per (group, class): the present groups' codes per factor, and their counts."""
    span = math.prod(sizes)
    cells: npt.NDArray[np.signedinteger[Any]]
    if span * n_classes <= max(4 * len(ids), 1 << 20):
        cells = ids.astype(np.int32 if span * n_classes < 2**31 else np.int64)
        cells *= n_classes
        cells += classes
        table = np.bincount(cells, minlength=span * n_classes).reshape(span, n_classes)
        present = np.flatnonzero(table.any(axis=1))
        table = table[present]
    else:
        present, inverse = np.unique(ids, return_inverse=True)
        cells = inverse.astype(np.int64) * n_classes + classes
        table = np.bincount(cells, minlength=len(present) * n_classes).reshape(-1, n_classes)
    codes = []
    rest = present.astype(np.int64)
    for size in reversed(sizes):
        rest, code = np.divmod(rest, size)
        codes.append(code)
    return codes[::-1], table


def _counts_frame(table: np.ndarray, source: str) -> dict[str, np.ndarray]:
    """The counts of each group from its rows per class (see :func:`classify`)."""
    per = {o: table[:, 2 * o] + table[:, 2 * o + 1] for o in OutcomeCode}
    out = {"k": per[OutcomeCode.PASS], "n": per[OutcomeCode.PASS] + per[OutcomeCode.FAIL]}
    if source == "checks":
        out["unscored"] = per[OutcomeCode.UNSCORED]
    else:
        out["needs_review"] = per[OutcomeCode.UNSCORED]
        out["unreviewed"] = per[OutcomeCode.ABSENT]
    out["incomplete"] = table[:, 2 * OutcomeCode.FAIL + 1] + table[:, 2 * OutcomeCode.PASS + 1]
    return out


# -- rows from a Run ----------------------------------------------------------------------


def _run_tallies(run: Run, by: list[str], check: Any, source: str) -> pd.DataFrame:
    row_level = ["annotator"] if source == "verdicts" else []
    sample_level = [c for c in by if c in SAMPLES_SCHEMA.names]
    case_level = [c for c in by if c not in sample_level and c not in row_level]
    unknown = [c for c in case_level if c not in CASE_FIELDS and not c.startswith("metadata.")]
    if unknown:
        allowed = [c for c in (*SAMPLES_SCHEMA.names, *CASE_FIELDS) if c not in _CHECK_LEVEL]
        raise ArgumentError(
            f"'by' must name sample or case fields ({', '.join(allowed)}, metadata.<key>"
            f"{', annotator' if source == 'verdicts' else ''}); got {unknown!r}"
        )
    extra = [c for c in sample_level if c not in KEY and c != "status"]
    # Read every sample column first: the rows' positions refer to this same snapshot.
    samples = run.table("samples", ["status", *extra])
    if source == "checks":
        rows = _check_rows(run)
    else:
        rows = _verdict_rows(run, per_annotator="annotator" in by)
    rows = _select_checks(rows, check)

    per_sample = [
        _Factor(c, samples[c]) for c in dict.fromkeys(["run_id", "case_id", *sample_level])
    ]
    per_row = [_Factor(c, rows[c]) for c in [*[c for c in row_level if c in by], "check"]]
    # One id per sample from its factors, then the row factors stacked on it: together a
    # mixed-radix number over every factor, which _count decodes.
    sample_ids = _combine(per_sample)
    ids = _combine(per_row, start=sample_ids[rows["sample"].to_numpy()])
    factors = [*per_sample, *per_row]
    sizes = [f.size for f in factors]
    codes, table = _count(ids, sizes, rows["class"].to_numpy(), CLASSES)
    stage = pd.DataFrame({f.name: f.column(c) for f, c in zip(factors, codes, strict=True)})
    for name, values in _counts_frame(table, source).items():
        stage[name] = values
    for field in case_level:
        stage[field] = case_field(run, stage, field)
    return _finish(stage, by, COUNTS[source])


def _check_rows(run: Run) -> pd.DataFrame:
    """One row per (sample, check) plus the derived ``all`` rows; cached on the Run.

    Columns: ``sample`` (position in the samples table), ``check`` and ``class``.
    """
    cached = run._derived.get("check_rows")
    if cached is not None:
        return cached
    samples = run.table("samples", ["status"])
    checks = run.table("checks", ["outcome"])
    position = sample_positions(samples, checks)
    known = position >= 0
    code = check_outcome(checks["outcome"])
    check_codes = checks["check"].cat.codes.to_numpy()
    if not known.all():
        position, code, check_codes = position[known], code[known], check_codes[known]
    incomplete = (samples["status"] != "completed").to_numpy(dtype=bool)
    classes, with_checks, every = classify_checks(
        code, incomplete[position], position, len(samples)
    )
    categories = list(checks["check"].cat.categories)
    if ALL not in categories:
        categories.append(ALL)
    all_codes = np.full(len(with_checks), categories.index(ALL), check_codes.dtype)
    rows = pd.DataFrame(
        {
            "sample": np.concatenate([position, with_checks]),
            "check": pd.Categorical.from_codes(
                np.concatenate([check_codes, all_codes]).astype(np.int32), categories
            ),
            "class": np.concatenate([classes, every]),
        }
    )
    run._derived["check_rows"] = rows
    return rows


def check_outcomes(run: Run, check: str | None) -> tuple[np.ndarray, pd.DataFrame]:
    """Per sample (positions in ``run.table("samples")``) the :class:`OutcomeCode` of ``check``.

    ``check`` is a check name, a check type (every check of that type), ``"all"``, or
    None (``"all"``); a sample with several such checks has their ``all``
    (:func:`every_check`), and one with none is ABSENT. Also returns the selected check
    rows (with ``check_type``, ``outcome`` and ``detail``) and their sample ``position``.
    """
    samples = run.table("samples", ["status"])
    checks = run.table("checks", ["check_type", "outcome", "detail"])
    names = [str(c) for c in checks["check"].cat.categories]
    types = sorted({str(t) for t in checks["check_type"].dropna().unique()})
    if check is None or check == ALL:
        chosen = np.ones(len(checks), dtype=bool)
    elif check in names:
        chosen = (checks["check"] == check).to_numpy(dtype=bool)
    elif check in types:
        chosen = (checks["check_type"].astype(object) == check).to_numpy(dtype=bool)
    else:
        options = ", ".join(repr(c) for c in [*types, *names, ALL])
        raise ArgumentError(f"'check' must be a check type or name ({options}); got {check!r}")
    rows = checks[chosen]
    position = sample_positions(samples, rows) if len(rows) else np.zeros(0, dtype=np.int64)
    known = position >= 0
    rows = rows[known].assign(position=position[known])
    outcome = check_outcome(rows["outcome"])
    return every_check(outcome, rows["position"].to_numpy(), len(samples)), rows


def _verdict_rows(run: Run, *, per_annotator: bool) -> pd.DataFrame:
    """Latest verdict per (sample, annotator), plus rows for samples without one."""
    cache_key = ("verdict_rows", per_annotator)
    cached = run._derived.get(cache_key)
    if cached is not None:
        return cached
    samples = run.table("samples", ["status"])
    verdicts = run.table("verdicts")
    _check_verdict_values(verdicts["verdict"])
    position = sample_positions(samples, verdicts)
    latest = (
        pd.DataFrame(
            {
                "sample": position,
                "annotator": verdicts["annotator"],
                "verdict": verdicts["verdict"],
                "created_at": verdicts["created_at"],
            }
        )
        .loc[position >= 0]
        .sort_values("created_at", kind="stable")
        .drop_duplicates(["sample", "annotator"], keep="last")
        .drop(columns="created_at")
    )
    # A latest row "unreviewed" took the verdict back: as if none had been given.
    latest = latest[(latest["verdict"] != UNREVIEWED).to_numpy()]
    everyone = np.arange(len(samples))
    if per_annotator:
        annotators = latest["annotator"].cat.remove_unused_categories().cat.categories
        grid = pd.DataFrame(
            {
                "sample": np.tile(everyone, len(annotators)),
                "annotator": pd.Categorical(
                    np.repeat(np.asarray(annotators, dtype=object), len(everyone)),
                    categories=annotators,
                ),
            }
        )
        latest["annotator"] = latest["annotator"].cat.set_categories(annotators)
        rows = grid.merge(latest, on=["sample", "annotator"], how="left")
    else:
        reviewed = np.zeros(len(samples), dtype=bool)
        reviewed[latest["sample"].to_numpy()] = True
        missing = pd.DataFrame({"sample": everyone[~reviewed]})
        rows = pd.concat([latest, missing], ignore_index=True)
    incomplete = (samples["status"] != "completed").to_numpy(dtype=bool)
    rows = _with_verdict_classes(rows, incomplete[rows["sample"].to_numpy()])
    run._derived[cache_key] = rows
    return rows


def _with_verdict_classes(rows: pd.DataFrame, incomplete: np.ndarray) -> pd.DataFrame:
    out = rows.drop(columns="verdict")
    out["check"] = pd.Categorical.from_codes(np.zeros(len(rows), dtype=np.int8), [VERDICT])
    out["class"] = classify(verdict_outcome(rows["verdict"]), incomplete)
    return out


def sample_positions(samples: pd.DataFrame, other: pd.DataFrame) -> np.ndarray:
    """For each row of ``other``, the position of its sample in ``samples`` (-1: none)."""
    factors_s, factors_o = [], []
    missing = np.zeros(len(other), dtype=bool)
    for column in ("run_id", "case_id", "variant"):
        ours = samples[column]
        theirs = other[column]
        if not theirs.cat.categories.equals(ours.cat.categories):
            theirs = theirs.cat.set_categories(ours.cat.categories)
        codes = theirs.cat.codes.to_numpy()
        if (codes < 0).any():
            missing |= codes < 0
            codes = np.maximum(codes, 0)
        factors_s.append((ours.cat.codes.to_numpy(), len(ours.cat.categories)))
        factors_o.append((codes, len(ours.cat.categories)))
    repeat_s = samples["repeat"].to_numpy()
    repeat_o = other["repeat"].to_numpy()
    span = int(max(repeat_s.max(initial=0), repeat_o.max(initial=0))) + 1
    factors_s.append((repeat_s, span))
    factors_o.append((repeat_o, span))
    top = math.prod(size for _, size in factors_s)
    dtype = np.int32 if top < 2**31 else np.int64
    key_s, key_o = _mixed(factors_s, dtype), _mixed(factors_o, dtype)
    order = np.arange(len(samples), dtype=np.int32 if len(samples) < 2**31 else np.int64)
    if top <= 8 * (len(samples) + len(other)) + 1024:
        lookup = np.full(top, -1, dtype=order.dtype)
        lookup[key_s] = order
        if (lookup[key_s] != order).any():
            _duplicate_samples(samples)
        position = lookup[key_o]
    else:
        index = pd.Index(key_s)
        if not index.is_unique:
            _duplicate_samples(samples)
        position = index.get_indexer(key_o).astype(order.dtype)
    if missing.any():
        position[missing] = -1
    return np.asarray(position)


def _mixed(factors: list[tuple[np.ndarray, int]], dtype: Any) -> np.ndarray:
    ids = factors[0][0].astype(dtype)
    for codes, size in factors[1:]:
        ids *= size
        ids += codes
    return ids


def _duplicate_samples(samples: pd.DataFrame) -> None:
    twice = samples[samples.duplicated(KEY, keep=False)][KEY].head(1)
    example = tuple(twice.iloc[0]) if len(twice) else ()
    raise StoreError(
        f"the samples table has duplicate keys (run_id, case_id, variant, repeat), e.g. "
        f"{example!r}; a sample must be stored once"
    )


def case_field(run: Run, frame: pd.DataFrame, field: str) -> Any:
    """A case field (or ``metadata.<key>``) for each row of ``frame`` (run_id, case_id)."""
    cases = run.cases
    if field.startswith("metadata."):
        key = field.removeprefix("metadata.")
        values = cases["metadata"].map(lambda m: m.get(key))
    else:
        values = cases[field]
    lookup = pd.Series(
        values.to_numpy(),
        index=pd.MultiIndex.from_arrays(
            [cases["run_id"].astype(object), cases["case_id"].astype(object)]
        ),
    )
    pairs = frame[["run_id", "case_id"]].drop_duplicates()
    found = lookup.reindex(
        pd.MultiIndex.from_arrays([pairs["run_id"].astype(object), pairs["case_id"].astype(object)])
    ).to_numpy()
    if field == "group":
        # A case missing from the manifest is its own group.
        found = np.where(pd.isna(found), pairs["case_id"].astype(object).to_numpy(), found)
    per_pair = pairs.assign(_value=found)
    return frame[["run_id", "case_id"]].merge(per_pair, how="left", sort=False)["_value"].to_numpy()


# -- rows from a frame --------------------------------------------------------------------


def _frame_tallies(frame: pd.DataFrame, by: list[str], check: Any, source: str) -> pd.DataFrame:
    counts = COUNTS[source]
    columns = set(frame.columns)
    if {"k", "n"} <= columns:
        if "check" not in columns:
            raise ArgumentError(
                "a frame of counts ('k', 'n') needs a 'check' column; got columns "
                f"{list(frame.columns)!r}"
            )
        _check_counts(frame, [c for c in counts if c in columns])
        rows = _select_checks(frame, check)
        _require(rows, by, counts)
        keep = dict.fromkeys([*by, *(["case_id"] if "case_id" in rows.columns else []), "check"])
        rows = rows[list(keep) + [c for c in counts if c in columns]].copy()
        for c in counts:
            if c not in columns:
                rows[c] = 0
        return _finish(rows, by, counts)
    if source == "checks":
        missing = [c for c in ("check", "outcome") if c not in columns]
        if missing:
            raise ArgumentError(
                f"'data' must hold check outcomes (columns 'check' and 'outcome') or counts "
                f"('k', 'n', 'check'); missing {missing!r} in {list(frame.columns)!r}"
            )
        rows = _frame_check_rows(frame, derive_all=_wants_all(check))
    else:
        if "verdict" not in columns:
            raise ArgumentError(
                f"with source='verdicts', 'data' must have a 'verdict' column; got "
                f"{list(frame.columns)!r}"
            )
        rows = _frame_verdict_rows(frame)
    rows = _select_checks(rows, check)
    _require(rows, by, counts)
    keys = list(dict.fromkeys([*by, *(["case_id"] if "case_id" in rows.columns else [])]))
    factors = [_Factor(c, rows[c]) for c in [*keys, "check"]]
    codes, table = _count(
        _combine(factors), [f.size for f in factors], rows["class"].to_numpy(), CLASSES
    )
    stage = pd.DataFrame({f.name: f.column(c) for f, c in zip(factors, codes, strict=True)})
    for name, values in _counts_frame(table, source).items():
        stage[name] = values
    return _finish(stage, by, counts)


def _check_counts(rows: pd.DataFrame, counts: list[str]) -> None:
    """Counts are whole numbers >= 0 in every row, and ``k <= n``: never guessed."""
    for column in counts:
        values = pd.to_numeric(rows[column], errors="coerce")
        bad = values.isna() | (values < 0) | (values != np.floor(values))
        if bad.any():
            where = int(np.flatnonzero(bad.to_numpy())[0])
            raise ArgumentError(
                f"'{column}' must be a whole number >= 0 in every row of a frame of counts; "
                f"got {_plain(rows[column].iloc[where])!r} in row {_plain(rows.index[where])!r}"
            )
    over = rows["k"].to_numpy() > rows["n"].to_numpy()
    if over.any():
        where = int(np.flatnonzero(over)[0])
        raise ArgumentError(
            f"'k' (passed) must not exceed 'n' (scored) in a frame of counts; got k="
            f"{_plain(rows['k'].iloc[where])!r}, n={_plain(rows['n'].iloc[where])!r} in row "
            f"{_plain(rows.index[where])!r}"
        )


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, so messages read ``7``, not
    ``np.int64(7)``."""
    return value.item() if isinstance(value, np.generic) else value


def require_cases(data: Run | pd.DataFrame, why: str) -> None:
    """A frame must say which case each row belongs to, in every row."""
    if not isinstance(data, pd.DataFrame):
        return
    if "case_id" not in data.columns:
        raise ArgumentError(
            f"'data' must have a 'case_id' column ({why}); got columns {list(data.columns)!r}"
        )
    missing = data["case_id"].isna()
    if missing.any():
        raise ArgumentError(
            f"'case_id' must be given in every row ({why}); got {int(missing.sum())} rows "
            f"without one, e.g. row {data.index[int(np.flatnonzero(missing.to_numpy())[0])]!r}"
        )


def _require(rows: pd.DataFrame, by: list[str], counts: list[str]) -> None:
    unknown = [c for c in by if c not in rows.columns]
    if unknown:
        have = [c for c in rows.columns if c not in (*counts, "class")]
        raise ArgumentError(
            f"'by' names columns the frame does not have: {unknown!r}; it has {have!r}"
        )


def _wants_all(check: Any) -> bool:
    return check is None or check == ALL or (not isinstance(check, str) and ALL in check)


def _frame_check_rows(frame: pd.DataFrame, *, derive_all: bool) -> pd.DataFrame:
    code = check_outcome(frame["outcome"])
    incomplete = _incomplete(frame)
    rows = frame.drop(columns=[c for c in _CHECK_LEVEL if c != "check" and c in frame.columns])
    identity = [c for c in frame.columns if c not in _CHECK_LEVEL and _hashable(frame[c])]
    if not derive_all or (frame["check"] == ALL).any() or "case_id" not in identity:
        rows["class"] = classify(code, incomplete)
        return rows
    # A sample is a distinct combination of every column that is not about the check.
    sample = frame.groupby(identity, observed=True, dropna=False, sort=False).ngroup().to_numpy()
    _, first = np.unique(sample, return_index=True)
    classes, present, every = classify_checks(code, incomplete, sample, len(first))
    rows["class"] = classes
    derived = frame.iloc[first[present]][identity].reset_index(drop=True)
    derived["check"] = ALL
    derived["class"] = every
    return pd.concat([rows, derived], ignore_index=True)


def _frame_verdict_rows(frame: pd.DataFrame) -> pd.DataFrame:
    _check_verdict_values(frame["verdict"])
    rows = frame
    if {"annotator", "created_at"} <= set(frame.columns):
        identity = [c for c in (*KEY, "annotator") if c in frame.columns]
        reviewed = frame[frame["verdict"].notna()].sort_values("created_at", kind="stable")
        latest = reviewed.drop_duplicates(identity, keep="last")
        latest = latest[(latest["verdict"] != UNREVIEWED).to_numpy()]
        rows = pd.concat([latest, frame[frame["verdict"].isna()]], ignore_index=True)
    incomplete = _incomplete(rows)
    rows = rows.drop(columns=[c for c in ("status", "created_at", "reason") if c in rows.columns])
    return _with_verdict_classes(rows.reset_index(drop=True), incomplete)


def _incomplete(frame: pd.DataFrame) -> np.ndarray:
    if "status" in frame.columns:
        status = frame["status"]
        return np.asarray((status.notna() & (status != "completed")).to_numpy(dtype=bool))
    if "incomplete" in frame.columns:
        return np.asarray(frame["incomplete"].fillna(False).to_numpy(dtype=bool))
    return np.zeros(len(frame), dtype=bool)


def _check_verdict_values(verdict: pd.Series) -> None:
    bad = sorted(set(verdict.dropna().astype(object)) - {*VERDICTS, UNREVIEWED})
    if bad:
        options = ", ".join(map(repr, (*VERDICTS, UNREVIEWED)))
        raise ArgumentError(f"'verdict' values must be one of {options}; got {bad!r}")


def _hashable(column: pd.Series) -> bool:
    if column.dtype != object:
        return True
    first = column.dropna().head(1)
    return first.empty or not isinstance(first.iloc[0], list | dict | set | np.ndarray)


# -- shared -------------------------------------------------------------------------------


def check_names(rows: pd.DataFrame) -> list[str]:
    """The check names present in rows, in category (or first-seen) order."""
    column = rows["check"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        used = np.bincount(codes[codes >= 0], minlength=len(column.cat.categories)) > 0
        return [str(c) for c, on in zip(column.cat.categories, used, strict=True) if on]
    return [str(c) for c in pd.unique(column.dropna())]


def _select_checks(rows: pd.DataFrame, check: Any) -> pd.DataFrame:
    if check is None:
        return rows
    wanted = names("check", check)
    available = check_names(rows)
    # "all" may be asked of any run: with no check results it simply has no rows.
    unknown = [c for c in wanted if c not in available and c != ALL]
    if unknown:
        options = ", ".join(repr(c) for c in available) or "none (no check results)"
        raise ArgumentError(f"'check' must be one of {options}; got {unknown!r}")
    if set(wanted) == set(available):
        return rows
    column = rows["check"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        keep = np.append(column.cat.categories.isin(wanted), False)
        return rows[keep[column.cat.codes.to_numpy()]]
    return rows[column.isin(wanted).to_numpy()]


def _finish(stage: pd.DataFrame, by: list[str], counts: list[str]) -> pd.DataFrame:
    if "tags" in by:
        stage = stage.explode("tags", ignore_index=True)
    keys = [*by, "check"]
    grouped = stage.groupby(keys, observed=True, dropna=False, sort=True)
    out = grouped[counts].sum()
    if "case_id" in stage.columns:
        out.insert(0, "cases", grouped["case_id"].nunique())
    else:
        out.insert(0, "cases", pd.array([pd.NA] * len(out), dtype="Int64"))
    out = out.reset_index()
    if isinstance(out["check"].dtype, pd.CategoricalDtype):
        out["check"] = out["check"].cat.remove_unused_categories()
    for c in counts:
        out[c] = out[c].astype("int64")
    return out
