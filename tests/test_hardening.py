"""The low findings of the adversarial pass: a raw U+2028 in a JSONL line, fixture paths
checked with the cases file, a trace symlink, folders and reports under ``umask 000``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evalnb import Case, CasesError, Command, load_cases, run, store

ROOT = Path(__file__).resolve().parent.parent


def test_a_raw_line_separator_inside_a_jsonl_string_is_text(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    line = json.dumps({"id": "sep", "prompt": "one\u2028two\u2029three"}, ensure_ascii=False)
    assert "\u2028" in line  # raw, as JSON allows
    path.write_text(line + "\r\n" + json.dumps({"id": "next", "prompt": "p"}) + "\n", "utf-8")
    cases = load_cases(path)
    assert [c.id for c in cases] == ["sep", "next"]
    assert cases[0].prompt == "one\u2028two\u2029three"


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/evalnb.txt", "a/../../b.txt", ""])
def test_a_fixture_path_leaving_the_workspace_is_refused_with_the_cases_file(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "cases.jsonl"
    good = {"id": "ok", "prompt": "p", "fixtures": {"notes/a.txt": "x"}}
    bad = {"id": "bad", "prompt": "p", "fixtures": {name: "x"}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(CasesError) as caught:
        load_cases(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2:") and "fixtures." in message
    assert "relative path that stays inside the workspace" in message
    alone = tmp_path / "good.jsonl"
    alone.write_text(json.dumps(good) + "\n")
    assert load_cases(alone)[0].fixtures == {"notes/a.txt": "x"}


def test_a_trace_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    private = tmp_path / "private.txt"
    private.write_text('{"type": "answer", "text": "PRIVATE-CONTENT"}\n')
    script = f"import os; os.symlink({str(private)!r}, os.environ['EVALNB_TRACE']); print('done')"
    out = tmp_path / "run"
    run(
        [Case(id="c", prompt="p")], Command([sys.executable, "-c", script]), out=out, progress=False
    )
    (row,) = store.read_table(out, "samples").to_pylist()
    assert row["answer"] == "done" and row["status"] == "completed"
    assert not row["trace"]
    assert "PRIVATE-CONTENT" not in json.dumps(row, default=str)
    strict = Command([sys.executable, "-c", script], require_trace=True)
    run([Case(id="c", prompt="p")], strict, out=tmp_path / "strict", progress=False)
    (row,) = store.read_table(tmp_path / "strict", "samples").to_pylist()
    assert row["status"] == "malformed"


def test_folders_and_reports_are_not_world_writable_under_umask_000(tmp_path: Path) -> None:
    script = f"""
import os, sys
os.umask(0)
from evalnb.cli import main
code = main(["run", {str(ROOT / "data" / "cases" / "shop.jsonl")!r}, "--standin",
             "--model", "shop-v1", "--repeats", "1", "--out", sys.argv[1], "--no-progress"])
assert code == 0, code
code = main(["report", sys.argv[1], "--html", sys.argv[2]])
assert code == 0, code
"""
    out = tmp_path / "new" / "deeper" / "run"
    report = tmp_path / "reports" / "report.html"
    report.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), str(report)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    def mode(path: Path) -> int:
        return stat.S_IMODE(os.stat(path).st_mode)

    assert mode(tmp_path / "new") == 0o755 and mode(tmp_path / "new" / "deeper") == 0o755
    assert mode(out) == 0o700 and mode(out / "manifest.json") == 0o600
    assert mode(report) == 0o644
