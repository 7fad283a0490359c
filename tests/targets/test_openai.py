"""OpenAIChat and the runner against the real stand-in server on 127.0.0.1."""

import asyncio
import gzip
import json
import re
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time

import httpx
import pytest

from evalnb import Case, OpenAIChat, Request, TargetError, Variant, run, store
from evalnb.checks import check_types
from evalnb.targets import _http as http_target

TYPES = ", ".join(repr(name) for name in sorted(check_types()))
SHOP = "data/cases/shop.jsonl"


def table(out, name):
    return store.read_table(out, name).to_pandas()


def test_full_run_records_request_response_usage_and_server(tmp_path, standin):
    out = tmp_path / "r"
    target = OpenAIChat(standin.base_url, "shop-v1", params={"temperature": 0.2})
    variants = [Variant("v1"), Variant("v2", params={"model": "shop-v2"})]
    run(SHOP, target, variants=variants, repeats=5, out=out, concurrency=8, progress=False)
    samples = table(out, "samples")
    assert len(samples) == 4 * 2 * 5 and (samples.status == "completed").all()
    first = samples.iloc[0]
    body = json.loads(first.request)
    assert body["temperature"] == 0.2
    assert body["messages"][-1]["content"] == first.prompt
    assert json.loads(first.response)["choices"][0]["message"]["content"] == first.answer
    assert set(samples[samples.variant == "v2"].model) == {"shop-v2"}
    assert (samples.total_tokens > 0).all() and (samples.finish_reason == "stop").all()
    manifest = json.loads((out / "manifest.json").read_text())
    server = manifest["target"]["server"]
    assert server["server_header"].startswith("evalnb-standin/")
    assert "shop-v1" in {m["id"] for m in server["models"]["data"]}
    checks = table(out, "checks")
    assert len(checks) == 5 * 2 * (3 + 3 + 1 + 1)


FAULTS = {
    "status_429": "error",
    "status_500": "error",
    "malformed": "malformed",
    "drop": "error",
    "empty": "empty",
    "hang": "timeout",
}


def test_every_fault_kind_becomes_an_incomplete_sample_and_the_run_finishes(tmp_path, standin):
    variants = [Variant("ok")] + [
        Variant(kind, params={"standin_fault": {"kind": kind, "retry_after": 0, "ms": 5000}})
        for kind in FAULTS
    ]
    target = OpenAIChat(standin.base_url, "echo", timeout=0.5, max_retries=1, backoff=0.01)
    out = tmp_path / "r"
    run([Case("c", prompt="hello")], target, variants=variants, repeats=2, out=out, progress=False)
    samples = table(out, "samples")
    status = samples.groupby("variant").status.agg(set).to_dict()
    assert status == {"ok": {"completed"}, **{kind: {s} for kind, s in FAULTS.items()}}
    retried = samples[samples.variant.isin(["status_429", "status_500", "drop", "hang"])]
    assert (retried.retries == 1).all()
    assert samples[samples.variant == "status_500"].error.str.startswith("HTTP 500").all()


def test_retries_honour_retry_after(tmp_path, standin):
    fault = {"kind": "status_429", "times": 1, "retry_after": 1}
    case = Case("retry-after", prompt=f"retry me {time.time()}")
    target = OpenAIChat(standin.base_url, "echo", backoff=0.01)
    out = tmp_path / "r"
    run(
        [case],
        target,
        variants=[Variant("v", params={"standin_fault": fault})],
        out=out,
        progress=False,
    )
    (sample,) = table(out, "samples").itertuples()
    assert sample.status == "completed" and sample.retries == 1
    log = httpx.get(f"{standin.url}/_standin/requests").json()
    mine = [e for e in log if e["model"] == "echo" and e.get("fault")]
    times = [e["time"] for e in log if e["body_sha256"] == mine[-1]["body_sha256"]]
    assert len(times) == 2
    assert times[1] - times[0] >= 1.0


