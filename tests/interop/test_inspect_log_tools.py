"""An Inspect log with tool calls keeps its transcript: each sample's messages, the tool
calls the model requested and the results the tools gave are stored (the trace, requested
and executed actions), read by evalnb's reader (its Zstandard members through the
``zstandard`` package) and by Inspect's own ``read_eval_log`` alike."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import evalnb
from evalnb.interop import import_inspect_log

LOG = Path(__file__).parents[1] / "data" / "inspect_tools" / "addition_tools.eval"


def _inspect_python() -> str:
    """A Python that has inspect_ai: ``INSPECT_AI_PYTHON`` (``make test`` sets it to
    build/peers-venv, where Inspect lives apart: its pins clash with evalnb's dev tools)."""
    given = os.environ.get("INSPECT_AI_PYTHON")
    if not given:
        pytest.skip("Inspect is not here: set INSPECT_AI_PYTHON (make test does)")
    return given


def _stored(run_dir: Path) -> dict[str, dict]:
    run = evalnb.load(run_dir)
    samples = run.samples.to_dict("records")  # type: ignore[union-attr]
    checks = {r["case_id"]: r["outcome"] for r in run.checks.to_dict("records")}  # type: ignore[union-attr]
    return {s["case_id"]: {**s, "includes": checks[s["case_id"]]} for s in samples}


def test_evalnbs_reader_keeps_messages_and_tool_calls(tmp_path):
    result = import_inspect_log(LOG, tmp_path / "run", reader="evalnb")
    assert result.reader is not None and "Zstandard members by zstandard" in result.reader
    stored = _stored(tmp_path / "run")
    assert sorted(stored) == ["one-two", "three-four"]
    one, three = stored["one-two"], stored["three-four"]
    assert (one["includes"], three["includes"]) == (True, False)  # 3 is right, 7 is not 8
    assert one["answer"] == "The sum is 3." and three["answer"] == "The sum is 7."
    # The transcript: the question, the call, the tool's result, the answer.
    request, response = [json.loads(line) for line in one["trace"].splitlines()]
    messages = [*request["body"]["messages"], response["body"]["choices"][0]["message"]]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    (call,) = messages[1]["tool_calls"]
    assert call["function"] == {"name": "add", "arguments": '{"x": 1, "y": 2}'}
    assert messages[2]["tool_call_id"] == call["id"] and messages[2]["content"] == "3"
    # The actions, as the tool checks read them: requested, and executed with the result.
    assert [(a["tool"], json.loads(a["arguments"])) for a in three["requested"]] == [
        ("add", {"x": 3, "y": 4})
    ]
    (done,) = three["executed"]
    assert (done["tool"], done["result"], done["error"]) == ("add", "7", False)
    assert not isinstance(one["evidence_problem"], str)  # null: the evidence is whole
    manifest = json.loads((tmp_path / "run/manifest.json").read_text())
    assert manifest["provenance"]["reader"] == result.reader


def test_inspects_own_reader_gives_the_same_run(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_AI_PYTHON", _inspect_python())
    theirs = import_inspect_log(LOG, tmp_path / "inspect", reader="inspect")
    assert theirs.reader is not None and theirs.reader.startswith("inspect_ai 0.3.285")
    import_inspect_log(LOG, tmp_path / "evalnb", reader="evalnb")
    by_inspect, by_evalnb = _stored(tmp_path / "inspect"), _stored(tmp_path / "evalnb")
    kept = ["answer", "status", "includes", "trace", "prompt", "total_tokens"]
    for case_id in by_evalnb:
        assert {k: by_inspect[case_id][k] for k in kept} == {k: by_evalnb[case_id][k] for k in kept}
        assert list(by_inspect[case_id]["executed"]) == list(by_evalnb[case_id]["executed"])
    # "auto" takes Inspect's reader only from evalnb's own Python (evalnb[inspect]).
    auto = import_inspect_log(LOG, tmp_path / "auto")
    expected = theirs.reader.split(" (")[0] if "inspect_ai" in sys.modules else "evalnb's reader"
    assert str(auto.reader).startswith(expected)


def test_asking_for_inspects_reader_without_it_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("INSPECT_AI_PYTHON", raising=False)
    if "inspect_ai" in sys.modules:
        pytest.skip("inspect_ai is importable here")
    with pytest.raises(evalnb.CasesError) as error:
        import_inspect_log(LOG, tmp_path / "run", reader="inspect")
    message = str(error.value)
    assert "\n" not in message
    assert "pip install 'evalnb[inspect]', or set INSPECT_AI_PYTHON" in message
    assert not (tmp_path / "run").exists()
    # "auto" falls back to evalnb's reader.
    assert "evalnb's reader" in str(import_inspect_log(LOG, tmp_path / "auto").reader)
