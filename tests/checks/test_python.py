"""Python checks named by import path persist: recorded in the manifest and run again by
``evalnb score``; a check that cannot be rebuilt is an error naming it, never dropped."""

import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from evalnb import CasesError, Function, FunctionCheck, load_cases, run, store
from evalnb.runner._rescore import score

MODULE = """\
def polite(answer, words=("please",)):
    return any(w in answer.lower() for w in words) or "not polite"


def brevity(answer, sample):
    # a graded check: 1 for one word, less for more
    return 1 / max(1, len(answer.split()))


def about_target(answer, case):
    return case.target.lower() in answer.lower()
"""

CASES = [
    {
        "id": "ask",
        "prompt": "Ask for the salt.",
        "target": "salt",
        "checks": [
            {"type": "python", "function": "mychecks:polite", "args": {"words": ["please"]}},
            {"type": "python", "function": "mychecks:brevity", "name": "brevity", "threshold": 0.3},
            {"type": "python", "function": "mychecks:about_target", "name": "on topic"},
        ],
    },
    {
        "id": "thank",
        "prompt": "Say thanks.",
        "target": "thanks",
        "checks": [{"type": "python", "function": "mychecks:polite", "args": {"words": ["thank"]}}],
    },
]
ANSWERS = {"ask": "Pass the salt, please.", "thank": "Cheers."}


def suite(tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "mychecks.py").write_text(MODULE)
    path = folder / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    return path


def answer(request):
    return ANSWERS[request.case.id]


def results(out, scoring=None):
    table = store.read_table(out, "checks", scoring=scoring).to_pandas()
    return {
        (r.case_id, r.repeat, r.check): (r.outcome, None if pd.isna(r.score) else r.score, r.detail)
        for r in table.itertuples()
    }


def evalnb_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "evalnb.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def test_a_python_check_by_import_path_survives_evalnb_score(tmp_path):
    out = tmp_path / "run"
    run(suite(tmp_path), Function(answer), repeats=2, out=out, progress=False)
    before = results(out)
    assert before[("ask", 0, "python")] == (True, None, "")
    assert before[("thank", 0, "python")] == (False, None, "not polite")
    assert before[("ask", 0, "brevity")] == (False, 0.25, "score 0.25 < threshold 0.3")
    assert before[("ask", 1, "on topic")] == (True, None, "")
    manifest = json.loads((out / "manifest.json").read_text())
    spec = manifest["cases"][0]["checks"][0]
    assert spec == {
        "type": "python",
        "function": "mychecks:polite",
        "args": {"words": ["please"]},
        "base": str((tmp_path / "suite").resolve()),
    }
    # Rescored by the command line from another folder: the module is found by the
    # folder recorded in the manifest, and every check comes back with the same results.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = evalnb_cli("score", str(out), "--label", "again", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert results(out, scoring="again") == before
    assert len(before) == 2 * (3 + 1)


