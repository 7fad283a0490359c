"""OpenAI / Azure Evals ``testing_criteria`` over ``{"item": ...}`` data: each grader type
becomes a check, is approximated or is refused (saying what to do), and the checks give
the verdicts the graders define on fixed answers: text similarity through the library that
defines each metric, multi graders through their formula."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sacrebleu
from nltk.tokenize import NLTKWordTokenizer
from nltk.translate.gleu_score import sentence_gleu
from rapidfuzz import fuzz, utils
from rouge_score import rouge_scorer

import evalnb
from evalnb.checks import _text_similarity
from evalnb.checks._formula import Formula
from evalnb.cli import main
from evalnb.interop import import_openai_graders
from evalnb.targets import Function, OpenAIChat

DATA = Path(__file__).parents[1] / "data" / "openai_graders"
ANSWERS = {
    "capital-fr": "Paris",
    "capital-it": "It is rome.",
    "summary": "A cat sat on the mat near the door.",
}
METRICS = ["bleu", "gleu", "meteor", *(f"rouge_{n}" for n in (1, 2, 3, 4, 5)), "rouge_l"]


def test_every_grader_type_is_imported_approximated_or_refused(tmp_path):
    result = import_openai_graders(
        DATA / "data.jsonl", tmp_path / "suite", criteria=DATA / "criteria.json"
    )
    assert [n.name for n in result.mapped] == (
        ["string_check"] * 4 + ["text_similarity"] * 10 + ["multi"]
    )
    assert [a.name for a in result.approximated] == [
        "text_similarity",  # cosine: the run's embeddings, not text-embedding-3-large
        "score_model",
        "label_model",
        "python",
        "multi",  # no pass_threshold: passes at 0.5
    ]
    assert result.unsupported == []
    how = {n.how.split(" by ")[0]: n.how for n in result.mapped if n.name == "text_similarity"}
    assert how["meteor"].startswith("meteor by nltk ") and how["bleu"].startswith(
        "bleu by sacrebleu"
    )
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.id for c in cases] == ["capital-fr", "capital-it", "summary"]
    assert cases[1].checks[0].spec["pattern"] == "\\ARome\\Z"  # {{item.answer}} per item
    kinds = {c.name: c.spec["type"] for c in cases[0].checks}
    assert kinds["rouge-l"] == kinds["both"] == "openai_grader" and kinds["cosine"] == "similar"


def _run(tmp_path: Path, standin) -> evalnb.Run:
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
    return evalnb.load(tmp_path / "run")


def _expected(metric: str, answer: str, reference: str) -> float:
    """The metric as its library computes it, called here directly."""
    tokens = NLTKWordTokenizer().tokenize
    if metric == "fuzzy_match":
        return fuzz.WRatio(answer, reference, processor=utils.default_process) / 100
    if metric == "bleu":
        return sacrebleu.sentence_bleu(answer, [reference]).score / 100
    if metric == "gleu":
        return sentence_gleu([tokens(reference)], tokens(answer))
    if metric == "meteor":
        from nltk.translate.meteor_score import meteor_score

        wordnet = _text_similarity._wordnet()
        return meteor_score([tokens(reference)], tokens(answer), wordnet=wordnet)
    kind = "rougeL" if metric == "rouge_l" else metric.replace("_", "")
    return rouge_scorer.RougeScorer([kind]).score(reference, answer)[kind].fmeasure


def test_the_checks_grade_fixed_answers_as_the_graders_define(fresh_standin, tmp_path, monkeypatch):
    standin = fresh_standin  # the judge's draws follow its seed alone
    monkeypatch.setenv("EVALNB_EMBEDDINGS_URL", standin.base_url)
    run = _run(tmp_path, standin)
    rows = run.checks.to_dict("records")  # type: ignore[union-attr]
    got = {(r["case_id"], r["check"]): r for r in rows}
    outcome = {key: r["outcome"] for key, r in got.items()}
    # string_check: eq is exact, like case-sensitive, ilike not; python grade() ignores case.
    assert outcome[("capital-fr", "exact")] is True and outcome[("capital-it", "exact")] is False
    assert outcome[("capital-it", "not-empty")] is True
    assert outcome[("capital-it", "names-it")] is False
    assert outcome[("capital-it", "names-it-any-case")] is True
    assert outcome[("capital-fr", "length")] is True and outcome[("capital-it", "length")] is True
    # label_model as the stand-in's judge: its rubric says mentions "Paris".
    assert outcome[("capital-fr", "topic-label")] is True
    references = {
        "capital-fr": "Paris",
        "capital-it": "Rome",
        "summary": "The cat sat on the mat by the door.",
    }
    compared = 0
    for case_id, answer in ANSWERS.items():
        for metric, name in [
            ("fuzzy_match", "fuzzy"),
            *((m, m.replace("_", "-")) for m in METRICS),
        ]:
            row = got[(case_id, name)]
            expected = _expected(metric, answer, references[case_id])
            threshold = 0.8 if metric == "fuzzy_match" else 0.5
            assert row["score"] == pytest.approx(expected, abs=1e-9), (case_id, metric)
            assert row["outcome"] is (expected >= threshold), (case_id, metric)
            evidence = json.loads(row["evidence"])
            library = _text_similarity.METRICS[metric]
            assert evidence["engine"].startswith(f"{library} ") and evidence["metric"] == metric
            compared += 1
    assert compared == 30
    # Known values: the same text scores 1 on every metric, and word order alone keeps rouge_1.
    assert got[("capital-fr", "bleu")]["score"] == got[("capital-fr", "rouge-l")]["score"] == 1.0
    assert got[("summary", "rouge-1")]["score"] == pytest.approx(
        7 / 9
    )  # 7 of 9 words shared each way
    # cosine: the stand-in's embeddings of the same text.
    assert got[("capital-fr", "cosine")]["score"] == pytest.approx(1.0)


def test_multi_graders_are_their_formula_over_the_sub_scores(fresh_standin, tmp_path):
    standin = fresh_standin
    run = _run(tmp_path, standin)
    got = {(r["case_id"], r["check"]): r for r in run.checks.to_dict("records")}  # type: ignore[union-attr]
    for case_id, answer in ANSWERS.items():
        reference = {"capital-fr": "Paris", "capital-it": "Rome"}.get(
            case_id, "The cat sat on the mat by the door."
        )
        close = _expected("fuzzy_match", answer, reference)
        both = got[(case_id, "both")]
        assert both["score"] == pytest.approx(0.5 * close + 0.5 * (answer == reference))
        assert both["outcome"] is (0.5 * close + 0.5 * (answer == reference) >= 0.75)
        evidence = json.loads(both["evidence"])
        assert evidence["scores"]["exact"] == float(answer == reference)
        assert evidence["formula"] == "0.5 * close + 0.5 * exact"
        assert "rapidfuzz" in evidence["engine"] and "formula" in evidence["engine"]
        # min(rouge, topic) ^ 2: the topic check reads the item ({{item.topic}} like "geo").
        topic = 1.0 if case_id != "summary" else 0.0
        shaped = min(_expected("rouge_l", answer, reference), topic) ** 2
        assert got[(case_id, "shaped")]["score"] == pytest.approx(shaped)
    assert got[("capital-fr", "both")]["outcome"] is True
    assert got[("summary", "shaped")]["outcome"] is False


@pytest.mark.parametrize(
    ("formula", "values", "expected"),
    [
        ("(name + email) / 2", {"name": 0.8, "email": 1.0}, 0.9),
        ("0.5 * a + 0.5 * b", {"a": 1, "b": 0}, 0.5),
        ("a ^ 2 - -b", {"a": 0.5, "b": 0.25}, 0.5),
        ("max(a, b) * min(a, 1) + abs(-a)", {"a": 0.5, "b": 0.2}, 0.75),
        (
            "floor(a * 10) / 10 + ceil(b) + sqrt(a) * 0 + exp(0) * log(1)",
            {"a": 0.57, "b": 0.1},
            1.5,
        ),
    ],
)
def test_a_formula_computes_with_numbers_names_operators_and_the_listed_functions(
    formula, values, expected
):
    assert Formula(formula, list(values))(values) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("formula", "said"),
    [
        ("__import__('os').system('x')", "calls \"__import__('os').system\""),
        ("a.__class__", "holds 'a.__class__'"),
        ("c + 1", "names 'c', which is no grader (graders: a, b)"),
        ("a if b else 1", "holds 'a if b else 1'"),
        ("[a][0]", "holds"),
        ("'text'", "not a number"),
        ("max(a, key=b)", "calls 'max'"),
        ("a +", "does not parse"),
        ("", "the formula is empty"),
        ("a" + " + a" * 1000, "longer than 2000 characters"),
    ],
)
def test_a_formula_refuses_anything_else_in_one_line(formula, said):
    with pytest.raises(ValueError) as error:
        Formula(formula, ["a", "b"])
    message = str(error.value)
    assert "\n" not in message and said.replace('"', "'") in message.replace('"', "'")


def test_a_formula_without_a_value_says_so():
    with pytest.raises(ValueError, match="has no value here"):
        Formula("a / b", ["a", "b"])({"a": 1, "b": 0})
    with pytest.raises(ValueError, match="has no value here"):
        Formula("10 ^ 10000", [])({})


def test_refusals_say_what_to_do_in_one_line(tmp_path, monkeypatch):
    """A metric whose data is missing, a bad formula, a nested multi, an unknown metric and
    an unknown grader type are refused, each in one line; the rest is imported."""
    monkeypatch.setattr(_text_similarity, "_has_nltk_wordnet", lambda: False)
    monkeypatch.setattr(_text_similarity, "DEBIAN_WORDNET", tmp_path / "no-wordnet")
    similar = {"input": "{{sample.output_text}}", "reference": "{{item.answer}}"}
    criteria = [
        {"type": "text_similarity", "name": "m", "evaluation_metric": "meteor", **similar},
        {"type": "text_similarity", "name": "x", "evaluation_metric": "chrf", **similar},
        {
            "type": "multi",
            "name": "bad",
            "graders": {"a": {"type": "string_check", "operation": "eq", **similar}},
            "calculate_output": "a.real",
        },
        {
            "type": "multi",
            "name": "nested",
            "graders": {"a": {"type": "multi", "graders": {}, "calculate_output": "1"}},
            "calculate_output": "a",
        },
        {"type": "endpoint", "name": "e"},
        {"type": "string_check", "name": "ok", "operation": "eq", **similar},
    ]
    (tmp_path / "criteria.json").write_text(json.dumps(criteria), encoding="utf-8")
    result = import_openai_graders(
        DATA / "data.jsonl", tmp_path / "suite", criteria=tmp_path / "criteria.json"
    )
    reasons = {u.name: u.reason for u in result.unsupported}
    assert reasons["text_similarity m"] == (
        "meteor needs WordNet: apt-get install wordnet-base, or python -m nltk.downloader wordnet"
    )
    assert "'chrf' is not a text_similarity metric" in reasons["text_similarity x"]
    assert "'calculate_output': the formula 'a.real' holds 'a.real'" in reasons["multi bad"]
    assert "its grader 'a': a 'multi' grader is not graded here" in reasons["multi nested"]
    assert "'endpoint' is not an Evals grader type" in reasons["endpoint e"]
    assert all("\n" not in reason for reason in reasons.values())
    assert [n.name for n in result.mapped] == ["string_check"]


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


def test_meteor_scores_the_same_from_many_threads_at_once():
    """The checks of a run grade in threads; NLTK's WordNet reader shares one file handle,
    so meteor takes its turn: every score equals the one computed alone (without the turn,
    some came out lower or raised on a line of another synset)."""
    answer, reference = "A cat was sitting on the mat near the door.", ANSWERS["summary"]
    alone = _text_similarity.score("meteor", answer, reference)[0]
    with ThreadPoolExecutor(16) as pool:
        scores = list(
            pool.map(lambda _: _text_similarity.score("meteor", answer, reference)[0], range(400))
        )
    assert set(scores) == {alone} and 0 < alone < 1
