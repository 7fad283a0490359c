"""Soak (issue 16): 20,000 samples through `evalnb run` against the real stand-in, with every
fault kind it can inject, the runner killed with SIGKILL midway and resumed to completion.

Every sample sends a distinct body (the choices are shuffled per repeat), and the stand-in
picks the faults a body meets from the body's hash and its seed, so the fate of every sample
is known before the run: the test replays the stand-in's own schedule and the client's retry
rules and compares each stored sample with it exactly. The stand-in is restarted (same seed,
same faults) for the resume, as a server might be after an outage, so each body meets its
schedule from its first attempt in the session that stores it.

Figures (samples, faults by kind, the kill, peak memory, wall time) are printed (`pytest -s`)
and written to ``soak.json`` in the test's folder. Nothing here is timed against a target.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from evalnb.standin import FAULT_KINDS, StandIn
from evalnb.standin._faults import parse_faults
from evalnb.standin._server import _canonical, _StandIn
from evalnb.store import read_table
from evalnb.store._doctor import diagnose

pytestmark = pytest.mark.slow

CASES, VARIANTS, REPEATS = 1000, ("plain", "careful", "system", "warm"), 5
TOTAL = CASES * len(VARIANTS) * REPEATS  # 20,000
SEED = 16
CONCURRENCY = 64
MAX_RETRIES = 2
# Far above what an ordinary reply takes here even under load, so only a hang times out.
REQUEST_TIMEOUT = 5.0
KILL_AT = 0.4  # share of the samples on disk when the runner is killed
PEAK_BOUND_MB = 1536

# Retried to success (times <= MAX_RETRIES), or failing every attempt (times -1), per kind.
# The first fault of the list that picks a body hits it; once a limited one is used up the
# next one that picks the body may hit it, so some samples meet two kinds.
FAULTS = [
    {"kind": "status_429", "times": 2, "rate": 0.02, "retry_after": 0.1},
    {"kind": "status_429", "rate": 0.004, "retry_after": 0.1},
    {"kind": "status_500", "times": 1, "rate": 0.02},
    {"kind": "status_500", "rate": 0.004},
    {"kind": "drop", "times": 1, "rate": 0.02},
    {"kind": "drop", "rate": 0.004},
    {"kind": "hang", "times": 1, "rate": 0.002, "ms": 60_000},
    {"kind": "hang", "rate": 0.002, "ms": 60_000},
    {"kind": "malformed", "rate": 0.01},
    {"kind": "empty", "rate": 0.01},
    {"kind": "latency", "rate": 0.05, "ms": 30},
    {"kind": "overloaded", "times": 1, "rate": 0.01, "retry_after": 0.1},
]
# What the client does after one attempt meets a fault (None: no fault).
RETRIED = {"status_429", "status_500", "drop", "hang", "overloaded"}
FINAL = {None: "completed", "latency": "completed", "empty": "empty", "malformed": "malformed"}
GAVE_UP = {
    "status_429": "error",
    "status_500": "error",
    "drop": "error",
    "hang": "timeout",
    "overloaded": "error",
}
ERROR_TEXT = {
    "status_429": "HTTP 429",
    "status_500": "HTTP 500",
    "overloaded": "HTTP 503",
    "drop": "Server disconnected",
    "hang": f"timed out after {REQUEST_TIMEOUT:g} s",
    "malformed": "not an OpenAI chat completion",
    "empty": "empty answer",
}


def _write_inputs(folder: Path) -> Path:
    """1,000 multiple-choice sums with 12 choices and four variants that shuffle them."""
    lines = []
    for i in range(CASES):
        a, b = 100 + i, 7 + (13 * i) % 89
        total = a + b
        choices = [str(total + d) for d in (-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5)]
        case = {
            "id": f"sum-{i:04d}",
            "prompt": f"What is {a} plus {b}?",
            "choices": choices,
            "target": str(total),
            "checks": [{"type": "choice"}],
        }
        lines.append(json.dumps(case))
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    experiment = folder / "soak.toml"
    experiment.write_text(
        f"""cases = "cases.jsonl"
