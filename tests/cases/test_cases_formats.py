"""Cases from YAML and CSV, and defaults for every case: located one-line errors."""

import json
import textwrap

import pytest

from evalnb import CasesError, load_cases
from evalnb.cases._experiment import load_experiment

YAML = """\
# promptfoo-style: defaults for every case, then the cases
defaults:
  tags: [geo]
  vars: {style: short}
  checks:
    - type: word_count
      max: 30
cases:
  - id: capital
    vars: {question: "What is the capital of France?"}
    target: Paris
    checks: [{type: fuzzy_match}]
  - id: planet
    prompt: Which planet is the largest?
    choices: [Mars, Jupiter, Venus]
    target: B
    tags: [space]
    vars: {style: long}
    checks:
      - type: choice
"""


def write(path, text):
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error(path, **kwargs):
    with pytest.raises(CasesError) as info:
        load_cases(path, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_yaml_cases_with_defaults(tmp_path):
    capital, planet = load_cases(write(tmp_path / "cases.yaml", YAML))
    assert capital.vars == {"style": "short", "question": "What is the capital of France?"}
    assert capital.target == "Paris" and capital.tags == ("geo",)
    # the case's own checks first, then the defaults' (names stay unique)
    assert [c.name for c in capital.checks] == ["fuzzy_match", "word_count"]
    assert planet.vars == {"style": "long"} and planet.tags == ("geo", "space")
    assert planet.choices == ("Mars", "Jupiter", "Venus") and planet.target == "B"
    assert [c.name for c in planet.checks] == ["choice", "word_count"]
    # a plain YAML list works too (.yml)
    (only,) = load_cases(write(tmp_path / "list.yml", "- id: a\n  prompt: hi\n"))
    assert only.prompt == "hi"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (YAML.replace("target: Paris", "target: [1, 2]"), ":9: 'target' must be a non-empty"),
        (YAML.replace("type: choice", "type: chioce"), ":13: 'checks[0].type' must be one of"),
        (YAML.replace("target: B", "target: Saturn"), ":13: Case 'planet': 'target' must be a"),
        (YAML.replace("max: 30", "max: -1"), ":2: 'defaults.checks[0].max' must be a whole"),
        (YAML.replace("tags: [geo]", "tag: [geo]"), ":2: 'defaults.tag' is not a field defaults"),
        (YAML.replace("  - id: planet", "  - id: capital"), ":13: 'id' must be unique; got"),
        (YAML.replace("cases:", "cases: {"), ":9: not valid YAML ("),
    ],
)
def test_a_bad_yaml_case_names_its_line_and_field(tmp_path, text, message):
    path = write(tmp_path / "cases.yaml", text)
    assert error(path).startswith(f"{path}{message}")


def test_two_checks_of_one_type_from_case_and_defaults_need_a_name(tmp_path):
    text = YAML.replace("- type: choice", "- type: word_count\n        max: 5")
    path = write(tmp_path / "cases.yaml", text)
    assert error(path) == (
        f"{path}:13: 'defaults.checks[0].name' must be unique within the case; got "
        "'word_count' again (first at checks[0]); give one of them a 'name'"
    )


FUZZY, CHOICE = '"[{""type"": ""fuzzy_match""}]"', '"[{""type"": ""choice""}]"'
CSV = f"""\
id,input,target,vars.city,metadata.source,tags,choices.A,choices.B,checks
paris,"What is the capital of France?",Paris,Paris,atlas,"geo, easy",,,{FUZZY}
planet,"Which planet is the largest?",B,,almanac,,Mars,Jupiter,{CHOICE}
"multi
line",Spans two lines?,yes,,,,,,
"""


def test_csv_cases_map_their_columns(tmp_path):
    paris, planet, multi = load_cases(write(tmp_path / "cases.csv", CSV))
    assert paris.prompt == "What is the capital of France?" and paris.target == "Paris"
    assert paris.vars == {"city": "Paris"} and paris.metadata == {"source": "atlas"}
    assert paris.tags == ("geo", "easy") and [c.name for c in paris.checks] == ["fuzzy_match"]
    assert planet.choices == ("Mars", "Jupiter") and planet.vars == {"city": ""}
    assert multi.id == "multi\nline" and multi.checks == ()


def test_csv_takes_checks_from_an_experiments_defaults(tmp_path):
    write(tmp_path / "cases.csv", "id,prompt,target\nq1,What is 2+2?,4\nq2,What is 3+3?,6\n")
    write(
        tmp_path / "exp.toml",
        """\
        cases = "cases.csv"
        [defaults]
        split = "heldout"
        checks = [{ type = "numeric" }]
        """,
    )
    experiment = load_experiment(tmp_path / "exp.toml")
    cases = load_cases(experiment.cases, defaults=experiment.defaults)
    assert [(c.id, c.target, c.split) for c in cases] == [
        ("q1", "4", "heldout"),
        ("q2", "6", "heldout"),
    ]
    assert [[c.name for c in case.checks] for case in cases] == [["numeric"], ["numeric"]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,prompt\na,hi\nb,hi,extra\n", ":3: the row has 3 cells and the header 2"),
        ("id,prompt,split\na,hi,dev\nb,hi,test\n", ":3: 'split' must be 'dev' or 'heldout'"),
        ("id,prompt,target\na,hi,x\n\nb,,y\n", ":4: a case needs exactly one of 'prompt'"),
        ('id,prompt,checks\na,hi,"[{""type"": ""nope""}]"\n', ":2: 'checks[0].type' must be"),
        ("id,prompt,checks\na,hi,[oops\n", ":2: 'checks' must be a JSON list of check specs"),
        ("id,promt\na,hi\n", ":1: column 2 'promt' is not a cases column"),
        ("prompt\nhi\n", ":1: the header needs an 'id' column"),
        ("id,prompt,choices.B\na,hi,x\n", ":1: choice columns must be choices.A, choices.B"),
        # a quoted cell over two lines: the next row still names its own first line
        ('id,prompt\n"a\nb",hi\nc,\n', ":4: a case needs exactly one of 'prompt'"),
    ],
)
def test_a_bad_csv_row_names_its_line(tmp_path, text, message):
    path = write(tmp_path / "cases.csv", text)
    assert error(path).startswith(f"{path}{message}")


def test_json_files_take_defaults_too_and_bad_defaults_name_the_experiment(tmp_path):
    data = {
        "defaults": {"checks": [{"type": "contains", "text": "a"}]},
        "cases": [{"id": "x", "prompt": "p"}],
    }
    (case,) = load_cases(write(tmp_path / "cases.json", json.dumps(data)))
    assert [c.name for c in case.checks] == ["contains"]
    path = write(tmp_path / "cases.json", json.dumps({**data, "extra": 1}))
    assert error(path) == f"{path}: 'extra' is not a top-level field (fields: cases, defaults)"
    exp = write(tmp_path / "exp.toml", '[defaults]\nchecks = [{ type = "contians" }]\n')
    with pytest.raises(CasesError) as info:
        load_experiment(exp)
    assert str(info.value).startswith(f"{exp}: 'defaults.checks[0].type' must be one of")
