"""Prompt templates, variants that do what they say, and provenance of what was sent:
``prompt``, ``request`` and ``fingerprint`` describe the messages each target received."""

import json
import sys
import textwrap

import pytest

from evalnb import Case, CasesError, Command, Function, OpenAIChat, Request, Variant, run, store
from evalnb.cases._experiment import load_experiment, parse_variant

CASES = [
    Case("capital", vars={"question": "What is the capital of France?"}, target="Paris"),
    Case("planet", vars={"question": "Which planet is the largest?"}, target="Jupiter"),
]
TERSE = Variant("terse", template="{{ question }}")
POLITE = Variant("polite", template="Please answer briefly.\n\n{{ question }}")
RENDERED = {
    ("capital", "terse"): "What is the capital of France?",
    ("capital", "polite"): "Please answer briefly.\n\nWhat is the capital of France?",
    ("planet", "terse"): "Which planet is the largest?",
    ("planet", "polite"): "Please answer briefly.\n\nWhich planet is the largest?",
}


def sent(out):
    samples = store.read_table(out, "samples").to_pandas()
    return {(row.case_id, row.variant): row for row in samples.itertuples()}


def assert_template_pair_differs(out, messages_of):
    rows = sent(out)
    assert len(rows) == 4
    for (case_id, variant), row in rows.items():
        rendered = RENDERED[(case_id, variant)]
        assert row.prompt == rendered
        assert messages_of(row) == [{"role": "user", "content": rendered}]
    for case_id in ("capital", "planet"):
        terse, polite = rows[(case_id, "terse")], rows[(case_id, "polite")]
        assert terse.request != polite.request
        assert terse.fingerprint != polite.fingerprint
    # the fingerprint follows the text sent, whatever the target
    return {key: row.fingerprint for key, row in rows.items()}


def test_a_template_pair_differs_in_request_and_fingerprint_with_a_function_target(tmp_path):
    out = tmp_path / "function"
    run(CASES, Function(lambda r: r.prompt), variants=[TERSE, POLITE], out=out, progress=False)
    assert_template_pair_differs(out, lambda row: json.loads(row.request)["messages"])
    assert all(row.answer == row.prompt for row in sent(out).values())


def test_a_template_pair_differs_in_request_and_fingerprint_over_http(tmp_path, standin):
    out = tmp_path / "http"
    target = OpenAIChat(standin.base_url, "echo")
    run(CASES, target, variants=[TERSE, POLITE], out=out, progress=False)
    fingerprints = assert_template_pair_differs(
        out, lambda row: json.loads(row.request)["messages"]
    )
    rows = sent(out)
    # the echo model says back what it received: the rendered template, over the wire
    assert all(row.answer == RENDERED[key] for key, row in rows.items())
    assert all(json.loads(row.request)["model"] == "echo" for row in rows.values())
    # the same messages give the same fingerprint as with a Function target
    function_run = tmp_path / "function"
    run(
        CASES,
        Function(lambda r: r.prompt),
        variants=[TERSE, POLITE],
        out=function_run,
        progress=False,
    )
    assert fingerprints == {key: row.fingerprint for key, row in sent(function_run).items()}


def test_a_template_pair_differs_in_request_and_fingerprint_with_a_command_target(tmp_path):
    harness = tmp_path / "harness.py"
    harness.write_text(
        textwrap.dedent(
            """
            import json, sys
            request = json.load(open(sys.argv[1]))
            print(request["messages"][-1]["content"])
            """
        )
    )
    out = tmp_path / "command"
    target = Command([sys.executable, str(harness), "{request}"])
    run(CASES, target, variants=[TERSE, POLITE], out=out, progress=False, concurrency=2)
    assert_template_pair_differs(out, lambda row: json.loads(row.request)["messages"])
    rows = sent(out)
    assert all(row.answer == RENDERED[key] for key, row in rows.items())
    assert all(json.loads(row.request)["prompt"] == RENDERED[key] for key, row in rows.items())


def test_an_undefined_template_variable_stops_the_run_before_it_starts(tmp_path):
    wrong = Variant("wrong", template="{{ question }} ({{ vars.topic }})")
    with pytest.raises(ValueError) as info:
        run(CASES, Function(lambda r: "x"), variants=[TERSE, wrong], out=tmp_path / "r")
    assert str(info.value) == (
        "case 'capital', variant 'wrong': 'template': variable 'vars.topic' is undefined"
    )
    with pytest.raises(ValueError, match="variant 'v': 'template': variable 'qestion' is undef"):
        run(CASES, Function(lambda r: "x"), variants=[Variant("v", template="{{ qestion }}")])
    assert not (tmp_path / "r").exists()


def test_a_case_with_only_vars_needs_a_template_variant(tmp_path):
    with pytest.raises(ValueError, match="case 'capital', variant 'baseline': the case has only"):
        run(CASES, Function(lambda r: "x"), out=tmp_path / "r", progress=False)
    with pytest.raises(
        ValueError, match="needs exactly one of 'prompt' or 'messages'; got neither"
    ):
        Case("empty")


