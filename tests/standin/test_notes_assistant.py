"""The notes assistant (examples/notes_assistant): its policy, budgets and approval.

The dispatcher is driven directly, with no model, so every refusal here is evidence
of the policy itself. The process tests run the script against scripted stand-in
assistants, with stdin closed unless a test types an answer.
"""

import ast
import importlib.util
import io
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evalnb.standin import Reply, StandIn, ToolRequest
from evalnb.standin import _registry as standin_registry

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "notes_assistant" / "notes_assistant.py"
MARKER = "MARKER-7f3c"


def _load():
    spec = importlib.util.spec_from_file_location("notes_assistant", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


na = _load()


def never_asked(path, text):
    raise AssertionError(f"approval was asked for {path!r}")


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "workspace"
    ws.mkdir()
    (ws / "notes.txt").write_text("Project: Paper Kite\n")
    (ws / "todo.txt").write_text("Buy ink.\n")
    (ws / "private.txt").write_text(f"{MARKER} in the workspace\n")
    (ws / ".hidden.txt").write_text(f"{MARKER} hidden\n")
    (ws / "data.csv").write_text("a,b\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "deep.txt").write_text(f"{MARKER} deep\n")
    (ws / "folder.txt").mkdir()
    (tmp_path / "private.txt").write_text(f"{MARKER} in the parent\n")
    return ws


def tools(workspace, **options):
    options.setdefault("approve", never_asked)
    return na.Dispatcher(workspace, **options)


def call(dispatcher, name, **arguments):
    return dispatcher.dispatch(name, json.dumps(arguments))


def snapshot(folder):
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


# -- listing and reading ---------------------------------------------------------------


def test_the_listed_notes_are_the_txt_files_directly_in_the_workspace(workspace):
    assert call(tools(workspace), "list_notes") == {"ok": True, "result": ["notes.txt", "todo.txt"]}


def test_a_listed_note_is_read_whole(workspace):
    result = call(tools(workspace), "read_note", path="notes.txt")
    assert result == {"ok": True, "result": "Project: Paper Kite\n"}
    assert call(tools(workspace), "read_note", path="./notes.txt")["ok"] is True


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../private.txt", "leaves the workspace"),
        ("./../private.txt", "leaves the workspace"),
        ("docs/../../private.txt", "leaves the workspace"),
        ("..\\private.txt", "leaves the workspace"),
        ("/etc/passwd", "absolute path"),
        ("C:\\notes.txt", "absolute path"),
        ("private.txt", "not a listed note (private.txt is never listed)"),
        (".hidden.txt", "not a listed note (hidden files are not notes)"),
        ("data.csv", "not a listed note (only .txt files are notes)"),
        ("docs/deep.txt", "not a listed note"),
        ("docs", "not a listed note"),
        ("folder.txt", "not a listed note (it is not a regular file)"),
        ("notes.txt\x00", "NUL"),
    ],
)
def test_reads_outside_the_allow_list_are_refused(workspace, path, reason):
    result = call(tools(workspace), "read_note", path=path)
    assert result["ok"] is False
    assert reason in result["error"] and result["error"].startswith("refused")
    assert MARKER not in json.dumps(result)


def test_an_absolute_path_to_a_listed_note_is_refused_too(workspace):
    result = call(tools(workspace), "read_note", path=str(workspace / "notes.txt"))
    assert result["ok"] is False and "absolute path" in result["error"]


def test_a_missing_note_is_an_error_result_not_a_refusal(workspace):
    result = call(tools(workspace), "read_note", path="draft.txt")
    assert result == {
        "ok": False,
        "error": "no note named 'draft.txt'; list_notes shows the notes there are",
    }


# -- symlinks ------------------------------------------------------------------------


@pytest.fixture
def linked(workspace):
    """The workspace with links: out of it, to unlisted files, and one to a listed note."""
    parent = workspace.parent
    (workspace / "escape.txt").symlink_to(parent / "private.txt")
    (workspace / "relative.txt").symlink_to("../private.txt")
    (workspace / "secret.txt").symlink_to("private.txt")
    (workspace / "deeper.txt").symlink_to("docs/deep.txt")
    (workspace / "gone.txt").symlink_to("nowhere.txt")
    (workspace / "outside").symlink_to(parent, target_is_directory=True)
    # Decided: a link to a listed note of the same workspace is a note like its target.
    (workspace / "alias.txt").symlink_to("notes.txt")
    return workspace


