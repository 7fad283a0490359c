"""``extract_match`` (lm-eval's regex + take_first + exact_match) and ``json_match``
(openai/evals' JsonMatch)."""

from __future__ import annotations

import pytest

from evalnb._exceptions import ArgumentError
from evalnb._types import Case
from evalnb.checks import build_check
from tests.builders import sample

# gsm8k-cot's two filters and its exact_match options.
STRICT = {"pattern": r"The answer is (\-?[0-9\.\,]+).", "group_select": 0}
FLEXIBLE = {"pattern": r"(-?[$0-9.,]{2,})|(-?[0-9]+)", "group_select": -1}
OPTIONS = {"ignore_case": True, "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}


@pytest.mark.parametrize(
    ("filter_", "answer", "passed", "read"),
    [
        (STRICT, "48 + 24 = 72. The answer is 72.", True, "72"),
        # The first match; the greedy class takes the full stop too, as in lm-eval.
        (STRICT, "The answer is 1,072. Then The answer is 9.", True, "1,072."),
        (STRICT, "It is 72.", False, "[invalid]"),  # lm-eval's fallback
        (FLEXIBLE, "She sold 48 then 24, so 72", True, "72"),  # the last number
        (FLEXIBLE, "$1,072.", True, "$1,072."),  # stripped of $ , . before comparing
    ],
)
def test_extract_match_reads_as_lm_eval_filters_do(filter_, answer, passed, read) -> None:
    target = "1072" if "072" in answer else "72"
    spec = {"type": "extract_match", **filter_, **OPTIONS}
    check = build_check(spec, case=Case(id="c", prompt="q", target=target))
    outcome = check(sample(answer))
    assert outcome.passed is passed and outcome.evidence == {"extracted": read}


def test_extract_match_needs_a_target_and_a_valid_pattern() -> None:
    with pytest.raises(ArgumentError, match="has none"):
        build_check({"type": "extract_match"}, case=Case(id="c", prompt="q"))
    with pytest.raises(ArgumentError, match=r"'check\.pattern' is not a valid regular expression"):
        build_check({"type": "extract_match", "pattern": "("})


def test_json_match_compares_parsed_json() -> None:
    case = Case(id="c", prompt="q", target=('{"a": 1, "b": [2]}',))
    check = build_check({"type": "json_match"}, case=case)
    assert check(sample('{"b": [2],\n "a": 1}')).passed is True
    assert check(sample('{"a": 2, "b": [2]}')).passed is False
    assert "not JSON" in check(sample("a: 1")).detail
