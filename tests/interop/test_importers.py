"""Suite importers on real files from promptfoo, Inspect and openai/evals: what comes in,
what is listed as not imported, and a run of each imported suite against the stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalnb
from evalnb.cli import main
from evalnb.interop import import_inspect, import_openai_evals, import_promptfoo

# The files of ../shared/peers, kept in the repository so the tests never depend on it.
PEERS = Path(__file__).resolve().parents[1] / "data" / "peers" / "shared"
DATA = Path(__file__).parents[1] / "data" / "peers"


def _cases(dest: Path) -> list[evalnb.Case]:
    experiment = evalnb.load_experiment(dest / "experiment.toml")
    return evalnb.load_cases(dest / "cases.yaml", defaults=experiment.defaults)


def _specs(case: evalnb.Case) -> list[dict]:
    return [dict(c.spec) for c in case.checks]


def test_promptfoo_getting_started(tmp_path: Path) -> None:
    result = import_promptfoo(PEERS / "promptfoo/getting-started/promptfooconfig.yaml", tmp_path)
    cases = _cases(tmp_path)
    assert [c.vars["language"] for c in cases] == ["French", "Spanish"]
    assert _specs(cases[0])[0]["type"] == "contains" and not _specs(cases[0])[0]["ignore_case"]
    assert _specs(cases[1])[0]["ignore_case"] is True  # icontains
    variants = evalnb.load_experiment(tmp_path / "experiment.toml").variants
    prompts = [
        "Convert this English to {{language}}: {{input}}",
        "Translate to {{language}}: {{input}}",
    ]
    # Two providers x two prompts: each provider a set of variants named by its id.
    assert [v.template for v in variants] == prompts * 2
    assert [v.name for v in variants] == [
        "openai-gpt-4.1_prompt-1",
        "openai-gpt-4.1_prompt-2",
        "openai-o4-mini_prompt-1",
        "openai-o4-mini_prompt-2",
    ]
    assert result.unsupported == []
    assert [a.name for a in result.approximated] == [
        "provider openai:gpt-4.1",
        "provider openai:o4-mini",
    ]


def test_promptfoo_lists_what_it_mapped_by_name_and_line(tmp_path: Path) -> None:
    result = import_promptfoo(DATA / "promptfoo/simple-test/promptfooconfig.yaml", tmp_path)
    mapped = {(m.name, m.where.split(": ")[0].rsplit(":", 1)[-1]) for m in result.mapped}
    assert {("javascript", "32"), ("python", "34"), ("similar", "38")} <= mapped
    record = json.loads((tmp_path / "imported.json").read_text())
    assert [u["name"] for u in record["unsupported"]] == [u.name for u in result.unsupported]
    assert {m["name"] for m in record["mapped"]} == {m.name for m in result.mapped}
    assert "javascript" in result.summary() and "similar" in result.summary()
    cases = {c.id: c for c in _cases(tmp_path)}
    assert cases["test-1"].vars == {"body": "Yes"}  # YAML 1.2, as promptfoo reads it
    assert _specs(cases["test-1"])[0]["pattern"] == r"\AYarr\Z"  # equals: the whole answer
    assert _specs(cases["test-3"])[0]["type"] == "is_json"
    rubric, ref = _specs(cases["test-5"])
    assert rubric["type"] == "judge" and rubric["rubric"] == "Is spoken like a pirate"
    assert ref["type"] == "contains" and ref["text"] == "arrr"  # the $ref template
    # The prompts file holds two prompts split by a --- line.
    assert len(evalnb.load_experiment(tmp_path / "experiment.toml").variants) == 2


def test_promptfoo_csv_tests_with_expected_columns(tmp_path: Path) -> None:
    result = import_promptfoo(DATA / "promptfoo/simple-csv/promptfooconfig.yaml", tmp_path)
    cases = _cases(tmp_path)
    assert len(cases) == 4
    assert [_specs(c)[0]["text"] for c in cases] == ["bonjour", "faim", "Ahoy", "grub"]
    assert all(_specs(c)[0]["ignore_case"] for c in cases)
    # Its first prompt uses promptfoo's own `load` filter: listed, not silently dropped.
    assert any("No filter named 'load'" in u.reason for u in result.unsupported)
    assert len(evalnb.load_experiment(tmp_path / "experiment.toml").variants) == 1


def test_promptfoo_negations_and_defaults(tmp_path: Path) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['Say {{word}}']\n"
        "defaultTest:\n  assert:\n    - type: not-icontains\n      value: sorry\n"
        "tests:\n  - vars: {word: [cat, dog]}\n    assert:\n"
        "      - type: not-regex\n        value: '\\d+'\n"
        "      - type: contains-any\n        value: 'cat,dog'\n"
        "      - type: webhook\n        value: http://example.invalid\n",
        encoding="utf-8",
    )
    result = import_promptfoo(config, tmp_path / "out")
    cases = _cases(tmp_path / "out")
    assert [c.id for c in cases] == ["test-1-1", "test-1-2"]  # a list var: one case a value
    specs = _specs(cases[0])
    assert specs[-1]["type"] == "avoids" and specs[-1]["ignore_case"] is True  # defaults
    assert [u.name for u in result.unsupported] == ["webhook"]  # listed once, not per case


def _run(dest: Path, standin, tmp_path: Path, name: str, model: str = "echo") -> Path:
    out = tmp_path / f"run-{name}"
    argv = ["run", "--experiment", str(dest / "experiment.toml"), "--base-url"]
    argv += [standin.base_url, "--model", model, "--repeats", "1", "--out", str(out)]
    assert main([*argv, "--trust-code"]) == 0  # the project's own suites
    return out


SUITES = [
    ("promptfoo", DATA / "promptfoo/simple-test/promptfooconfig.yaml", {}),
    ("promptfoo", DATA / "promptfoo/simple-csv/promptfooconfig.yaml", {}),
    (
        "inspect",
        DATA / "inspect/biology_qa.jsonl",
        {"fields": {"input": "question", "target": "answer"}},
    ),
    ("inspect", DATA / "inspect/samples-mcq.jsonl", {}),
    ("inspect", DATA / "inspect/theory_of_mind.jsonl", {"scorer": "match"}),
    ("openai-evals", DATA / "openai_evals/match_string_input.jsonl", {}),
    ("openai-evals", DATA / "openai_evals/includes_chat.jsonl", {"eval_class": "Includes"}),
]
IMPORTERS = {
    "promptfoo": import_promptfoo,
    "inspect": import_inspect,
    "openai-evals": import_openai_evals,
}


@pytest.mark.parametrize(
    ("fmt", "source", "options"), SUITES, ids=lambda v: getattr(v, "name", None)
)
def test_an_imported_suite_runs_against_the_standin(fmt, source, options, standin, tmp_path):
    dest = tmp_path / "suite"
    IMPORTERS[fmt](source, dest, **options)
    cases = _cases(dest)
    variants = evalnb.load_experiment(dest / "experiment.toml").variants
    run_dir = _run(dest, standin, tmp_path, source.stem)
    run = evalnb.load(run_dir)
    assert len(run.samples) == len(cases) * len(variants)
    assert set(run.samples["status"]) == {"completed"}
    assert set(run.checks["check"]) == {c.name for case in cases for c in case.checks}
    assert not evalnb.rates(run).empty


@pytest.mark.parametrize(
    ("source", "fields", "count"),
    [
        (
            "inspect/popularity.jsonl",
            {"input": "question", "target": "answer_matching_behavior"},
            100,
        ),
        ("inspect/security_guide.jsonl", None, 16),
    ],
)
def test_inspect_datasets_in_peers(source, fields, count, standin, tmp_path) -> None:
    result = import_inspect(PEERS / source, tmp_path / "suite", fields=fields)
    cases = _cases(tmp_path / "suite")
    assert len(cases) == count and result.unsupported == []
    assert cases[0].target and cases[0].checks[0].type == "includes"
    if fields:  # the other record fields are the case's metadata, as in Inspect
        assert "label_confidence" in cases[0].metadata
    else:
        assert cases[0].messages[0]["role"] == "user"
    run = evalnb.load(_run(tmp_path / "suite", standin, tmp_path, "inspect"))
    assert len(run.samples) == count


def test_inspect_choices_csv_and_left_out_fields(tmp_path: Path) -> None:
    import_inspect(DATA / "inspect/samples-mcq.jsonl", tmp_path / "mcq")
    (case,) = _cases(tmp_path / "mcq")
    assert len(case.choices) == 10 and case.checks[0].type == "choice"
    result = import_inspect(DATA / "inspect/samples.csv", tmp_path / "csv")
    (case,) = _cases(tmp_path / "csv")
    assert case.prompt == "Say 'Hello, World'" and case.metadata == {
        "label": "Hello, World",
        "extra": "data",
    }
    assert [u.name for u in result.unsupported] == ["sandbox"]
    import_inspect(DATA / "inspect/samples-md.json", tmp_path / "json")
    (case,) = _cases(tmp_path / "json")
    assert case.metadata == {"label": "Hello, World", "name": "jim", "age": 42, "foo": "bar"}


@pytest.mark.parametrize(
    ("eval_class", "check"),
    [
        ("Match", "starts_with"),
        ("Includes", "includes"),
        ("FuzzyMatch", "fuzzy_match"),
        ("ModelBasedClassify", "judge"),
    ],
)
def test_openai_evals_readme_samples(eval_class, check, tmp_path) -> None:
    result = import_openai_evals(
        PEERS / "openai_evals/readme_samples.jsonl", tmp_path, eval_class=eval_class
    )
    cases = _cases(tmp_path)
    assert len(cases) == 20 and {c.checks[0].type for c in cases} == {check}
    assert cases[8].target == ("Season 11", "11")  # an ideal list: any is acceptable
    assert cases[0].messages[0]["role"] == "system"
    assert [u.name for u in result.unsupported] == (
        ["modelgraded spec"] if eval_class == "ModelBasedClassify" else []
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["import", "promptfoo", "{data}/inspect/biology_qa.jsonl"], "not valid YAML"),
        (
            ["import", "promptfoo", "{tmp}/missing-ref.yaml"],
            "cannot read the file:// reference 'file://nowhere.csv'",
        ),
        (
            ["import", "inspect", "{data}/inspect/biology_qa.jsonl"],
            "expected the input field 'input'",
        ),
        (["import", "openai-evals", "{data}/inspect/samples.csv"], "must be a .jsonl file"),
        (["import", "openai-evals", "{data}/inspect/biology_qa.jsonl"], "expected 'input'"),
        (
            ["import", "inspect-log", "{data}/inspect/biology_qa.jsonl"],
            "must end in .eval or .json",
        ),
        (["import", "inspect-log", "{tmp}/fake.eval"], "not a zip file"),
        (
            ["import", "inspect-log", "{data}/inspect/samples-md.json"],
            "expected a JSON object with 'eval'",
        ),
        (
            ["import", "promptfoo-results", "{tmp}/not-a-row.json"],
            "results[1] must be an object; got text 'oops'",
        ),
    ],
)
def test_a_bad_source_is_one_line_naming_the_file_exit_2(argv, expected, tmp_path, capsys) -> None:
    (tmp_path / "missing-ref.yaml").write_text("prompts: ['x {{a}}']\ntests: file://nowhere.csv\n")
    (tmp_path / "fake.eval").write_text("not a zip")
    (tmp_path / "not-a-row.json").write_text('{"results": [{"response": {}}, "oops"]}')
    argv = [a.format(data=DATA, tmp=tmp_path) for a in argv] + ["--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and argv[2].split("/")[-1] in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
