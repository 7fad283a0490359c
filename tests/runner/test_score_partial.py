"""A scoring covers every sample of a complete run, or is asked for, labelled partial and
never read by default; load, gate and report say when a scoring covers fewer samples.

Once ``evalnb score`` on an interrupted run covered the 152 samples present, ``load`` then
read it by default and ``gate --min-rate 0.9`` passed on "152/152 samples" of a 300-sample run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from evalnb import load, store
from evalnb.store import PartialScoringWarning

ROOT = Path(__file__).resolve().parents[2]
SHOP = str(ROOT / "data" / "cases" / "shop.jsonl")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalnb.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _run_args(out: Path, repeats: int = 100) -> list[str]:
    fault = json.dumps({"kind": "latency", "ms": 40})
    return [
        *("run", SHOP, "--standin", "--model", "shop-v1", "--repeats", str(repeats)),
        *("--param", f"standin_fault={fault}", "--concurrency", "2"),
        *("--out", str(out), "--no-progress"),
    ]


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shop run of 400 samples stopped by Ctrl-C part way."""
    out = tmp_path_factory.mktemp("partial") / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "evalnb.cli", *_run_args(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (out / "manifest.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert 0 < len(store.sample_keys(out)) < 400
    return out


def test_an_interrupted_run_is_scored_only_when_asked_and_never_read_by_default(
    interrupted: Path,
) -> None:
    out = interrupted
    written = len(store.sample_keys(out))
    before = sorted(p.name for p in out.rglob("*"))
    refused = cli("score", str(out))
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert f"the run is interrupted with {written} of 400 samples" in refused.stderr
    assert sorted(p.name for p in out.rglob("*")) == before  # nothing written

    done = cli("score", str(out), "--partial", "--label", "part")
    assert done.returncode == 0, done.stderr
    assert "partially (labelled partial) as 'part'" in done.stdout
    info = json.loads((out / "scores" / "part" / "scoring.json").read_text())
    assert info["partial"] is True and info["samples"] == written and info["planned"] == 400

    resumed = cli(*_run_args(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    with pytest.warns(PartialScoringWarning, match=rf"'part' covers {written} of the run's 400"):
        run = load(out)
        checks = run.checks
    assert checks.groupby(["case_id", "variant", "repeat"]).ngroups == 400
    with pytest.warns(PartialScoringWarning, match="the samples it lacks have no check results"):
        load(out, scoring="part").checks  # noqa: B018 - the read is what warns

    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "warning:" in report.stderr and "'part' covers" in report.stderr
    assert all(line.startswith("evalnb report: warning:") for line in report.stderr.splitlines())
    gate = cli("gate", str(out), "--min-rate", "0.0")
    assert gate.returncode == 0 and "'part' covers" in gate.stderr

    full = cli("score", str(out), "--label", "full")
    assert full.returncode == 0 and "again as 'full'" in full.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load(out).checks.groupby(["case_id", "variant", "repeat"])) == 400


def test_a_run_being_written_is_not_scored_under_its_writer(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli(*_run_args(out, repeats=1)).returncode == 0
    with store.RunLock(out, "run"):
        refused = cli("score", str(out))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert str(os.getpid()) in refused.stderr
    assert not (out / "scores").exists() or not any((out / "scores").iterdir())