def test_a_lambda_passed_only_at_run_time_makes_evalnb_score_fail_naming_it(tmp_path):
    out = tmp_path / "run"
    shouty = FunctionCheck(lambda a: a.isupper() or "not shouting", name="shouty")
    run(suite(tmp_path), Function(answer), out=out, checks=[shouty], progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra_checks"][0]["function"] == (
        f"{__name__}:test_a_lambda_passed_only_at_run_time_makes_evalnb_score_fail_naming_it"
        ".<locals>.<lambda>"
    )
    done = evalnb_cli("score", str(out), cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"evalnb score: error: {out}/manifest.json: the run has Python checks")
    assert "'shouty' given to every case (tests.checks.test_python:" in line
    assert "pass them again" in line
    assert not (out / "scores").exists() or not any((out / "scores").iterdir())
    # Passed again, it takes its place: nothing is dropped. On the command line, by import
    # path from a module in the current folder...
    (tmp_path / "helpers.py").write_text(
        "def shouty(answer):\n    return answer.isupper() or 'not shouting'\n"
    )
    spec = json.dumps({"type": "python", "function": "helpers:shouty", "name": "shouty"})
    done = evalnb_cli("score", str(out), "--check", spec, "--label", "cli", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert results(out, scoring="cli")[("ask", 0, "shouty")] == (False, None, "not shouting")
    # ...or from Python, the same callable again.
    label = score(out, checks=[shouty], label="with-shouty")
    table = store.read_table(out, "checks", scoring=label).to_pandas()
    assert sorted(table.check.unique()) == ["brevity", "on topic", "python", "shouty"]
    assert table[table.check == "shouty"].outcome.eq(False).all()


def kind(answer):
    return "kind" in answer or "not kind"


def test_a_module_level_function_given_at_run_time_is_rebuilt_by_its_import_path(tmp_path):
    out = tmp_path / "run"
    run(suite(tmp_path), Function(answer), out=out, checks=[kind], progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra_checks"] == [
        {"type": "python", "name": "kind", "function": f"{__name__}:kind"}
    ]
    label = score(out)
    table = store.read_table(out, "checks", scoring=label).to_pandas()
    assert set(table.check) == {"python", "brevity", "on topic", "kind"}
    assert table.set_index("check").loc["kind"].outcome.eq(False).all()


def test_an_unimportable_check_is_an_error_at_its_line(tmp_path):
    path = suite(tmp_path)
    path.write_text(
        json.dumps(CASES[0])
        + "\n"
        + json.dumps(
            {"id": "b", "prompt": "p", "checks": [{"type": "python", "function": "nope:fn"}]}
        )
        + "\n"
    )
    with pytest.raises(CasesError) as info:
        load_cases(path)
    assert str(info.value).startswith(
        f"{path}:2: 'checks[0].function' cannot be found: no module 'nope' (not in "
    )
    path.write_text(
        json.dumps({"id": "b", "prompt": "p", "checks": [{"type": "python", "function": "x"}]})
    )
    with pytest.raises(CasesError, match="must be an import path 'module:function'"):
        load_cases(path)


def test_a_missing_function_stops_the_run_before_any_sample_naming_case_and_check(tmp_path):
    path = suite(tmp_path)
    path.write_text(
        json.dumps(
            {"id": "b", "prompt": "p", "checks": [{"type": "python", "function": "mychecks:rude"}]}
        )
    )
    cases = load_cases(path)  # found, not imported: nothing of it ran yet
    out = tmp_path / "run"
    with pytest.raises(
        ValueError,
        match=r"^case 'b': 'checks\[0\]\.function' names nothing: mychecks has no 'rude'",
    ):
        run(cases, Function(answer), out=out, repeats=1, progress=False)
    assert not (out / "samples").exists()


SIDE_EFFECT = """import pathlib

pathlib.Path(__file__).with_name("imported.txt").write_text("ran")


def ok(answer):
    return True
"""


def test_loading_a_suite_runs_none_of_its_modules_a_run_does(tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "sidechecks.py").write_text(SIDE_EFFECT)
    path = folder / "cases.jsonl"
    path.write_text(
        json.dumps(
            {"id": "a", "prompt": "p", "checks": [{"type": "python", "function": "sidechecks:ok"}]}
        )
        + "\n"
    )
    cases = load_cases(path)
    assert cases[0].checks[0].spec["base"] == str(folder.resolve())
    assert not (folder / "imported.txt").exists()
    out = tmp_path / "run"
    run(cases, Function(lambda request: "fine"), out=out, repeats=1, progress=False)
    assert (folder / "imported.txt").read_text() == "ran"
    assert results(out) == {("a", 0, "python"): (True, None, "")}


def test_two_folders_may_each_have_a_module_of_the_same_name(tmp_path):
    first = suite(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "mychecks.py").write_text(textwrap.dedent(MODULE).replace('"not polite"', '"rude"'))
    (other / "cases.jsonl").write_text(json.dumps(CASES[1]) + "\n")
    ours = load_cases(first)[1].checks[0]
    theirs = load_cases(other / "cases.jsonl")[0].checks[0]
    assert ours.function is not theirs.function
    assert theirs.function("Cheers.") == "rude" and ours.function("Cheers.") == "not polite"


SLOW = """\
import time


def stuck(answer):
    while True:  # never returns: the check must not hold the run
        time.sleep(0.05)


def quick(answer):
    return "ok" in answer or "no ok"
"""


def test_a_check_that_never_returns_fails_at_its_budget_and_the_run_goes_on(tmp_path):
    """A python check that hangs once held the event loop: no sample was written and
    Ctrl-C was ignored. Now it fails at its ``timeout``; the other checks and samples go on,
    in the run and in ``evalnb score``."""
    import time

    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "slow.py").write_text(SLOW)
    cases = [
        {
            "id": f"c{i}",
            "prompt": "say ok",
            "checks": [
                {"type": "python", "function": "slow:stuck", "timeout": 0.3},
                {"type": "python", "function": "slow:quick", "name": "quick"},
                {"type": "contains", "text": "ok"},
            ],
        }
        for i in range(3)
    ]
    path = folder / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    out = tmp_path / "run"
    started = time.monotonic()
    summary = run(path, Function(lambda request: "ok"), repeats=2, out=out, progress=False)
    assert time.monotonic() - started < 30  # without the budget: never
    assert summary.counts == {"baseline": {"completed": 6}}
    got = results(out)
    assert len(got) == 6 * 3
    for (case, repeat, check), (outcome, _, detail) in got.items():
        if check == "python":
            assert outcome is False and detail.startswith("gave up after 0.3 s"), detail
        else:
            assert outcome is True, (case, repeat, check, detail)
    done = evalnb_cli("score", str(out), "--label", "again", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert results(out, scoring="again") == got


def test_a_callable_check_has_a_budget_and_a_json_schema_pattern_too():
    import time

    from evalnb.checks import Outcome, as_check, build_check, run_checks
    from tests.builders import sample

    def sleepy(answer):
        time.sleep(30)

    started = time.monotonic()
    (result,) = run_checks([as_check(sleepy, timeout=0.2)], sample("x"))
    assert time.monotonic() - started < 5
    assert result.outcome is False and result.detail.startswith("gave up after 0.2 s")
    (result,) = run_checks([as_check(lambda a: Outcome(True), "fine")], sample("x"))
    assert result.outcome is True
    with pytest.raises(ValueError, match="'timeout' must be a number of seconds > 0"):
        as_check(sleepy, timeout=-1)
    # jsonschema's own "pattern" uses re, which backtracks here for minutes.
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a|aa)+$"}}}
    check = build_check({"type": "json_schema", "schema": schema})
    started = time.monotonic()
    (result,) = run_checks([check], sample(json.dumps({"code": "a" * 40 + "!"})))
    assert time.monotonic() - started < 10
    assert result.outcome is False and "gave up after 2 s" in result.detail
    (result,) = run_checks([check], sample(json.dumps({"code": "aaa"})))
    assert result.outcome is True
    (result,) = run_checks([check], sample(json.dumps({"code": "b"})))
    assert result.outcome is False and "does not match" in result.detail
