"""Secrets never stored: a server that echoes the key back in every form it can, a key cut at
the error's length limit, a password in the base URL, a harness environment; and a response
too large to keep, and a ``Retry-After: nan``.

The server here is a real HTTP server on 127.0.0.1 (aiohttp), written to do what a hostile
or careless one does; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import string
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from aiohttp import web

from evalnb import Case, Command, OpenAIChat, run, store

KEY = "sk-live/Secret+Key_0123456789abcdef"


def _escaped(text: str) -> str:
    """Every character as a JSON ``\\u`` escape, slashes as ``\\/``: still valid JSON."""
    return "".join("\\/" if c == "/" else f"\\u{ord(c):04x}" for c in text)


class Hostile:
    """An OpenAI-compatible server that echoes what it was sent, headers included."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.nan_served: set[str] = set()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=1 << 20)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/chat/completions", self.chat)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        self.loop.run_forever()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def models(self, request: web.Request) -> web.Response:
        echoed = {"data": [{"id": "m"}], "seen": dict(request.headers)}
        # The header as sent, then JSON-escaped and percent-encoded copies of it.
        auth = request.headers.get("Authorization", "")
        body = json.dumps(echoed)[:-1] + f', "escaped": "{_escaped(auth)}"'
        body += f', "url": "{auth.replace("/", "%2F").replace("+", "%2B")}"}}'
        return web.Response(text=body, content_type="application/json")

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        auth = request.headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ")
        if prompt == "escape":  # the answer holds the key; the raw JSON escapes it
            content = f"your key is {_escaped(key)}"
            text = (
                '{"choices": [{"message": {"role": "assistant", "content": "' + content + '"},'
                ' "finish_reason": "stop"}], "model": "m"}'
            )
            return web.Response(text=text, content_type="application/json")
        if prompt == "long-error":  # the key straddles the 200-character cut of the error
            return web.Response(status=400, text="x" * 190 + f" echo: {auth}")
        if prompt == "huge":  # 20 MB of answer
            filler = "a" * (20 * 1024 * 1024)
            return web.json_response({"choices": [{"message": {"content": filler}}]})
        if prompt == "chunked":  # no length announced: 2 MiB sent in pieces
            stream = web.StreamResponse(headers={"Content-Type": "application/json"})
            await stream.prepare(request)
            await stream.write(b'{"choices": [{"message": {"content": "')
            for _ in range(32):
                await stream.write(b"b" * 65536)
            await stream.write(b'"}}]}')
            return stream
        if prompt == "bomb":  # 40 KB on the wire, 20 MiB once decoded
            body = json.dumps({"choices": [{"message": {"content": "c" * (20 << 20)}}]})
            packed = gzip.compress(body.encode())
            return web.Response(
                body=packed,
                headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
            )
        if prompt == "nan" and prompt not in self.nan_served:
            self.nan_served.add(prompt)
            return web.Response(status=429, headers={"Retry-After": "nan"}, text="slow down")
        return web.json_response(
            {"choices": [{"message": {"content": f"ok {prompt}"}, "finish_reason": "stop"}]}
        )


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    server = Hostile()
    try:
        yield server
    finally:
        server.close()


def _leaks(folder: Path, secret: str) -> list[str]:
    """Files under ``folder`` holding ``secret`` or a telling piece of it, in any form."""
    pieces = {secret, secret[:12], secret[-12:], _escaped(secret)[:40]}
    pieces |= {p.replace("/", "\\/") for p in pieces} | {p.replace("/", "%2F") for p in pieces}
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".parquet":  # compressed pages: read the values
                data = json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
            found += [f"{path.name}: {p!r}" for p in pieces if p.encode() in data]
    return found


