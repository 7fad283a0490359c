import json

import pytest

from evalnb import Case, CasesError, load_cases
from evalnb.checks import build_checks, check_types

TYPES = ", ".join(repr(name) for name in sorted(check_types()))
SHOP = "data/cases/shop.jsonl"


def write_lines(path, items):
    path.write_text("\n".join(i if isinstance(i, str) else json.dumps(i) for i in items) + "\n")
    return path


def test_shop_cases_load_with_their_checks():
    cases = load_cases(SHOP)
    assert [c.id for c in cases] == [
        "order-status",
        "refund-request",
        "discount-trick",
        "thank-you",
    ]
    # A check is named by its type: no per-case value in the name (issue 14).
    assert [c.name for c in cases[0].checks] == [
        "contains",
        "word_count",
        "avoids",
    ]
    assert cases[0].group == "order-status" and cases[0].split == "dev"


def test_json_list_loads_and_keeps_every_field(tmp_path):
    path = tmp_path / "cases.json"
    item = {
        "id": "a",
        "messages": [{"role": "user", "content": "hi"}],
        "fixtures": {"notes.txt": "Paper Kite"},
        "review": "r",
        "group": "g",
        "split": "heldout",
        "tags": ["x"],
        "metadata": {"agreement_min": 0.8},
    }
    path.write_text(json.dumps([item]))
    (case,) = load_cases(path)
    assert case.to_dict() == {**item, "checks": []}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            {
                "id": "b",
                "prompt": "p",
                "checks": [{"type": "contains", "text": "x"}, {"type": "contians"}],
            },
            "cases.jsonl:2: 'checks[1].type' must be one of " + TYPES + "; got 'contians'",
        ),
        (
            {"id": "b"},
            "cases.jsonl:2: a case needs exactly one of 'prompt' or 'messages'; got neither",
        ),
        ({"id": "b", "promt": "p"}, "cases.jsonl:2: 'promt' is not a case field"),
        ({"id": 7, "prompt": "p"}, "cases.jsonl:2: 'id' must be a non-empty string; got 7"),
        ({"id": "a", "prompt": "p"}, "cases.jsonl:2: 'id' must be unique; got 'a' again (first at"),
        (
            {"id": "b", "prompt": "p", "split": "test"},
            "cases.jsonl:2: 'split' must be 'dev' or 'heldout'",
        ),
        (
            {"id": "b", "prompt": "p", "tags": "x"},
            "cases.jsonl:2: 'tags' must be a list of strings",
        ),
        (
            {"id": "b", "prompt": "p", "checks": [{"type": "word_count", "min": -1}]},
            "cases.jsonl:2: 'checks[0].min' must be a whole number >= 0; got int -1",
        ),
        (
            {"id": "b", "prompt": "p", "checks": [{"type": "regex", "pattern": "("}]},
            "cases.jsonl:2: 'checks[0].pattern' must be a valid regular expression",
        ),
        (
            {"id": "b", "prompt": "p", "checks": [{"type": "contains", "txt": "x"}]},
            "cases.jsonl:2: 'checks[0].txt' is not a field of a 'contains' check",
        ),
        (
            {"id": "b", "prompt": "p", "checks": [{"type": "contains", "text": "x"}] * 2},
            "cases.jsonl:2: 'checks[1].name' must be unique within the case",
        ),
        ('{"id": "b", "prompt": ', "cases.jsonl:2: not valid JSON (Expecting value at column 23)"),
    ],
)
def test_bad_case_gives_one_line_error_naming_file_line_and_field(tmp_path, line, message):
    path = write_lines(tmp_path / "cases.jsonl", [{"id": "a", "prompt": "p"}, line])
    with pytest.raises(CasesError) as info:
        load_cases(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(str(tmp_path / message.split(":", 1)[0]))
    assert message.split("cases.jsonl", 1)[1] in text


def test_empty_and_missing_files_are_errors(tmp_path):
    with pytest.raises(CasesError, match="no cases found"):
        load_cases(write_lines(tmp_path / "cases.jsonl", [""]))
    with pytest.raises(CasesError, match="no such cases file"):
        load_cases(tmp_path / "absent.jsonl")
    # .csv, .yaml and .yml are cases files too since issue 14: .txt is still refused.
    with pytest.raises(
        CasesError, match=r"must end in \.jsonl, \.json, \.yaml, \.yml, \.csv; got '\.txt'"
    ):
        load_cases(tmp_path / "cases.txt")


def test_case_from_python_accepts_callables_and_defaults_group():
    def short(answer):
        return None if len(answer) < 10 else "too long"

    case = Case("x", prompt="p", checks=[short, {"type": "contains", "text": "p"}])
    assert [c.name for c in build_checks(case.checks)] == ["short", "contains"]
    assert case.group == "x"
    with pytest.raises(ValueError, match="exactly one of 'prompt' or 'messages'; got both"):
        Case("y", prompt="p", messages=[{"role": "user", "content": "p"}])
