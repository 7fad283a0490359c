"""What a run says in a notebook: a run that mostly failed says so first, a re-run cell
is offered resume=True / overwrite=True, and an interrupt says what is saved and how to
resume, in Python terms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import evalnb
from evalnb import Case, Completion, StoreError
from evalnb._types import Request
from evalnb.runner import RunInterrupted
from evalnb.standin import StandIn
from evalnb.store import read_table

CASES = [
    Case(id=f"c{i}", prompt=f"question {i}", checks=[{"type": "contains", "text": "ok"}])
    for i in range(4)
]


class Echo:
    async def complete(self, request: Request) -> Completion:
        return Completion(text="ok")


def test_a_run_against_a_stopped_server_says_no_sample_completed(tmp_path: Path) -> None:
    with StandIn(seed=0) as server:
        url = server.base_url
    target = evalnb.OpenAIChat(url, "shop-v1", max_retries=0)
    result = evalnb.run(CASES, target, repeats=2, out=tmp_path / "dead", progress=False)
    assert result.status == "complete"
    summary = result.summary()
    first = summary.splitlines()[0]
    assert first.startswith("WARNING: 0 of 8 samples completed; most common error (8 of 8): ")
    html = result._repr_html_()
    assert html.index("0 of 8 samples completed") < html.index("<table>")
    assert "#cf222e" in html.split("<table>")[0]


def test_a_mostly_failed_run_says_so_and_a_good_one_does_not(tmp_path: Path) -> None:
    class Half:
        async def complete(self, request: Request) -> Completion:
            if request.case.id in ("c0", "c1", "c2"):
                raise evalnb.TargetError("upstream said <no>", status="error")
            return Completion(text="ok")

    result = evalnb.run(CASES, Half(), out=tmp_path / "half", progress=False)
    assert (
        result.alarm() == "1 of 4 samples completed; most common error (3 of 3): upstream said <no>"
    )
    assert "upstream said &lt;no&gt;" in result._repr_html_()
    good = evalnb.run(CASES, Echo(), out=tmp_path / "good", progress=False)
    assert good.alarm() is None and "WARNING" not in good.summary()


def test_a_rerun_cell_is_offered_resume_or_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "run"
    evalnb.run(CASES, Echo(), out=out, progress=False)
    with pytest.raises(StoreError) as caught:
        evalnb.run(CASES, Echo(), out=out, progress=False)
    message = str(caught.value)
    assert "resume=True" in message and "overwrite=True" in message
    assert "--resume" not in message and "\n" not in message
    # The command line keeps its own words.
    with pytest.raises(StoreError, match="--resume"):
        evalnb.run(CASES, Echo(), out=out, progress=False, command=["evalnb", "run"])


def test_overwrite_moves_the_old_run_aside(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "run"
    evalnb.run(CASES, Echo(), out=out, progress=False)
    again = evalnb.run(CASES, Echo(), repeats=2, out=out, overwrite=True, progress=False)
    (aside,) = tmp_path.glob("run.replaced-*")
    assert str(aside) in capsys.readouterr().err
    assert read_table(aside, "samples").num_rows == 4  # nothing lost
    assert read_table(out, "samples").num_rows == 8 and again.path == out
    with pytest.raises(ValueError, match="'overwrite' and 'resume'"):
        evalnb.run(CASES, Echo(), out=out, overwrite=True, resume=True)


def test_an_interrupt_says_what_is_saved_and_how_to_resume(tmp_path: Path) -> None:
    class StopsAtC2:
        stop = True

        async def complete(self, request: Request) -> Completion:
            if request.case.id == "c2" and self.stop:
                raise KeyboardInterrupt
            return Completion(text="ok")

    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt) as caught:
        evalnb.run(CASES, StopsAtC2(), out=out, progress=False, concurrency=1)
    assert isinstance(caught.value, RunInterrupted)
    message = str(caught.value)
    saved = read_table(out, "samples").num_rows
    assert f"interrupted: {saved} of 4 samples saved in {out}" in message
    assert f"out={str(out)!r}, resume=True" in message
    (line,) = caught.value._render_traceback_()
    assert "RunInterrupted" in line and "resume=True" in line
    target = StopsAtC2()
    target.stop = False
    result = evalnb.run(CASES, target, out=out, resume=True, progress=False)
    assert read_table(out, "samples").num_rows == 4 and result.alarm() is None