def test_only_a_link_to_a_listed_note_is_listed(linked):
    listed = call(tools(linked), "list_notes")["result"]
    assert listed == ["alias.txt", "notes.txt", "todo.txt"]


def test_a_link_to_a_listed_note_reads_that_note(linked):
    assert call(tools(linked), "read_note", path="alias.txt") == {
        "ok": True,
        "result": "Project: Paper Kite\n",
    }


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("escape.txt", "a link leading outside the workspace"),
        ("relative.txt", "a link leading outside the workspace"),
        ("secret.txt", "a link to something that is not a listed note"),
        ("deeper.txt", "a link to something that is not a listed note"),
        ("gone.txt", "a link to something that is not a listed note"),
        ("outside/private.txt", "not a listed note"),
    ],
)
def test_links_leading_out_or_to_unlisted_files_are_refused(linked, path, reason):
    result = call(tools(linked), "read_note", path=path)
    assert result["ok"] is False and result["error"].startswith("refused")
    assert reason in result["error"]
    assert MARKER not in json.dumps(result)


# -- invalid arguments ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "error"),
    [
        ("read_note", "{not json", "arguments are not valid JSON"),
        ("read_note", "[1, 2]", "arguments must be a JSON object"),
        ("read_note", 42, "arguments must be a JSON object; got int"),
        ("read_note", "{}", "read_note needs the argument 'path'"),
        ("read_note", '{"path": 3}', "read_note: 'path' must be a string; got 3"),
        ("read_note", '{"path": ["notes.txt"]}', "'path' must be a string"),
        ("read_note", '{"path": "  "}', "'path' must name a note"),
        ("read_note", '{"path": "notes.txt", "mode": "w"}', "unexpected argument 'mode'"),
        ("list_notes", '{"path": "notes.txt"}', "list_notes takes no arguments"),
        ("propose_note", '{"path": "idea.txt"}', "propose_note needs the argument 'text'"),
        ("propose_note", '{"path": "idea.txt", "text": null}', "'text' must be a string"),
        ("delete_note", '{"path": "notes.txt"}', "unknown tool 'delete_note'"),
        (None, "{}", "unknown tool None"),
        (["read_note"], "{}", "unknown tool ['read_note']"),
    ],
)
def test_invalid_calls_are_error_results(workspace, name, raw, error):
    result = tools(workspace).dispatch(name, raw)
    assert result["ok"] is False
    assert error in result["error"]


@pytest.mark.parametrize("raw", ["", "  ", "{}", None, {}])
def test_a_call_without_arguments_may_send_nothing(workspace, raw):
    assert tools(workspace).dispatch("list_notes", raw)["ok"] is True


def test_arguments_sent_as_an_object_are_accepted(workspace):
    assert tools(workspace).dispatch("read_note", {"path": "notes.txt"})["ok"] is True


# -- approval and exclusive creation ---------------------------------------------------


def test_an_approved_proposal_is_saved(workspace):
    asked = []
    dispatcher = tools(workspace, approve=lambda path, text: asked.append((path, text)) or True)
    result = call(dispatcher, "propose_note", path="idea.txt", text="Buy more ink.")
    assert result == {"ok": True, "result": "saved idea.txt"}
    assert asked == [("idea.txt", "Buy more ink.")]
    assert (workspace / "idea.txt").read_text() == "Buy more ink."


def test_a_refused_proposal_saves_nothing(workspace):
    before = snapshot(workspace)
    dispatcher = tools(workspace, approve=lambda path, text: False)
    result = call(dispatcher, "propose_note", path="idea.txt", text="Buy more ink.")
    assert result == {"ok": False, "error": "not approved"}
    assert snapshot(workspace) == before


