"""Variables named like evalnb's own case fields (``prompt``, ``context``, ``target``): an
OpenAI Evals item field or a promptfoo var of that name imports with its meaning intact,
kept under a new name, every template and grader that names it still reading it, and one
line of the import report saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import evalnb
from evalnb.checks._promptfoo import find_promptfoo
from evalnb.cli import main
from evalnb.interop import import_openai_graders, import_promptfoo, import_promptfoo_results
from evalnb.interop._reserved import renamed_code, renamed_template, renames
from evalnb.targets import Function

DATA = Path(__file__).parents[1] / "data"

#: The installed promptfoo is seen here (tests/interop/conftest.py hides it elsewhere).
ENGINE = True

ITEMS = [
    {"item": {"input": "Capital of France?", "prompt": "Paris", "context": "geo", "ref": "Paris"}},
    {"item": {"input": "Capital of Peru?", "prompt": "Lima", "context": "geo", "ref": "Lima"}},
]
CRITERIA = [
    {
        "type": "string_check",
        "name": "answer-is-prompt",
        "input": "{{sample.output_text}}",
        "reference": "{{item.prompt}}",
        "operation": "eq",
    },
    {
        "type": "string_check",
        "name": "prompt-is-ref",
        "input": "{{ item.prompt }}",
        "reference": "{{item.ref}}",
        "operation": "eq",
    },
    {
        "type": "text_similarity",
        "name": "fuzzy",
        "input": "{{sample.output_text}}",
        "reference": "{{ item.prompt }}",
        "evaluation_metric": "fuzzy_match",
        "pass_threshold": 0.9,
    },
    {
        "type": "python",
        "name": "py",
        "source": "def grade(sample, item):\n"
        "    return float(item['prompt'] == sample['output_text'] and item['context'] == 'geo')",
        "pass_threshold": 0.5,
    },
    {
        "type": "label_model",
        "name": "label",
        "model": "gpt-4o",
        "input": [{"role": "user", "content": "Is {{sample.output_text}} {{item.prompt}}?"}],
        "labels": ["yes", "no"],
        "passing_labels": ["yes"],
    },
]


def _graders_suite(tmp_path: Path, items: list[dict]) -> tuple[Path, Path]:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(i) + "\n" for i in items), "utf-8")
    criteria = tmp_path / "criteria.json"
    criteria.write_text(json.dumps({"testing_criteria": CRITERIA}), "utf-8")
    return data, criteria


def test_openai_item_fields_named_prompt_and_context_keep_their_meaning(tmp_path):
    data, criteria = _graders_suite(tmp_path, ITEMS)
    result = import_openai_graders(data, tmp_path / "suite", criteria=criteria)
    lines = [n.how for n in result.mapped if n.name == "item fields"]
    assert len(lines) == 1 and "'prompt' as 'item_prompt'" in lines[0]
    assert "'context' as 'item_context'" in lines[0] and "\n" not in lines[0]
    cases = evalnb.load_cases(tmp_path / "suite/cases.yaml")
    assert dict(cases[0].vars) == {
        "input": "Capital of France?",
        "item_prompt": "Paris",
        "item_context": "geo",
        "ref": "Paris",
    }
    rubric = {c.name: c.spec for c in cases[0].checks}["label"]["rubric"]
    assert "{{ vars.item_prompt }}" in rubric
    answers = {"Capital of France?": "Paris", "Capital of Peru?": "Lima"}
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    assert experiment.variants[0].template == "{{ input }}"
    # The judge needs a model: the other graders run here.
    stripped = [
        evalnb.Case(id=c.id, vars=c.vars, checks=[k.spec for k in c.checks if k.name != "label"])
        for c in cases
    ]
    evalnb.run(
        stripped,
        Function(lambda request: answers[request.messages[-1]["content"]]),
        variants=experiment.variants,
        repeats=1,
        out=tmp_path / "run",
        progress=False,
        trust_code=True,  # the python grader is this test's own
    )
    stored = evalnb.load(tmp_path / "run").checks
    assert len(stored) == 8
    assert stored["outcome"].all(), stored[["case_id", "check", "detail"]].to_dict("records")


def test_items_without_input_send_their_prompt_field_and_say_so(tmp_path):
    items = [{"item": {"prompt": "Capital of Chile?", "ref": "Santiago"}}]
    data, criteria = _graders_suite(tmp_path, items)
    criteria.write_text(json.dumps(CRITERIA[1:2]), "utf-8")
    result = import_openai_graders(data, tmp_path / "suite", criteria=criteria)
    assert [n.how for n in result.approximated if n.name == "prompt"] == [
        "no item has a text 'input': the prompt sent is each item's 'prompt'"
    ]
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    assert experiment.variants[0].template == "{{ item_prompt }}"
    case = evalnb.load_cases(tmp_path / "suite/cases.yaml")[0]
    assert experiment.variants[0].messages_for(case)[-1]["content"] == "Capital of Chile?"


def test_items_with_no_prompt_field_are_one_line_saying_what_to_do(tmp_path, capsys):
    data, criteria = _graders_suite(tmp_path, [{"item": {"question_text": "Q?", "ref": "A"}}])
    argv = ["import", "openai-graders", str(data), "--criteria", str(criteria)]
    assert main([*argv, "--out", str(tmp_path / "suite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data.jsonl:1: each item needs a text 'input'" in err
    assert "got 'question_text', 'ref'" in err and "name the prompt's field 'input'" in err
    assert not (tmp_path / "suite").exists()


CONFIG = {
    "prompts": ["Answer: {{prompt}} (topic {{ context }})"],
    "tests": [
        {
            "vars": {"prompt": "What is 2+2?", "context": "math", "target": "4"},
            "assert": [
                {"type": "icontains", "value": "{{target}}"},
                {"type": "javascript", "value": "output.includes(context.vars.target)"},
                {"type": "python", "value": "context['vars']['target'] in output"},
            ],
        }
    ],
}


@pytest.mark.parametrize("engine", ["promptfoo", "fallback"])
def test_promptfoo_vars_named_prompt_context_target_keep_their_meaning(
    engine, tmp_path, monkeypatch
):
    if engine == "fallback":
        monkeypatch.setenv("EVALNB_PROMPTFOO", "off")
    elif find_promptfoo() is None:
        pytest.skip("promptfoo is not installed (make promptfoo installs it)")
    source = tmp_path / "source"
    source.mkdir()
    (source / "promptfooconfig.yaml").write_text(yaml.safe_dump(CONFIG), "utf-8")
    result = import_promptfoo(source / "promptfooconfig.yaml", tmp_path / "suite")
    lines = [n.how for n in result.mapped if n.name == "vars"]
    assert len(lines) == 1 and "'prompt' as 'var_prompt'" in lines[0]
    assert "'target' as 'var_target'" in lines[0]
    experiment = evalnb.load_experiment(tmp_path / "suite/experiment.toml")
    assert experiment.variants[0].template == "Answer: {{var_prompt}} (topic {{ var_context }})"
    sent: list[str] = []

    def answer(request: evalnb.Request) -> str:
        sent.append(request.messages[-1]["content"])
        return "It is 4."

    evalnb.run(
        tmp_path / "suite/cases.yaml",
        Function(answer),
        variants=experiment.variants,
        repeats=1,
        out=tmp_path / "run",
        progress=False,
        trust_code=True,  # the graders are this test's own
    )
    assert sent == ["Answer: What is 2+2? (topic math)"]
    stored = evalnb.load(tmp_path / "run").checks
    assert len(stored) == 3
    assert stored["outcome"].all(), stored[["check", "detail"]].to_dict("records")


def test_promptfoo_results_vars_named_prompt_are_kept_apart(tmp_path):
    source = DATA / "peers/promptfoo_results/simple-test-output.json"
    data = json.loads(source.read_text("utf-8"))
    rows = data["results"]["results"] if isinstance(data["results"], dict) else data["results"]
    for row in rows:
        for holder in (row, row.get("testCase") or {}):
            if isinstance(holder.get("vars"), dict):
                holder["vars"]["prompt"] = "the var"
    changed = tmp_path / "output.json"
    changed.write_text(json.dumps(data), "utf-8")
    result = import_promptfoo_results(changed, tmp_path / "run")
    assert [n.name for n in result.mapped if "'prompt' as 'var_prompt'" in n.how] == ["vars"]
    run = evalnb.load(tmp_path / "run")
    assert len(run.samples) == len(rows)


def test_templates_and_code_name_the_new_variable():
    renamed = renames({"prompt", "target", "var_target", "topic"}, "var")
    assert renamed == {"prompt": "var_prompt", "target": "var_var_target"}
    assert (
        renamed_template("{{prompt}} {{ x.prompt }} '{{ 'prompt' }}' {{ vars.target }}", renamed)
        == "{{var_prompt}} {{ x.prompt }} '{{ 'prompt' }}' {{ vars.var_var_target }}"
    )
    assert renamed_template("{% if prompt %}prompt{% endif %}", renamed) == (
        "{% if var_prompt %}prompt{% endif %}"
    )
    code = "context.vars.prompt + vars['target'] + c['vars'][\"prompt\"] + vars.get('target')"
    assert renamed_code(code, renamed) == (
        "context.vars.var_prompt + vars['var_var_target'] + c['vars'][\"var_prompt\"]"
        " + vars.get('var_var_target')"
    )