def test_api_key_never_appears_in_any_file_of_the_run(tmp_path, standin, monkeypatch):
    secret = "sk-evalnb-test-0123456789abcdef"
    monkeypatch.setenv("EVALNB_TEST_KEY", secret)
    target = OpenAIChat(standin.base_url, "echo", api_key_env="EVALNB_TEST_KEY")
    out = tmp_path / "r"
    prompt = f"hello {time.time()}"
    run([Case("c", prompt=prompt)], target, repeats=3, out=out, progress=False)
    log = httpx.get(f"{standin.url}/_standin/requests").json()
    assert [e["authorized"] for e in log[-3:]] == [True, True, True]  # the key was sent
    for path in out.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    for name in ("samples", "checks"):
        frame = table(out, name)
        assert not any(secret in str(value) for value in frame.to_numpy().ravel())
    assert (
        json.loads((out / "manifest.json").read_text())["target"]["api_key_env"]
        == "EVALNB_TEST_KEY"
    )


def test_missing_api_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("EVALNB_ABSENT_KEY", raising=False)
    with pytest.raises(
        ValueError, match="'EVALNB_ABSENT_KEY', but that environment variable is not set"
    ):
        OpenAIChat("http://127.0.0.1:1/v1", "m", api_key_env="EVALNB_ABSENT_KEY")