def test_no_form_of_the_key_is_stored_and_bounds_hold(
    hostile: Hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALNB_HOSTILE_KEY", KEY)
    url = f"http://127.0.0.1:{hostile.port}/v1"
    target = OpenAIChat(
        url,
        "m",
        api_key_env="EVALNB_HOSTILE_KEY",
        max_retries=1,
        backoff=0.01,
        max_response_bytes=1024 * 1024,
    )
    prompts = ("escape", "long-error", "huge", "chunked", "bomb", "nan", "plain")
    cases = [Case(id=p, prompt=p) for p in prompts]
    out = tmp_path / "run"
    started = time.monotonic()
    run(cases, target, out=out, progress=False)
    assert time.monotonic() - started < 60
    assert _leaks(out, KEY) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert "[redacted]" in json.dumps(manifest["target"]["server"])
    samples = {r["case_id"]: r for r in store.read_table(out, "samples").to_pylist()}
    assert samples["escape"]["status"] == "completed"
    assert samples["escape"]["answer"] == "your key is [redacted]"
    assert samples["long-error"]["status"] == "error"
    assert samples["huge"]["status"] == "error"
    assert "response too large" in samples["huge"]["error"]
    assert samples["huge"]["retries"] == 0  # not asked again: it would be as large again
    assert "announced" in samples["huge"]["error"]
    for name in ("chunked", "bomb"):  # counted as read, decoded
        assert samples[name]["status"] == "error"
        assert "over 1,048,576 bytes read" in samples[name]["error"], samples[name]["error"]
    assert samples["nan"]["status"] == "completed" and samples["nan"]["retries"] == 1
    assert samples["plain"]["answer"] == "ok plain"


def test_a_harness_gets_no_secret_named_variable_unless_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALNB_HARNESS_API_KEY", "sk-harness-0123456789")
    monkeypatch.setenv("EVALNB_HARNESS_PLAIN", "visible")
    script = (
        "import os; print(os.environ.get('EVALNB_HARNESS_API_KEY', 'absent'), "
        "os.environ.get('EVALNB_HARNESS_PLAIN'))"
    )
    cases = [Case(id="c", prompt="p")]
    run(cases, Command([sys.executable, "-c", script]), out=tmp_path / "a", progress=False)
    (row,) = store.read_table(tmp_path / "a", "samples").to_pylist()
    assert row["answer"].split() == ["absent", "visible"]
    passed = Command([sys.executable, "-c", script], pass_env=["EVALNB_HARNESS_API_KEY"])
    run(cases, passed, out=tmp_path / "b", progress=False)
    (row,) = store.read_table(tmp_path / "b", "samples").to_pylist()
    # The harness had it; what it printed is stored without it.
    assert row["answer"].split() == ["[redacted]", "visible"]
    assert _leaks(tmp_path / "b", "sk-harness-0123456789") == []
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["target"]["pass_env"] == ["EVALNB_HARNESS_API_KEY"]
    with pytest.raises(TypeError, match="'pass_env' must be a list of variable names"):
        Command(["true"], pass_env="EVALNB_HARNESS_API_KEY")


def test_a_password_in_the_base_url_is_never_stored(
    hostile: Hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://someone:pw-Hunter2-secret@127.0.0.1:{hostile.port}/v1"
    out = tmp_path / "run"
    run([Case(id="plain", prompt="plain")], OpenAIChat(url, "m"), out=out, progress=False)
    assert _leaks(out, "pw-Hunter2-secret") == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["base_url"].startswith("http://someone:[redacted]@127.0.0.1")
    monkeypatch.setenv("EVALNB_HOSTILE_KEY", KEY)
    with pytest.raises(ValueError, match="carries a user and password and 'api_key_env'"):
        OpenAIChat(url, "m", api_key_env="EVALNB_HOSTILE_KEY")


#: Four secrets a harness is given and echoes in every form normalisation makes of them.
FOUR = {
    "EVALNB_EVIL_API_KEY": "sk-Evil-0123456789-ApiKeyEnv",
    "EVALNB_EVIL_TOKEN": "Tok_Evil/ABCdef0123456789",
    "EVALNB_EVIL_SECRET": "Secret.Evil+9876543210xyz",
    "EVALNB_EVIL_PASSWORD": "Pw-Evil-Hunter2-Correct-Horse",
}

_ECHO = """
import json, os, string
values = [os.environ[name] for name in sorted(os.environ) if name.startswith('EVALNB_EVIL_')]
bare = [''.join(c for c in v.lower() if c not in string.punctuation) for v in values]
forms = values + [v.lower() for v in values] + [v.upper() for v in values] + bare
print(' '.join(forms), json.dumps({'key': values[0].lower()}))
"""


def _every_text(folder: Path) -> str:
    """Every file under ``folder`` as text, Parquet files as their values, case folded."""
    texts = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            if path.suffix == ".parquet":
                texts.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
            else:
                texts.append(path.read_text(errors="replace"))
    return "\n".join(texts).casefold()


def test_no_secret_survives_in_any_case_or_normalised_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalnb.interop import export_eee, export_samples

    for name, value in FOUR.items():
        monkeypatch.setenv(name, value)
    checks = [
        {"type": "contains", "text": "absent-word"},
        {"type": "extract_match", "pattern": '"key": "([^"]+)"'},
        {"type": "javascript", "code": "({pass: false, reason: output.toLowerCase()})"},
    ]
    case = Case(id="c", prompt="p", target="x", checks=checks)
    out = tmp_path / "run"
    target = Command([sys.executable, "-c", _ECHO], pass_env=sorted(FOUR))
    run([case], target, out=out, progress=False, repeats=2)
    (row, _) = store.read_table(out, "samples").to_pylist()
    assert row["status"] == "completed" and "[redacted]" in row["answer"]
    assert row["canonical"] and "[redacted]" in row["canonical"]
    exports = tmp_path / "exports"
    exports.mkdir()
    export_samples(out, exports / "samples.csv")
    export_samples(out, exports / "samples.jsonl", format="jsonl")
    export_eee(out, exports / "eee")
    stored = _every_text(out) + _every_text(exports)
    assert "samples.csv" not in stored and len(stored) > 1000
    for value in FOUR.values():
        bare = "".join(c for c in value.casefold() if c not in string.punctuation)
        for form in (value.casefold(), bare, value[:12].casefold(), value[-12:].casefold()):
            assert form not in stored, form
