"""One index of a run's samples, under the review panel and the explorer.

Both browse the samples of a Run. :class:`SampleIndex` reads them once and keeps what both
need, each as an array aligned with the samples it read (a *position* is a row of
``index.samples``, as of ``run.table("samples")``):

- the key codes (``run_id``, ``case_id``, ``variant``) and ``repeat``, and key <-> position;
- per sample the :class:`~evalnb.analysis._tally.OutcomeCode` of a check, tallied once a check;
- an annotator's latest verdicts (or everyone's latest), in the same OutcomeCode codes, the
  one verdict encoding (``pass`` PASS, ``fail`` FAIL, ``needs_review`` UNSCORED, none
  ABSENT, as the tallies count them): "verdict ≠ check" compares two arrays;
- the filters (:class:`SampleFilters`) and the word search, each a mask over the samples.

It draws nothing: :class:`~evalnb.review.ReviewState` and
:class:`~evalnb.explorer.ExploreState` keep their places and pages over it, and a test
drives it alone.

>>> index = SampleIndex(run, annotator="ana")                            # doctest: +SKIP
>>> index.mask(SampleFilters(failing=True, unreviewed=True), check="judge")  # doctest: +SKIP
>>> index.save(index.position(key), "fail", "promises a date")         # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import pandas as pd
import pyarrow as pa

from evalnb._exceptions import ArgumentError
from evalnb.analysis._frames import Run
from evalnb.analysis._tally import ALL, OutcomeCode, check_outcome, check_outcomes, verdict_outcome
from evalnb.review._search import Labels, Texts, search
from evalnb.store import KEY, UNREVIEWED, VERDICTS, VerdictStore, latest_verdicts

__all__ = [
    "LABEL_FIELDS",
    "TEXT_FIELDS",
    "SampleFilters",
    "SampleIndex",
    "SampleKey",
    "verdict_code",
    "verdict_word",
]

#: Each verdict as its :class:`OutcomeCode` code, the code the tallies count it by.
VERDICT_CODES: dict[str, int] = dict(
    zip(VERDICTS, verdict_outcome(pd.Series(VERDICTS)).tolist(), strict=True)
)
_WORDS: dict[int, str] = {code: word for word, code in VERDICT_CODES.items()}
_CODED = ("run_id", "case_id", "variant")
#: The model-written columns, read at the first view or search.
_TEXTS = ["prompt", "answer", "error", "requested", "executed"]
#: What :meth:`SampleIndex.search` looks in: the texts, and the labels of a sample.
TEXT_FIELDS = ("prompt", "answer", "detail")
LABEL_FIELDS = ("case_id", "variant", "repeat", "status", "checks", "verdict")


class SampleKey(TypedDict):
    """Which sample: the key columns of the samples table."""

    run_id: str
    case_id: str
    variant: str
    repeat: int


def verdict_code(verdict: str) -> int:
    """The code kept per sample for a saved value; ``unreviewed`` (taken back) is ABSENT."""
    if verdict == UNREVIEWED:
        return int(OutcomeCode.ABSENT)
    if verdict not in VERDICT_CODES:
        options = ", ".join(repr(v) for v in VERDICTS)
        raise ArgumentError(f"'verdict' must be one of {options}; got {verdict!r}")
    return VERDICT_CODES[verdict]


def verdict_word(code: int) -> str | None:
    """The verdict a code stands for (None: no verdict)."""
    return _WORDS.get(int(code))


@dataclass(frozen=True)
class SampleFilters:
    """Which samples to keep (every filter set must hold). ``variant`` and ``case`` are
    codes (:meth:`SampleIndex.options`), -1 for all. ``failing``: the check fails;
    ``incomplete``: the sample did not complete; ``flaky``: the draws of its case and
    variant disagree on the check; ``changed``: its case's rate of the check differs
    between the two compared variants; ``reviewed`` / ``unreviewed``: a verdict exists or
    not; ``disagree``: the verdict says the opposite of the check (pass against fail, or
    fail against pass)."""

    variant: int = -1
    case: int = -1
    failing: bool = False
    incomplete: bool = False
    flaky: bool = False
    changed: bool = False
    reviewed: bool = False
    unreviewed: bool = False
    disagree: bool = False


class SampleIndex:
    """The samples of ``run`` (their ``columns`` read once, the key and ``status`` always),
    with ``annotator``'s latest verdicts (None: the latest of anyone's)."""

    def __init__(self, run: Run, columns: Sequence[str] = (), *, annotator: str | None = None):
        self.run = run
        self.annotator = annotator
        self.samples = run.table("samples", ["status", *(c for c in columns if c != "status")])
        self.codes = {c: self.samples[c].cat.codes.to_numpy() for c in _CODED}
        self.repeat = self.samples["repeat"].to_numpy()
        self.incomplete = (self.samples["status"] != "completed").to_numpy(dtype=bool)
        # Held while texts, check rows or outcomes are made: by a click, or a worker thread.
        self._building = threading.RLock()
        self._outcomes: dict[str, np.ndarray] = {}
        self._rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._texts: pd.DataFrame | None = None
        self._search_texts: Texts | None = None
        self._lookup: tuple[pd.Index, int] | None = None
        self._cell: np.ndarray | None = None
        self._cell_counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._stores: dict[str, VerdictStore] = {}
        self.load_verdicts()

    def __len__(self) -> int:
        return len(self.samples)

    # -- keys -----------------------------------------------------------------------------

    def key(self, position: int) -> SampleKey:
        """The key of the sample at ``position``."""
        s = self.samples
        return {
            "run_id": str(s["run_id"].iat[position]),
            "case_id": str(s["case_id"].iat[position]),
            "variant": str(s["variant"].iat[position]),
            "repeat": int(s["repeat"].iat[position]),
        }

    def positions(self, keys: pd.DataFrame) -> np.ndarray:
        """For each row of ``keys`` (the columns of :class:`SampleKey`), the position of its
        sample; -1 for a sample not there."""
        index, span = self._keys()
        missing = [c for c in KEY if c not in keys.columns]
        if missing:
            raise ArgumentError(f"sample keys must have the columns {KEY!r}; missing {missing!r}")
        repeat = pd.to_numeric(keys["repeat"], errors="coerce").fillna(-1).to_numpy(np.int64)
        codes = [self._codes_of(c, keys[c]) for c in _CODED]
        absent = (repeat < 0) | (repeat >= span)
        for c in codes:
            absent |= c < 0
        found = index.get_indexer(self._composite(codes, np.clip(repeat, 0, span - 1), span))
        return np.where(absent, -1, found).astype(np.int64)

    def position(self, key: Mapping[str, Any]) -> int:
        """The position of the sample ``key`` names; -1 when it is not there."""
        try:
            one = pd.DataFrame([{c: key[c] for c in KEY}])
        except (KeyError, TypeError):
            raise ArgumentError(f"a sample key has {', '.join(KEY)}; got {key!r}") from None
        return int(self.positions(one)[0])

    def _codes_of(self, column: str, values: pd.Series) -> np.ndarray:
        categories = self.samples[column].cat.categories
        return np.asarray(categories.get_indexer(values.astype(object).to_numpy()))

    def _keys(self) -> tuple[pd.Index, int]:
        if self._lookup is None:
            span = int(self.repeat.max(initial=0)) + 1
            codes = [self.codes[c].astype(np.int64) for c in _CODED]
            self._lookup = pd.Index(self._composite(codes, self.repeat, span)), span
        return self._lookup

    def _composite(self, codes: list[np.ndarray], repeat: np.ndarray, span: int) -> np.ndarray:
        key = np.zeros(len(repeat), dtype=np.int64)
        for column, c in zip(_CODED, codes, strict=True):
            key = key * len(self.samples[column].cat.categories) + c
        return key * span + repeat.astype(np.int64)

    def options(self, column: str, among: np.ndarray | None = None) -> list[tuple[str, int]]:
        """(name, code) of each ``variant`` or ``case_id`` of the samples at ``among``
        (positions; None: every sample), for :attr:`SampleFilters.variant` and ``case``."""
        codes = self.codes[column] if among is None else self.codes[column][among]
        present = set(np.unique(codes).tolist())
        names = self.samples[column].cat.categories
        return [(str(name), i) for i, name in enumerate(names) if i in present]

    def code(self, column: str, name: str) -> int:
        """The code of ``name`` in ``column`` (``case_id`` or ``variant``)."""
        categories = self.samples[column].cat.categories
        if name not in categories:
            if column == "case_id":  # a run may have thousands: not listed
                raise ArgumentError(f"'case_id' must be a case of the run; got {name!r}")
            options = ", ".join(repr(str(c)) for c in categories)
            raise ArgumentError(f"'{column}' must be one of {options}; got {name!r}")
        return int(categories.get_loc(name))

    def order(self, positions: np.ndarray, by: Sequence[str | np.ndarray]) -> np.ndarray:
        """``positions`` sorted by ``by``: key columns, or arrays over every sample."""
        keys = [b if not isinstance(b, str) else self._column(b) for b in by]
        return positions[np.lexsort([k[positions] for k in reversed(keys)])]

    def _column(self, name: str) -> np.ndarray:
        return np.asarray(self.repeat if name == "repeat" else self.codes[name])

    # -- outcomes -------------------------------------------------------------------------

    def outcome(self, check: str | None = ALL) -> np.ndarray:
        """Per sample the :class:`OutcomeCode` of ``check`` (a name, a type, or ``"all"``)."""
        check = ALL if check is None else check
        with self._building:
            if check not in self._outcomes:
                self._outcomes[check] = check_outcomes(self.run, check)[0]
            return self._outcomes[check]

    def checks_of(self, position: int) -> list[tuple[str, int, Any]]:
        """(name, :class:`OutcomeCode` code, detail) of each check of the sample at ``position``."""
        at, names, outcomes, details = self._check_rows()
        start = int(np.searchsorted(at, position, "left"))
        end = int(np.searchsorted(at, position, "right"))
        return [(str(names[i]), int(outcomes[i]), details[i]) for i in range(start, end)]

    def _check_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        with self._building:
            if self._rows is None:
                rows = check_outcomes(self.run, ALL)[1].sort_values("position", kind="stable")
                names = np.asarray(rows["check"].cat.categories.astype(str), dtype=object)
                self._rows = (
                    rows["position"].to_numpy(),
                    names[rows["check"].cat.codes.to_numpy()],
                    check_outcome(rows["outcome"]),
                    rows["detail"].to_numpy(dtype=object),
                )
            return self._rows

    def texts(self) -> pd.DataFrame:
        """The model-written columns of every sample (read at the first call)."""
        with self._building:
            if self._texts is None:
                have = [c for c in _TEXTS if c in self.samples.columns]
                if len(have) == len(_TEXTS):
                    self._texts = self.samples[_TEXTS]
                else:
                    self._texts = self.run.table("samples", _TEXTS)
            return self._texts

    # -- verdicts -------------------------------------------------------------------------

    def load_verdicts(self) -> None:
        """The latest verdict per sample, read again from the run's directories."""
        self.verdict = np.full(len(self.samples), OutcomeCode.ABSENT, dtype=np.int8)
        self._reason: dict[int, str] = {}
        self._saved_at: dict[int, dt.datetime] = {}
        self._by: dict[int, str] = {}
        latest = latest_verdicts(list(self.run.paths.values()), annotator=self.annotator)
        if self.annotator is None:
            latest = latest.sort_values("created_at", kind="stable").drop_duplicates(
                KEY, keep="last"
            )
        if latest.empty:
            return
        at = self.positions(latest)
        found = at >= 0
        latest, at = latest[found], at[found].tolist()
        self.verdict[at] = verdict_outcome(latest["verdict"])
        self._reason.update(zip(at, latest["reason"].fillna("").astype(str), strict=True))
        self._saved_at.update(zip(at, latest["created_at"], strict=True))
        self._by.update(zip(at, latest["annotator"].astype(str), strict=True))

    def verdict_of(self, position: int) -> str | None:
        """The latest verdict on the sample at ``position`` (None: none)."""
        return verdict_word(self.verdict[position])

    def reason(self, position: int) -> str:
        """The reason saved with it (``""``: none)."""
        return self._reason.get(position, "")

    def saved_at(self, position: int) -> dt.datetime | None:
        """When it was saved (UTC)."""
        return self._saved_at.get(position)

    def verdict_by(self, position: int) -> str:
        """Who gave it (``""``: nobody)."""
        return self._by.get(position, "")

    def note(
        self,
        position: int,
        verdict: str,
        reason: str = "",
        saved_at: dt.datetime | None = None,
        by: str = "",
    ) -> None:
        """Know that the sample at ``position`` now has ``verdict`` (``unreviewed``: none),
        given by ``by`` at ``saved_at`` with ``reason``."""
        code = verdict_code(verdict)
        self.verdict[position] = code
        for kept in (self._reason, self._saved_at, self._by):
            kept.pop(position, None)
        if code == OutcomeCode.ABSENT:
            return
        self._reason[position], self._by[position] = reason, by
        if saved_at is not None:
            self._saved_at[position] = saved_at

    def save(
        self,
        position: int,
        verdict: str,
        reason: str = "",
        design: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Save ``annotator``'s ``verdict`` (or ``unreviewed``) on the sample at
        ``position`` through the run's verdict store, with ``design`` (how the review chose
        the sample: :data:`evalnb.store.DESIGN_COLUMNS`), then know it. Returns the row
        written; when writing fails nothing changes here."""
        if self.annotator is None:
            raise ArgumentError("'annotator' is needed to save a verdict; got None")
        if not 0 <= position < len(self.samples):
            raise ArgumentError(
                f"'position' must be a sample position of the run; got {position!r}"
            )
        verdict_code(verdict)
        key = self.key(position)
        store = self._stores.get(key["run_id"])
        if store is None:
            # Opened at the first verdict: the store's run id is the Run's, already read.
            path = self.run.paths[key["run_id"]]
            store = self._stores[key["run_id"]] = VerdictStore(path, run_id=key["run_id"])
        row = store.save(
            key["case_id"],
            key["variant"],
            key["repeat"],
            annotator=self.annotator,
            verdict=verdict,
            reason=reason,
            design=design,
        )
        self.note(position, verdict, row["reason"], row["created_at"], self.annotator)
        self.run.forget("verdicts")
        return row

    # -- filters and search ---------------------------------------------------------------

    def mask(
        self,
        filters: SampleFilters,
        check: str | None = ALL,
        pair: tuple[str, str] | None = None,
    ) -> np.ndarray:
        """Which samples ``filters`` keeps, ``check`` being the check its filters read and
        ``pair`` the two variants ``changed`` compares."""
        f, keep = filters, np.ones(len(self.samples), dtype=bool)
        if f.variant >= 0:
            keep &= self.codes["variant"] == f.variant
        if f.case >= 0:
            keep &= self.codes["case_id"] == f.case
        if f.incomplete:
            keep &= self.incomplete
        if f.reviewed:
            keep &= self.verdict != OutcomeCode.ABSENT
        if f.unreviewed:
            keep &= self.verdict == OutcomeCode.ABSENT
        if not (f.failing or f.disagree or f.flaky or f.changed):
            return keep
        outcome = self.outcome(check)
        if f.failing:
            keep &= outcome == OutcomeCode.FAIL
        if f.disagree:
            judged = (self.verdict <= OutcomeCode.PASS) & (outcome <= OutcomeCode.PASS)
            keep &= judged & (self.verdict != outcome)
        if f.flaky or f.changed:
            k, n = self._cells(ALL if check is None else check)
            if f.flaky:
                keep &= ((k > 0) & (k < n))[self._cell_of()]
            if f.changed:
                keep &= self._changed(k, n, pair)[self.codes["case_id"]]
        return keep

    def _cell_of(self) -> np.ndarray:
        """Each sample's (case, variant) cell, numbered case by case."""
        if self._cell is None:
            variants = len(self.samples["variant"].cat.categories)
            cases = self.codes["case_id"].astype(np.int64)
            self._cell = np.asarray(cases * variants + self.codes["variant"])
        return self._cell

    def _cells(self, check: str) -> tuple[np.ndarray, np.ndarray]:
        """Per (case, variant) cell: passes and scored samples of ``check`` (kept)."""
        if check not in self._cell_counts:
            outcome, cell = self.outcome(check), self._cell_of()
            size = len(self.samples["case_id"].cat.categories) * len(
                self.samples["variant"].cat.categories
            )
            k = np.bincount(cell[outcome == OutcomeCode.PASS], minlength=size)
            n = np.bincount(cell[outcome <= OutcomeCode.PASS], minlength=size)
            self._cell_counts[check] = k, n
        return self._cell_counts[check]

    def _changed(self, k: np.ndarray, n: np.ndarray, pair: tuple[str, str] | None) -> np.ndarray:
        """Per case: both variants of ``pair`` scored and their rates differ."""
        cases = len(self.samples["case_id"].cat.categories)
        if pair is None or pair[0] == pair[1]:
            return np.zeros(cases, dtype=bool)
        variants = len(self.samples["variant"].cat.categories)
        a, b = (self.code("variant", v) for v in pair)
        k, n = k.reshape(cases, variants), n.reshape(cases, variants)
        scored = (n[:, a] > 0) & (n[:, b] > 0)
        return np.asarray(scored & (k[:, a] * n[:, b] != k[:, b] * n[:, a]))

    def search(
        self, query: str, *, fields: Sequence[str] = TEXT_FIELDS, use_regex: bool = False
    ) -> np.ndarray:
        """The samples that hold every word of ``query`` (case-insensitive), or match it as
        a regular expression, in one of ``fields``: :data:`TEXT_FIELDS` (the model's
        texts) and :data:`LABEL_FIELDS` (``repeat`` reads as ``r3``, ``checks`` as the
        outcome of all checks, ``verdict`` as the verdict). A bad or too slow pattern raises
        :class:`~evalnb.review._search.SearchError`, one line."""
        unknown = [f for f in fields if f not in (*TEXT_FIELDS, *LABEL_FIELDS)]
        if unknown:
            options = ", ".join(repr(f) for f in (*TEXT_FIELDS, *LABEL_FIELDS))
            raise ArgumentError(f"'fields' must be among {options}; got {unknown!r}")
        texts = self.search_texts() if any(f in TEXT_FIELDS for f in fields) else None
        labels = [self._labels(f) for f in fields if f in LABEL_FIELDS]
        with self._building:  # the lower-cased texts may still be in the making
            return search(
                query, samples=len(self.samples), texts=texts, labels=labels, use_regex=use_regex
            )

    def search_texts(self) -> Texts:
        """The texts :meth:`search` looks in, made once (a worker thread may make them)."""
        with self._building:
            if self._search_texts is None:
                t = self.texts()
                at, _, _, details = self._check_rows()
                self._search_texts = Texts(
                    prompt=_arrow(t["prompt"]),
                    answer=_arrow(t["answer"]),
                    detail=pa.array(details, type=pa.large_string(), from_pandas=True),
                    detail_sample=at,
                    samples=len(self.samples),
                )
            return self._search_texts

    def warm(self) -> None:
        """Make the texts :meth:`search` looks in and their lower-case forms ahead of the
        first search (a worker thread calls this while a person reads)."""
        texts = self.search_texts()
        for name in TEXT_FIELDS:
            with self._building:
                texts.lower(name)

    def _labels(self, name: str) -> Labels:
        if name == "repeat":
            values, codes = np.unique(self.repeat, return_inverse=True)
            return Labels([f"r{v}" for v in values.tolist()], codes)
        if name == "checks":
            return Labels([o.label for o in OutcomeCode], self.outcome(ALL))
        if name == "verdict":
            return Labels([_WORDS.get(o, "") for o in range(len(OutcomeCode))], self.verdict)
        column = self.samples[name]
        return Labels([str(c) for c in column.cat.categories], column.cat.codes.to_numpy())


def _arrow(column: pd.Series) -> pa.Array:
    return pa.array(column.astype(object).to_numpy(), type=pa.large_string(), from_pandas=True)