repeats = {REPEATS}
concurrency = {CONCURRENCY}

[target]
model = "quiz"
max_retries = {MAX_RETRIES}

[[variants]]
name = "plain"
shuffle_choices = true

[[variants]]
name = "careful"
prefix = "Check your work."
shuffle_choices = true

[[variants]]
name = "system"
system = "You are sitting a quiz."
shuffle_choices = true

[[variants]]
name = "warm"
params = {{ temperature = 0.9 }}
shuffle_choices = true
"""
    )
    return experiment


# Runs argv[2:] and writes its PID to argv[1].pid, then its exit code and peak memory to
# argv[1]. The runner is started from this small parent rather than from pytest because a
# child's ru_maxrss also counts its parent's high-water mark at the fork (Linux keeps the
# old memory's peak across exec): from pytest it would report pytest's memory.
_LAUNCHER = """
import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(child.pid))
os.replace(sys.argv[1] + ".tmp", sys.argv[1] + ".pid")
_, status, usage = os.wait4(child.pid, 0)
code, kib = os.waitstatus_to_exitcode(status), usage.ru_maxrss
with open(sys.argv[1], "w") as f:
    json.dump({"returncode": code, "peak_mb": round(kib / 1024, 1)}, f)
"""


class _Runner:
    """One ``evalnb run`` process, its output in ``<logs>.out`` and ``<logs>.err``."""

    def __init__(self, argv: list[str], logs: Path, env: dict[str, str]):
        self.logs = logs
        self.report = logs.with_suffix(".json")
        with (
            open(logs.with_suffix(".out"), "wb") as out,
            open(logs.with_suffix(".err"), "wb") as err,
        ):
            self.launcher = subprocess.Popen(
                [sys.executable, "-c", _LAUNCHER, str(self.report), *argv],
                stdout=out,
                stderr=err,
                env=env,
            )
        pid_file = self.report.with_suffix(".json.pid")
        deadline = time.monotonic() + 30
        while not pid_file.exists():
            assert self.launcher.poll() is None and time.monotonic() < deadline, "no runner"
            time.sleep(0.01)
        self.pid = int(pid_file.read_text())

    @property
    def stderr(self) -> str:
        return self.logs.with_suffix(".err").read_text()

    def running(self) -> bool:
        return self.launcher.poll() is None

    def wait(self, timeout: float) -> dict[str, Any]:
        """The runner's exit code and its own peak resident memory in MB."""
        try:
            self.launcher.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.launcher.wait(30)
            raise AssertionError(f"the runner did not finish within {timeout:g} s") from None
        report: dict[str, Any] = json.loads(self.report.read_text())
        return report


