"""OpenAI / Azure Evals ``testing_criteria`` over ``{"item": ...}`` data: each grader type
becomes a check, is approximated or is refused (saying what to do), and the checks give
the verdicts the graders define on fixed answers."""

from __future__ import annotations

import json
from pathlib import Path

import evalnb
from evalnb.cli import main
from evalnb.interop import import_openai_graders
from evalnb.targets import Function, OpenAIChat

DATA = Path(__file__).parents[1] / "data" / "openai_graders"
ANSWERS = {"capital-fr": "Paris", "capital-it": "It is rome."}


def test_every_grader_type_is_imported_approximated_or_refused(tmp_path):
    result = import_openai_graders(
        DATA / "data.jsonl", tmp_path / "suite", criteria=DATA / "criteria.json"
    )
    assert [n.name for n in result.mapped] == ["string_check"] * 4
    assert [a.name for a in result.approximated] == ["score_model", "label_model", "python"]
    refused = {u.name: u.reason for u in result.unsupported}
    assert list(refused) == ["text_similarity", "multi"]
    assert "python grader" in refused["text_similarity"] and "rates()" in refused["multi"]
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.id for c in cases] == ["capital-fr", "capital-it"]
    assert cases[1].checks[0].spec["pattern"] == "\\ARome\\Z"  # {{item.answer}} per item


def test_the_checks_grade_fixed_answers_as_the_graders_define(standin, tmp_path):
    import_openai_graders(DATA / "data.jsonl", tmp_path / "suite", criteria=DATA / "criteria.json")
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    evalnb.run(
        tmp_path / "suite/cases.yaml",
        Function(lambda request: ANSWERS[request.case.id]),
        variants=experiment.variants,
        repeats=1,
        out=tmp_path / "run",
        judge=OpenAIChat(standin.base_url, "judge"),
        progress=False,
        trust_code=True,  # the graders are these tests' own files
    )
    rows = evalnb.load(tmp_path / "run").checks
    got = {(r["case_id"], r["check"]): r["outcome"] for r in rows.to_dict("records")}
    # string_check: eq is exact, like case-sensitive, ilike not; python grade() ignores case.
    assert got[("capital-fr", "exact")] is True and got[("capital-it", "exact")] is False
    assert got[("capital-it", "not-empty")] is True
    assert got[("capital-it", "names-it")] is False and got[("capital-it", "names-it-any-case")]
    assert got[("capital-fr", "length")] is True and got[("capital-it", "length")] is True
    # label_model as the stand-in's judge: its rubric says mentions "Paris".
    assert got[("capital-fr", "topic-label")] is True


def test_the_cli_imports_and_a_bare_record_says_to_wrap_it(tmp_path, capsys):
    argv = ["import", "openai-graders", str(DATA / "data.jsonl"), "--out", str(tmp_path / "a")]
    assert main([*argv, "--criteria", str(DATA / "criteria.json")]) == 0
    assert json.loads((tmp_path / "a/imported.json").read_text())["format"] == "openai-graders"
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"input": "hi", "answer": "x"}\n', encoding="utf-8")
    argv = ["import", "openai-graders", str(bare), "--out", str(tmp_path / "b")]
    assert main([*argv, "--criteria", str(DATA / "criteria.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bare}:1" in err and 'wrap each record in "item"' in err
    assert main([*argv]) == 2
    assert "needs --criteria" in capsys.readouterr().err
