"""Hostile inputs to ``evalnb import``: zip bombs, oversized members, alias bombs, devices,
pipes, references out of the suite, wrong types, damaged archives.

Each runs as ``evalnb import ...`` in a fresh interpreter, as a user would, and must end
within 10 s (interpreter start included) at no more than 512 MB peak resident memory,
with one line on stderr naming the file and the limit, exit 2, and nothing written:
neither in ``--out`` nor anywhere else (the suite's folder, the working directory, HOME,
TMPDIR). The hostile files are built here, small on disk.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

MiB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]

#: What a refused import may take, interpreter start included.
SECONDS = 10.0
RSS_MB = 512

HEADER = {
    "version": 2,
    "status": "success",
    "eval": {"task": "t", "model": "m", "scorers": [{"name": "match"}]},
    "stats": {"started_at": "2025-01-01T00:00:00+00:00"},
}
SAMPLE = {
    "id": 1,
    "epoch": 1,
    "input": "What is 2 + 2?",
    "target": "4",
    "messages": [{"role": "user", "content": "What is 2 + 2?"}],
    "output": {
        "model": "m",
        "completion": "4",
        "choices": [{"message": {"role": "assistant", "content": "4"}, "stop_reason": "stop"}],
        "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
        "time": 0.5,
    },
    "scores": {"match": {"value": "C", "answer": "4"}},
}


# -- building hostile files ------------------------------------------------------------


def _raw_zip(path: Path, members: list[tuple[str, bytes, int, int, int]]) -> Path:
    """A zip written byte by byte: ``(name, data, declared size, crc, method)`` per member,
    so a member can declare any size and hold any bytes."""
    out, central = bytearray(), bytearray()
    for name, data, size, crc, method in members:
        raw = name.encode()
        offset = len(out)
        out += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(data), size, len(raw), 0
        )
        out += raw + data
        central += struct.pack(
            "<4s6H3L5H2L",
            *(b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(data), size, len(raw)),
            *(0, 0, 0, 0, 0, offset),
        )
        central += raw
    count = len(members)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))
    return path


def _deflated(data: bytes) -> tuple[str, bytes, int, int, int]:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return ("", packer.compress(data) + packer.flush(), len(data), zlib.crc32(data), 8)


def _member(name: str, value: object) -> tuple[str, bytes, int, int, int]:
    _, data, size, crc, method = _deflated(json.dumps(value).encode())
    return (name, data, size, crc, method)


def _zeros(name: str, mib: int, declared: int | None = None) -> tuple[str, bytes, int, int, int]:
    """``mib`` MiB of zeros as a raw deflate stream of about 1 KB a MiB: a full flush
    makes every MiB the same bytes, so a 3 GiB member is built in no time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(MiB)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    stream = first + again * (mib - 1) + packer.flush()
    return (name, stream, mib * MiB if declared is None else declared, 0, 8)


def _log(path: Path, *members: tuple[str, bytes, int, int, int], header: object = HEADER) -> Path:
    return _raw_zip(path, [_member("header.json", header), *members])


def _config(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(text)
    return path


def _prompt_ref(folder: Path, ref: str) -> Path:
    return _config(folder, f"prompts: ['{ref}']\ntests:\n  - vars: {{q: hi}}\n")


def _alias_bomb(folder: Path) -> Path:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        prev = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([prev] * 9)}]")
    anchors = "\n".join(f"  {line}" for line in lines)
    return _config(
        folder,
        f"bombs:\n{anchors}\nprompts: ['{{{{q}}}}']\ntests:\n  - vars: {{q: *a9}}\n",
    )