def test_no_answer_on_stdin_stops_the_run(workspace):
    dispatcher = tools(workspace, approve=lambda p, t: na.ask_on_stdin(p, t, stdin=io.StringIO()))
    with pytest.raises(na.ApprovalUnavailable, match="approval needed but stdin is closed") as info:
        call(dispatcher, "propose_note", path="idea.txt", text="x")
    assert info.value.exit_code == 3
    assert not (workspace / "idea.txt").exists()


@pytest.mark.parametrize(
    ("typed", "approved"),
    [("yes\n", True), ("YES \n", True), ("no\n", False), ("y\n", False), ("\n", False)],
)
def test_only_an_explicit_yes_approves(typed, approved, capsys):
    assert na.ask_on_stdin("idea.txt", "Buy ink.", stdin=io.StringIO(typed)) is approved
    assert "idea.txt" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../idea.txt", "leaves the workspace"),
        ("/tmp/idea.txt", "absolute path"),
        ("docs/idea.txt", "not a listed note"),
        ("private.txt", "cannot save 'private.txt' (private.txt is never listed)"),
        ("idea.md", "only .txt files are notes"),
        (".idea.txt", "hidden files are not notes"),
        ("notes.txt", "'notes.txt' already exists and notes are never overwritten"),
        ("folder.txt", "already exists"),
    ],
)
def test_a_proposal_the_policy_forbids_is_refused_before_anyone_is_asked(workspace, path, reason):
    before = snapshot(workspace)
    result = call(tools(workspace), "propose_note", path=path, text="overwritten!")
    assert result["ok"] is False and reason in result["error"]
    assert snapshot(workspace) == before


def test_a_note_created_while_approval_was_pending_is_never_overwritten(workspace):
    def approve_late(path, text):
        (workspace / path).write_text("written meanwhile")
        return True

    result = call(tools(workspace, approve=approve_late), "propose_note", path="new.txt", text="x")
    assert result == {
        "ok": False,
        "error": "refused: 'new.txt' already exists and notes are never overwritten",
    }
    assert (workspace / "new.txt").read_text() == "written meanwhile"


def test_a_link_placed_while_approval_was_pending_is_not_followed(workspace):
    target = workspace.parent / "planted.txt"

    def approve_late(path, text):
        (workspace / path).symlink_to(target)
        return True

    result = call(tools(workspace, approve=approve_late), "propose_note", path="new.txt", text="x")
    assert result["ok"] is False and "already exists" in result["error"]
    assert not target.exists()


# -- budgets -------------------------------------------------------------------------


def test_every_requested_call_counts_towards_the_tool_call_budget(workspace):
    dispatcher = tools(workspace, max_tool_calls=3)
    assert call(dispatcher, "list_notes")["ok"] is True
    assert dispatcher.dispatch("nonsense", "{}")["ok"] is False
    assert call(dispatcher, "read_note", path="../private.txt")["ok"] is False
    with pytest.raises(na.ToolCallBudgetExceeded, match="more than 3 tool calls") as info:
        call(dispatcher, "list_notes")
    assert info.value.exit_code == 4


def test_the_read_budget_counts_bytes_across_reads(workspace):
    size = len(b"Project: Paper Kite\n")
    dispatcher = tools(workspace, max_read_bytes=2 * size)
    assert call(dispatcher, "read_note", path="notes.txt")["ok"] is True
    assert call(dispatcher, "read_note", path="notes.txt")["ok"] is True
    assert dispatcher.bytes_read == 2 * size
    with pytest.raises(na.ReadBudgetExceeded, match="past 40 bytes") as info:
        call(dispatcher, "read_note", path="todo.txt")
    assert info.value.exit_code == 5
    assert dispatcher.bytes_read == 2 * size


class FakeChat:
    """Answers each post with the next scripted message and keeps a copy of every body."""

    def __init__(self, *messages):
        self.messages = list(messages)
        self.bodies = []

    def remaining(self):
        return 60.0

    def post(self, body):
        self.bodies.append(json.loads(json.dumps(body)))
        return 200, {"choices": [{"message": self.messages.pop(0)}]}