def test_a_template_replaces_the_last_user_message_and_sees_prompt_and_choices():
    case = Case(
        "mc",
        messages=[
            {"role": "system", "content": "Be exact."},
            {"role": "user", "content": "Which is largest?"},
        ],
        choices=["Mars", "Jupiter"],
        target="B",
        vars={"topic": "planets"},
    )
    template = "[{{ topic }}] {{ prompt }}\n{{ choices_text }}\n{{ letters | join('/') }}"
    messages = Variant("t", template=template).messages_for(case)
    assert messages == (
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "[planets] Which is largest?\nA. Mars\nB. Jupiter\nA/B"},
    )


def test_choices_without_a_template_use_the_documented_default():
    case = Case("mc", prompt="Which is largest?", choices=["Mars", "Jupiter"], target="B")
    (message,) = Variant("plain").messages_for(case)
    assert message["content"] == (
        "Which is largest?\n\nA. Mars\nB. Jupiter\n\n"
        "Answer with the letter of one choice (A, B), ending with a line of the form "
        "ANSWER: <letter>"
    )


def test_a_prefix_goes_into_the_first_text_part_and_keeps_the_image():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    case = Case(
        "img",
        messages=[{"role": "user", "content": [image, {"type": "text", "text": "What is it?"}]}],
    )
    (message,) = Variant("v", prefix="Look closely.").messages_for(case)
    assert message["content"] == [image, {"type": "text", "text": "Look closely.\n\nWhat is it?"}]
    # the prompt column holds the text as sent, not a Python repr of the parts
    request = Request(case, Variant("v"), 0, Variant("v", prefix="P").messages_for(case), {})
    assert request.prompt == "P\n\nWhat is it?"
    only_image = Case("img2", messages=[{"role": "user", "content": [image]}])
    (message,) = Variant("v", prefix="Describe.").messages_for(only_image)
    assert message["content"] == [{"type": "text", "text": "Describe."}, image]


def test_a_prefix_on_a_case_without_a_user_message_is_a_validation_error(tmp_path):
    case = Case("sys", messages=[{"role": "system", "content": "Say hello."}])
    with pytest.raises(ValueError) as info:
        run(
            [case],
            Function(lambda r: "x"),
            variants=[Variant("p", prefix="Hi")],
            out=tmp_path / "r",
        )
    assert str(info.value) == (
        "case 'sys', variant 'p': 'prefix' goes before the user message, and the case has none"
    )


def test_a_system_variant_replaces_only_the_leading_system_message():
    few_shot = [
        {"role": "system", "content": "Answer in one word."},
        {"role": "system", "name": "example_user", "content": "2+2?"},
        {"role": "system", "name": "example_assistant", "content": "4"},
        {"role": "user", "content": "3+3?"},
    ]
    messages = Variant("s", system="Answer with a number.").messages_for(
        Case("c", messages=few_shot)
    )
    assert messages == ({"role": "system", "content": "Answer with a number."}, *few_shot[1:])
    # no leading instructions (the first system message is an example): inserted before
    examples = few_shot[1:]
    messages = Variant("s", system="Be brief.").messages_for(Case("c", messages=examples))
    assert messages == ({"role": "system", "content": "Be brief."}, *examples)


def test_system_is_a_template_too():
    case = Case("c", prompt="Hi", vars={"persona": "a pirate"})
    messages = Variant("s", system="You are {{ persona }}.").messages_for(case)
    assert messages[0] == {"role": "system", "content": "You are a pirate."}
    with pytest.raises(ValueError, match=r"Variant 'bad': 'system' is not a valid template"):
        Variant("bad", system="{% if %}")


def test_vars_may_not_shadow_the_names_templates_keep():
    with pytest.raises(ValueError, match=r"'vars\.prompt' is a name templates keep for themselves"):
        Case("c", prompt="p", vars={"prompt": "x"})


def test_templates_come_from_the_command_line_and_experiment_files(tmp_path):
    (tmp_path / "polite.j2").write_text("Please: {{ question }}")
    variant = parse_variant(f"polite:template=@{tmp_path / 'polite.j2'},temperature=0.2")
    assert variant.template == "Please: {{ question }}" and variant.params == {"temperature": 0.2}
    assert variant.messages_for(CASES[0])[0]["content"] == "Please: What is the capital of France?"
    (tmp_path / "exp.toml").write_text(
        'cases = "cases.yaml"\n'
        "[[variants]]\n"
        'name = "polite"\n'
        'template_file = "polite.j2"\n'
        "shuffle_choices = true\n"
        "shuffle_seed = 7\n"
        "[[variants]]\n"
        'name = "bad"\n'
        'template = "{{ oops"\n'
    )
    with pytest.raises(CasesError, match=r"'variants\[1\]': Variant 'bad': 'template' is not a"):
        load_experiment(tmp_path / "exp.toml")
    text = (tmp_path / "exp.toml").read_text().split('[[variants]]\nname = "bad"')[0]
    (tmp_path / "exp.toml").write_text(text)
    (polite,) = load_experiment(tmp_path / "exp.toml").variants
    assert (polite.template, polite.shuffle_choices, polite.shuffle_seed) == (
        "Please: {{ question }}",
        True,
        7,
    )
    assert polite.to_dict()["shuffle_seed"] == 7 and "template" in polite.to_dict()
    # a variant without the new fields records exactly what earlier runs recorded
    assert Variant("v").to_dict() == {"name": "v", "prefix": None, "system": None, "params": {}}
