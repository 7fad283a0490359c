"""The vendors' protocols (Anthropic, OpenAI Responses, Gemini, Bedrock, Azure) against the
real stand-in server on 127.0.0.1: every one with OpenAIChat's guarantees."""

import json
import time

import pytest

from evalnb import (
    AnthropicMessages,
    AzureOpenAIChat,
    BedrockConverse,
    Case,
    GeminiGenerateContent,
    OpenAIResponses,
    Variant,
    run,
    store,
)
from evalnb.standin import register_assistant
from evalnb.standin._notes import NEVER, NotesAssistant

SHOP = "data/cases/shop.jsonl"
PROTOCOLS = ["anthropic", "responses", "gemini", "bedrock", "azure"]
SECRET = "sk-vendor-SECRET-0123456789abcdef"
AWS_SECRET = "aws-secret-key-ABCDEFGHIJ0123456789"
#: The route each protocol posts to, as the stand-in logs it.
ROUTES = {"anthropic": "anthropic", "responses": "responses", "gemini": "gemini"}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("EVALNB_VENDOR_KEY", SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    for name in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
    ):
        monkeypatch.delenv(name, raising=False)


def make(protocol, standin, model="shop-v1", **options):
    """The protocol's target on the stand-in, with the key (Bedrock: signed with SigV4)."""
    if protocol != "bedrock":
        options.setdefault("api_key_env", "EVALNB_VENDOR_KEY")
    if protocol == "anthropic":
        return AnthropicMessages(model, base_url=standin.base_url, **options)
    if protocol == "responses":
        return OpenAIResponses(standin.base_url, model, **options)
    if protocol == "gemini":
        return GeminiGenerateContent(model, base_url=standin.url + "/v1beta", **options)
    if protocol == "bedrock":
        return BedrockConverse(model, region="us-east-1", base_url=standin.url, **options)
    return AzureOpenAIChat(standin.url, model, **options)


def table(out, name):
    return store.read_table(out, name).to_pandas()


def logged(standin, since):
    return [e for e in standin.requests() if e["time"] >= since]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_shop_run_completes_with_tokens_latency_and_the_key_sent(tmp_path, standin, protocol):
    out = tmp_path / "r"
    since = time.time()
    variants = [Variant("v1"), Variant("v2", params={"model": "shop-v2"})]
    target = make(protocol, standin, params={"temperature": 0.2})
    run(SHOP, target, variants=variants, repeats=3, out=out, concurrency=8, progress=False)
    samples = table(out, "samples")
    assert len(samples) == 4 * 2 * 3 and (samples.status == "completed").all()
    assert (samples.prompt_tokens > 0).all() and (samples.completion_tokens > 0).all()
    assert (samples.total_tokens == samples.prompt_tokens + samples.completion_tokens).all()
    assert (samples.latency_ms > 0).all() and (samples.finish_reason == "stop").all()
    assert set(samples[samples.variant == "v2"].model) == {"shop-v2"}
    assert samples.answer.str.contains("A-1042|order", regex=True).any()
    entries = logged(standin, since)
    assert {e["protocol"] for e in entries} == {protocol}
    assert all(e["authorized"] for e in entries)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["type"] == target.kind


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", ["status_429", "overloaded"])
def test_retries_follow_retry_after_and_the_overload_status(tmp_path, standin, protocol, kind):
    fault = {"kind": kind, "times": 1, "retry_after": 1}
    case = Case("retry", prompt=f"retry me {protocol} {kind} {time.time()}")
    target = make(protocol, standin, "echo", params={"standin_fault": fault}, backoff=0.01)
    since = time.time()
    out = tmp_path / "r"
    run([case], target, out=out, progress=False)
    (sample,) = table(out, "samples").itertuples()
    assert sample.status == "completed" and sample.retries == 1
    assert sample.latency_ms >= 1000  # the server's Retry-After, not the 0.01 s backoff
    statuses = [e["status"] for e in logged(standin, since)]
    expected = 429 if kind == "status_429" else (529 if protocol == "anthropic" else 503)
    assert statuses == [expected, 200]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_truncated_body_is_one_incomplete_sample(tmp_path, standin, protocol):
    fault = {"kind": "malformed"}
    variants = [Variant("ok"), Variant("cut", params={"standin_fault": fault})]
    out = tmp_path / "r"
    run(
        [Case("c", prompt="hello")],
        make(protocol, standin, "echo"),
        variants=variants,
        out=out,
        progress=False,
    )
    samples = table(out, "samples").set_index("variant")
    assert samples.loc["ok", "status"] == "completed"
    assert samples.loc["cut", "status"] == "malformed" and samples.loc["cut", "retries"] == 0
    assert samples.loc["cut", "response"].startswith('{"id"')


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_key_never_appears_in_any_stored_file(tmp_path, standin, protocol):
    out = tmp_path / "r"
    since = time.time()
    run(
        [Case("c", prompt=f"hello {since}")],
        make(protocol, standin, "echo"),
        repeats=2,
        out=out,
        progress=False,
    )
    assert [e["authorized"] for e in logged(standin, since)] == [True, True]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 3
    for path in files:
        data = path.read_bytes()
        assert SECRET.encode() not in data and AWS_SECRET.encode() not in data, path
    for name in ("samples", "checks"):
        cells = [str(value) for value in table(out, name).to_numpy().ravel()]
        assert not any(SECRET in cell or AWS_SECRET in cell for cell in cells)
    described = json.loads((out / "manifest.json").read_text())["target"]
    assert described["api_key_env"] == (None if protocol == "bedrock" else "EVALNB_VENDOR_KEY")


