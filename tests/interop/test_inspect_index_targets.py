"""Multiple-choice datasets whose target is the index of a choice (``--field target=answer``):
0- or 1-based, said or detected and reported, never guessed."""

from __future__ import annotations

import json

import evalnb
from evalnb.cli import main
from evalnb.interop import import_inspect

FIELDS = {"input": "question", "target": "answer"}


def _dataset(tmp_path, answers: list[int]):
    rows = [
        {"question": "2+2?", "choices": ["3", "4", "5"], "answer": answers[0]},
        {"question": "Sky colour?", "choices": ["blue", "green"], "answer": answers[1]},
    ]
    path = tmp_path / "mc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_one_based_index_is_detected_and_reported(tmp_path):
    # "green" is choice 2 of 2: an index equal to the number of choices is 1-based.
    result = import_inspect(_dataset(tmp_path, [2, 2]), tmp_path / "suite", fields=FIELDS)
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.target for c in cases] == ["B", "B"]
    note = next(n for n in result.mapped if n.name == "target index")
    assert note.how == "2 targets, 1-based, detected: an index equals its number of choices"


def test_a_zero_based_index_is_detected_and_one_said_wins(tmp_path):
    import_inspect(_dataset(tmp_path, [1, 0]), tmp_path / "a", fields=FIELDS)
    assert [c.target for c in evalnb.load_cases(tmp_path / "a/cases.yaml")] == ["B", "A"]
    result = import_inspect(
        _dataset(tmp_path, [1, 1]), tmp_path / "b", fields=FIELDS, target_base=0
    )
    assert [c.target for c in evalnb.load_cases(tmp_path / "b/cases.yaml")] == ["B", "B"]
    assert any(n.how.endswith("0-based, said (--target-base)") for n in result.mapped)


def test_an_undecidable_base_is_one_line_that_says_what_to_do(tmp_path, capsys):
    source = _dataset(tmp_path, [1, 1])
    argv = ["import", "inspect", str(source), "--field", "input=question,target=answer"]
    assert main([*argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--target-base 0 or --target-base 1" in err
    assert main([*argv, "--target-base", "1", "--out", str(tmp_path / "y")]) == 0
    assert [c.target for c in evalnb.load_cases(tmp_path / "y/cases.yaml")] == ["A", "A"]