def evalnb_cli(*args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "evalnb.cli", "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def test_interrupt_then_resume_gives_every_key_exactly_once(tmp_path):
    out = tmp_path / "r"
    fault = json.dumps({"kind": "latency", "ms": 40})
    args = [
        SHOP,
        "--standin",
        "--model",
        "shop-v1",
        "--variant",
        "v1",
        "--variant",
        "v2:model=shop-v2",
        "--param",
        f"standin_fault={fault}",
        "--repeats",
        "20",
        "--concurrency",
        "2",
        "--out",
        str(out),
        "--no-progress",
    ]
    process = evalnb_cli(*args)
    deadline = time.monotonic() + 30
    while not (out / "manifest.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert "Resume with:" in stderr and "--resume" in stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    written = len(store.sample_keys(out))
    assert 0 < written < 160
    process = evalnb_cli(*args, "--resume")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    keys = store.read_table(out, "samples", ["case_id", "variant", "repeat"]).to_pandas()
    assert len(keys) == 4 * 2 * 20 and not keys.duplicated().any()
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert "completed 80/80" in stdout


def test_malformed_cases_file_gives_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "cases.jsonl"
    bad.write_text(
        '{"id": "a", "prompt": "p"}\n{"id": "b", "prompt": "p", "checks": [{"type": "contians"}]}\n'
    )
    out = tmp_path / "r"
    process = evalnb_cli(str(bad), "--standin", "--model", "echo", "--out", str(out))
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert stderr.strip().splitlines() == [
        f"evalnb run: error: {bad}:2: 'checks[0].type' must be one of " + TYPES + "; got 'contians'"
    ]
    assert not out.exists()


def test_existing_output_directory_is_refused_by_the_cli(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    process = evalnb_cli(SHOP, "--standin", "--model", "echo", "--out", str(out))
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "output directory already exists" in stderr
    assert list(out.iterdir()) == []


def test_max_in_flight_queues_requests_without_counting_the_wait_as_timeout(tmp_path, standin):
    # Each request takes 0.2 s and the timeout is 0.5 s: six requests queued one at a
    # time take 1.2 s, and none of them times out, because waiting is not sending.
    slow = {"standin_fault": {"kind": "latency", "ms": 200}}
    target = OpenAIChat(standin.base_url, "echo", timeout=0.5, max_in_flight=1, max_retries=0)
    out = tmp_path / "r"
    cases = [Case(f"c{i}", prompt=f"one at a time {i} {time.time()}") for i in range(6)]
    started = time.monotonic()
    run(cases, target, variants=[Variant("v", params=slow)], concurrency=6, out=out, progress=False)
    assert time.monotonic() - started >= 1.2
    samples = table(out, "samples")
    assert (samples.status == "completed").all()
    assert samples.latency_ms.max() >= 1000  # the sample's own wall time includes its wait


# -- transports: httpx-aiohttp's (the default) and httpx's own behave alike --------------

TRANSPORT_NAMES = ["aiohttp", "httpx"]


def request_for(prompt: str, **params) -> Request:
    case = Case("c", prompt=prompt)
    variant = Variant("v", params=params)
    return Request(case, variant, 0, ({"role": "user", "content": prompt},), variant.params)


@pytest.mark.parametrize("transport", TRANSPORT_NAMES)
def test_each_fault_kind_gets_the_same_status_and_message_on_both_transports(
    tmp_path, standin, transport
):
    variants = [Variant("ok")] + [
        Variant(kind, params={"standin_fault": {"kind": kind, "retry_after": 0, "ms": 5000}})
        for kind in FAULTS
    ]
    target = OpenAIChat(
        standin.base_url, "echo", timeout=0.5, max_retries=1, backoff=0.01, transport=transport
    )
    out = tmp_path / "r"
    run([Case("c", prompt=f"hi {time.time()}")], target, variants=variants, out=out, progress=False)
    samples = table(out, "samples").set_index("variant")
    assert samples.status.to_dict() == {"ok": "completed", **FAULTS}
    error = samples.error
    # A dropped connection is a connection error, never a timeout, on either transport.
    assert "disconnected" in error["drop"].lower() and "timed out" not in error["drop"]
    assert error["hang"].startswith("timed out after 0.5 s (")
    assert error["status_429"].startswith("HTTP 429: rate limit reached")
    assert error["malformed"].startswith("response is not an OpenAI chat completion")
    assert samples.retries.to_dict() == {
        "ok": 0,
        "status_429": 1,
        "status_500": 1,
        "malformed": 0,
        "drop": 1,
        "empty": 0,
        "hang": 1,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("transport", TRANSPORT_NAMES)
def test_a_refused_connection_is_retried_as_an_error_not_a_timeout(transport):
    # httpx-aiohttp raises a refused connection as httpx.ConnectTimeout; evalnb reads the cause.
    url = f"http://127.0.0.1:{free_port()}/v1"
    target = OpenAIChat(url, "echo", max_retries=1, backoff=0.01, transport=transport)

    async def attempt():
        async with target:
            return await target.complete(request_for("hello"))

    with pytest.raises(TargetError) as caught:
        asyncio.run(attempt())
    assert caught.value.status == "error"
    assert "timed out" not in str(caught.value) and str(caught.value).endswith("(after 1 retries)")
    assert caught.value.partial.retries == 1


class BadStatusLine(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(65536)
        self.request.sendall(b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize("transport", TRANSPORT_NAMES)
def test_a_response_that_is_not_http_is_retried_as_an_error(transport):
    # aiohttp's own ClientResponseError comes through httpx-aiohttp unmapped.
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), BadStatusLine) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        target = OpenAIChat(url, "echo", max_retries=1, backoff=0.01, transport=transport)

        async def attempt():
            async with target:
                return await target.complete(request_for("hello"))

        try:
            with pytest.raises(TargetError) as caught:
                asyncio.run(attempt())
        finally:
            server.shutdown()
    assert caught.value.status == "error" and caught.value.partial.retries == 1
    assert "timed out" not in str(caught.value)


def test_transport_must_be_one_of_the_two():
    with pytest.raises(ValueError, match="'transport' must be one of 'aiohttp', 'httpx'; got 'h2'"):
        OpenAIChat("http://127.0.0.1:1/v1", "m", transport="h2")


@pytest.mark.parametrize("transport", TRANSPORT_NAMES)
def test_the_manifest_records_the_transport_and_the_server(tmp_path, standin, transport):
    out = tmp_path / "r"
    target = OpenAIChat(standin.base_url, "echo", transport=transport)
    run([Case("c", prompt=f"hi {time.time()}")], target, out=out, progress=False)
    described = json.loads((out / "manifest.json").read_text())["target"]
    assert described["transport"] == transport
    assert described["server"]["server_header"].startswith("evalnb-standin/")


def test_a_client_passed_in_is_used_as_it_is():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": []})
        reply = {"choices": [{"message": {"content": "pong"}, "finish_reason": "stop"}]}
        return httpx.Response(200, json=reply)

    async def go():
        client = httpx.AsyncClient(
            transport=httpx.MockTransport(handler), headers={"X-Mine": "yes"}
        )
        target = OpenAIChat("http://model.test/v1", "m", client=client, transport="httpx")
        async with target:
            completion = await target.complete(request_for("ping"))
            described = await target.describe()
        assert not client.is_closed  # a client passed in is left open
        await client.aclose()
        return completion, described

    completion, described = asyncio.run(go())
    assert completion.text == "pong" and described["transport"] == "client"
    post = seen[0]
    assert post.headers["x-mine"] == "yes" and post.headers["content-type"] == "application/json"
    assert json.loads(post.content)["messages"] == [{"role": "user", "content": "ping"}]


class Recorder:
    """A real HTTP server on 127.0.0.1 (aiohttp) that keeps every chat request it gets and
    answers as ``reply(prompt)`` says: ``(status, headers, body bytes)``."""

    def __init__(self, reply, route="/v1/chat/completions"):
        from aiohttp import web

        self.reply, self.seen, self.paths = reply, [], []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def chat(request):
            body = await request.read()
            self.seen.append((dict(request.headers), body))
            self.paths.append(request.raw_path)
            status, headers, content = self.reply(json.loads(body)["messages"][-1]["content"])
            return web.Response(status=status, headers=headers, body=content)

        def serve():
            asyncio.set_event_loop(self.loop)
            app = web.Application()
            app.router.add_post(route, chat)
            self.runner = web.AppRunner(app)
            self.loop.run_until_complete(self.runner.setup())
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            self.loop.run_until_complete(site.start())
            self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/v1"
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        assert ready.wait(10)

    def close(self):
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def _pong(prompt):
    reply = {"choices": [{"message": {"content": f"pong {prompt}"}, "finish_reason": "stop"}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(reply).encode()


def _complete(target, prompt, **params):
    async def go():
        async with target:
            return await target.complete(request_for(prompt, **params))

    return asyncio.run(go())


@pytest.mark.parametrize("transport", TRANSPORT_NAMES)
def test_the_request_sent_is_the_one_the_client_would_send(monkeypatch, transport):
    # On "aiohttp" the chat request goes straight to the transport's aiohttp session; what
    # reaches the server must be what client.post would have sent: its headers, the key,
    # the body.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EVALNB_TEST_KEY", "sk-test")
    server = Recorder(_pong)
    try:
        target = OpenAIChat(server.url, "m", api_key_env="EVALNB_TEST_KEY", transport=transport)
        completion = _complete(target, "ping", temperature=0.5)
        expected = httpx.AsyncClient().build_request("POST", server.url, content=b"{}")
    finally:
        server.close()
    assert completion.text == "pong ping"
    ((headers, body),) = server.seen
    headers = {k.lower(): v for k, v in headers.items()}
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["content-type"] == "application/json"
    for name in ("user-agent", "accept", "accept-encoding", "host"):
        assert headers[name] == expected.headers[name], name
    assert body.decode() == completion.request
    assert json.loads(body) == {
        "model": "m",
        "messages": [{"role": "user", "content": "ping"}],
        "temperature": 0.5,
    }


def test_the_client_timeouts_reach_httpx_own_transport(monkeypatch):
    # On "httpx" the request goes straight to the client's transport, with its timeouts.
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "pong"}}]})

    monkeypatch.setattr(
        http_target, "_transport", lambda name, session: httpx.MockTransport(handler)
    )
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    _complete(OpenAIChat("http://model.test/v1", "m", timeout=7, transport="httpx"), "ping")
    (request,) = sent
    assert request.extensions["timeout"]["read"] == 7
    assert request.extensions["timeout"]["pool"] is None


def _coded(prompt):
    if prompt == "latin":  # an error body in the charset its header names
        body = "trop de requêtes: réessayez".encode("iso-8859-1")
        return 400, {"Content-Type": "text/plain; charset=iso-8859-1"}, body
    reply = json.dumps({"choices": [{"message": {"content": "zipped " + "é" * 2000}}]})
    return (
        200,
        {"Content-Encoding": "gzip", "Content-Type": "application/json"},
        (gzip.compress(reply.encode())),
    )


@pytest.mark.parametrize("transport", TRANSPORT_NAMES)
def test_bodies_are_decoded_alike_on_both_transports(transport):
    # A gzip answer is read decoded; an error body is read in the charset it declares.
    server = Recorder(_coded)
    try:
        completion = _complete(OpenAIChat(server.url, "m", transport=transport), "zip")
        with pytest.raises(TargetError) as caught:
            _complete(OpenAIChat(server.url, "m", transport=transport), "latin")
    finally:
        server.close()
    assert completion.text == "zipped " + "é" * 2000
    assert json.loads(completion.response)["choices"][0]["message"]["content"] == completion.text
    assert str(caught.value) == "HTTP 400: trop de requêtes: réessayez"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:99999/v1", "'base_url' has port 99999, not 1 to 65535"),
        ("http://exa%20mple:80/v1", "'base_url' must name a host or an IP address"),
    ],
)
def test_a_base_url_no_connection_could_reach_is_refused_at_once(url, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        OpenAIChat(url, "m")


def test_a_key_with_a_control_character_is_refused_before_anything_runs(tmp_path, monkeypatch):
    secret = "sk-evalnb-0123456789abcdef"
    monkeypatch.setenv("EVALNB_CR_KEY", secret + "\r")
    with pytest.raises(ValueError, match="control character") as caught:
        OpenAIChat("http://127.0.0.1:1/v1", "m", api_key_env="EVALNB_CR_KEY")
    assert secret not in str(caught.value)
    out = tmp_path / "r"
    process = subprocess.run(
        [
            *(sys.executable, "-m", "evalnb.cli", "run", SHOP),
            *("--base-url", "http://127.0.0.1:1/v1", "--model", "m"),
            *("--api-key-env", "EVALNB_CR_KEY", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
    )
    assert process.returncode == 2
    assert len(process.stderr.strip().splitlines()) == 1 and secret not in process.stderr
    assert not out.exists()


def test_a_server_dripping_its_answer_ends_at_the_whole_request_timeout():
    import threading

    from aiohttp import web

    async def drip(request):
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for _ in range(100):  # 1 byte every 0.2 s: each wait is short, the whole is 20 s
            await response.write(b" ")
            await asyncio.sleep(0.2)
        return response

    ready, holder = threading.Event(), {}

    def serve():
        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", drip)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        holder.update(loop=loop, port=runner.addresses[0][1], runner=runner)
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        for transport in ("aiohttp", "httpx"):
            target = OpenAIChat(
                f"http://127.0.0.1:{holder['port']}/v1",
                "m",
                timeout=1.0,
                max_retries=0,
                transport=transport,
            )
            variant = Variant("baseline")
            case = Case("c", prompt="hi")
            request = Request(case, variant, 0, variant.messages_for(case), {})
            started = time.monotonic()

            async def ask(target=target, request=request):
                async with target:
                    return await target.complete(request)

            with pytest.raises(TargetError) as caught:
                asyncio.run(ask())
            assert caught.value.status == "timeout", transport
            assert time.monotonic() - started < 5, transport
    finally:
        holder["loop"].call_soon_threadsafe(holder["loop"].stop)
        thread.join(10)


def test_headers_and_query_go_with_every_request_and_only_header_names_are_recorded():
    server = Recorder(_pong)
    try:
        target = OpenAIChat(
            server.url,
            "m",
            headers={"X-Gateway-Team": "team-secret-value"},
            query={"api-version": "2024-10-21"},
        )
        completion = _complete(target, "ping")

        async def describe():
            async with target:
                return await target.describe()

        described = asyncio.run(describe())
    finally:
        server.close()
    assert completion.text == "pong ping"
    ((headers, _),) = server.seen
    assert headers["X-Gateway-Team"] == "team-secret-value"
    assert server.paths == ["/v1/chat/completions?api-version=2024-10-21"]
    assert described["headers"] == ["X-Gateway-Team"]
    assert described["query"] == {"api-version": "2024-10-21"}
    assert "team-secret-value" not in json.dumps(described)
