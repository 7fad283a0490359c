import json
import subprocess
import sys

import pytest

from evalnb import Case, CasesError, Function, StoreError, run, store
from evalnb.runner._rescore import score


def answer(request):
    return {"a": "short reply", "b": "a somewhat longer reply here"}[request.case.id]


def first_run(out):
    cases = [
        Case("a", prompt="p", checks=[{"type": "word_count", "max": 4, "name": "short"}]),
        Case("b", prompt="p", checks=[{"type": "word_count", "max": 4, "name": "short"}]),
    ]
    run(cases, Function(answer), repeats=3, out=out, progress=False)


def outcomes(out, scoring=None):
    table = store.read_table(out, "checks", scoring=scoring).to_pandas()
    return table.groupby("case_id").outcome.agg(list).to_dict()


def test_rescoring_with_a_changed_check_keeps_the_old_results(tmp_path):
    out = tmp_path / "r"
    first_run(out)
    before = outcomes(out)
    assert before == {"a": [True] * 3, "b": [False] * 3}
    stricter = [
        Case("a", prompt="p", checks=[{"type": "word_count", "max": 1, "name": "short"}]),
        Case("b", prompt="p", checks=[{"type": "word_count", "max": 10, "name": "short"}]),
    ]
    label = score(out, cases=stricter, label="v2-rules")
    assert label == "v2-rules"
    assert outcomes(out) == {"a": [False] * 3, "b": [True] * 3}  # newest by default
    assert outcomes(out, scoring="run") == before  # the old ones are still there
    assert [s["label"] for s in store.scorings(out)] == ["run", "v2-rules"]
    samples_before = store.read_table(out, "samples").num_rows
    assert samples_before == 6  # the target was not called again
    with pytest.raises(StoreError, match="exists already"):
        score(out, cases=stricter, label="v2-rules")
    with pytest.raises(StoreError, match="no committed scoring 'nope'"):
        store.read_table(out, "checks", scoring="nope")


def test_rescoring_from_the_manifest_adds_checks_for_every_case(tmp_path):
    out = tmp_path / "r"
    first_run(out)
    score(out, checks=[{"type": "contains", "text": "reply"}], label="more")
    table = store.read_table(out, "checks").to_pandas()
    assert sorted(table.check.unique()) == ["contains", "short"]
    assert len(table) == 12
    info = json.loads((out / "scores" / "more" / "scoring.json").read_text())
    assert info["cases"] == "manifest" and info["samples"] == 6


def test_python_checks_cannot_be_rebuilt_from_the_manifest(tmp_path):
    out = tmp_path / "r"
    run(
        [Case("a", prompt="p", checks=[lambda text: None])],
        Function(lambda r: "x"),
        out=out,
        progress=False,
    )
    with pytest.raises(CasesError, match="has Python checks"):
        score(out)
    assert not (out / "scores").exists() or not any((out / "scores").iterdir())


def test_an_unfinished_rescoring_is_never_read(tmp_path):
    out = tmp_path / "r"
    first_run(out)
    score(out, label="done")
    (out / "scores" / "done" / "scoring.json").unlink()  # as if it died before the marker
    assert [s["label"] for s in store.scorings(out)] == ["run"]


def test_score_command_line(tmp_path):
    out = tmp_path / "r"
    first_run(out)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        '{"id": "a", "prompt": "p", "checks": [{"type": "contains", "text": "short"}]}\n'
        '{"id": "b", "prompt": "p", "checks": [{"type": "contains", "text": "short"}]}\n'
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalnb.cli",
            "score",
            str(out),
            "--cases",
            str(cases),
            "--label",
            "cli",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "cli" in done.stdout
    assert outcomes(out) == {"a": [True] * 3, "b": [False] * 3}


def test_score_is_ascore_made_blocking_with_its_signature_and_docstring() -> None:
    import inspect
    import pickle

    import evalnb

    assert evalnb.score.__wrapped__ is evalnb.ascore  # type: ignore[attr-defined]
    assert inspect.signature(evalnb.score) == inspect.signature(evalnb.ascore)
    assert evalnb.score.__doc__ == evalnb.ascore.__doc__ and evalnb.score.__name__ == "score"
    assert pickle.loads(pickle.dumps(evalnb.score)) is evalnb.score
