"""The session's phases, ``run`` as ``arun`` made blocking, one count of a run however it is
fed, the judge's one set-up, and what a fresh run imports."""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import evalnb
from evalnb import ArgumentError, Case, Completion, Function, Unscored
from evalnb._prices import price_table
from evalnb._types import Request, Sample
from evalnb.cases import RunDesign
from evalnb.checks._judge import JUDGE
from evalnb.runner import _session
from evalnb.runner._budget import Budget
from evalnb.runner._judging import judging, require_judge
from evalnb.runner._result import Tally
from evalnb.store import read_manifest

PRICES = {"m-small": (1.0, 2.0), "m-large": (10.0, 30.0)}


def cases(n: int = 6) -> list[Case]:
    return [
        Case(f"c{i}", prompt=f"say {i}", checks=[{"type": "contains", "text": "ok"}])
        for i in range(n)
    ]


def test_run_is_arun_made_blocking_with_its_signature_and_docstring() -> None:
    assert inspect.signature(evalnb.run) == inspect.signature(evalnb.arun)
    assert evalnb.run.__doc__ == evalnb.arun.__doc__ and "max_cost" in evalnb.run.__doc__
    assert (evalnb.run.__name__, evalnb.run.__qualname__) == ("run", "run")
    assert not inspect.iscoroutinefunction(evalnb.run)
    assert inspect.iscoroutinefunction(evalnb.arun)
    assert pickle.loads(pickle.dumps(evalnb.run)) is evalnb.run


def test_the_phases_can_be_driven_one_by_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(ArgumentError, match="'concurrency' must be a whole number"):
        RunDesign.build(cases(), repeats=2, concurrency=0)
    design = RunDesign.build(cases(), variants=["a", "b"], repeats=2, concurrency=4)
    session = _session._Session(design, Function(lambda r: "ok"), None, command=None, on_start=None)
    assert len(session.planned) == 6 * 2 * 2 and not out.exists()
    path = session.directory(out, resume=False, overwrite=False)

    async def phases() -> tuple[Any, str]:
        async with session.open(path, resume=False) as opened:
            assert read_manifest(out)["status"] == "running"
            execution = session.execution(opened, None, None, 5000, 5.0)
            status = "interrupted"
            try:
                status = await session.execute(opened, execution, False)
            finally:
                session.finish(opened, execution, status)
        return opened, status

    opened, status = asyncio.run(phases())
    assert read_manifest(out)["status"] == status == "complete"
    result = session.result(opened, status)
    assert result.counts["a"]["completed"] == result.counts["b"]["completed"] == 12


class _Mixed:
    """Answers of every kind, with token counts of two priced models and one unpriced."""

    async def complete(self, request: Request) -> Completion:
        i, repeat = int(request.case.id[1:]), request.repeat
        if i == 0:
            raise evalnb.TargetError("upstream said no", status="error")
        if i == 1 and repeat == 0:
            return Completion(text="  ")
        model = ("m-small", "m-large", "m-unknown")[(i + repeat) % 3]
        text = "ok" if (i + repeat) % 2 else "nope"
        return Completion(text=text, model=model, prompt_tokens=10 * i, completion_tokens=repeat)


def closeness(answer: str, sample: Sample) -> Any:
    """A graded check, unscored on one case."""
    if sample.case_id == "c5":
        return Unscored("not for c5")
    return 1.0 if answer == "ok" else 0.25


def test_a_fresh_run_counted_as_written_says_what_reading_it_back_says(tmp_path: Path) -> None:
    result = evalnb.run(
        cases(),
        _Mixed(),
        variants=["a", "b"],
        repeats=3,
        checks=[closeness],
        prices=PRICES,
        out=tmp_path / "run",
        flush_every=7,  # several parts, so the batches are counted apart
        progress=False,
    )
    tally = Tally(["a", "b"], price_table(PRICES))
    tally.read(result.path)
    read = tally.result(result.path, result.run_id, result.status, Budget(prices=PRICES))
    assert result.counts == read.counts and sum(result.counts["a"].values()) == 18
    assert result.latencies == read.latencies
    assert result.errors == read.errors and result.errors["upstream said no"] == 6
    assert result.checks == read.checks and result.checks["a"]["closeness"][1] == 15
    assert result.scores == read.scores
    assert result.costs == read.costs and result.costs["a"][1] > 0  # some unpriced
    assert result.summary() == read.summary()


def test_a_resumed_run_counts_its_earlier_sessions(tmp_path: Path) -> None:
    calls = []

    def stops(request: Request) -> str:
        calls.append(request.case.id)
        if len(calls) > 5:
            raise KeyboardInterrupt
        return "ok"

    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        evalnb.run(cases(), Function(stops, threaded=False), out=out, concurrency=1)
    result = evalnb.run(cases(), Function(lambda r: "ok"), out=out, resume=True, progress=False)
    assert result.counts["baseline"]["completed"] == 6
    assert result.checks["baseline"]["contains"] == (6, 6)


def test_the_judge_is_required_by_judge_checks_and_must_be_a_target() -> None:
    judged = [[evalnb.checks.build_check({"type": "judge", "rubric": "is it polite?"})]]
    with pytest.raises(ArgumentError, match="pass judge=<target>"):
        require_judge(None, judged)
    with pytest.raises(TypeError, match="'judge' must have an async complete"):
        require_judge("gpt", [])
    require_judge(None, [[]])


def test_judging_opens_counts_and_hands_the_judge_to_the_checks() -> None:
    class Judge:
        opened = closed = 0

        async def __aenter__(self) -> Judge:
            self.opened += 1
            return self

        async def __aexit__(self, *exc: object) -> None:
            self.closed += 1

        async def complete(self, request: Request) -> Completion:
            return Completion(text="PASS")

    judge = Judge()

    async def use() -> int:
        async with judging(judge) as counted:
            assert counted is not None and JUDGE.get() is counted and judge.opened == 1
            await JUDGE.get().complete(None)
            await JUDGE.get().complete(None)
        assert JUDGE.get() is None and judge.closed == 1
        return counted.calls

    assert asyncio.run(use()) == 2


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_runner_loads_the_reading_side_only_to_read(tmp_path: Path) -> None:
    assert {"pandas", "pyarrow.dataset"}.isdisjoint(_loaded_after("import evalnb.runner"))
    fresh = _loaded_after(
        "import evalnb\n"
        f"evalnb.run([evalnb.Case('c', prompt='p')], evalnb.Function(lambda r: 'ok'), "
        f"out={str(tmp_path / 'run')!r}, progress=False)"
    )
    assert "pyarrow.parquet" in fresh and "pyarrow.dataset" not in fresh


def test_a_run_directory_removed_under_the_run_is_one_store_error(tmp_path: Path) -> None:
    import shutil

    import evalnb
    from evalnb import StoreError

    out = tmp_path / "gone"

    def answer(prompt: str) -> str:
        if out.exists() and any((out / "samples").glob("*.parquet")):
            shutil.rmtree(out)  # the first part is saved: a tmp cleaner takes the folder
        return "fine"

    cases = [evalnb.Case(f"c{i}", prompt=f"question {i}") for i in range(40)]
    with pytest.raises(StoreError) as caught:
        evalnb.run(
            cases,
            evalnb.Function(answer, threaded=False),
            out=out,
            flush_every=5,
            concurrency=1,
            progress=False,
        )
    message = str(caught.value)
    assert message.startswith(f"{out}: the run directory was removed while the run was writing")
    assert "\n" not in message