def _anchors(levels: int = 10) -> str:
    """Nine levels of nine aliases: a few hundred bytes that stand for 9**10 nodes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


# -- running `evalnb import` -------------------------------------------------------------


@dataclass
class Done:
    code: int
    stderr: str
    seconds: float
    rss_mb: float


# Runs argv[2:] and writes its peak resident memory (``wait4``, in KiB) to argv[1]; exits
# with its code. The command is started from this small parent rather than from pytest
# because a child's ru_maxrss also counts its parent's high-water mark at the fork (Linux
# keeps the old memory's peak across exec): from a pytest worker that has grown to 500 MB
# it would report the worker's memory.
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _import(tmp_path: Path, argv: list[str]) -> Done:
    """``evalnb import ARGV --out OUT`` in a fresh interpreter, its own working directory,
    HOME and TMPDIR; its wall time and peak resident memory (``wait4`` on that interpreter,
    from a small launcher)."""
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "XDG_CACHE_HOME": str(tmp_path / "home" / ".cache"),
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for folder in ("home", "tmp", "cwd"):
        (tmp_path / folder).mkdir(exist_ok=True)
    peak = logs / "peak-kib"
    command = [sys.executable, "-S", "-c", _LAUNCHER, str(peak)]
    command += [sys.executable, "-m", "evalnb.cli", "import", *argv]
    command += ["--out", str(tmp_path / "out")]
    with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
        start = time.monotonic()
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            cwd=tmp_path / "cwd",
            env=env,
            start_new_session=True,  # the launcher and the interpreter it starts, killed as one
        )
        while True:
            pid, status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > 3 * SECONDS:
                os.killpg(process.pid, signal.SIGKILL)
                os.wait4(process.pid, 0)
                process.returncode = -9
                pytest.fail(f"evalnb import {' '.join(argv)} still running after {3 * SECONDS} s")
            time.sleep(0.01)
        seconds = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = (logs / "stderr").read_text(errors="replace")
    return Done(process.returncode, stderr, seconds, int(peak.read_text()) / 1024)


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` (but the logs) with its size and modification time."""
    found = {}
    for path in folder.rglob("*"):
        if "logs" in path.relative_to(folder).parts:
            continue
        info = path.lstat()
        found[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return found


def _refused(tmp_path: Path, argv: list[str], *expected: str) -> str:
    """Run a hostile import and check what every refusal must show; returns its line."""
    for folder in ("home", "tmp", "cwd"):
        (tmp_path / folder).mkdir(exist_ok=True)
    before = _tree(tmp_path)
    done = _import(tmp_path, argv)
    assert done.code == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalnb import: error: "), done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    assert done.seconds < SECONDS, f"{done.seconds:.1f} s: {lines[0]}"
    assert done.rss_mb <= RSS_MB, f"{done.rss_mb:.0f} MB: {lines[0]}"
    assert not (tmp_path / "out").exists()
    assert _tree(tmp_path) == before  # nothing written anywhere else either
    return lines[0]


def _fifo(path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    os.mkfifo(path)
    return path


# -- the hostile corpus ------------------------------------------------------------------

#: name -> builder(tmp_path) -> (argv, texts the one line must hold)
Case = Callable[[Path], tuple[list[str], tuple[str, ...]]]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(build: Case) -> Case:
        CASES[name] = build
        return build

    return register


@case("zip bomb: a 3 GiB member in a 3 MB log")
def _(tmp: Path):
    log = _log(tmp / "bomb.eval", _zeros("samples/1_epoch_1.json", 3 * 1024))
    assert log.stat().st_size < 4 * MiB
    return ["inspect-log", str(log)], (
        "bomb.eval",
        "'samples/1_epoch_1.json'",
        "3 GiB",
        "64 MiB limit",
        "--max-member-size",
    )


@case("zip bomb that lies: declares 1 KiB, inflates to 512 MiB")
def _(tmp: Path):
    log = _log(tmp / "liar.eval", _zeros("samples/1_epoch_1.json", 512, declared=1024))
    return ["inspect-log", str(log)], ("liar.eval", "'samples/1_epoch_1.json'", "damaged")


@case("ratio bomb: members under the size cap, each inflating 1,000x")
def _(tmp: Path):
    members = [_zeros(f"samples/{i}_epoch_1.json", 48) for i in range(1, 41)]
    log = _log(tmp / "ratio.eval", *members)
    return ["inspect-log", str(log)], ("ratio.eval", "100x limit", "--max-zip-ratio")


@case("oversized member: 2 MiB under a 1M member cap")
def _(tmp: Path):
    _, data, size, crc, method = _deflated(os.urandom(2 * MiB))
    log = _log(tmp / "big.eval", ("samples/1_epoch_1.json", data, size, crc, method))
    return ["inspect-log", str(log), "--max-member-size", "1M"], (
        "big.eval",
        "2 MiB",
        "over the 1 MiB limit",
        "--max-member-size",
    )


@case("too much in all: three 512 KiB members under a 1M total cap")
def _(tmp: Path):
    pad = {"pad": os.urandom(MiB // 4).hex()}  # 512 KiB of text that hardly compresses
    members = [
        _member(f"samples/{i}_epoch_1.json", {**SAMPLE, "id": i, "metadata": pad})
        for i in range(1, 4)
    ]
    log = _log(tmp / "total.eval", *members)
    return ["inspect-log", str(log), "--max-total-size", "1M"], (
        "total.eval",
        "over the 1 MiB limit",
        "--max-total-size",
    )


@case("corrupt deflate member")
def _(tmp: Path):
    name, data, size, crc, method = _member("samples/1_epoch_1.json", SAMPLE)
    broken = bytes([0xFF] * 8) + data[8:]
    log = _log(tmp / "corrupt.eval", (name, broken, size, crc, method))
    return ["inspect-log", str(log)], ("corrupt.eval", "'samples/1_epoch_1.json'", "damaged")


@case("bad CRC")
def _(tmp: Path):
    name, data, size, crc, method = _member("samples/1_epoch_1.json", SAMPLE)
    log = _log(tmp / "crc.eval", (name, data, size, crc ^ 1, method))
    return ["inspect-log", str(log)], ("crc.eval", "damaged")


@pytest.fixture(params=[0.1, 0.5, 0.9, 0.99], ids=lambda f: f"{f:.0%}")
def cut(request: pytest.FixtureRequest) -> float:
    return float(request.param)


@case("member not JSON")
def _(tmp: Path):
    log = _raw_zip(
        tmp / "text.eval",
        [_member("header.json", HEADER), ("samples/1_epoch_1.json", *_deflated(b"{nope")[1:])],
    )
    return ["inspect-log", str(log)], ("text.eval", "'samples/1_epoch_1.json'", "not valid JSON")


@case("header of the wrong type")
def _(tmp: Path):
    log = _log(tmp / "header.eval", _member("samples/1_epoch_1.json", SAMPLE), header=[1, 2])
    return ["inspect-log", str(log)], ("header.eval", "'header.json'", "must be an object")


@case("eval spec of the wrong type")
def _(tmp: Path):
    header = {**HEADER, "eval": "gpt"}
    log = _log(tmp / "spec.eval", _member("samples/1_epoch_1.json", SAMPLE), header=header)
    return ["inspect-log", str(log)], ("spec.eval", "'eval' must be an object", "text 'gpt'")


@case("scores of the wrong type")
def _(tmp: Path):
    sample = {**SAMPLE, "scores": ["C"]}
    log = _log(tmp / "scores.eval", _member("samples/1_epoch_1.json", sample))
    return ["inspect-log", str(log)], (
        "scores.eval",
        "'samples/1_epoch_1.json'",
        "'scores' must be an object",
    )


@case("output of the wrong type")
def _(tmp: Path):
    sample = {**SAMPLE, "output": "4"}
    log = _log(tmp / "output.eval", _member("samples/1_epoch_1.json", sample))
    return ["inspect-log", str(log)], ("output.eval", "'output' must be an object")


@case("a sample that is a list")
def _(tmp: Path):
    log = _log(tmp / "list.eval", _member("samples/1_epoch_1.json", [SAMPLE]))
    return ["inspect-log", str(log)], ("list.eval", "'samples/1_epoch_1.json'", "a sample must be")


@case("epoch 'x' in a JSON log")
def _(tmp: Path):
    log = tmp / "epoch.json"
    log.write_text(json.dumps({**HEADER, "samples": [SAMPLE, {**SAMPLE, "epoch": "x"}]}))
    return ["inspect-log", str(log)], ("epoch.json", "samples[1]", "'epoch'", "text 'x'")


@case("promptfoo results of the wrong type")
def _(tmp: Path):
    path = tmp / "output.json"
    row = {"prompt": {"raw": "hi"}, "response": {"output": "x"}, "latencyMs": "slow"}
    path.write_text(json.dumps({"results": {"version": 3, "results": [row]}}))
    return ["promptfoo-results", str(path)], ("output.json", "results[0]", "'latencyMs'")


@case("alias bomb: nine levels of nine aliases in vars")
def _(tmp: Path):
    config = _alias_bomb(tmp / "suite")
    return ["promptfoo", str(config)], (
        "promptfooconfig.yaml",
        "1,000,000 YAML nodes",
        "--max-yaml-nodes",
    )


@case("alias bomb: an openai/evals registry entry")
def _(tmp: Path):
    folder = tmp / "registry" / "evals"
    folder.mkdir(parents=True)
    entry = "quiz:\n  id: quiz.dev.v0\nquiz.dev.v0:\n  class: evals.elsuite.basic.match:Match\n"
    (folder / "quiz.yaml").write_text(_anchors() + entry + "  args: {samples_jsonl: *a9}\n")
    return ["openai-evals", str(folder / "quiz.yaml"), "quiz"], (
        "quiz.yaml",
        "1,000,000 nodes",
        "--max-yaml-nodes",
    )


@case("alias bomb: an lm-eval task")
def _(tmp: Path):
    (tmp / "task.yaml").write_text(_anchors() + "task: t\ndoc_to_text: *a9\n")
    (tmp / "docs.jsonl").write_text('{"q": "hi"}\n')
    argv = ["lm-eval", str(tmp / "task.yaml"), "--data", str(tmp / "docs.jsonl")]
    return argv, ("task.yaml", "1,000,000 nodes", "--max-yaml-nodes")


@case("recursive alias")
def _(tmp: Path):
    config = _config(tmp / "suite", "prompts: ['{{q}}']\ntests:\n  - vars: &v {q: [*v]}\n")
    return ["promptfoo", str(config)], ("promptfooconfig.yaml:3", "recursive YAML")


@case("list-valued vars that make 64 million cases")
def _(tmp: Path):
    values = "[" + ", ".join(str(i) for i in range(20)) + "]"
    vars_ = ", ".join(f"v{i}: {values}" for i in range(6))
    config = _config(tmp / "suite", f"prompts: ['{{{{v0}}}}']\ntests:\n  - vars: {{{vars_}}}\n")
    return ["promptfoo", str(config)], ("64,000,000 cases", "--max-yaml-nodes")


@case("file:///dev/zero, outside the suite")
def _(tmp: Path):
    config = _prompt_ref(tmp / "suite", "file:///dev/zero")
    return ["promptfoo", str(config)], (
        "promptfooconfig.yaml",
        "prompts[0]",
        "outside",
        "/dev/zero",
    )


@case("file:///dev/zero, allowed: still a device")
def _(tmp: Path):
    config = _prompt_ref(tmp / "suite", "file:///dev/zero")
    return ["promptfoo", str(config), "--allow-outside", "/dev"], (
        "promptfooconfig.yaml",
        "/dev/zero",
        "character device",
        "only regular files are read",
    )


@case("file:///dev/urandom as a var, allowed: still a device")
def _(tmp: Path):
    config = _config(
        tmp / "suite", "prompts: ['{{q}}']\ntests:\n  - vars: {q: file:///dev/urandom}\n"
    )
    return ["promptfoo", str(config), "--allow-outside", "/dev/urandom"], (
        "/dev/urandom",
        "character device",
    )


@case("/dev/zero as the source")
def _(tmp: Path):
    (tmp / "zero.eval").symlink_to("/dev/zero")
    return ["inspect-log", str(tmp / "zero.eval")], ("zero.eval", "character device")


@case("a named pipe as a prompt file")
def _(tmp: Path):
    config = _prompt_ref(tmp / "suite", "file://prompt.txt")
    _fifo(tmp / "suite" / "prompt.txt")
    return ["promptfoo", str(config)], ("prompt.txt", "named pipe (FIFO)")


@case("a named pipe as the source")
def _(tmp: Path):
    _fifo(tmp / "samples.jsonl")
    return ["inspect", str(tmp / "samples.jsonl")], ("samples.jsonl", "named pipe (FIFO)")


@case("a folder as a test file")
def _(tmp: Path):
    config = _config(tmp / "suite", "prompts: ['{{q}}']\ntests: file://tests.yaml\n")
    (tmp / "suite" / "tests.yaml").mkdir()
    return ["promptfoo", str(config)], ("tests.yaml", "is a folder")


@case("file://../secret.txt")
def _(tmp: Path):
    (tmp / "secret.txt").write_text("the secret\n")
    config = _prompt_ref(tmp / "suite", "file://../secret.txt")
    return ["promptfoo", str(config)], ("'file://../secret.txt'", "outside the suite's folder")


@case("an assertion value from /etc/passwd")
def _(tmp: Path):
    config = _config(
        tmp / "suite",
        "prompts: ['{{q}}']\ntests:\n  - vars: {q: hi}\n"
        "    assert:\n      - {type: contains, value: 'file://../../../../../../etc/passwd'}\n",
    )
    return ["promptfoo", str(config)], ("tests[0].assert[0]", "/etc/passwd", "outside")


@case("a symlink in the suite to a file outside")
def _(tmp: Path):
    (tmp / "secret.txt").write_text("the secret\n")
    config = _prompt_ref(tmp / "suite", "file://prompt.txt")
    (tmp / "suite" / "prompt.txt").symlink_to(tmp / "secret.txt")
    return ["promptfoo", str(config)], ("'file://prompt.txt'", "secret.txt", "outside")


@case("a symlinked folder in the suite pointing outside")
def _(tmp: Path):
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "tests.csv").write_text("q\nhi\n")
    config = _config(tmp / "suite", "prompts: ['{{q}}']\ntests: file://data/tests.csv\n")
    (tmp / "suite" / "data").symlink_to(tmp / "elsewhere")
    return ["promptfoo", str(config)], ("tests[0]", "elsewhere", "outside")


@case("a prompt file over a 1K file cap")
def _(tmp: Path):
    config = _prompt_ref(tmp / "suite", "file://prompt.txt")
    (tmp / "suite" / "prompt.txt").write_text("{{q}} " * 400)
    return ["promptfoo", str(config), "--max-file-size", "1K"], (
        "prompt.txt",
        "over the 1 KiB limit",
        "--max-file-size",
    )


@case("defaultTest: 'x'")
def _(tmp: Path):
    config = _config(tmp / "suite", "prompts: ['{{q}}']\ndefaultTest: x\ntests: [{vars: {q: a}}]\n")
    return ["promptfoo", str(config)], ("promptfooconfig.yaml", "'defaultTest' must be an object")


@case("a dataset that is not UTF-8")
def _(tmp: Path):
    (tmp / "data.jsonl").write_bytes(b'{"input": "caf\xe9"}\n')
    return ["inspect", str(tmp / "data.jsonl")], ("data.jsonl", "not UTF-8")


@case("JSON nested 100,000 deep")
def _(tmp: Path):
    (tmp / "deep.jsonl").write_text('{"input": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    return ["openai-evals", str(tmp / "deep.jsonl")], ("deep.jsonl", "nested too deeply")


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_input_is_refused_in_one_line_within_bounds(name: str, tmp_path: Path) -> None:
    argv, expected = CASES[name](tmp_path)
    _refused(tmp_path, argv, *expected)


def test_a_truncated_log_is_refused_at_any_cut(cut: float, tmp_path: Path) -> None:
    whole = _log(tmp_path / "whole.eval", _member("samples/1_epoch_1.json", SAMPLE))
    data = whole.read_bytes()
    whole.unlink()
    (tmp_path / "cut.eval").write_bytes(data[: int(len(data) * cut)])
    _refused(tmp_path, ["inspect-log", str(tmp_path / "cut.eval")], "cut.eval")
