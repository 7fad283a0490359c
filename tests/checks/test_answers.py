import pytest

from evalnb import Case
from evalnb.checks import build_check, run_checks
from evalnb.checks._answers import canonical_answer, extract_json
from tests.builders import sample


def result(spec, answer, **fields):
    s = sample(answer)
    if fields:
        s = type(s)(**{**s.__dict__, **fields})
    (r,) = run_checks([build_check(spec)], s)
    return r.outcome, r.detail


KEYS = {"type": "json_keys", "keys": ["vendor", "total_cents", "currency"]}
VALUES = {"type": "json_values", "values": {"vendor": "Acme Tools", "total_cents": 1950}}
GOOD = '{"vendor": "Acme Tools", "total_cents": 1950, "currency": "USD"}'


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (GOOD, (True, "")),
        (f"Here you go: {GOOD} Anything else?", (True, "")),  # prose around JSON
        ('{"vendor": "A {B}", "meta": {"x": 1}, "total_cents": 1, "currency": "E"}', (True, "")),
        ('{"vendor": "Acme", "total_cents": 1950}', (False, "missing keys: currency")),
        (
            '{"vendor": "Acme", total_cents: 1950}',
            (
                False,
                "invalid JSON (Expecting property name enclosed in double quotes at column 20)",
            ),
        ),
        ("no json here", (False, "no JSON object in the answer")),
        ("} backwards {", (False, "no JSON object in the answer")),
    ],
)
def test_json_keys(answer, expected):
    assert result(KEYS, answer) == expected


def test_json_values_catch_present_keys_with_wrong_values():
    assert result(VALUES, GOOD) == (True, "")
    assert result(VALUES, GOOD.replace("1950", "1950.0"))[0] is True
    unit_bug = GOOD.replace("1950", "19.5")
    assert result(VALUES, unit_bug) == (False, "total_cents=19.5, expected 1950")
    assert result({"type": "json_values", "values": {"ok": 1}}, '{"ok": true}')[0] is False
    assert result(VALUES, '{"vendor": "Acme Tools"}') == (False, "total_cents missing")


def test_length_budget_uses_tokens_when_known_and_four_chars_otherwise():
    spec = {"type": "length_budget", "max_tokens": 10}
    assert result(spec, "x" * 100, completion_tokens=9)[0] is True
    assert result(spec, "x", completion_tokens=11) == (False, "11 completion tokens; budget 10")
    assert result(spec, "x" * 40)[0] is True
    assert result(spec, "x" * 41) == (False, "41 characters > 4 x 10 tokens (no usage reported)")
    assert result({"type": "length_budget", "max_chars": 3}, "abcd") == (
        False,
        "4 characters; budget 3",
    )
    with pytest.raises(ValueError, match="exactly one of 'max_chars' or 'max_tokens'"):
        build_check({"type": "length_budget"})


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("It is written in GO.", True),
        ("Go.", True),
        ("The work is ongoing", False),
        ("Golang", False),
    ],
)
def test_answer_terms_match_whole_words_case_insensitively(answer, passed):
    assert result({"type": "answer_terms", "terms": ["Go"]}, answer)[0] is passed


def test_answer_terms_negation_limit_is_kept():
    # A lexical check is not a semantic judge: this passes although the claim is wrong.
    assert (
        result({"type": "answer_terms", "terms": ["Go"]}, "The project does not use Go.")[0] is True
    )


def test_answer_terms_need_every_term_and_empty_terms_are_unscored():
    spec = {"type": "answer_terms", "terms": ["Paper Kite", "beta"]}
    assert result(spec, "Paper Kite is in BETA")[0] is True
    assert result(spec, "Paper Kite") == (False, "missing terms: 'beta'")
    empty = build_check({"type": "answer_terms", "terms": []})
    assert empty.applies is False
    assert result({"type": "answer_terms", "terms": []}, "anything") == (
        None,
        "the case has no answer terms",
    )
    (incomplete,) = run_checks([empty], sample(None, status="error"))
    assert incomplete.outcome is None  # unscored stays unscored, even for an incomplete sample


def test_canonical_answer():
    keys = ["vendor", "total_cents", "currency"]
    assert (
        canonical_answer(f"Sure: {GOOD}", keys)
        == '{"currency": "USD", "total_cents": 1950, "vendor": "Acme Tools"}'
    )
    assert canonical_answer('{"vendor": "Acme Tools"}', keys) is None
    assert canonical_answer("  Hello\n  World ") == "hello world"
    assert extract_json("[1, 2]") == (None, "no JSON object in the answer")


def test_expect_keys_is_a_case_field():
    case = Case("x", prompt="p", expect_keys=["a"])
    assert case.to_dict()["expect_keys"] == ["a"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[1, 2, 3]", (True, "")),  # arrays are JSON values too
        ("42", (True, "")),
        ('"yes"', (True, "")),
        ("null", (True, "")),
        ('Here: ```json\n[{"a": 1}]\n``` done', (True, "")),  # first bracket to last
        ('{"a": 1} and {"b": 2}', (False, "invalid JSON (Extra data at column 10)")),
        ("no JSON here", (False, "no JSON value in the answer")),
        ("[1, 2", (False, "no JSON value in the answer")),
    ],
)
def test_is_json_accepts_any_json_value_with_the_bracket_leniency(answer, expected):
    assert result({"type": "is_json"}, answer) == expected


SCHEMA = {
    "type": "object",
    "properties": {"total": {"type": "integer"}, "items": {"type": "array"}},
    "required": ["total"],
}


def test_json_schema_validates_with_the_jsonschema_package():
    spec = {"type": "json_schema", "schema": SCHEMA}
    assert result(spec, 'Sure: {"total": 3, "items": []}') == (True, "")
    assert result(spec, '{"total": "3"}') == (False, "$.total: '3' is not of type 'integer'")
    assert result(spec, '{"items": []}') == (False, "$: 'total' is a required property")
    assert result(spec, "[1]") == (False, "$: [1] is not of type 'object'")
    assert result(spec, "nothing") == (False, "no JSON value in the answer")
    with pytest.raises(ValueError, match=r"'check.schema' must be a valid JSON Schema \("):
        build_check({"type": "json_schema", "schema": {"type": "nonsense"}})
