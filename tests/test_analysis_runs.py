"""Loading runs into frames; also the helpers the other analysis tests use to write runs."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from evalnb._exceptions import StoreError
from evalnb._types import CheckResult, Sample
from evalnb.analysis import load, rates
from evalnb.store import (
    VERDICTS_SCHEMA,
    RunWriter,
    create_run_dir,
    read_table,
    write_json_atomic,
)

T0 = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)


def manifest(
    run_id: str,
    cases: Sequence[Mapping[str, Any]],
    variants: Sequence[str],
    repeats: int,
    status: str = "complete",
) -> dict[str, Any]:
    """A manifest with every key the store's contract names."""
    planned = [[c["id"], v, r] for r in range(repeats) for c in cases for v in variants]
    return {
        "schema_version": 1,
        "run_id": run_id,
        "status": status,
        "started_at": T0.isoformat(),
        "ended_at": (T0 + dt.timedelta(minutes=5)).isoformat(),
        "evalnb_version": "0.1.0",
        "python": "3.11",
        "platform": "linux-x86_64",
        "command": ["evalnb", "run"],
        "cases_file": None,
        "cases": [
            {
                "prompt": f"question {c['id']}",
                "fixtures": {},
                "checks": [{"type": "contains", "text": "x"}],
                "review": None,
                "group": c["id"],
                "split": "dev",
                "tags": [],
                "metadata": {},
                **c,
            }
            for c in cases
        ],
        "variants": [{"name": v, "prefix": None, "system": None, "params": {}} for v in variants],
        "repeats": repeats,
        "order": {"scheme": "alternate", "seed": 0, "planned": planned},
        "target": {"kind": "function"},
        "git_revision": None,
    }


