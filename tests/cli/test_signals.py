"""Stopping a run from outside: two Ctrl-Cs in a row, or SIGTERM, still save what finished,
mark the run interrupted and leave nothing half-written; the run then resumes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalnb.store import read_table

SHOP = str(Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl")


def _start(out: Path) -> subprocess.Popen[str]:
    fault = json.dumps({"kind": "latency", "ms": 30})
    args = [
        *(sys.executable, "-m", "evalnb.cli", "run", SHOP, "--standin", "--model", "shop-v1"),
        *("--param", f"standin_fault={fault}", "--repeats", "50", "--concurrency", "4"),
        *("--out", str(out), "--no-progress"),
    ]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_samples(process: subprocess.Popen[str], out: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        manifest = out / "manifest.json"
        if manifest.exists() and json.loads(manifest.read_text()).get("target"):
            time.sleep(1.5)  # samples are finishing: some 40 a second
            return
        time.sleep(0.05)
    raise AssertionError("the run never started sending requests")


@pytest.mark.parametrize("stop", ["two-ctrl-c", "sigterm"])
def test_a_stopped_run_saves_what_finished_and_resumes(tmp_path: Path, stop: str) -> None:
    out = tmp_path / "r"
    process = _start(out)
    _wait_for_samples(process, out)
    if stop == "two-ctrl-c":
        process.send_signal(signal.SIGINT)
        time.sleep(0.01)
        process.send_signal(signal.SIGINT)
    else:
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    saved = len(read_table(out, "samples"))
    assert 0 < saved < 4 * 50
    assert not list(out.rglob("*.tmp"))
    resumed = subprocess.run(
        [*process.args, "--resume"], capture_output=True, text=True, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    keys = read_table(out, "samples", ["case_id", "variant", "repeat"]).to_pandas()
    assert len(keys) == 4 * 50 and not keys.duplicated().any()