def test_a_call_without_an_id_gets_one_that_its_result_names(workspace):
    call_ = {"type": "function", "function": {"name": "list_notes", "arguments": "{}"}}
    chat = FakeChat(
        {"role": "assistant", "content": None, "tool_calls": [call_]}, {"content": "ok"}
    )
    final = na.answer(
        "Which notes?",
        chat=chat,
        tools=tools(workspace),
        trace=na.Trace(None),
        model="m",
        temperature=0.2,
        max_tokens=10,
    )
    assert final == "ok"
    _, assistant, tool = chat.bodies[1]["messages"]
    assert assistant["tool_calls"] == [{**call_, "id": "call_1_0"}]
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1_0",
        "content": json.dumps({"ok": True, "result": ["notes.txt", "todo.txt"]}),
    }


def test_the_script_needs_only_the_standard_library_and_httpx():
    tree = ast.parse(SCRIPT.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"httpx"}


# -- the process, against scripted stand-in assistants ---------------------------------


class Scripted:
    """Answers from the tool results seen so far: ``step(list of tool contents)``."""

    def __init__(self, step):
        self.step = step

    def respond(self, messages, params, rng):
        return self.step([m["content"] for m in messages if m.get("role") == "tool"])


def proposer(results):
    if not results:
        return Reply(None, [ToolRequest("propose_note", {"path": "idea.txt", "text": "Buy ink."})])
    return Reply("the tool said " + results[-1])


def reader(results):
    if not results:
        return Reply("Let me look.", [ToolRequest("read_note", {"path": "notes.txt"})])
    return Reply("notes.txt holds " + json.loads(results[-1])["result"].strip())


def looper(tool, arguments):
    return lambda results: Reply(None, [ToolRequest(tool, arguments)])


@pytest.fixture
def scripted(monkeypatch):
    def register(name, step):
        monkeypatch.setitem(standin_registry._REGISTRY, name, Scripted(step))
        return name

    return register


def run(base_url, workspace, *args, model, typed=None, env=None):
    argv = [sys.executable, str(SCRIPT), "--base-url", base_url, "--model", model, *args]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EVALNB_")}
    return subprocess.run(
        argv,
        cwd=workspace,
        input=typed,
        stdin=subprocess.DEVNULL if typed is None else None,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
    )


