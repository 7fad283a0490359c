"""Resume refuses another target, and every moment of a new run is resumable."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import evalnb
from evalnb import Case, Command, Completion, OpenAIChat, StoreError
from evalnb._types import Request
from evalnb.standin import StandIn
from evalnb.store import read_table

CASES = [
    Case(f"c{i}", prompt=f"say {i}", checks=[{"type": "contains", "text": "ok"}]) for i in range(3)
]


def keys(run_dir: Path) -> list[tuple[str, str, int]]:
    table = read_table(run_dir, "samples", ["case_id", "variant", "repeat"])
    return list(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def test_resume_with_another_model_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with StandIn() as server:
        evalnb.run(
            CASES, OpenAIChat(server.base_url, "shop-v1"), repeats=2, out=out, progress=False
        )
        before = (out / "manifest.json").read_text()
        with pytest.raises(
            StoreError, match="the target's 'model' was 'shop-v1'; this resume's is 'shop-v2'"
        ):
            evalnb.run(
                CASES,
                OpenAIChat(server.base_url, "shop-v2"),
                repeats=2,
                out=out,
                resume=True,
                progress=False,
            )
        with pytest.raises(StoreError, match="'params'"):
            target = OpenAIChat(server.base_url, "shop-v1", params={"temperature": 0.1})
            evalnb.run(CASES, target, repeats=2, out=out, resume=True, progress=False)
    assert (out / "manifest.json").read_text() == before
    assert len(keys(out)) == len(CASES) * 2


def test_resume_with_a_changed_harness_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "harness.py"
    script.write_text("print('ok')\n")
    out = tmp_path / "run"
    evalnb.run(CASES, Command([sys.executable, str(script)]), repeats=1, out=out, progress=False)
    script.write_text("print('no')\n")
    with pytest.raises(StoreError, match="the target's 'files' was"):
        target = Command([sys.executable, str(script)])
        evalnb.run(CASES, target, repeats=1, out=out, resume=True, progress=False)


class _StopsWhileProbed:
    """A target interrupted while the runner asks it to describe itself (as Ctrl-C or a
    kill during a slow /models probe would)."""

    def __init__(self, interrupt: bool) -> None:
        self.interrupt = interrupt

    async def describe(self) -> dict[str, Any]:
        if self.interrupt:
            raise KeyboardInterrupt
        return {"type": "probed"}

    async def complete(self, request: Request) -> Completion:
        return Completion(text="ok")


def test_a_run_interrupted_before_its_first_sample_can_be_resumed(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        evalnb.run(CASES, _StopsWhileProbed(True), repeats=2, out=out, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "running" and manifest["target"] is None
    result = evalnb.run(
        CASES, _StopsWhileProbed(False), repeats=2, out=out, resume=True, progress=False
    )
    assert result.status == "complete"
    assert sorted(keys(out)) == sorted((c.id, "baseline", r) for c in CASES for r in range(2))
    assert json.loads((out / "manifest.json").read_text())["target"] == {"type": "probed"}
