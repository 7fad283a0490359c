"""A promptfoo assertion that carries code (``javascript``, a ``transform``, a template that
calls something, ...) is suite code: promptfoo runs it with Node's API in its grading worker,
so it runs only when the user says so (``--trust-code``), as a suite's Python does. The
JavaScript here would write a file wherever it may."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import evalnb
from evalnb._exceptions import ArgumentError
from evalnb.checks import build_check, run_checks
from evalnb.checks._javascript import node_path, permission_flag
from evalnb.checks._promptfoo import find_promptfoo
from evalnb.checks._promptfoo_code import assertion_code, code_kinds, for_worker
from evalnb.checks._trust import code_checks, require_trust
from evalnb.interop import import_promptfoo
from evalnb.store import read_table
from evalnb.targets import Function

ROOT = Path(__file__).resolve().parents[2]

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

needs_promptfoo = pytest.mark.skipif(
    find_promptfoo() is None, reason="promptfoo is not installed (make promptfoo installs it)"
)

#: A one-line promptfoo javascript value that writes ``{path}`` if it may, and passes saying
#: whether it could.
WRITER = (
    "(() => {{ try {{ require('fs').writeFileSync({path!r}, 'x'); "
    "return {{pass: true, score: 1, reason: 'wrote'}}; }} catch (e) {{ "
    "return {{pass: true, score: 1, reason: 'denied ' + e.code}}; }} }})()"
)


def _config(folder: Path, marker: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "prompts": ["Say hello to {{name}}"],
        "tests": [
            {
                "vars": {"name": "Ada"},
                "assert": [
                    {"type": "javascript", "value": WRITER.format(path=str(marker))},
                    {"type": "icontains", "value": "{{name}}"},
                ],
            }
        ],
    }
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    return path


def _run(suite: Path, out: Path, **keywords: object) -> evalnb.Run:
    evalnb.run(
        suite / "cases.yaml",
        Function(lambda request: "Hello Ada"),
        variants=evalnb.load_experiment(suite / "experiment.toml").variants,
        repeats=1,
        out=out,
        progress=False,
        **keywords,  # type: ignore[arg-type]
    )
    return evalnb.load(out)


@needs_promptfoo
def test_promptfoo_javascript_runs_only_when_trusted_and_the_approval_is_kept(tmp_path, capsys):
    marker = tmp_path / "PWNED"
    import_promptfoo(_config(tmp_path / "source", marker), tmp_path / "suite")
    assert not marker.exists()  # import: parsed, never run
    assert "only with --trust-code" in (tmp_path / "suite/experiment.toml").read_text("utf-8")
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.name for c in code_checks(c.checks for c in cases)] == ["javascript"]
    assert not marker.exists()  # load: parsed, never run

    with pytest.raises(ArgumentError) as refused:
        _run(tmp_path / "suite", tmp_path / "r0")
    line = str(refused.value)
    assert "\n" not in line and "check 'javascript' of case 'test-1'" in line
    assert "--trust-code" in line and "nothing was run" in line
    assert not (tmp_path / "r0").exists() and not marker.exists()

    run = _run(tmp_path / "suite", tmp_path / "r", trust_code=True)
    notice = [x for x in capsys.readouterr().err.splitlines() if "grading worker" in x]
    assert len(notice) == 1 and "8192 MB" in notice[0] and "check 'javascript'" in notice[0]
    checks = run.checks.set_index("check")  # type: ignore[union-attr]
    assert bool(checks.loc["javascript", "outcome"]) and bool(checks.loc["icontains", "outcome"])
    if permission_flag(node_path() or "node"):  # graded, and fenced by Node's permissions
        assert "denied ERR_ACCESS_DENIED" in str(checks.loc["javascript", "evidence"])
        assert not marker.exists()

    # Approved by SHA-256: a later run of the very same code is not asked again.
    _run(tmp_path / "suite", tmp_path / "r2")
    assert "grading worker" in capsys.readouterr().err

    # An edited assertion is new code: asked about again.
    cases_file = tmp_path / "suite/cases.yaml"
    data = yaml.safe_load(cases_file.read_text("utf-8"))
    data["cases"][0]["checks"][0]["assertion"]["value"] = WRITER.format(path=str(marker) + "2")
    cases_file.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    with pytest.raises(ArgumentError, match="--trust-code"):
        _run(tmp_path / "suite", tmp_path / "r3")
    assert not (tmp_path / "r3").exists()


@needs_promptfoo
def test_scoring_a_run_asks_too_and_an_untrusted_check_never_reaches_promptfoo(
    tmp_path, monkeypatch
):
    marker = tmp_path / "PWNED"
    import_promptfoo(_config(tmp_path / "source", marker), tmp_path / "suite")
    _run(tmp_path / "suite", tmp_path / "r", trust_code=True)
    # Another user, who never trusted this code, is handed the run directory.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other"))
    with pytest.raises(ArgumentError, match="check 'javascript' of case 'test-1'"):
        evalnb.score(tmp_path / "r")
    assert not (tmp_path / "r/scores").exists()
    # A check called directly (not through run or score) on code never trusted is refused
    # at its call.
    case = evalnb.load_cases(tmp_path / "suite/cases.yaml")[0]
    edited = {"type": "javascript", "value": WRITER.format(path=str(marker) + "2")}
    check = build_check({"type": "promptfoo", "assertion": edited}, case=case)
    sample = evalnb.Sample(
        run_id="r",
        case_id=case.id,
        variant="v",
        repeat=0,
        order=0,
        started_at="2026-01-01T00:00:00+00:00",
        latency_ms=5.0,
        status="completed",
        error=None,
        answer="Hello Ada",
        prompt="Say hello to Ada",
        request=None,
        response=None,
    )
    result = run_checks([check], sample, case)[0]
    assert result.outcome is False and "was not trusted" in result.detail
    assert not marker.exists() and not Path(str(marker) + "2").exists()


def test_evalnb_run_refuses_in_one_line_through_the_cli(tmp_path):
    if find_promptfoo() is None:
        pytest.skip("promptfoo is not installed (make promptfoo installs it)")
    marker = tmp_path / "PWNED"
    config = _config(tmp_path / "source", marker)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "HOME": str(tmp_path),
    }
    env.pop("EVALNB_PROMPTFOO", None)

    def evalnb_cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evalnb.cli", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
            check=False,
        )

    imported = evalnb_cli("import", "promptfoo", str(config), "--out", "suite")
    assert imported.returncode == 0, imported.stderr
    experiment = ["--experiment", "suite/experiment.toml", "--repeats", "1", "--no-progress"]
    refused = evalnb_cli("run", *experiment, "--out", "r0")
    lines = refused.stderr.splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert lines[0].startswith("evalnb run: error: the suite carries code (promptfoo javascript")
    assert "--trust-code" in lines[0] and "Traceback" not in refused.stderr
    assert not (tmp_path / "r0").exists() and not marker.exists()
    trusted = evalnb_cli("run", *experiment, "--out", "r", "--trust-code")
    assert trusted.returncode == 0, trusted.stderr
    assert [c["outcome"] for c in read_table(tmp_path / "r", "checks").to_pylist()] == [True] * 2


@pytest.mark.parametrize(
    ("assertion", "kinds"),
    [
        ({"type": "javascript", "value": "output.length > 3"}, ["javascript"]),
        ({"type": "not-javascript", "value": "output.includes('x')"}, ["javascript"]),
        ({"type": "ruby", "value": "output.size > 3"}, ["ruby"]),
        ({"type": "contains", "value": "x", "transform": "output.trim()"}, ["transform"]),
        (
            {"type": "context-faithfulness", "contextTransform": "output.context"},
            ["contextTransform"],
        ),
        ({"type": "equals", "value": "package:grader:expected"}, ["module"]),
        ({"type": "equals", "value": "file://expected.mjs:value"}, ["code file"]),
        (
            {"type": "g-eval", "value": "clear", "rubricPrompt": "file://rubric.js"},
            ["rubricPrompt file"],
        ),
        (
            {"type": "icontains", "value": "{{ ''.constructor.constructor('return 1')() }}"},
            ["template"],
        ),
        ({"type": "llm-rubric", "value": "{% set x = name.constructor('x') %}ok"}, ["template"]),
        (
            {
                "type": "assert-set",
                "assert": [
                    {"type": "contains", "value": "a"},
                    {"type": "javascript", "value": "output.length < 9"},
                ],
            },
            ["javascript"],
        ),
        # Data, not code: plain values, plain templates, a JSON schema naming "provider".
        ({"type": "icontains", "value": "{{ topic }}"}, []),
        ({"type": "equals", "value": "{{ answer | lower }}"}, []),
        ({"type": "equals", "value": '{{ (settings | load).known | join(", ") }}'}, []),
        ({"type": "icontains", "value": "{% if (a and b) %}x{% endif %}"}, []),
        ({"type": "icontains", "value": "{{ name.toUpperCase() }}"}, ["template"]),
        ({"type": "icontains", "value": '{{ x | replace(y.constructor("z"), "") }}'}, ["template"]),
        ({"type": "rouge-n", "value": "{{summary}}", "threshold": 0.2}, []),
        ({"type": "equals", "value": "file://expected.txt"}, []),
        ({"type": "is-json", "value": {"properties": {"provider": {"type": "string"}}}}, []),
    ],
)
def test_what_counts_as_code_in_a_promptfoo_assertion(assertion, kinds):
    assert code_kinds(assertion) == kinds
    assert (assertion_code(assertion) is None) is (not kinds)


def test_an_edited_or_moved_piece_of_code_is_new_and_providers_never_reach_the_worker():
    one = {"type": "javascript", "value": "output.length > 3"}
    assert assertion_code(one) != assertion_code({**one, "value": "output.length > 4"})
    moved = {"type": "contains", "value": "x", "transform": "output.length > 3"}
    assert assertion_code(one) != assertion_code(moved)
    assert assertion_code({**one, "threshold": 0.5}) == assertion_code(one)
    nested = {
        "type": "assert-set",
        "provider": "file://provider.js",
        "assert": [{"type": "llm-rubric", "value": "polite", "provider": "exec:./judge.sh"}],
    }
    assert for_worker(nested) == {
        "type": "assert-set",
        "assert": [{"type": "llm-rubric", "value": "polite"}],
    }
    schema = {"type": "is-json", "value": {"properties": {"provider": {}}}}
    assert for_worker(schema) == schema


@pytest.mark.skipif(node_path() is None, reason="Node.js is not installed")
def test_evalnbs_own_javascript_checks_stay_ungated():
    check = build_check(
        {"type": "javascript", "code": "true"}, case=evalnb.Case(id="c", prompt="p")
    )
    assert code_checks([[check]]) == []
    require_trust([[check]], False, "run")  # nothing to ask about: returns
