import asyncio

import pytest

from evalnb import Case, Unscored
from evalnb.checks import Outcome, as_check, build_check, run_checks
from tests.builders import sample


def outcome(spec, answer):
    (result,) = run_checks([build_check(spec)], sample(answer))
    return result.outcome, result.detail


def test_contains_is_case_insensitive_by_default():
    assert outcome({"type": "contains", "text": "A-1042"}, "order a-1042 ships") == (True, "")
    assert outcome({"type": "contains", "text": "A-1042", "ignore_case": False}, "a-1042") == (
        False,
        "does not mention 'A-1042'",
    )


def test_contains_any_avoids_word_count_regex():
    spec = {"type": "contains_any", "options": ["review", "look into"]}
    assert outcome(spec, "We will look into it")[0] is True
    assert outcome(spec, "Refund sent") == (False, "mentions none of 'review', 'look into'")
    spec = {"type": "avoids", "phrases": ["has been issued", "SAVE100"]}
    assert outcome(spec, "Your refund HAS BEEN ISSUED") == (False, "says 'has been issued'")
    assert outcome(spec, "We will review it")[0] is True
    spec = {"type": "word_count", "min": 3, "max": 5}
    assert outcome(spec, "one two") == (False, "2 words; expected 3-5")
    assert outcome(spec, "one two three")[0] is True
    assert outcome({"type": "word_count", "max": 2}, "a b c") == (False, "3 words; expected <=2")
    assert outcome({"type": "regex", "pattern": r"\bA-\d{4}\b"}, "see A-1042.")[0] is True
    assert outcome({"type": "regex", "pattern": r"^\d+$"}, "12a") == (
        False,
        r"does not match /^\d+$/",
    )


def test_a_lexical_check_is_not_a_semantic_judge():
    # Negation passes a term check: "does not use Go" still contains "Go".
    assert outcome({"type": "contains", "text": "Go"}, "The project does not use Go.")[0] is True


def test_incomplete_sample_fails_applicable_checks_and_names_its_status():
    checks = [build_check({"type": "avoids", "phrases": ["x"]})]
    (result,) = run_checks(checks, sample(None, status="timeout"))
    # avoids would pass on an empty answer: an incomplete sample must not.
    assert result.outcome is False
    assert result.detail == "incomplete sample: timeout"


def test_custom_callables_exceptions_and_unscored():
    def upper(answer):
        return answer.isupper() or "not shouting"

    def crash(answer):
        raise KeyError("gone")

    def skip(answer, sample):
        return Unscored("no terms for this case")

    case = Case("c", prompt="p", checks=[upper, crash, skip])
    results = run_checks(case.checks, sample("quiet"))
    assert [(r.check, r.type, r.outcome, r.detail) for r in results] == [
        ("upper", "python", False, "not shouting"),
        ("crash", "python", False, "check raised KeyError: 'gone'"),
        ("skip", "python", None, "no terms for this case"),
    ]


def test_a_check_returning_nonsense_is_reported_not_passed():
    (result,) = run_checks([build_check(lambda answer: 42)], sample("x"))
    assert result.outcome is False
    assert "must return None/True, False, a problem string or Unscored; got 42" in result.detail


def test_build_check_rejects_non_checks():
    with pytest.raises(TypeError, match="must be a check spec"):
        build_check(3)


def test_run_checks_works_inside_a_running_event_loop():
    # A notebook cell runs inside an event loop, where asyncio.run() raises.
    async def in_a_cell():
        asyncio.get_running_loop()
        return run_checks(
            [{"type": "contains", "text": "A-1042"}, lambda answer: "too short"],
            sample("order A-1042"),
        )

    results = asyncio.run(in_a_cell())
    assert [(r.check, r.outcome) for r in results] == [
        ("contains", True),
        ("<lambda>", False),
    ]
    assert results[1].detail == "too short"


def test_a_check_may_return_a_score_and_passes_at_its_threshold():
    def closeness(answer):
        return min(1.0, len(answer) / 10)

    default, strict = as_check(closeness), as_check(closeness, "strict", threshold=0.8)
    results = run_checks([default, strict], sample("seven c"))
    assert [(r.check, r.outcome, r.score, r.detail) for r in results] == [
        ("closeness", True, 0.7, ""),
        ("strict", False, 0.7, "score 0.7 < threshold 0.8"),
    ]
    assert strict.spec["threshold"] == 0.8
    # a graded check (one with a threshold) scores 0 on an incomplete sample: the sample
    # stays in the mean score as it stays in the pass rate; an ungraded one has no score
    (graded, plain) = run_checks([strict, default], sample(None, status="timeout"))
    assert (graded.outcome, graded.score) == (False, 0.0)
    assert (plain.outcome, plain.score) == (False, None)
    # an Outcome with a score and no verdict is judged by the threshold; a bad score fails
    (result,) = run_checks([as_check(lambda a: Outcome(None, "", None, 0.9), "o")], sample("x"))
    assert (result.outcome, result.score) == (True, 0.9)
    (result,) = run_checks([as_check(lambda a: Outcome(True, "", None, 1.5), "b")], sample("x"))
    assert result.outcome is False and "score must be a number in [0, 1]" in result.detail


def test_a_catastrophic_regex_fails_at_its_time_budget_instead_of_hanging():
    import time

    # The regex package already answers "(a+)+$" at once; "(a|aa)+$" still backtracks.
    assert outcome({"type": "regex", "pattern": "(a+)+$"}, "a" * 32 + "!")[0] is False
    spec = {"type": "regex", "pattern": "(a|aa)+$", "timeout": 0.5}
    started = time.monotonic()
    passed, detail = outcome(spec, "a" * 40 + "!")
    assert time.monotonic() - started < 5  # re.search here runs for minutes
    assert passed is False and detail.startswith("gave up after 0.5 s")
    assert outcome({"type": "regex", "pattern": "a+$"}, "aaa") == (True, "")
    with pytest.raises(ValueError, match=r"'checks\.timeout' must be a number of seconds > 0"):
        build_check({"type": "regex", "pattern": "a", "timeout": 0}, where="checks")
