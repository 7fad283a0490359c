"""OpenAIChat and the runner against the real stand-in server on 127.0.0.1."""

import json
import signal
import subprocess
import sys
import time

import httpx
import pytest

from evalnb import Case, OpenAIChat, Variant, run, store
from evalnb.checks import check_types

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
