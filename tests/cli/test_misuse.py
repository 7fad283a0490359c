"""Ordinary mistakes on the command line: each is one line on stderr naming what and where,
exit 2, no Python traceback, and nothing that existed before is changed.

The commands run in this process (``evalnb.cli.main``), so an exception escaping a command
fails the test; a few run as real processes to see the whole of stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import evalnb
from evalnb import Case, Function
from evalnb.cli import main

SHOP = str(Path(__file__).resolve().parents[2] / "data" / "cases" / "shop.jsonl")


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with its content's hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace of bad and good inputs, shared by every case (none may change it)."""
    root = tmp_path_factory.mktemp("ws")
    (root / "empty.jsonl").write_text("")
    (root / "notjson.jsonl").write_text('{"id": "a", "prompt": "x"}\n{oops\n')
    (root / "cases.txt").write_text('{"id": "a", "prompt": "x"}\n')
    (root / "typo.jsonl").write_text(
        '{"id": "a", "prompt": "x", "checks": [{"type": "contians", "text": "y"}]}\n'
    )
    (root / "dupes.jsonl").write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n')
    (root / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (root / "list.json").write_text("[]")
    (root / "good.jsonl").write_text('{"id": "a", "prompt": "x"}\n')
    (root / "a_file").write_text("not a folder")
    (root / "adir").mkdir()
    (root / "bad.toml").write_text("cases = [\n")
    (root / "unknown.toml").write_text('cases = "good.jsonl"\ncolour = "red"\n')
    (root / "target.toml").write_text('cases = "good.jsonl"\ntarget = "x"\n')
    (root / "variants.toml").write_text('cases = "good.jsonl"\nvariants = "x"\n')
    (root / "nocases.toml").write_text('cases = "absent.jsonl"\n[target]\nstandin = true\n')
    (root / "prefix.toml").write_text(
        'cases = "good.jsonl"\n[target]\nstandin = true\n'
        '[[variants]]\nname = "v"\nprefix_file = "absent.txt"\n'
    )
    (root / "repeats.toml").write_text(
        'cases = "good.jsonl"\nrepeats = "many"\n[target]\nstandin = true\n'
    )
    (root / "policy.json").write_text("{not json")
    (root / "policy_list.json").write_text("[1]")
    run = root / "run"
    evalnb.run(
        [Case("a", prompt="x", checks=[{"type": "contains", "text": "o"}])],
        Function(lambda request: "ok"),
        variants=["v1", "v2"],
        repeats=2,
        out=run,
        progress=False,
    )
    listed = root / "listed"
    listed.mkdir()
    (listed / "manifest.json").write_text("[1, 2]")
    broken = root / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{")
    return root


#: (command line with {ws} for the workspace, a fragment the one line must contain)
CASES: list[tuple[str, str]] = [
    # run: cases files
    ("run {ws}/absent.jsonl --standin", "absent.jsonl"),
    ("run {ws}/adir --standin", "adir"),
    ("run {ws}/notjson.jsonl --standin", "notjson.jsonl:2: not valid JSON"),
    ("run {ws}/cases.txt --standin", "cases file must end in"),
    ("run {ws}/typo.jsonl --standin", "typo.jsonl:1: 'checks[0].type' must be one of"),
    ("run {ws}/empty.jsonl --standin", "no cases found"),
    ("run {ws}/dupes.jsonl --standin", "'id' must be unique"),
    ("run {ws}/deep.jsonl --standin", "deep.jsonl:1"),
    ("run {ws}/list.json --standin", "no cases found"),
    ("run builtin:nope --standin", "builtin:nope"),
    # run: targets and flags
    ("run {ws}/good.jsonl", "choose a target"),
    ("run {ws}/good.jsonl --standin --base-url http://127.0.0.1:9/v1", "choose one model server"),
    ("run {ws}/good.jsonl --base-url ftp://127.0.0.1/v1", "'base_url' must be an http(s) URL"),
    ("run {ws}/good.jsonl --base-url http://127.0.0.1:99999/v1", "99999"),
    ("run {ws}/good.jsonl --base-url http://exa%20mple:80/v1", "base_url"),
    ("run {ws}/good.jsonl --standin --repeats 0", "'repeats' must be a whole number >= 1"),
    ("run {ws}/good.jsonl --standin --repeats -3", "'repeats' must be a whole number >= 1"),
    ("run {ws}/good.jsonl --standin --concurrency 0", "'concurrency' must be a whole number"),
    ("run {ws}/good.jsonl --standin --param temperature", "--param must be KEY=VALUE"),
    ("run {ws}/good.jsonl --standin --variant v=@{ws}/absent.txt", "absent.txt"),
    ("run {ws}/good.jsonl --standin --out {ws}/run", "already exists"),
    ("run {ws}/good.jsonl --standin --out {ws}/a_file", "a_file"),
    ("run {ws}/good.jsonl --standin --out {ws}/a_file/sub", "a_file"),
    ("run {ws}/good.jsonl --standin --out {ws}/absent --resume", "not a run directory"),
    ("run {ws}/good.jsonl --standin --out {ws}/adir --resume", "not a run directory"),
    ("run {ws}/good.jsonl --standin --out {ws}/listed --resume", "manifest.json"),
    ("run {ws}/good.jsonl --standin --out {ws}/broken --resume", "not valid JSON"),
    ("run {ws}/good.jsonl --standin --api-key-env EVALNB_NO_SUCH_KEY", "EVALNB_NO_SUCH_KEY"),
    ("run {ws}/good.jsonl --command '{python} x.py {base_url}'", "no base_url was given"),
    ("run {ws}/good.jsonl --standin --request-timeout -1", "timeout"),
    ("run {ws}/good.jsonl --standin --order sideways", "--order"),
    ("run {ws}/good.jsonl --standin --repeats many", "--repeats"),
    ("run", "no cases"),
    # run: experiment files
    ("run --experiment {ws}/absent.toml", "absent.toml"),
    ("run --experiment {ws}/bad.toml", "bad.toml: not valid TOML"),
    ("run --experiment {ws}/unknown.toml", "'colour' is not an experiment field"),
    ("run --experiment {ws}/target.toml", "'target' must be a table"),
    ("run --experiment {ws}/variants.toml", "'variants' must be an array of tables"),
    ("run --experiment {ws}/nocases.toml", "absent.jsonl"),
    ("run --experiment {ws}/prefix.toml", "absent.txt"),
    ("run --experiment {ws}/repeats.toml", "repeats"),
    ("run --experiment {ws}/good.jsonl", "good.jsonl: not valid TOML"),
    ("run --experiment builtin:nope", "builtin:nope"),
    # score
    ("score {ws}/absent", "not a run directory"),
    ("score {ws}/a_file", "a_file"),
    ("score {ws}/run --cases {ws}/absent.jsonl", "absent.jsonl"),
    ("score {ws}/run --check notjson", "--check"),
    ("score {ws}/run --check [1]", "--check #1 must be a JSON object"),
    ("score {ws}/run --label a/b", "'label' must use letters"),
    ("score {ws}/listed", "manifest.json"),
    # gate
    ("gate {ws}/absent --min-rate 0.5", "not a run directory"),
    ("gate {ws}/a_file --min-rate 0.5", "a_file"),
    ("gate {ws}/run --min-rate 2", "min_rate"),
    ("gate {ws}/run", "no rules"),
    ("gate {ws}/run --policy {ws}/absent.json", "--policy"),
    ("gate {ws}/run --policy {ws}/policy.json", "not valid JSON"),
    ("gate {ws}/run --policy {ws}/policy_list.json", "must hold a JSON object"),
    ("gate {ws}/run --agreement abc", "--agreement must be a number"),
    ("gate {ws}/broken --min-rate 0.5", "not valid JSON"),
    ("gate {ws}/listed --min-rate 0.5", "manifest.json"),
    # report
    ("report {ws}/a_file", "a_file"),
    ("report {ws}/run --html {ws}/absent/dir/r.html", "--html"),
    ("report {ws}/run --baseline v9", "'baseline' must be one of"),
    ("report {ws}/run --check nope", "'check' must be one of"),
    ("report {ws}/run --level 2", "level"),
    # doctor, demo
    ("doctor {ws}/absent", "absent"),
    ("doctor {ws}/a_file", "a_file"),
    ("demo --repeats 0 --out {ws}/demo", "'repeats' must be a whole number >= 1"),
    ("demo --cases {ws}/absent.jsonl --out {ws}/demo", "absent.jsonl"),
    # the command itself
    ("sing", "sing"),
    ("", "COMMAND"),
]


def _argv(line: str, ws: Path) -> list[str]:
    import shlex

    return shlex.split(line.replace("{ws}", str(ws)).replace("{python}", "{python}"))


@pytest.mark.parametrize(("line", "fragment"), CASES, ids=[c[0][:60] for c in CASES])
def test_a_mistake_is_one_line_exit_2_and_changes_nothing(
    ws: Path, line: str, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(ws)
    cwd = os.getcwd()
    os.chdir(ws)  # a default --out lands here, where the snapshot would see it
    try:
        code = _exit_code(lambda: main(_argv(line, ws)))
    finally:
        os.chdir(cwd)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert fragment.replace("{ws}", str(ws)) in lines[0]
    assert "Traceback" not in captured.err
    assert _snapshot(ws) == before


def _exit_code(command: Callable[[], int]) -> int:
    try:
        return command()
    except SystemExit as exc:
        return int(exc.code or 0)


def test_at_least_sixty_mistakes_are_tried() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(
    "args",
    [
        ["run", "absent.jsonl", "--standin"],
        ["gate", "nowhere", "--min-rate", "0.5"],
        ["run", "--experiment", "absent.toml"],
    ],
)
def test_a_real_process_prints_one_line_and_no_traceback(tmp_path: Path, args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalnb.cli", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert json.dumps(os.listdir(tmp_path)) == "[]"