def write_run(
    path: Path,
    rows: Iterable[Mapping[str, Any]],
    *,
    cases: Sequence[Mapping[str, Any]] | None = None,
    run_id: str | None = None,
    status: str = "complete",
    batch: int = 1000,
) -> Path:
    """Write a run directory with evalnb's store.

    Each row is a sample: ``case_id``, ``variant``, ``repeat`` and optionally
    ``status`` ("completed"), ``latency_ms``, ``answer``, ``canonical``, and ``checks``
    (a mapping of check name to outcome True / False / None).
    """
    rows = list(rows)
    run_id = run_id or path.name
    case_ids = list(dict.fromkeys(r["case_id"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    repeats = max(r["repeat"] for r in rows) + 1 if rows else 0
    cases = cases if cases is not None else [{"id": c} for c in case_ids]
    create_run_dir(path)
    write_json_atomic(path / "manifest.json", manifest(run_id, cases, variants, repeats, status))
    writer = RunWriter(path)
    for start in range(0, len(rows), batch):
        samples, results = [], []
        for i, row in enumerate(rows[start : start + batch], start):
            sample_status = row.get("status", "completed")
            sample = Sample(
                run_id=run_id,
                case_id=row["case_id"],
                variant=row["variant"],
                repeat=row["repeat"],
                order=i,
                started_at=T0 + dt.timedelta(seconds=i),
                latency_ms=row.get("latency_ms", 100.0),
                status=sample_status,
                error=None if sample_status == "completed" else f"{sample_status} happened",
                answer=row.get("answer", "SECRET ANSWER" if sample_status == "completed" else None),
                prompt=f"question {row['case_id']}",
                request=None,
                response=None,
                canonical=row.get("canonical"),
            )
            samples.append(sample)
            for name, outcome in row.get("checks", {}).items():
                detail = "" if outcome else ("not applicable" if outcome is None else "failed")
                results.append((sample, CheckResult(name, "python", outcome, detail)))
        writer.write(samples, results)
    return path


def counts_rows(
    passes: Mapping[str, Sequence[int]], repeats: int, case_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Sample rows where case i of variant v passes check ``ok`` in passes[v][i] repeats."""
    first = next(iter(passes.values()))
    case_ids = case_ids or [f"case-{i:02d}" for i in range(len(first))]
    return [
        {
            "case_id": case_id,
            "variant": variant,
            "repeat": r,
            "checks": {"ok": r < counts[i]},
        }
        for r in range(repeats)
        for variant, counts in passes.items()
        for i, case_id in enumerate(case_ids)
    ]


def counts_run(
    path: Path,
    passes: Mapping[str, Sequence[int]],
    repeats: int,
    *,
    groups: Sequence[str] | None = None,
) -> Path:
    """A run from per-case pass counts per variant (one check, ``ok``)."""
    rows = counts_rows(passes, repeats)
    case_ids = list(dict.fromkeys(r["case_id"] for r in rows))
    cases = [{"id": c, **({"group": groups[i]} if groups else {})} for i, c in enumerate(case_ids)]
    return write_run(path, rows, cases=cases)


def write_verdicts(path: Path, verdicts: Sequence[Mapping[str, Any]]) -> None:
    """One verdicts part; each verdict names case_id, variant, repeat, annotator, verdict."""
    run_id = json.loads((path / "manifest.json").read_text())["run_id"]
    table = pa.Table.from_pylist(
        [
            {
                "run_id": run_id,
                "reason": "",
                "created_at": T0 + dt.timedelta(minutes=v.get("minute", 0)),
                **{k: val for k, val in v.items() if k != "minute"},
            }
            for v in verdicts
        ],
        schema=VERDICTS_SCHEMA,
    )
    RunWriter(path).write_verdicts(table)


# -- tests of load / Run ----------------------------------------------------------------------


@pytest.fixture
def small_run(tmp_path: Path) -> Path:
    rows = [
        {"case_id": "a", "variant": "base", "repeat": 0, "checks": {"x": True, "y": None}},
        {"case_id": "a", "variant": "base", "repeat": 1, "checks": {"x": False, "y": None}},
        {
            "case_id": "b",
            "variant": "base",
            "repeat": 0,
            "status": "timeout",
            "checks": {"x": False},
        },
        {"case_id": "a", "variant": "new", "repeat": 0, "checks": {"x": True, "y": None}},
    ]
    cases = [
        {"id": "b", "split": "heldout", "tags": ["t1", "t2"], "metadata": {"agreement_min": 0.8}},
        {"id": "a", "group": "g"},
    ]
    return write_run(tmp_path / "r1", rows, cases=cases, batch=2)


def test_load_reads_tables_with_manifest_order_categories(small_run: Path) -> None:
    run = load(small_run)
    samples = run.samples
    assert len(samples) == 4
    assert list(samples["case_id"].cat.categories) == ["b", "a"]
    assert list(samples["variant"].cat.categories) == ["base", "new"]
    assert samples["started_at"].dt.tz is not None
    checks = run.checks
    assert len(checks) == 7
    assert checks["outcome"].isna().sum() == 3
    assert run.verdicts.empty
    assert run.manifest["run_id"] == "r1"
    assert run.run_ids == ["r1"]


def test_key_columns_read_as_categories_equal_the_stored_strings(tmp_path: Path) -> None:
    # Key columns are read as Parquet dictionaries (one per part, each in its own order)
    # and turned into categories: the values must be the stored strings, row for row, with
    # the manifest's order first, a value the manifest does not know after it, nulls null.
    rows = [
        {
            "case_id": case,
            "variant": variant,
            "repeat": r,
            "status": "completed" if (r + i) % 3 else "timeout",
            "checks": {"x": r % 2 == 0, "y": None} if case != "late" else {"z": True},
        }
        for i, case in enumerate(["c3", "c1", "late", "c2"])
        for variant in ("v2", "v1")
        for r in range(3)
    ]
    cases = [{"id": c} for c in ("c1", "c2", "c3")]  # "late" is not in the manifest
    path = write_run(tmp_path / "r", rows, cases=cases, batch=5)
    run = load(path)
    for name, columns in (("samples", ["status", "model"]), ("checks", ["check_type"])):
        frame = run.table(name, columns)
        stored = read_table(path, name).to_pandas()
        assert len(stored.columns) > len(frame.columns)
        for column in frame.columns:
            if isinstance(frame[column].dtype, pd.CategoricalDtype):
                got = frame[column].astype(object).where(frame[column].notna(), None)
                want = stored[column].astype(object).where(stored[column].notna(), None)
                assert got.tolist() == want.tolist(), (name, column)
    samples = run.samples
    assert list(samples["case_id"].cat.categories) == ["c1", "c2", "c3", "late"]
    assert samples["model"].isna().all()
    assert list(run.checks["check"].cat.categories) == ["x", "y", "z"]


def test_cases_frame_holds_case_fields(small_run: Path) -> None:
    cases = load(small_run).cases.set_index("case_id")
    assert cases.loc["b", "split"] == "heldout"
    assert cases.loc["b", "tags"] == ["t1", "t2"]
    assert cases.loc["b", "agreement_min"] == 0.8
    assert pd.isna(cases.loc["a", "agreement_min"])
    assert cases.loc["a", "group"] == "g"


def test_table_reads_only_the_columns_asked_for(small_run: Path) -> None:
    run = load(small_run)
    frame = run.table("samples", ["latency_ms"])
    assert list(frame.columns) == ["run_id", "case_id", "variant", "repeat", "latency_ms"]
    assert set(run._tables["samples"].columns) == set(frame.columns)
    with pytest.raises(ValueError, match=r"'columns' must be samples columns .*got \['nope'\]"):
        run.table("samples", ["nope"])
    with pytest.raises(ValueError, match=r"'name' must be one of .*got 'sample'"):
        run.table("sample")


def test_several_runs_load_as_one(tmp_path: Path) -> None:
    one = counts_run(tmp_path / "one", {"A": [1, 2]}, 2)
    two = counts_run(tmp_path / "two", {"A": [2, 2]}, 2)
    run = load([one, two])
    assert run.run_ids == ["one", "two"]
    assert run.samples.groupby("run_id", observed=True).size().to_dict() == {"one": 4, "two": 4}
    assert len(run.cases) == 4
    with pytest.raises(ValueError, match=r"use run\.manifests"):
        _ = run.manifest
    with pytest.raises(ValueError, match="holds run 'one' twice"):
        load([one, one])


def test_load_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a run directory"):
        load(tmp_path)
    with pytest.raises(ValueError, match="at least one run directory"):
        load([])


def test_run_shows_a_summary_in_notebooks(small_run: Path) -> None:
    run = load(small_run)
    summary = run.summary().set_index("variant")
    assert summary.loc["base", "samples"] == 3
    assert summary.loc["base", "incomplete"] == 1
    page = run._repr_html_()
    assert "r1" in page and "base" in page and "<table" in page
    assert "SECRET ANSWER" not in page  # answers are never shown
    assert "Run(" in repr(run)


def test_run_escapes_model_and_case_text(tmp_path: Path) -> None:
    path = write_run(
        tmp_path / "r",
        [{"case_id": "<b>x</b>", "variant": "v", "repeat": 0, "checks": {"<i>": True}}],
    )
    page = load(path)._repr_html_()
    assert "<b>x</b>" not in page and "&lt;i&gt;" in page


def test_files_are_private(small_run: Path) -> None:
    assert os.stat(small_run).st_mode & 0o777 == 0o700


def test_a_run_that_grows_between_reads_stays_consistent(tmp_path: Path) -> None:
    path = counts_run(tmp_path / "live", {"v": [1, 2]}, 2)
    run = load(path)
    assert rates(run, by="variant", check="ok").iloc[0][["k", "n"]].tolist() == [3, 4]
    sample = Sample(
        run_id="live", case_id="case-00", variant="v", repeat=2, order=9, started_at=T0,
        latency_ms=1.0, status="completed", error=None, answer="x", prompt="p",
        request=None, response=None,
    )  # fmt: skip
    RunWriter(path).write([sample], [(sample, CheckResult("ok", "python", True, ""))])
    # a new samples column re-reads the table, which now has the new sample; the checks
    # read before do not, so rates still match the checks as read
    assert len(run.table("samples", ["latency_ms"])) == 5
    assert rates(run, by="variant", check="ok").iloc[0][["k", "n"]].tolist() == [3, 4]
    assert rates(load(path), by="variant", check="ok").iloc[0][["k", "n"]].tolist() == [4, 5]