NOTES = "Project: Paper Kite\nLanguage: Go\n"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_note",
            "description": "Read one note",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_calls_become_requested_actions_the_action_checks_read(tmp_path, standin, protocol):
    register_assistant("notes-tools", NotesAssistant(baseline=NEVER, revised=NEVER), replace=True)
    checks = [
        {"type": "required_action", "name": "read", "tool": "read_note", "path": "notes.txt"},
        {"type": "forbidden_action", "name": "asked", "tool": "read_note"},
    ]
    case = Case("tools", prompt="What is the project in notes.txt called?", checks=checks)
    target = make(protocol, standin, "notes-tools", params={"tools": TOOLS})
    out = tmp_path / "r"
    run([case], target, out=out, progress=False)
    (sample,) = table(out, "samples").itertuples()
    assert sample.status == "completed" and sample.finish_reason == "tool_calls"
    (call,) = sample.tool_calls
    assert call["name"] == "read_note" and json.loads(call["arguments"]) == {"path": "notes.txt"}
    (action,) = sample.requested
    assert action["tool"] == "read_note" and action["path"] == "notes.txt"
    assert list(sample.executed) == []
    outcomes = table(out, "checks").set_index("check")
    # Requested is not executed: the required read did not happen, the forbidden ask did.
    assert outcomes.loc["read", "outcome"] == False  # noqa: E712
    assert outcomes.loc["read", "detail"] == (
        "no executed read_note(notes.txt); executed: nothing; "
        "requested, never executed: read_note(notes.txt)"
    )
    assert outcomes.loc["asked", "detail"] == "requested read_note(notes.txt)"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_evalnb_run_target_reaches_each_protocol_of_the_standin(tmp_path, protocol, capsys):
    from evalnb.cli import main

    out = tmp_path / "r"
    argv = ["run", SHOP, "--standin", "--target", protocol, "--model", "shop-v2"]
    assert main([*argv, "--repeats", "2", "--out", str(out), "--no-progress"]) == 0
    samples = table(out, "samples")
    assert (samples.status == "completed").all() and set(samples.model) == {"shop-v2"}
    target = json.loads((out / "manifest.json").read_text())["target"]
    assert target["type"] == make(protocol, StandInURL).kind


class StandInURL:
    url = "http://127.0.0.1:9"
    base_url = url + "/v1"


