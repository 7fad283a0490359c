"""Code graders (Python source, JavaScript in Node.js), latency and cost checks: promptfoo's
return convention, bounded time and memory, no network, a one-line refusal without Node."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from evalnb._exceptions import ArgumentError
from evalnb._types import Case, Sample
from evalnb.checks import Outcome, Unscored, build_check
from evalnb.checks._javascript import node_path
from evalnb.checks._trust import require_trust

needs_node = pytest.mark.skipif(node_path() is None, reason="Node.js is not installed")


def _sample(answer: str, *, latency_ms: float = 12.0, response: dict | None = None) -> Sample:
    return Sample(
        run_id="r",
        case_id="c",
        variant="v",
        repeat=0,
        order=0,
        started_at=dt.datetime(2024, 6, 1, tzinfo=dt.UTC),
        latency_ms=latency_ms,
        status="completed",
        error=None,
        answer=answer,
        prompt="Say hello about rain",
        request=None,
        response=json.dumps(response) if response is not None else None,
    )


CASE = Case(id="c", vars={"topic": "rain"}, prompt="x")


def _run(spec: dict, answer: str = "Ahoy, rain today") -> Outcome:
    check = build_check(spec, case=CASE)
    require_trust([[check]], True, "run")  # the user says so, as --trust-code does
    result = check(_sample(answer))
    assert isinstance(result, Outcome)
    return result


@pytest.mark.parametrize(
    ("code", "passed", "score"),
    [
        ("output.startswith('Ahoy')", True, 1.0),
        ("'rain' in output and context['vars']['topic'] == 'rain'", True, 1.0),
        ("len(output) / 100", True, 0.16),  # a number is a score: passes above 0
        ("max(0, len(output) - 300)", False, 0.0),
        (
            "x = len(output)\nreturn {'pass': x > 100, 'score': 0.25, 'reason': 'short'}",
            False,
            0.25,
        ),
    ],
)
def test_python_code_follows_promptfoos_return_convention(code, passed, score) -> None:
    result = _run({"type": "python_code", "code": code})
    assert result.passed is passed and result.score == pytest.approx(score)


def test_python_code_threshold_function_and_errors() -> None:
    module = "def grade(output, context):\n    return len(output) / 100\n"
    result = _run({"type": "python_code", "code": module, "function": "grade", "threshold": 0.5})
    assert result.passed is False and "passes >= 0.5" in result.detail
    raised = _run({"type": "python_code", "code": "1 / 0"})
    assert raised.passed is False and "ZeroDivisionError" in raised.detail
    with pytest.raises(ArgumentError, match=r"'check.code' is not valid Python \(line 1"):
        build_check({"type": "python_code", "code": "def ("})
    with pytest.raises(ArgumentError, match="names no function"):
        build_check({"type": "python_code", "code": module, "function": "other"})


@needs_node
@pytest.mark.parametrize(
    ("spec", "passed", "score"),
    [
        ({"code": "output.startsWith('Ahoy')"}, True, 1.0),
        ({"code": "output.includes(context.vars.topic) && context.prompt.length > 0"}, True, 1.0),
        ({"code": "const n = output.length;\nreturn n / 100;"}, True, 0.16),
        ({"code": "const r = {pass: false, score: 0.3, reason: 'meh'};\nreturn r;"}, False, 0.3),
        # promptfoo returns a single line: an IIFE works. A line that is a `return` statement
        # is the body (promptfoo would fail on it; an evalnb check may write it so).
        ({"code": "(() => { const w = output.split(' '); return w.length > 2; })()"}, True, 1.0),
        ({"code": "const s = output; s.startsWith('Ahoy')"}, True, 1.0),
        ({"code": "return output.length > 0;\n"}, True, 1.0),
        ({"code": "module.exports.f = (o, c) => o.length > 100;", "function": "f"}, False, 0.0),
        ({"code": "output.a === 1", "transform": ["JSON.parse('{\"a\": 1}')"]}, True, 1.0),
        ({"code": "output === 1", "transform": ["const o = {a: 1};\nreturn o.a;"]}, True, 1.0),
        ({"code": "output.length / 100", "threshold": 0.5}, False, 0.16),
    ],
)
def test_javascript_in_node(spec, passed, score) -> None:
    result = _run({"type": "javascript", **spec})
    assert result.passed is passed and result.score == pytest.approx(score)


@needs_node
def test_javascript_has_no_require_no_process_no_eval_and_bounded_time() -> None:
    assert "require is not defined" in _run({"type": "javascript", "code": "require('fs')"}).detail
    escape = _run({"type": "javascript", "code": "context.constructor.constructor('return 1')()"})
    assert escape.passed is False and "Code generation from strings disallowed" in escape.detail
    looped = _run({"type": "javascript", "code": "while (true) {}\nreturn 1;", "timeout": 0.5})
    assert looped.passed is False and "timed out" in looped.detail
    fetched = _run({"type": "javascript", "code": "typeof fetch === 'undefined'"})
    assert fetched.passed is True
    # The process lives on after each failure: the next call answers.
    assert _run({"type": "javascript", "code": "1 + 1 === 2"}).passed is True


@needs_node
def test_javascript_memory_is_bounded_and_node_restarts() -> None:
    grow = "const a = [];\nwhile (true) { a.push(new Array(1e6).fill(1)); }"
    result = _run({"type": "javascript", "code": grow, "timeout": 20})
    assert result.passed is False and "heap" in result.detail
    assert _run({"type": "javascript", "code": "true"}).passed is True


def test_javascript_without_node_is_a_one_line_refusal(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ArgumentError, match=r"needs Node\.js: no 'node' on PATH") as info:
        build_check({"type": "javascript", "code": "true"}, where="checks[0]")
    assert "\n" not in str(info.value)


def test_latency_and_cost_checks_read_what_the_sample_recorded() -> None:
    latency = build_check({"type": "latency", "max_ms": 10})
    slow = latency(_sample("x", latency_ms=12.0))
    assert isinstance(slow, Outcome) and slow.passed is False and "12 ms" in slow.detail
    usage = {"model": "m", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}
    cost = build_check({"type": "cost", "max_usd": 0.002, "prices": {"m": [1.0, 2.0]}})
    priced = cost(_sample("x", response=usage))
    # 1000 * $1/M + 500 * $2/M = $0.002
    assert isinstance(priced, Outcome) and priced.passed is True and "$0.002000" in priced.detail
    unpriced = build_check({"type": "cost", "max_usd": 0.002})(_sample("x", response=usage))
    assert isinstance(unpriced, Unscored) and "no price for model 'm'" in unpriced.reason


@needs_node
def test_a_node_without_the_permission_model_still_runs_graders(
    tmp_path, monkeypatch, capsys
) -> None:
    # Debian 12's Node.js (18) has no permission model: its flag is "bad option" there.
    import os

    from evalnb.checks import _javascript

    real = node_path()
    fake = tmp_path / "node"
    fake.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in --permission|--experimental-permission)\n'
        '  echo "node: bad option: $a" >&2; exit 9;; esac; done\n'
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert node_path() == str(fake)
    assert _javascript.permission_flag(str(fake)) is None
    _javascript._NODE.stop()  # the process a real node started for earlier tests
    try:
        assert _run({"type": "javascript", "code": "output.startsWith('Ahoy')"}).passed is True
        refused = _run({"type": "javascript", "code": "require('fs')"})
        assert refused.passed is False and "require is not defined" in refused.detail
        # Said once, in one line: the layer that is missing here.
        said = [line for line in capsys.readouterr().err.splitlines() if "without" in line]
        assert said == [
            "evalnb: javascript graders run without Node's permission model (this Node has no "
            "permission flag)"
        ]
    finally:
        _javascript._NODE.stop()
