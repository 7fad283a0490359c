"""Loading runs into frames; also the helpers the other analysis tests use to write runs."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from evalnb._exceptions import StoreError
from evalnb._types import CheckResult, Sample
from evalnb.analysis import load, rates
from evalnb.store import (
    RunWriter,
    read_table,
)
from tests.builders import T0, counts_run, write_run

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