def test_an_unknown_target_type_is_one_line_naming_the_field(tmp_path, capsys):
    from evalnb.cli import main

    argv = ["run", SHOP, "--standin", "--model", "m", "--out", str(tmp_path / "r")]
    experiment = tmp_path / "e.toml"
    experiment.write_text('[target]\nstandin = true\ntype = "cohere"\nmodel = "m"\n')
    assert main([*argv, "--experiment", str(experiment)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'target.type' (--target) must be one of" in err[0]
    assert "got 'cohere'" in err[0]


def test_the_development_cache_keeps_a_vendor_target_s_draws_apart_by_model(tmp_path, standin):
    # Gemini's model is in the URL: the two variants' bodies are the same, their routes differ.
    variants = [Variant("v1"), Variant("v2", params={"model": "shop-v2"})]
    frames = []
    for n in (1, 2):
        out = tmp_path / f"r{n}"
        target = make("gemini", standin)
        run(
            SHOP,
            target,
            variants=variants,
            repeats=2,
            out=out,
            cache=tmp_path / "c",
            progress=False,
        )
        frames.append(table(out, "samples").sort_values(["variant", "case_id", "repeat"]))
    first, second = frames
    assert not first.cached.any() and second.cached.all()
    assert list(first.answer) == list(second.answer)
    assert second.groupby("variant").model.agg(set).to_dict() == {
        "v1": {"shop-v1"},
        "v2": {"shop-v2"},
    }


def test_a_bedrock_request_arrives_with_a_sigv4_signature_of_what_was_sent():
    # A real server records the request as it arrived; botocore, given the same credentials,
    # must compute the signature the request carries over that method, path, headers and body.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from tests.targets.test_openai import Recorder, _complete

    answer = {
        "output": {"message": {"role": "assistant", "content": [{"text": "pong"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4},
    }
    reply = json.dumps(answer).encode()
    server = Recorder(
        lambda _: (200, {"Content-Type": "application/json"}, reply),
        route="/model/{model}/converse",
    )
    try:
        root = server.url.removesuffix("/v1")
        model = "anthropic.claude-3-5-haiku-20241022-v1:0"
        target = BedrockConverse(model, region="eu-west-1", base_url=root)
        completion = _complete(target, "ping", temperature=0.5)
    finally:
        server.close()
    assert completion.text == "pong" and completion.total_tokens == 4
    assert completion.model == model
    ((headers, body),) = server.seen
    (path,) = server.paths
    assert path == "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    assert json.loads(body)["inferenceConfig"] == {"temperature": 0.5}
    authorization = headers["Authorization"]
    scope, signed, signature = authorization.removeprefix("AWS4-HMAC-SHA256 ").split(", ")
    assert scope.startswith("Credential=AKIDEXAMPLE0000/") and "/eu-west-1/bedrock/" in scope
    names = signed.removeprefix("SignedHeaders=").split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(names)
    again = AWSRequest(
        "POST",
        root + path,
        data=body,
        headers={name: headers[next(k for k in headers if k.lower() == name)] for name in names},
    )
    again.context["timestamp"] = headers["X-Amz-Date"]
    auth = SigV4Auth(Credentials("AKIDEXAMPLE0000", AWS_SECRET), "bedrock", "eu-west-1")
    expected = auth.signature(auth.string_to_sign(again, auth.canonical_request(again)), again)
    assert signature == f"Signature={expected}"


HISTORY = [
    {"role": "system", "content": "You answer from the notes."},
    {"role": "user", "content": "What is the project in notes.txt called?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_note", "arguments": '{"path": "notes.txt"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"ok": true, "result": "' + NOTES.replace("\n", "\\n") + '"}',
    },
]


def _system_and_tools(protocol, body):
    """Where each protocol's body holds the system prompt and the first tool's name."""
    if protocol == "anthropic":
        return body["system"], body["tools"][0]["name"], body["tools"][0]["input_schema"]
    if protocol == "responses":
        return body["instructions"], body["tools"][0]["name"], body["tools"][0]["parameters"]
    if protocol == "gemini":
        declared = body["tools"][0]["functionDeclarations"][0]
        return (
            body["systemInstruction"]["parts"][0]["text"],
            declared["name"],
            declared["parameters"],
        )
    if protocol == "bedrock":
        spec = body["toolConfig"]["tools"][0]["toolSpec"]
        return body["system"][0]["text"], spec["name"], spec["inputSchema"]["json"]
    function = body["tools"][0]["function"]
    return body["messages"][0]["content"], function["name"], function["parameters"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_system_prompt_tools_and_a_tool_history_reach_each_protocol(
    tmp_path, standin, protocol
):
    # The notes assistant answers from the tool results in the history it is sent: the
    # answer shows the call and its result crossed the protocol and came back as a chat.
    register_assistant("notes-tools", NotesAssistant(baseline=NEVER, revised=NEVER), replace=True)
    target = make(protocol, standin, "notes-tools")
    out = tmp_path / "r"
    variant = Variant("v", params={"tools": TOOLS})
    run([Case("history", messages=HISTORY)], target, variants=[variant], out=out, progress=False)
    (sample,) = table(out, "samples").itertuples()
    assert sample.status == "completed"
    assert sample.answer == "The project is called Paper Kite (from notes.txt)."
    body = json.loads(sample.request)
    system, tool, schema = _system_and_tools(protocol, body)
    assert system == "You answer from the notes." and tool == "read_note"
    assert schema == TOOLS[0]["function"]["parameters"]
    assert "model" not in body if protocol in ("gemini", "bedrock", "azure") else body["model"]


#: A 1x1 PNG, base64.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Erk"
    "Jggg=="
)


def _image_block(protocol, body):
    """The image of the first user message, as each protocol's body holds it."""
    if protocol == "responses":
        return body["input"][0]["content"][1]
    if protocol == "gemini":
        return body["contents"][0]["parts"][1]
    return body["messages"][0]["content"][1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_image_part_is_sent_in_each_protocol_s_form(tmp_path, standin, protocol):
    url = f"data:image/png;base64,{PIXEL}"
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    out = tmp_path / "r"
    case = Case("image", messages=[{"role": "user", "content": parts}])
    run([case], make(protocol, standin, "echo"), out=out, progress=False)
    (sample,) = table(out, "samples").itertuples()
    assert sample.status == "completed" and "What is this?" in sample.answer
    expected = {
        "anthropic": {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
        },
        "responses": {"type": "input_image", "image_url": url},
        "gemini": {"inlineData": {"mimeType": "image/png", "data": PIXEL}},
        "bedrock": {"image": {"format": "png", "source": {"bytes": PIXEL}}},
        "azure": parts[1],
    }
    assert _image_block(protocol, json.loads(sample.request)) == expected[protocol]
