"""The manifest read typed: every key a run writes is a documented field, a wrong-typed key
is one error naming the file and the key, and the design comes back whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalnb
from evalnb import Case, Decided, Function, StoreError
from evalnb.cases import RunDesign
from evalnb.store import Manifest, read_manifest
from evalnb.store._manifest import MEANING


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cases = [
        Case(f"c{i}", prompt=f"say {i}", checks=[{"type": "contains", "text": "1"}])
        for i in range(4)
    ]
    out = tmp_path_factory.mktemp("runs") / "r"
    evalnb.run(
        cases,
        Function(lambda request: "1" if request.variant.name == "b" else "0"),
        variants=["a", "b"],
        repeats=2,
        until=Decided(a="a", b="b"),
        timeout=30,
        out=out,
        progress=False,
    )
    return out


def test_every_key_a_run_writes_is_a_documented_typed_field(run_dir: Path) -> None:
    raw = read_manifest(run_dir)
    manifest = Manifest.read(run_dir)
    assert set(raw) <= set(MEANING)
    assert manifest.run_id == "r" and manifest.status == "complete"
    assert manifest.variant_names == ["a", "b"] and manifest.case_ids == ["c0", "c1", "c2", "c3"]
    assert manifest.repeats == 2 and manifest.timeout == 30.0 and manifest.stopped_by_rule
    assert manifest.started is not None and manifest.started.tzinfo is not None
    assert manifest.raw == raw


def test_the_design_comes_back_from_the_manifest(run_dir: Path) -> None:
    design = RunDesign.from_manifest(read_manifest(run_dir))
    assert [v.name for v in design.variants] == ["a", "b"] and design.repeats == 2
    assert design.until is not None and design.until.describe()["rule"] == "decided"
    assert design.timeout == 30.0 and design.max_tokens is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("repeats", "2", "'repeats' must be int; got '2'"),
        ("variants", {"a": 1}, "'variants' must be list"),
        ("status", None, "'status' must be str; got None"),
        ("schema_version", True, "'schema_version' must be int; got True"),
    ],
)
def test_a_wrong_typed_key_is_one_error_naming_the_file_and_the_key(
    run_dir: Path, tmp_path: Path, key: str, value: object, message: str
) -> None:
    data = {**read_manifest(run_dir), key: value}
    with pytest.raises(StoreError, match=f"^{tmp_path}/m.json: {message}".replace("(", r"\(")):
        Manifest.from_dict(json.loads(json.dumps(data)), f"{tmp_path}/m.json")
