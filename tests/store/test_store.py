import json
import stat
from pathlib import Path

import pytest

from evalnb import Case, Function, StoreError, run, store


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def small_run(out, repeats=2):
    cases = [Case("a", prompt="x", checks=[{"type": "contains", "text": "x"}])]
    return run(
        cases,
        Function(lambda r: r.prompt, threaded=False),
        repeats=repeats,
        out=out,
        progress=False,
    )


def test_run_directory_is_private_and_parts_are_0600(tmp_path):
    out = tmp_path / "runs" / "one"
    small_run(out)
    assert mode(out) == 0o700
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.parent.name for p in files} == {"one", "samples", "checks", "cases", "verdicts"}
    assert all(mode(p) == 0o600 for p in files)
    assert all(mode(p) == 0o700 for p in out.rglob("*") if p.is_dir())


def test_existing_directory_is_refused_and_left_alone(tmp_path):
    out = tmp_path / "one"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(StoreError, match="already exists"):
        small_run(out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_parts_carry_the_declared_schema_and_version(tmp_path):
    import pyarrow.parquet as pq

    small_run(tmp_path / "r")
    (part,) = (tmp_path / "r" / "samples").glob("part-*.parquet")
    schema = pq.read_schema(part)
    assert schema.equals(store.SAMPLES_SCHEMA, check_metadata=False)
    assert schema.metadata[b"evalnb.schema_version"] == b"1"
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["schema_version"] == store.SCHEMA_VERSION
    assert manifest["status"] == "complete"


def test_a_checks_part_without_its_samples_part_is_not_committed(tmp_path):
    out = tmp_path / "r"
    small_run(out)
    (part,) = (out / "samples").glob("part-*.parquet")
    part.unlink()  # as if the process died between the two renames
    assert store.read_table(out, "checks").num_rows == 0
    assert store.remove_orphan_parts(out) == [out / "checks" / part.name]


def test_schema_doc_matches_the_code():
    with open("docs/schema.md") as handle:
        assert handle.read() == store.schema_markdown()


def test_read_table_rejects_unknown_columns(tmp_path):
    small_run(tmp_path / "r")
    with pytest.raises(ValueError, match=r"not in the samples schema: \['nope'\]"):
        store.read_table(tmp_path / "r", "samples", ["nope"])


def test_manifest_of_another_schema_version_is_refused(tmp_path):
    out = tmp_path / "r"
    small_run(out)
    manifest = json.loads((out / "manifest.json").read_text())
    store.write_json_atomic(out / "manifest.json", {**manifest, "schema_version": 99})
    with pytest.raises(StoreError, match="'schema_version' must be 1; got 99"):
        store.read_manifest(out)


def test_a_run_directory_is_a_folder_or_a_file_url_and_an_object_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    import evalnb

    url = (tmp_path / "by url").as_uri()  # file:///.../by%20url
    evalnb.run([Case(id="c", prompt="p")], Function(lambda r: "ok"), out=url, progress=False)
    assert (tmp_path / "by url" / "manifest.json").is_file()
    assert len(evalnb.load(url).samples) == 1
    monkeypatch.chdir(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalnb.cli",
            "run",
            str(Path(__file__).parents[2] / "data" / "cases" / "shop.jsonl"),
            "--standin",
            "--out",
            "s3://bucket/runs/shop",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "s3:// has no atomic rename or lock" in done.stderr
    assert not (tmp_path / "s3:").exists()


def test_an_atomic_write_leaves_the_old_file_or_the_new_one_never_a_part(tmp_path):
    path = tmp_path / "scoring.json"
    assert store.write_atomic(path, "first")
    assert path.read_text() == "first" and mode(path) == 0o600
    with pytest.raises(RuntimeError), store.atomic_file(path) as handle:
        handle.write(b"half of the seco")
        raise RuntimeError("the disk filled")
    assert path.read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["scoring.json"]  # no temporary left
    assert store.write_atomic(path, "second") and path.read_text() == "second"


def test_an_exclusive_write_places_nothing_over_an_existing_file(tmp_path):
    path = tmp_path / "shard.json"
    assert store.write_atomic(path, b"one", exclusive=True)
    assert not store.write_atomic(path, b"two", exclusive=True)
    assert path.read_bytes() == b"one"
    assert [p.name for p in tmp_path.iterdir()] == ["shard.json"]


def test_the_run_directory_layout_is_named_by_the_store(tmp_path):
    out = tmp_path / "run"
    small_run(out)
    assert store.is_run_dir(out) and not store.is_run_dir(tmp_path)
    assert store.manifest_path(out) == out / "manifest.json"
    written = store.write_import_record(out, {"format": "promptfoo"})
    assert written == store.imported_path(out) == out / "imported.json"
    assert json.loads(written.read_text()) == {"format": "promptfoo"} and mode(written) == 0o600
    assert store.scoring_path(out, "again") == out / "scores" / "again"
    assert store.drafts_path(out, "ada", "1f2e") == out / "verdicts" / "drafts-ada-1f2e.json"
