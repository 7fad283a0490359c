"""Human review as a probability sample: the order a design walks, the inclusion
probability of every sample in any prefix of it, and the weights estimators read back from
the stored verdicts.

The scheme is order sampling with keys, sequential Poisson sampling (Ohlsson 1998), known
in computer science as priority sampling (Duffield, Lund & Thorup 2007, "Priority sampling
for estimation of arbitrary subset sums", JACM 54). Each of the ``N`` samples a design
covers gets a size ``p_i > 0`` (the sizes sum to 1) and a key ``xi_i``; the review walks
the samples by increasing key, and sample ``i`` is in the first ``L`` with probability

    pi_i = min(1, tau * p_i).

For keys ``U_i / p_i`` with independent uniforms ``U_i`` (active), ``tau`` is the key of
sample ``L + 1`` and this is exact: given the other samples' keys, ``i`` is in the prefix
when its key is below the ``L``-th smallest of theirs, which for a sample in the prefix is
``tau``; so ``sum(y_i / pi_i)`` over a prefix is unbiased for ``sum(y_i)`` whatever ``L``
(the reviewer may stop anywhere) and whatever ``y``. For the random and stratified orders
``tau`` is the ``t`` with ``sum(min(1, t p_i)) = L``: ``L / N`` for a random prefix (a
simple random sample), each stratum's share of ``L`` over its samples for a stratified
one. That is why this scheme: any prefix of the review is a probability sample with known
first-order inclusion probabilities, and the order is fixed before the first label, so the
panel can show it. The three designs differ in the sizes and the keys:

- ``random``: ``p_i = 1/N``, keys ``N U_i``: a uniform random order; a prefix is a simple
  random sample, every ``pi_i`` equal.
- ``stratified``: stratum ``h`` gets the share ``alpha_h`` of the labels (``proportional``:
  ``N_h / N``; ``equal``: ``1 / H``), ``p_i = alpha_h / N_h``; the stratum's samples, in a
  random order, get evenly spaced keys ``(j - 1 + u_h) / alpha_h`` with one uniform offset
  ``u_h``. Any prefix holds each stratum's share of it to within one label (systematic
  allocation), and a stratum has ``tau * alpha_h`` samples below ``tau`` on average over
  ``u_h``, so ``pi_i = min(1, tau * p_i)`` again.
- ``active`` (Zrnic & Candès 2024, "Active statistical inference", ICML): ``p_i``
  proportional to the square root of the judge's uncertainty on the sample (the variance
  of the correction is smallest with labels taken in proportion to the spread of
  ``human - judge``), divided by its case's samples (the estimand is a mean of per-case
  rates), mixed with the uniform size so no sample has less than ``floor`` times the
  uniform one; keys ``U_i / p_i``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalnb._exceptions import ArgumentError

__all__ = [
    "ALLOCATIONS",
    "DESIGNS",
    "PROBABILITY_DESIGNS",
    "DesignRead",
    "Ordering",
    "active_sizes",
    "design_order",
    "read_design",
    "repeat_uncertainty",
    "score_uncertainty",
]

#: The designs a review can follow; the first is the default.
DESIGNS = ("random", "stratified", "active", "queue")
#: The designs whose verdicts are a probability sample of the samples they cover.
PROBABILITY_DESIGNS = ("random", "stratified", "active")
#: How a stratified design shares its labels among strata.
ALLOCATIONS = ("proportional", "equal")
POPULATION = "population"
_SALT = 0x5EED_DE51
REVIEWED = "reviewed samples"


@dataclass(frozen=True)
class Ordering:
    """A design's order over ``N`` samples: ``order`` (indexes 0..N-1, first reviewed
    first), and per sample (by index) its ``size`` (sums to 1; NaN for ``queue``) and its
    ``key`` (increasing along ``order``; NaN for ``queue``)."""

    design: str
    seed: int
    order: np.ndarray
    size: np.ndarray
    key: np.ndarray

    def __len__(self) -> int:
        return len(self.order)

    def threshold(self, rank: int) -> float:
        """The ``tau`` of the prefix that ends at ``rank``: the key of the sample after it
        (active), or the ``t`` with ``sum(min(1, t p_i)) = rank + 1`` (random, stratified:
        their prefixes hold a share of each stratum fixed up to rounding, so the expected
        count, not the next key, is what includes a sample); inf after the last."""
        if rank + 1 >= len(self.order):
            return np.inf
        if self.design == "active":
            return float(self.key[self.order[rank + 1]])
        return _target(self.size, rank + 1)

    def inclusion(self, labels: int) -> np.ndarray:
        """Per sample (by index) its probability of being in the first ``labels`` of the
        order, ``min(1, tau * p_i)`` (NaN for ``queue``)."""
        if self.design == "queue":
            return np.full(len(self.order), np.nan)
        if labels <= 0:
            return np.zeros(len(self.order))
        tau = self.threshold(labels - 1)
        with np.errstate(invalid="ignore"):
            return np.minimum(1.0, tau * self.size)


def _target(size: np.ndarray, labels: int) -> float:
    """The ``t`` with ``sum(min(1, t * size)) = labels`` (samples whose share would pass 1
    are taken for certain, and the rest share what is left)."""
    ranked = np.sort(size)[::-1]
    capped = 0
    while True:
        t = (labels - capped) / float(ranked[capped:].sum())
        over = int(np.searchsorted(-ranked, -1.0 / t, side="right"))
        if over <= capped:
            return t
        capped = over


def design_order(
    n: int,
    design: str = "random",
    *,
    seed: int = 0,
    strata: np.ndarray | None = None,
    allocation: str = "proportional",
    sizes: np.ndarray | None = None,
) -> Ordering:
    """The order ``design`` walks over ``n`` samples (see the module's docstring).

    ``strata`` (stratified): one stratum code per sample; ``allocation`` one of
    :data:`ALLOCATIONS`. ``sizes`` (active): per sample its size, positive
    (:func:`active_sizes`); normalised here. ``queue`` keeps the samples as given.
    """
    if design not in DESIGNS:
        options = ", ".join(repr(d) for d in DESIGNS)
        raise ArgumentError(f"'design' must be one of {options}; got {design!r}")
    # the seed salted: a suite simulated from default_rng(seed) draws other uniforms
    rng = np.random.default_rng([seed, _SALT])
    if design == "queue":
        nan = np.full(n, np.nan)
        return Ordering(design, seed, np.arange(n), nan, nan.copy())
    if design == "random":
        size = np.full(n, 1.0 / max(n, 1))
        key = rng.random(n) * n
    elif design == "stratified":
        size, key = _stratified(rng, n, strata, allocation)
    else:
        if sizes is None or len(sizes) != n or not np.all(np.asarray(sizes) > 0):
            raise ArgumentError("an active design needs a positive size for every sample")
        size = np.asarray(sizes, dtype=float) / float(np.sum(sizes))
        key = rng.random(n) / size
    order = np.argsort(key, kind="stable")
    return Ordering(design, seed, order, size, key)


def _stratified(
    rng: np.random.Generator, n: int, strata: np.ndarray | None, allocation: str
) -> tuple[np.ndarray, np.ndarray]:
    if allocation not in ALLOCATIONS:
        options = ", ".join(repr(a) for a in ALLOCATIONS)
        raise ArgumentError(f"'allocation' must be one of {options}; got {allocation!r}")
    if strata is None or len(strata) != n:
        raise ArgumentError("a stratified design needs one stratum per sample")
    codes = np.unique(np.asarray(strata), return_inverse=True)[1].ravel()
    counts = np.bincount(codes)
    share = counts / n if allocation == "proportional" else np.full(len(counts), 1 / len(counts))
    size = share[codes] / counts[codes]
    # Within each stratum a random order, at evenly spaced keys from a random offset.
    shuffled = rng.permutation(n)
    by_stratum = shuffled[np.argsort(codes[shuffled], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    place = np.empty(n, dtype=float)
    place[by_stratum] = np.arange(n) - np.repeat(starts, counts)
    offset = rng.random(len(counts))
    key = (place + offset[codes]) / share[codes]
    return size, key


def active_sizes(
    uncertainty: np.ndarray, cases: np.ndarray | None = None, *, floor: float = 0.1
) -> np.ndarray:
    """Sizes for an active design: ``sqrt(uncertainty)`` (in [0, 1]) divided by the
    samples of each one's case (``cases``: a case code per sample), normalised, then
    mixed with the uniform size so that each is at least ``floor`` times it."""
    if not 0 < floor <= 1:
        raise ArgumentError(f"'floor' must be in (0, 1]; got {floor!r}")
    u = np.sqrt(np.clip(np.nan_to_num(np.asarray(uncertainty, dtype=float), nan=1.0), 0, 1))
    n = len(u)
    if cases is not None:
        per_case = np.bincount(np.asarray(cases))[np.asarray(cases)]
        u = u / per_case
    total = u.sum()
    spread = u / total if total > 0 else np.full(n, 1.0 / n)
    return floor / n + (1 - floor) * spread


def repeat_uncertainty(passed: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """Per sample the disagreement between the judge's outcomes on the repeats of its case
    and variant (``cell``): ``4 q (1 - q)`` with ``q`` the cell's pass share, 1 when half
    pass, 0 when all agree. NaN outcomes (unscored) are left out; a cell with none is 1."""
    scored = np.isfinite(passed)
    k = np.bincount(cell[scored], weights=passed[scored], minlength=cell.max(initial=0) + 1)
    n = np.bincount(cell[scored], minlength=cell.max(initial=0) + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(n > 0, k / n, 0.5)
    spread: np.ndarray = (4 * q * (1 - q))[cell]
    return spread


def score_uncertainty(score: np.ndarray, passed: np.ndarray) -> np.ndarray:
    """Per sample how close a graded judge's ``score`` is to its threshold: 1 at the
    threshold, 0 at the farther end of [0, 1]. The threshold is taken halfway between the
    highest failing and the lowest passing score (``passed``: the outcomes); NaN where a
    sample has no score."""
    score = np.asarray(score, dtype=float)
    ok = np.isfinite(score) & np.isfinite(passed)
    failing, passing = score[ok & (passed == 0)], score[ok & (passed == 1)]
    if not len(failing) or not len(passing):
        return np.full(len(score), np.nan)
    cut = float(np.clip((failing.max() + passing.min()) / 2, 0.0, 1.0))
    reach = max(cut, 1 - cut, 1e-9)
    return np.asarray(np.clip(1 - np.abs(score - cut) / reach, 0, 1))


# -- reading the design back from the verdicts ---------------------------------------------


@dataclass(frozen=True)
class DesignRead:
    """What the verdicts say about how their samples came to be reviewed.

    ``scope`` is ``"population"`` when they are a probability sample of every sample
    (then ``weight`` holds ``1 / pi`` for the rows in the design's complete prefix and 0
    for the others), else ``"reviewed samples"`` (``weight`` is 1 for every row, and no
    interval may speak of the samples not reviewed). ``note`` says which in one sentence."""

    design: str
    scope: str
    weight: np.ndarray
    labels: int
    note: str


def read_design(verdicts: pd.DataFrame, population: int) -> DesignRead:
    """The design behind ``verdicts`` (the latest rows, one per sample and annotator,
    with the columns :data:`evalnb.store.DESIGN_COLUMNS` where a design stored them) over a run of
    ``population`` samples.

    The verdicts are a probability sample when they were all taken under one probability
    design (one name and seed) over all ``population`` samples. Then the prefix is the
    design's order up to the first sample with no verdict; verdicts beyond it are left out
    (weight 0, said in ``note``), and each sample in it weighs ``1 / min(1, tau p_i)``
    with ``tau`` the threshold stored with the prefix's last verdict."""
    n = len(verdicts)
    ones = np.ones(n)
    if n == 0:
        return DesignRead("none", POPULATION, ones, 0, "")
    design = _column(verdicts, "design", object)
    names = sorted({str(d) for d in design if isinstance(d, str)})
    unnamed = int(sum(not isinstance(d, str) for d in design))
    if unnamed or len(names) != 1 or names[0] not in PROBABILITY_DESIGNS:
        why = _why_not(names, unnamed, n)
        return DesignRead("+".join(names) or "none", REVIEWED, ones, n, _reviewed_note(n, why))
    name = names[0]
    seeds = pd.unique(_column(verdicts, "seed", float))
    sizes = pd.unique(_column(verdicts, "population", float))
    if len(seeds) != 1 or len(sizes) != 1:
        why = "they come from several reviews of one design (different seeds or samples)"
        return DesignRead(name, REVIEWED, ones, n, _reviewed_note(n, why))
    if int(sizes[0]) != population:
        why = (
            f"the {name} design covered {int(sizes[0])} of the {population} samples "
            "(a review narrowed with where=)"
        )
        return DesignRead(name, REVIEWED, ones, n, _reviewed_note(n, why))
    rank = _column(verdicts, "rank", float).astype(np.int64)
    seen = np.zeros(population + 1, dtype=bool)
    seen[np.clip(rank, 0, population)] = True
    labels = int(np.argmin(seen))  # the first rank with no verdict
    inside = rank < labels
    last = np.flatnonzero(rank == labels - 1)
    tau = float(_column(verdicts, "threshold", float)[last[0]]) if len(last) else np.inf
    size = _column(verdicts, "size", float)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(inside, 1.0 / np.minimum(1.0, tau * size), 0.0)
    beyond = int((~inside).sum())
    note = ""
    if beyond:
        note = (
            f"{beyond} verdicts beyond the {name} design's first unreviewed sample (its "
            f"place {labels + 1}) are left out: only a complete prefix of the order is a "
            "probability sample"
        )
    return DesignRead(name, POPULATION, weight, labels, note)


def _column(frame: pd.DataFrame, name: str, kind: type) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), None if kind is object else np.nan, dtype=kind)
    if kind is object:
        return np.asarray(frame[name].astype(object).where(frame[name].notna(), None))
    return np.asarray(pd.to_numeric(frame[name], errors="coerce"), dtype=float)


def _why_not(names: list[str], unnamed: int, n: int) -> str:
    if unnamed == n:
        return "no design is recorded with them"
    if names == ["queue"] and not unnamed:
        return "they were taken in queue order (design 'queue')"
    if len(names) > 1 or unnamed:
        listed = ", ".join(repr(d) for d in names)
        return f"they mix designs ({listed}{', and none' if unnamed else ''})"
    return f"their design {names[0]!r} is not a probability sample"


def _reviewed_note(n: int, why: str) -> str:
    return (
        f"these {n} verdicts describe the reviewed samples only, not the run: {why}; "
        "no interval for the run is given"
    )
