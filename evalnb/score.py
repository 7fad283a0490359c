"""Score a stored run again, without calling the target.

The new results go to ``scores/<label>/`` beside the old ones, never over them;
``scoring.json`` is written last, so a half-written rescoring is never read.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from evalnb import store
from evalnb._exceptions import CasesError, StoreError
from evalnb._sync import run_sync
from evalnb._types import Action, Case, Sample, ToolCall
from evalnb.cases import file_sha256, load_cases
from evalnb.checks import CheckSpec, arun_checks, build_checks, built_cases
from evalnb.checks.judge import JUDGE
from evalnb.targets import Target

__all__ = ["ascore", "score"]

_LABEL_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _samples(run_dir: Path) -> list[Sample]:
    rows = store.read_table(run_dir, "samples").to_pylist()
    for row in rows:
        row["tool_calls"] = tuple(ToolCall(**c) for c in row["tool_calls"] or ())
        for key in ("requested", "executed"):
            row[key] = tuple(Action(**a) for a in row[key] or ())
    return [Sample(**row) for row in rows]


def _cases_from_manifest(manifest: dict[str, Any], run_dir: Path) -> list[Case]:
    cases = []
    for item in manifest["cases"]:
        if any(spec.get("type") == "python" for spec in item["checks"]):
            raise CasesError(
                f"{run_dir}/manifest.json: case {item['id']!r} has Python checks, which cannot "
                "be rebuilt from the manifest; pass cases= (or --cases) to score it"
            )
        cases.append(Case(**item))
    return cases


async def ascore(
    run_dir: str | os.PathLike[str],
    *,
    cases: Sequence[Case] | str | os.PathLike[str] | None = None,
    checks: Iterable[CheckSpec] = (),
    label: str | None = None,
    judge: Target | None = None,
) -> str:
    """Async form of :func:`score`, with the same parameters."""
    run_dir = Path(run_dir)
    manifest = store.read_manifest(run_dir)
    source: dict[str, Any] = {"cases": "manifest"}
    if cases is None:
        cases = _cases_from_manifest(manifest, run_dir)
    elif isinstance(cases, str | os.PathLike):
        source = {"cases": str(cases), "sha256": file_sha256(cases)}
        cases = load_cases(cases)
    else:
        source = {"cases": "python"}
    cases = built_cases(cases)
    by_id = {case.id: case for case in cases}
    extra = build_checks(checks)
    if judge is None and any(c.type == "judge" for case in cases for c in case.checks):
        raise ValueError("cases have 'judge' checks: pass judge=<target> (the judge model)")
    label = label or f"score-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S%fZ}"
    if not set(label) <= _LABEL_CHARS or label == "run":
        raise ValueError(
            f"'label' must use letters, digits, '-', '_' or '.' and not be 'run'; got {label!r}"
        )
    folder = run_dir / "scores" / label
    if folder.exists():
        raise StoreError(
            f"{folder}: a scoring labelled {label!r} exists already; choose a new label"
        )
    samples = _samples(run_dir)
    missing = sorted({s.case_id for s in samples} - set(by_id))
    if missing:
        raise CasesError(f"the cases given lack ids the run has: {', '.join(missing)}")
    (run_dir / "scores").mkdir(mode=0o700, exist_ok=True)
    folder.mkdir(mode=0o700)
    writer = store.RunWriter(run_dir)
    token = JUDGE.set(judge)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if isinstance(judge, contextlib.AbstractAsyncContextManager):
                await stack.enter_async_context(judge)
            batch: list[tuple[Sample, Any]] = []
            for sample in samples:
                case = by_id[sample.case_id]
                results = await arun_checks((*case.checks, *extra), sample)
                batch.extend((sample, result) for result in results)
                if len(batch) >= 5000:
                    writer.write_checks(folder, batch)
                    batch = []
            if batch:
                writer.write_checks(folder, batch)
    finally:
        JUDGE.reset(token)
    store.write_json_atomic(
        folder / "scoring.json",
        {
            "created_at": dt.datetime.now(dt.UTC).isoformat(),
            **source,
            "cases_definitions": [case.to_dict() for case in cases],
            "extra_checks": [c.spec for c in extra],
            "samples": len(samples),
        },
    )
    return label


def score(
    run_dir: str | os.PathLike[str],
    *,
    cases: Sequence[Case] | str | os.PathLike[str] | None = None,
    checks: Iterable[CheckSpec] = (),
    label: str | None = None,
    judge: Target | None = None,
) -> str:
    """Recompute the checks of a stored run, without calling the target, into
    ``scores/<label>/`` beside the earlier results; return the label.

    Parameters:
        run_dir: the run directory.
        cases: a cases file or :class:`Case` objects whose checks to use; default: the
            case definitions in the manifest (Python checks cannot be rebuilt from it).
        checks: checks added to every case.
        label: the scoring's name (letters, digits, ``-``, ``_``, ``.``); default
            ``score-<time>``. An existing label is refused.
        judge: the target that answers ``judge`` checks.

    ``evalnb.load`` reads the newest scoring unless told another (``scoring="run"``).

    >>> score("runs/shop", cases="data/cases/shop-stricter.jsonl", label="stricter")
    'stricter'
    """
    return cast(
        str, run_sync(ascore(run_dir, cases=cases, checks=checks, label=label, judge=judge))
    )
