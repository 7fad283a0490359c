import dataclasses
import json

from evalnb._types import ToolCall
from evalnb.checks import build_check, run_checks
from evalnb.checks._trace import evidence_from, parse_trace
from tests.builders import sample

QUESTION = {"role": "user", "content": "What is the project called? Read notes.txt."}


def call(id_, name, **arguments):
    return {
        "id": id_,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def assistant(*calls, content=None):
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool(id_, ok, payload):
    body = {"ok": True, "result": payload} if ok else {"ok": False, "error": payload}
    return {"role": "tool", "tool_call_id": id_, "content": json.dumps(body)}


def trace(*requests, final):
    lines = []
    for messages in requests:
        lines.append({"event": "request", "body": {"messages": messages}})
        lines.append({"event": "response", "status": 200, "body": {"choices": [{"message": {}}]}})
    lines[-1] = {"event": "response", "status": 200, "body": {"choices": [{"message": final}]}}
    return "\n".join(json.dumps(line) for line in lines)


def with_evidence(text, truncated=False, answer="Paper Kite"):
    evidence = evidence_from(text, truncated, ())
    return dataclasses.replace(
        sample(answer),
        requested=evidence.requested,
        executed=evidence.executed,
        evidence_problem=evidence.problem,
    )


def outcome(spec, s):
    (r,) = run_checks([build_check(spec)], s)
    return r.outcome, r.detail


LIST = assistant(call("c1", "list_notes"))
READ = assistant(call("c2", "read_note", path="notes.txt"))
HISTORY = [
    [QUESTION],
    [QUESTION, LIST, tool("c1", True, ["notes.txt"])],
    [QUESTION, LIST, tool("c1", True, ["notes.txt"]), READ, tool("c2", True, "Paper Kite")],
]


def test_repeated_history_counts_each_execution_once():
    evidence = parse_trace(trace(*HISTORY, final={"role": "assistant", "content": "Paper Kite"}))
    assert evidence.problem is None
    assert [(a.tool, a.path, a.error) for a in evidence.executed] == [
        ("list_notes", None, False),
        ("read_note", "notes.txt", False),
    ]
    assert [a.tool for a in evidence.requested] == ["list_notes", "read_note"]
    s = with_evidence(trace(*HISTORY, final={"role": "assistant", "content": "Paper Kite"}))
    spec = {"type": "required_action", "tool": "read_note", "path": "./notes.txt", "error": False}
    assert outcome(spec, s) == (True, "")
    assert outcome({"type": "required_action", "tool": "list_notes"}, s) == (True, "")


def test_a_refused_read_never_satisfies_a_required_successful_read():
    bad = assistant(call("c1", "read_note", path="private.txt"))
    text = trace(
        [QUESTION],
        [QUESTION, bad, tool("c1", False, "private.txt is not a listed note")],
        final={"role": "assistant", "content": "I could not read it."},
    )
    s = with_evidence(text)
    assert s.executed[0].error is True
    assert outcome({"type": "required_action", "tool": "read_note", "path": "private.txt"}, s) == (
        False,
        "no executed read_note(private.txt); executed: read_note(private.txt) error",
    )
    refused = {"type": "required_action", "tool": "read_note", "path": "private.txt", "error": True}
    assert outcome(refused, s) == (True, "")


def test_tool_like_text_is_not_a_call_and_not_a_read():
    text = trace([QUESTION], final={"role": "assistant", "content": 'read_note("notes.txt")'})
    s = with_evidence(text, answer='read_note("notes.txt")')
    assert s.requested == () and s.executed == ()
    assert (
        outcome({"type": "required_action", "tool": "read_note", "path": "notes.txt"}, s)[0]
        is False
    )


def test_requested_but_not_executed_and_forbidden_actions():
    propose = assistant(call("c9", "propose_note", path="x.txt", text="hi"))
    s = with_evidence(trace([QUESTION], final=propose), answer="")
    assert [a.tool for a in s.requested] == ["propose_note"] and s.executed == ()
    assert outcome({"type": "forbidden_action", "tool": "propose_note"}, s) == (
        False,
        "requested propose_note(x.txt)",
    )
    assert outcome({"type": "forbidden_action", "tool": "delete_note"}, s) == (True, "")


def test_results_without_ids_match_calls_in_order():
    calls = assistant(
        {"function": {"name": "read_note", "arguments": '{"path": "a.txt"}'}},
        {"function": {"name": "read_note", "arguments": '{"path": "b.txt"}'}},
    )
    results = [
        {"role": "tool", "content": '{"ok": true, "result": "A"}'},
        {"role": "tool", "content": "error: b.txt is missing"},
    ]
    evidence = parse_trace(
        trace([QUESTION, calls, *results], final={"role": "assistant", "content": "A"})
    )
    assert [(a.path, a.error) for a in evidence.executed] == [("a.txt", False), ("b.txt", True)]


def test_malformed_or_truncated_evidence_is_reported_never_guessed():
    good = trace(*HISTORY, final={"role": "assistant", "content": "Paper Kite"})
    assert parse_trace(good + "\n{not json").problem.startswith("trace line 7 is not JSON")
    rewritten = trace(
        [QUESTION],
        [{"role": "user", "content": "other"}],
        final={"role": "assistant", "content": "x"},
    )
    assert (
        parse_trace(rewritten).problem == "trace line 3: request rewrites message 0 of the history"
    )
    orphan = trace([QUESTION, tool("zz", True, "x")], final={"role": "assistant", "content": "x"})
    assert parse_trace(orphan).problem == "tool result at message 1 answers no preceding call"
    s = with_evidence(good, truncated=True)
    assert s.executed == ()
    assert outcome({"type": "required_action", "tool": "read_note", "path": "notes.txt"}, s) == (
        False,
        "evidence unusable: trace truncated: the evidence is incomplete",
    )


def test_without_a_trace_the_response_calls_are_requested_only():
    evidence = evidence_from(None, False, (ToolCall("c1", "read_note", '{"path": "notes.txt"}'),))
    assert [(a.tool, a.path) for a in evidence.requested] == [("read_note", "notes.txt")]
    assert evidence.executed == ()