def events(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_traces_every_request_response_and_tool_result(standin, scripted, workspace):
    trace = workspace.parent / "trace.jsonl"
    model = scripted("test-notes-reader", reader)
    done = run(standin.base_url, workspace, "What is it?", "--trace", str(trace), model=model)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "notes.txt holds Project: Paper Kite\n"
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600

    first, response, result, second, response2, final = events(trace)
    assert [first["event"], first["turn"]] == ["request", 1]
    assert first["body"]["messages"] == [{"role": "user", "content": "What is it?"}]
    assert [response["event"], response["turn"], response["status"]] == ["response", 1, 200]
    (call_,) = response["body"]["choices"][0]["message"]["tool_calls"]
    content = json.dumps({"ok": True, "result": "Project: Paper Kite\n"})
    assert result == {
        "event": "tool_result",
        "turn": 1,
        "tool_call_id": call_["id"],
        "tool": "read_note",
        "arguments": {"path": "notes.txt"},
        "ok": True,
        "content": content,
    }
    assert second["turn"] == 2 and second["body"]["messages"] == [
        {"role": "user", "content": "What is it?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [call_]},
        {"role": "tool", "tool_call_id": call_["id"], "content": content},
    ]
    assert response2["turn"] == 2
    assert final == {"event": "final", "answer": "notes.txt holds Project: Paper Kite"}


def test_requests_carry_the_settings_and_the_question_can_come_from_a_request_file(
    standin, workspace
):
    request = workspace.parent / "request.json"
    request.write_text(json.dumps({"case_id": "c", "prompt": "Say this back."}))
    trace = workspace.parent / "trace.jsonl"
    env = {"EVALNB_TRACE": str(trace)}
    done = run(standin.base_url, workspace, "--request", str(request), model="echo", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Say this back.\n"
    body = events(trace)[0]["body"]
    assert {k: body[k] for k in ("temperature", "max_tokens", "stream")} == {
        "temperature": 0.2,
        "max_tokens": 1024,
        "stream": False,
    }
    assert [t["function"]["name"] for t in body["tools"]] == [
        "list_notes",
        "read_note",
        "propose_note",
    ]
    assert "options" not in body

    again = run(standin.base_url, workspace, "Hi", "--send-context", model="echo", env=env)
    assert again.returncode == 0, again.stderr
    assert events(trace)[0]["body"]["options"] == {"num_ctx": 8192}


def test_a_proposal_with_stdin_closed_fails_the_run_and_saves_nothing(standin, scripted, workspace):
    before = snapshot(workspace)
    trace = workspace.parent / "trace.jsonl"
    model = scripted("test-notes-proposer", proposer)
    done = run(standin.base_url, workspace, "Save an idea.", "--trace", str(trace), model=model)
    assert done.returncode == 3
    assert "notes_assistant: approval needed but stdin is closed" in done.stderr
    assert done.stdout == ""
    assert snapshot(workspace) == before
    assert [e["event"] for e in events(trace)] == ["request", "response"]


def test_yes_on_stdin_saves_and_no_refuses(standin, scripted, workspace):
    model = scripted("test-notes-proposer", proposer)
    refused = run(standin.base_url, workspace, "Save an idea.", model=model, typed="no\n")
    assert refused.returncode == 0, refused.stderr
    assert '"error": "not approved"' in refused.stdout
    assert not (workspace / "idea.txt").exists()

    saved = run(standin.base_url, workspace, "Save an idea.", model=model, typed="yes\n")
    assert saved.returncode == 0, saved.stderr
    assert '"result": "saved idea.txt"' in saved.stdout
    assert (workspace / "idea.txt").read_text() == "Buy ink."


@pytest.mark.parametrize(
    ("step", "options", "code", "message"),
    [
        (looper("list_notes", {}), ["--max-tool-calls", "3"], 4, "tool-call budget exceeded"),
        (looper("read_note", {"path": "notes.txt"}), ["--max-read-bytes", "30"], 5, "read budget"),
    ],
)
def test_a_budget_ends_the_run_with_its_own_exit_code(
    standin, scripted, workspace, step, options, code, message
):
    trace = workspace.parent / "trace.jsonl"
    model = scripted("test-notes-looper", step)
    done = run(standin.base_url, workspace, "Loop.", "--trace", str(trace), *options, model=model)
    assert done.returncode == code
    assert f"notes_assistant: {message}" in done.stderr
    assert done.stdout == ""
    assert "final" not in [e["event"] for e in events(trace)]


def test_the_turn_deadline_ends_a_run_waiting_on_a_silent_server(workspace):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        done = run(url, workspace, "Hello?", "--turn-deadline", "0.5", model="m")
    assert done.returncode == 6
    assert "notes_assistant: turn deadline exceeded" in done.stderr


def test_http_errors_and_invalid_responses_exit_with_code_2(standin, workspace):
    trace = workspace.parent / "trace.jsonl"
    unknown = run(standin.base_url, workspace, "Hi", "--trace", str(trace), model="no-such-model")
    assert unknown.returncode == 2
    assert "notes_assistant: the model server answered HTTP 404" in unknown.stderr
    assert events(trace)[-1]["status"] == 404

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    unreachable = run(f"http://127.0.0.1:{port}/v1", workspace, "Hi", model="m")
    assert unreachable.returncode == 2 and "cannot reach the model" in unreachable.stderr

    with StandIn(faults=[{"kind": "malformed"}]) as broken:
        garbled = run(broken.base_url, workspace, "Hi", "--trace", str(trace), model="echo")
    assert garbled.returncode == 2 and "invalid response: not JSON" in garbled.stderr
    assert isinstance(events(trace)[-1]["body"], str)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["one", "--request", "r.json"],
        ["--request", "missing.json"],
        ["   "],
        ["Hi", "--workspace", "no-such-folder"],
        ["Hi", "--trace", "no-such-folder/trace.jsonl"],
        ["Hi", "--temperature", "3"],
        ["Hi", "--max-tool-calls", "0"],
    ],
)
def test_usage_errors_exit_with_code_64(workspace, args):
    done = run("http://127.0.0.1:9/v1", workspace, *args, model="m")
    assert done.returncode == 64
    assert "error:" in done.stderr
