"""Score a stored run again, without calling the target.

The new results go to ``scores/<label>/`` beside the old ones, never over them;
``scoring.json`` is written last, so a half-written rescoring is never read.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._exceptions import ArgumentError, CasesError, StoreError
from evalnb._types import Case, Sample
from evalnb.cases import cases_from_manifest, file_sha256, load_cases
from evalnb.checks import (
    CheckSpec,
    acompare,
    arun_checks,
    build_checks,
    built_cases,
    checks_for,
    comparing_checks,
    load_functions,
    require_trust,
)
from evalnb.runner._blocking import blocking
from evalnb.runner._compared import others_of, stored_samples
from evalnb.runner._judging import judging, require_judge
from evalnb.targets import Target

__all__ = ["ascore", "score"]

_LABEL_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


async def ascore(
    run_dir: str | os.PathLike[str],
    *,
    cases: Sequence[Case] | str | os.PathLike[str] | None = None,
    checks: Iterable[CheckSpec] = (),
    label: str | None = None,
    judge: Target | None = None,
    partial: bool = False,
    trust_code: bool = False,
) -> str:
    """Recompute the checks of a stored run, without calling the target, into
    ``scores/<label>/`` beside the earlier results; return the label.

    A scoring covers every sample of a complete run. A run still being written is refused
    (its lock is held); an interrupted one too, unless ``partial=True``: such a scoring is
    labelled partial and :func:`evalnb.load` reads it only when asked for by label.

    Parameters:
        run_dir: the run directory.
        cases: a cases file or :class:`Case` objects whose checks to use; default: the
            case definitions in the manifest. Their checks are rebuilt, a ``python`` check
            by its import path; one that cannot be (a lambda given at run time) is an
            error naming it, unless ``checks`` gives a check of that name again. The
            checks the run gave every case are rebuilt the same way and kept.
        checks: checks added to every case; one named like a case's check (or one the
            run gave every case) takes its place.
        label: the scoring's name (letters, digits, ``-``, ``_``, ``.``); default
            ``score-<time>``. An existing label is refused.
        judge: the target that answers ``judge`` checks.

    ``evalnb.load`` reads the newest scoring unless told another (``scoring="run"``).
    ``score`` is this function made blocking: ``score = blocking(ascore)``.

    >>> score("runs/shop", cases="data/cases/shop-stricter.jsonl", label="stricter")
    'stricter'
    """
    run_dir = store.run_path(run_dir)
    store.read_manifest(run_dir)  # not a run: say so before taking its lock
    # Mistakes in the arguments are said before the lock is taken (nothing is touched).
    if label is not None and (not set(label) <= _LABEL_CHARS or label == "run"):
        raise ArgumentError(
            f"'label' must use letters, digits, '-', '_' or '.' and not be 'run'; got {label!r}"
        )
    if isinstance(cases, str | os.PathLike):
        load_cases(cases)  # a missing or bad file is a located error
    # One writer at a time: a run still being written (or resumed) is not scored under it.
    with store.RunLock(run_dir, "score"):
        return await _score_locked(run_dir, cases, checks, label, judge, partial, trust_code)


async def _score_locked(
    run_dir: Path,
    cases: Sequence[Case] | str | os.PathLike[str] | None,
    checks: Iterable[CheckSpec],
    label: str | None,
    judge: Target | None,
    partial: bool,
    trust_code: bool,
) -> str:
    manifest = store.read_manifest(run_dir)
    given = build_checks(checks)
    names = {c.name for c in given}
    source: dict[str, Any] = {"cases": "manifest"}
    from_manifest, kept = cases_from_manifest(
        manifest, f"{run_dir}/manifest.json", names, cases=cases is None
    )
    extra = (*given, *kept)
    if cases is None:
        cases = from_manifest
    elif isinstance(cases, str | os.PathLike):
        loaded = load_cases(cases)  # a missing or bad file is a located error
        source = {"cases": str(cases), "sha256": file_sha256(cases)}
        cases = loaded
    else:
        source = {"cases": "python"}
    cases = built_cases(cases)
    by_id = {case.id: case for case in cases}
    by_case = {case.id: checks_for(case, extra, replace=True) for case in cases}
    require_judge(judge, by_case.values())
    require_trust(by_case.values(), trust_code, "score")  # a run from elsewhere too
    load_functions(by_case)
    label = label or f"score-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S%fZ}"
    if not set(label) <= _LABEL_CHARS or label == "run":
        raise ArgumentError(
            f"'label' must use letters, digits, '-', '_' or '.' and not be 'run'; got {label!r}"
        )
    folder = store.scoring_path(run_dir, label)
    if folder.exists():
        raise StoreError(
            f"{folder}: a scoring labelled {label!r} exists already; choose a new label"
        )
    samples = stored_samples(run_dir)
    planned = len((manifest.get("order") or {}).get("planned") or ())
    status = manifest.get("status")
    covers_all = status == "complete" and len(samples) >= planned
    if not covers_all and not partial:
        raise StoreError(
            f"{run_dir}: the run is {status} with {len(samples)} of {planned} samples; a "
            "scoring must cover every sample of a complete run: resume it first, or score "
            "what is there with partial=True (--partial), which is never read by default"
        )
    missing = sorted({s.case_id for s in samples} - set(by_id))
    if missing:
        raise CasesError(f"the cases given lack ids the run has: {', '.join(missing)}")
    folder.parent.mkdir(mode=0o700, exist_ok=True)
    folder.mkdir(mode=0o700)
    writer = store.RunWriter(run_dir)
    grouped = {c for c, checks in by_case.items() if comparing_checks([checks])}
    kept_for_groups: list[tuple[Sample, Any]] = []
    async with judging(judge):
        batch: list[tuple[Sample, Any]] = []
        for sample in samples:
            results = await arun_checks(by_case[sample.case_id], sample)
            batch.extend((sample, result) for result in results)
            if sample.case_id in grouped:
                kept_for_groups.extend((sample, result) for result in results)
            if len(batch) >= 5000:
                writer.write_checks(folder, batch)
                batch = []
        # The checks that compare the variants' answers of a case and repeat: per group.
        variants = [str(v.get("name")) for v in manifest.get("variants") or ()]
        batch += await acompare(by_case, samples, variants, others_of(kept_for_groups))
        if batch:
            writer.write_checks(folder, batch)
    store.write_json_atomic(
        folder / store.SCORING,
        {
            "created_at": dt.datetime.now(dt.UTC).isoformat(),
            **source,
            "cases_definitions": [case.to_dict() for case in cases],
            "extra_checks": [c.spec for c in extra],
            "samples": len(samples),
            "planned": planned,
            "run_status": status,
            "partial": not covers_all,
        },
    )
    return label


score = blocking(ascore)
