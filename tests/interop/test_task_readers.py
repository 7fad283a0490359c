"""lm-eval task YAML, openai/evals registry entries and Inspect datasets with images or
nested fields: each imported suite runs on the stand-in, and its stored checks stand for
the original file's graders one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import evalnb
from evalnb.cli import main
from evalnb.interop import import_inspect, import_lm_eval, import_openai_evals_registry

DATA = Path(__file__).parents[1] / "data" / "peers"
GSM8K = DATA / "shared" / "lmeval" / "gsm8k-cot.yaml"
REGISTRY = DATA / "openai_evals" / "registry" / "evals"

GSM8K_DOCS = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as "
        "many clips in May. How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = "
        "<<48+24=72>>72 clips altogether in April and May.\n#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes "
        "of babysitting. How much did she earn?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nWorking 50 minutes, she "
        "earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
    },
]


def _run(dest: Path, standin, out: Path, model: str = "echo") -> evalnb.Run:
    argv = ["run", "--experiment", str(dest / "experiment.toml"), "--base-url"]
    argv += [standin.base_url, "--model", model, "--repeats", "1", "--out", str(out)]
    assert main(argv) == 0
    return evalnb.load(out)


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_lm_eval_generate_until_with_regex_filters(form, standin, tmp_path) -> None:
    data = tmp_path / f"test.{form}"
    if form == "jsonl":
        data.write_text("".join(json.dumps(d) + "\n" for d in GSM8K_DOCS))
    else:
        pq.write_table(pa.Table.from_pylist(GSM8K_DOCS), data)
    result = import_lm_eval(GSM8K, tmp_path / "suite", data=data)
    task = yaml.safe_load(GSM8K.read_text())
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.target for c in cases] == ["72", "10"]  # doc_to_target: after '####'
    # The 8 few-shot samples, then the document, joined as lm-eval joins them.
    assert cases[0].prompt.count("Please reason step by step A:") == 9
    assert cases[0].prompt.endswith(f"Q: {GSM8K_DOCS[0]['question']} Please reason step by step A:")
    metric = task["metric_list"][0]
    for check, entry in zip(cases[0].checks, task["filter_list"], strict=True):
        regex_step = entry["filter"][0]
        assert check.name == entry["name"] and check.type == "extract_match"
        assert check.spec["pattern"] == regex_step["regex_pattern"]
        assert check.spec.get("group_select", 0) == regex_step.get("group_select", 0)
        assert check.spec["regexes_to_ignore"] == metric["regexes_to_ignore"]
        assert check.spec["ignore_case"] is metric["ignore_case"]
    (variant,) = evalnb.load_experiment(tmp_path / "suite/experiment.toml").variants
    assert variant.name == "gsm8k_cot"
    assert variant.params == {"stop": task["generation_kwargs"]["until"], "temperature": 0}
    assert [a.name for a in result.approximated] == ["dataset_path"]
    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    rows = {(r["case_id"], r["check"]): r for r in run.checks.to_dict("records")}
    # The echo model says the prompt back: strict-match takes the first "The answer is 6."
    # (group_select 0, take_first), flexible-extract the last number; neither is 72.
    strict = rows[("doc-1", "strict-match")]
    assert strict["outcome"] is False and "read '6'" in strict["detail"]
    flexible = rows[("doc-1", "flexible-extract")]
    assert flexible["outcome"] is False and "expected '72'" in flexible["detail"]


def test_lm_eval_without_data_names_the_option_and_loglikelihood_is_refused(tmp_path, capsys):
    argv = ["import", "lm-eval", str(GSM8K), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'gsm8k'" in err and "--data FILE" in err
    task = tmp_path / "ppl.yaml"
    task.write_text("task: wikitext\noutput_type: loglikelihood_rolling\ndoc_to_text: '{{page}}'\n")
    (tmp_path / "docs.jsonl").write_text('{"page": "x"}\n')
    argv = ["import", "lm-eval", str(task), "--data", str(tmp_path / "docs.jsonl")]
    assert main([*argv, "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "loglikelihood_rolling" in err and "generation-only" in err


def test_lm_eval_multiple_choice_with_include_as_a_choice_check(standin, tmp_path) -> None:
    docs = tmp_path / "arc.jsonl"
    rows = [
        json.loads(line) for line in (DATA / "inspect/arc_nested.jsonl").read_text().splitlines()
    ]
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = import_lm_eval(DATA / "lmeval/arc_challenge.yaml", tmp_path / "suite", data=docs)
    assert "include" in {m.name for m in result.mapped}
    approximated = {a.name: a.how for a in result.approximated}
    assert "loglikelihood" in approximated["output_type multiple_choice"]
    assert "metric acc_norm" in approximated
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert cases[0].prompt == f"Question: {rows[0]['question']}\nAnswer:"
    assert cases[0].choices == tuple(rows[0]["choices"]["text"])
    assert cases[0].target == rows[0]["choices"]["text"][2]  # answerKey C, by index
    assert [c.type for c in cases[0].checks] == ["choice"]
    (variant,) = evalnb.load_experiment(tmp_path / "suite/experiment.toml").variants
    assert variant.name == "arc_challenge"  # the including task's own name wins
    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    assert set(run.checks["check"]) == {"acc"} and len(run.checks) == 2


def test_openai_evals_registry_entries(standin, tmp_path, capsys) -> None:
    result = import_openai_evals_registry(
        REGISTRY / "test-basic.yaml", "test-fuzzy-match", tmp_path / "fuzzy"
    )
    assert [m.name for m in result.mapped] == ["class FuzzyMatch", "class FuzzyMatch sampling"]
    # FuzzyMatch samples at temperature 0 with at most 100 tokens (its eval_sample).
    (variant,) = evalnb.load_experiment(tmp_path / "fuzzy/experiment.toml").variants
    assert variant.params == {"temperature": 0.0, "max_tokens": 100}
    cases = evalnb.load_cases(tmp_path / "fuzzy/cases.yaml")
    assert len(cases) == 6 and {c.checks[0].type for c in cases} == {"fuzzy_match"}
    run = _run(tmp_path / "fuzzy", standin, tmp_path / "run-fuzzy")
    assert set(run.checks["check_type"]) == {"fuzzy_match"} and len(run.checks) == 6

    graded = import_openai_evals_registry(
        REGISTRY / "arithmetic-expression.yaml", "arithmetic-expression", tmp_path / "graded"
    )
    (case, *_) = evalnb.load_cases(tmp_path / "graded/cases.yaml")
    rubric = case.checks[0].spec["rubric"]
    assert case.checks[0].type == "judge" and "diligent auditing system" in rubric
    assert "PASS when your choice would be Y" in rubric and "{completion}" not in rubric
    assert {a.name for a in graded.approximated} == {
        "modelgraded_spec arithmetic-expression",
        "args.eval_type cot_classify",
    }
    run = _run(tmp_path / "graded", standin, tmp_path / "run-graded")
    assert set(run.checks["check_type"]) == {"judge"}

    capsys.readouterr()
    argv = ["import", "openai-evals", str(REGISTRY / "test-basic.yaml"), "test-match"]
    assert main([*argv, "--out", str(tmp_path / "lfs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a Git LFS pointer (sha256:f23408d8" in err
    assert "499 bytes" in err and "samples.jsonl" in err


def test_inspect_images_are_sent_as_image_parts(standin, tmp_path) -> None:
    result = import_inspect(DATA / "inspect/images.jsonl", tmp_path / "suite")
    (refused,) = result.unsupported  # the audio sample: named, not dropped
    assert refused.where.endswith("images.jsonl:3") and "audio" in refused.reason
    assert "image parts" in {m.name for m in result.mapped}
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert [c.id for c in cases] == ["red", "blue"]
    text, image = cases[1].messages[0]["content"]
    assert text == {"type": "text", "text": "What colour is this image?"}
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert image["image_url"]["detail"] == "low"
    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    assert set(run.samples["status"]) == {"completed"}
    request = json.loads(run.samples.sort_values("case_id")["request"].iloc[0])
    sent = request["messages"][0]["content"]
    assert sent[1]["type"] == "image_url" and sent[1]["image_url"]["url"].startswith("data:image")


def test_an_image_outside_the_dataset_folder_is_refused(tmp_path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "secret.png").write_bytes(b"\x89PNG")
    row = {"input": [{"role": "user", "content": [{"type": "image", "image": "../secret.png"}]}]}
    (tmp_path / "d/data.jsonl").write_text(json.dumps({**row, "target": "x"}) + "\n")
    with pytest.raises(evalnb.CasesError, match="outside the dataset's folder"):
        import_inspect(tmp_path / "d/data.jsonl", tmp_path / "out")


def test_inspect_nested_fields_are_followed_or_refused(standin, tmp_path) -> None:
    fields = {"input": "question", "target": "answerKey", "choices": "choices.text"}
    result = import_inspect(DATA / "inspect/arc_nested.jsonl", tmp_path / "suite", fields=fields)
    assert result.unsupported == []
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert len(cases[0].choices) == 4 and cases[0].checks[0].type == "choice"
    run = _run(tmp_path / "suite", standin, tmp_path / "run")
    assert set(run.checks["check_type"]) == {"choice"}
    wrong = {**fields, "choices": "choices.txt"}
    result = import_inspect(DATA / "inspect/arc_nested.jsonl", tmp_path / "wrong", fields=wrong)
    assert [u.name for u in result.unsupported] == ["--field choices=choices.txt"] * 2
    assert "leads nowhere" in result.unsupported[0].reason


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("promptfoo", "promptfooconfig.yaml"),
        ("promptfoo-results", "output.json"),
        ("inspect-log", "log.json"),
        ("inspect", "data.jsonl"),
        ("openai-evals", "samples.jsonl"),
    ],
)
def test_a_git_lfs_pointer_is_named_as_one(fmt, name, tmp_path, capsys) -> None:
    # openai/evals' own test_match samples as the registry stores them.
    pointer = (DATA / "openai_evals/registry/data/test_match/samples.jsonl").read_bytes()
    (tmp_path / name).write_bytes(pointer)
    argv = ["import", fmt, str(tmp_path / name), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Git LFS pointer" in err and name in err
