"""A runner killed by SIGKILL takes its ``Command`` harnesses with it (and the helpers they
started), and the sample directories it could not remove are swept when the next runner
starts a harness."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalnb.targets._command import sweep_stale_workspaces

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's"
)

HARNESS = """\
import os, pathlib, subprocess, sys, time
pids, seconds = pathlib.Path(sys.argv[1]), sys.argv[2]
# A helper of its own, in its process group: only the watchdog reaches it.
helper = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
(pids / f"helper-{helper.pid}").write_text("")
(pids / str(os.getpid())).write_text("")
time.sleep(float(seconds))
print("done")
"""

RUNNER = """\
import sys
import evalnb
script, pids, seconds, out, n = sys.argv[1:]
cases = [evalnb.Case(id=f"c{i}", prompt="p") for i in range(int(n))]
target = evalnb.Command([sys.executable, script, pids, seconds])
evalnb.run(cases, target, out=out, concurrency=int(n), progress=False)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody reaped yet is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _runner(tmp_path: Path, name: str, seconds: float, n: int) -> subprocess.Popen[bytes]:
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    pids = tmp_path / f"pids-{name}"
    pids.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    argv = [sys.executable, "-c", textwrap.dedent(RUNNER), str(script), str(pids)]
    argv += [str(seconds), str(tmp_path / name), str(n)]
    return subprocess.Popen(argv, env=env, cwd=tmp_path)


def _workspaces(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("evalnb-*"))


def test_sigkill_of_the_runner_kills_its_harnesses_and_the_next_start_sweeps(tmp_path):
    (tmp_path / "tmp").mkdir()
    runner = _runner(tmp_path, "killed", 120, 4)
    pids_dir = tmp_path / "pids-killed"
    deadline = time.monotonic() + 60
    while len(list(pids_dir.iterdir())) < 8:
        assert runner.poll() is None, "the runner ended before its harnesses started"
        assert time.monotonic() < deadline, "the harnesses did not start"
        time.sleep(0.05)
    harnesses = [int(p.name.removeprefix("helper-")) for p in pids_dir.iterdir()]
    assert len(harnesses) == 8  # four harnesses, four helpers
    assert all(_alive(pid) for pid in harnesses)
    assert len(_workspaces(tmp_path)) == 4

    runner.send_signal(signal.SIGKILL)
    runner.wait(10)
    time.sleep(2)
    survivors = [pid for pid in harnesses if _alive(pid)]
    for pid in survivors:  # never leave them running, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert survivors == []
    # Its sample directories are left behind (nothing ran to remove them)...
    stale = _workspaces(tmp_path)
    assert len(stale) == 4
    assert all(p.name.startswith(f"evalnb-{runner.pid}-") for p in stale)

    # ...until the next runner starts a harness.
    nxt = _runner(tmp_path, "next", 0, 1)
    assert nxt.wait(60) == 0
    assert _workspaces(tmp_path) == []


def test_the_sweep_spares_live_runners_and_other_names(tmp_path):
    live = tmp_path / f"evalnb-{os.getpid()}-abc123"
    other = tmp_path / "evalnb-notapid"
    dead_pid = _dead_pid()
    dead = tmp_path / f"evalnb-{dead_pid}-zz9"
    for folder in (live, other, dead):
        (folder / "workspace").mkdir(parents=True)
    (dead / "workspace" / "private.txt").write_text("marker")
    assert sweep_stale_workspaces(str(tmp_path)) == [dead]
    assert live.is_dir() and other.is_dir() and not dead.exists()


def _dead_pid() -> int:
    """The PID of a process that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)