def _high_water_mb(pid: int | None) -> float:
    """Peak resident memory of a running process (``VmHWM``), in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return round(int(kib) / 1024, 1)


def _on_disk(run_dir: Path) -> int:
    """Samples in committed parts (a part is renamed into place whole)."""
    return sum(pq.read_metadata(p).num_rows for p in (run_dir / "samples").glob("part-*.parquet"))


def _expected(bodies: list[tuple[str, str]]) -> dict[str, tuple[str, int, list[str]]]:
    """Per body hash: the status and retries the sample must end with, and the faults it met.

    Replays a fresh stand-in's fault schedule (its own code, the same seed and faults) for
    each body, attempt by attempt, with the client's rules: 429, 500, a dropped connection
    and a hang (past the request timeout) are retried up to MAX_RETRIES times.
    """
    state = _StandIn(SEED, parse_faults(FAULTS))
    out = {}
    for sha, model in bodies:
        met: list[str] = []
        for attempt in range(MAX_RETRIES + 1):
            fault = state._fault(None, model, sha)
            kind = fault.kind if fault is not None else None
            if kind is not None:
                met.append(kind)
            if kind not in RETRIED:
                out[sha] = (FINAL[kind], attempt, met)
                break
        else:
            out[sha] = (GAVE_UP[met[-1]], MAX_RETRIES, met)
    return out


def _places(run_dir: Path, text: str) -> list[str]:
    """Every place in the run directory holding ``text``: the raw bytes of each file, and
    each column of each Parquet part as read (its pages are compressed on disk)."""
    found = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        if text.encode() in path.read_bytes():
            found.append(str(path))
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            for name in table.column_names:
                if text in json.dumps(table.column(name).to_pylist(), default=str):
                    found.append(f"{path}:{name}")
    return found


def test_soak_20000_samples_with_faults_killed_and_resumed(tmp_path: Path) -> None:
    began = time.monotonic()
    experiment = _write_inputs(tmp_path)
    out = tmp_path / "run"
    key = "sk-soak-" + secrets.token_hex(16)
    env = {**os.environ, "EVALNB_SOAK_KEY": key}
    figures: dict[str, Any] = {"samples_planned": TOTAL, "concurrency": CONCURRENCY}

    def argv(server: StandIn) -> list[str]:
        return [
            *(sys.executable, "-m", "evalnb.cli", "run", "--experiment", str(experiment)),
            *("--base-url", server.base_url, "--api-key-env", "EVALNB_SOAK_KEY"),
            *("--request-timeout", f"{REQUEST_TIMEOUT:g}", "--out", str(out), "--no-progress"),
        ]

    # First session: killed with SIGKILL once a good share of the samples is on disk.
    with StandIn(seed=SEED, faults=FAULTS, process=True) as server:
        runner = _Runner(argv(server), tmp_path / "first", env)
        deadline = time.monotonic() + 180
        while (on_disk := _on_disk(out) if (out / "samples").is_dir() else 0) < KILL_AT * TOTAL:
            assert runner.running(), runner.stderr
            assert time.monotonic() < deadline, f"only {on_disk} samples on disk after 180 s"
            time.sleep(0.2)
        os.kill(runner.pid, signal.SIGKILL)
        figures["killed_after_seconds"] = round(time.monotonic() - began, 1)
        killed = runner.wait(30)
        figures["peak_mb_standin_first"] = _high_water_mb(server.pid)
    assert killed["returncode"] == -signal.SIGKILL
    figures["peak_mb_killed_run"] = killed["peak_mb"]
    figures["seen_before_kill"] = on_disk
    figures["on_disk_at_kill"] = len(read_table(out, "samples", ["case_id"]))
    figures["manifest_at_kill"] = json.loads((out / "manifest.json").read_text())["status"]
    assert figures["manifest_at_kill"] == "running"
    # A hard kill may leave a part that never committed, never a torn or repeated one.
    at_kill = Counter(problem.kind for problem in diagnose(out))
    figures["doctor_at_kill"] = dict(at_kill)
    assert set(at_kill) <= {"orphan"}, at_kill
    killed_at = time.monotonic()

    # Second session: --resume to completion against a restarted stand-in.
    with StandIn(seed=SEED, faults=FAULTS, process=True) as server:
        resumed = _Runner([*argv(server), "--resume"], tmp_path / "resume", env)
        finished = resumed.wait(300)
        authorized = [entry["authorized"] for entry in server.requests()]
        figures["peak_mb_standin_resume"] = _high_water_mb(server.pid)
    assert finished["returncode"] == 0, resumed.stderr
    figures["peak_mb_resume"] = finished["peak_mb"]
    figures["resume_seconds"] = round(time.monotonic() - killed_at, 1)
    assert authorized and all(authorized)  # the key was sent with every request

    for log in ("first.err", "resume.err", "first.out", "resume.out"):
        assert "Traceback" not in (tmp_path / log).read_text(), log
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert len(manifest["resumes"]) == 1

    # Exactly one sample per planned key.
    stored = read_table(out, "samples")
    samples = stored.to_pandas()
    keys = samples[["case_id", "variant", "repeat"]]
    assert len(samples) == TOTAL
    assert not keys.duplicated().any()
    assert set(samples.case_id) == {f"sum-{i:04d}" for i in range(CASES)}
    assert set(samples.variant) == set(VARIANTS)
    assert set(samples["repeat"]) == set(range(REPEATS))
    figures["samples_stored"] = len(samples)
    figures["resumed_samples"] = TOTAL - figures["on_disk_at_kill"]

    # Every sample ended as the stand-in's schedule and the client's retries say it must.
    rows = stored.to_pylist()  # None stays None
    bodies = [json.loads(row["request"]) for row in rows]
    shas = [hashlib.sha256(_canonical(body)).hexdigest() for body in bodies]
    assert len(set(shas)) == TOTAL  # distinct bodies: a body's schedule is its sample's
    expected = _expected([(sha, body["model"]) for sha, body in zip(shas, bodies, strict=True)])
    wrong = []
    met: Counter[str] = Counter()
    for sample, sha in zip(rows, shas, strict=True):
        status, retries, kinds = expected[sha]
        met.update(kinds)
        got = (sample["status"], sample["retries"])
        if got != (status, retries):
            where = (sample["case_id"], sample["variant"], sample["repeat"])
            wrong.append((*where, *got, sample["error"], sample["latency_ms"], status, kinds))
        elif status == "completed":
            assert sample["error"] is None and sample["answer"], sample
            if "latency" in kinds:
                assert sample["latency_ms"] >= 30, sample
        else:
            assert ERROR_TEXT[kinds[-1]] in sample["error"], (sample["error"], kinds)
    assert not wrong, f"{len(wrong)} samples differ from the schedule, e.g. {wrong[:5]}"
    assert set(met) == set(FAULT_KINDS), met  # every kind the stand-in has was injected
    statuses = Counter(samples.status)
    # Fault hits over the attempts of the stored samples (in the session that stored each).
    figures["faults_injected_by_kind"] = dict(sorted(met.items()))
    figures["samples_meeting_a_fault"] = sum(1 for _, _, kinds in expected.values() if kinds)
    figures["statuses"] = dict(sorted(statuses.items()))
    figures["retried_to_success"] = int(
        ((samples.status == "completed") & (samples.retries > 0)).sum()
    )
    assert statuses == Counter(status for status, _, _ in expected.values())

    # An incomplete sample fails its check, naming its status; it stays in the denominator.
    checks = read_table(out, "checks", ["case_id", "variant", "repeat", "outcome", "detail"])
    merged = samples[["case_id", "variant", "repeat", "status"]].merge(
        checks.to_pandas(), on=["case_id", "variant", "repeat"], validate="one_to_one"
    )
    incomplete = merged[merged.status != "completed"]
    assert len(incomplete) == TOTAL - statuses["completed"]
    assert not incomplete.outcome.any()
    assert all(s in d for s, d in zip(incomplete.status, incomplete.detail, strict=True))

    doctor = subprocess.run(
        [sys.executable, "-m", "evalnb.cli", "doctor", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert doctor.returncode == 0 and doctor.stdout.strip().endswith("no problems found"), doctor

    logs = ("first.out", "first.err", "resume.out", "resume.err")
    leaks = _places(out, key) + [log for log in logs if key in (tmp_path / log).read_text()]
    figures["key_leaks"] = len(leaks)
    assert not leaks, leaks
    assert any(":prompt" in place for place in _places(out, "What is 100 plus 7?"))  # it looks

    figures["wall_seconds"] = round(time.monotonic() - began, 1)
    (tmp_path / "soak.json").write_text(json.dumps(figures, indent=2))
    print(f"\nsoak figures ({tmp_path / 'soak.json'}):\n{json.dumps(figures, indent=2)}")
    assert figures["peak_mb_killed_run"] < PEAK_BOUND_MB
    assert figures["peak_mb_resume"] < PEAK_BOUND_MB
