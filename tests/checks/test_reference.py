"""Checks against a case's reference answer: equals, starts_with, includes, fuzzy_match,
numeric and choice, with the inputs that trip naive implementations."""

import dataclasses
import json

import pytest

from evalnb import Case, Variant
from evalnb.checks import build_check, build_checks, run_checks
from tests.builders import sample


def check(spec, target, answer, *, choices=None, order=None):
    """(outcome, detail, evidence) of one check on one answer for a case with ``target``."""
    case = Case("c", prompt="q", target=target, choices=choices)
    (result,) = run_checks([build_check(spec, case=case)], with_order(sample(answer), order))
    evidence = json.loads(result.evidence) if result.evidence else None
    return result.outcome, result.detail, evidence


def with_order(s, order):
    return dataclasses.replace(s, choice_order=order)


# -- numeric ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "target", "read"),
    [
        ("It costs $1,234.50.", 1234.5, 1234.5),
        ("-3 degrees", -3, -3),
        ("approximately 3.0e2", 300, 300),
        ("1e3 metres", 1000, 1000),
        ("Order A-1042 ships in 3-5 days, total 7", 7, 7),  # A-1042 is not -1042
        ("It costs $4.", 4, 4),  # a sentence's full stop is not a decimal point
        ("The answer is \u22125", -5, -5),  # the Unicode minus sign
    ],
)
def test_numeric_reads_the_last_number_in_its_usual_shapes(answer, target, read):
    outcome, detail, evidence = check({"type": "numeric"}, target, answer)
    assert outcome is True
    assert evidence["value"] == read
    assert detail == f"read {read}"


def test_numeric_takes_the_last_number_unless_told_first():
    answer = "17 times 25 is 425, so 425."
    assert check({"type": "numeric"}, 425, answer)[0] is True
    outcome, detail, _ = check({"type": "numeric", "which": "first"}, 425, answer)
    assert (outcome, detail) == (False, "read 17; expected 425")
    # the last number decides even when an earlier one is the reference
    outcome, detail, evidence = check({"type": "numeric"}, 425, "425? No: 430.")
    assert (outcome, detail, evidence["text"]) == (False, "read 430; expected 425", "430")


def test_numeric_tolerances_percent_and_string_targets():
    assert check({"type": "numeric"}, 0.3, "0.1 + 0.2 = 0.30000000000000004")[0] is True
    assert check({"type": "numeric"}, 3.14159, "about 3.14")[0] is False
    assert check({"type": "numeric", "abs_tol": 0.01}, 3.14159, "about 3.14")[0] is True
    assert check({"type": "numeric", "rel_tol": 0.05}, 100, "roughly 96")[0] is True
    assert check({"type": "numeric"}, 0.5, "50%")[0] is False  # read as written: 50
    assert check({"type": "numeric", "percent": True}, 0.5, "50%")[:2] == (True, "read 0.5")
    assert check({"type": "numeric"}, "$50.00", "That is $50.")[0] is True
    assert check({"type": "numeric"}, ["40", "50"], "50")[0] is True
    assert check({"type": "numeric"}, 5, "five") == (False, "no number in the answer", None)


def test_numeric_needs_a_numeric_target_before_anything_runs():
    case = Case("c", prompt="q", target="Paris")
    with pytest.raises(ValueError, match=r"'check' \(numeric\) needs a number as the case's"):
        build_check({"type": "numeric"}, case=case)
    with pytest.raises(ValueError, match=r"'check\.which' must be 'first' or 'last'"):
        build_check({"type": "numeric", "which": "middle"})


# -- choice ------------------------------------------------------------------------------

PLANETS = ["Mars", "Jupiter", "Venus", "Mercury"]


@pytest.mark.parametrize(
    "answer",
    [
        "ANSWER: B",
        "(b)",
        "B.",
        "B. Jupiter",
        "The answer is B because A is wrong",
        "Let me think. A is too small.\nANSWER: B",
        "Jupiter, the gas giant.",  # no letter: the text of exactly one choice
    ],
)
def test_choice_reads_the_letter_the_answer_picks(answer):
    outcome, detail, _ = check({"type": "choice"}, "B", answer, choices=PLANETS)
    assert outcome is True, detail
    assert detail.startswith("answered B ('Jupiter'")


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        ("ANSWER: A", "answered A ('Mars', by ANSWER line); expected 'Jupiter'"),
        ("ANSWER: F", "letter F is not one of the choices (A-D); expected 'Jupiter'"),
        ("Mars or Jupiter?", "no letter, and the answer names several choices; expected 'Jupiter'"),
        ("No idea.", "no choice letter found in the answer; expected 'Jupiter'"),
        # "the answer is a ..." is an article, not the letter A; nothing else names a choice
        ("The answer is a gas giant.", "no choice letter found in the answer; expected 'Jupiter'"),
    ],
)
def test_choice_failures_say_what_was_read(answer, detail):
    assert check({"type": "choice"}, "Jupiter", answer, choices=PLANETS)[:2] == (False, detail)


def test_a_shuffled_sample_maps_its_letter_back_to_the_case_order():
    # Shown as Venus, Mercury, Jupiter, Mars: the shown letter C is the case's B.
    order = (2, 3, 1, 0)
    shown = Variant("s", shuffle_choices=True)
    case = Case("c", prompt="Which planet is largest?", choices=PLANETS, target="B")
    outcome, _, evidence = check({"type": "choice"}, "B", "ANSWER: C", choices=PLANETS, order=order)
    assert outcome is True
    assert evidence == {"letter": "C", "index": 1, "choice": "Jupiter"}
    # The same letter read without the order would be Venus: the order is what maps it.
    assert check({"type": "choice"}, "B", "ANSWER: C", choices=PLANETS)[0] is False
    assert check({"type": "choice"}, "B", "ANSWER: B", choices=PLANETS, order=order)[:2] == (
        False,
        "answered B ('Mercury', by ANSWER line); expected 'Jupiter'",
    )
    # What the variant shows per repeat is that same kind of order, seeded and stable.
    orders = {shown.choice_order(case, r) for r in range(20)}
    assert len(orders) > 1 and all(sorted(o) == [0, 1, 2, 3] for o in orders)
    # Same seed, same order per (case, repeat), whatever the variant: pairs stay paired.
    same_seed = Variant("t", shuffle_choices=True)
    other_seed = Variant("u", shuffle_choices=True, shuffle_seed=1)
    assert [same_seed.choice_order(case, r) for r in range(20)] == [
        shown.choice_order(case, r) for r in range(20)
    ]
    assert [other_seed.choice_order(case, r) for r in range(20)] != [
        shown.choice_order(case, r) for r in range(20)
    ]
    message = shown.messages_for(case, 3)[0]["content"]
    letters = [line[0] for line in message.splitlines() if line[1:3] == ". "]
    texts = [line[3:] for line in message.splitlines() if line[1:3] == ". "]
    assert letters == ["A", "B", "C", "D"]
    assert texts == [PLANETS[i] for i in shown.choice_order(case, 3)]


def test_choice_targets_are_validated_against_the_choices():
    with pytest.raises(ValueError, match="'target' must be a letter A-D or the text of one"):
        Case("c", prompt="q", choices=PLANETS, target="Saturn")
    with pytest.raises(ValueError, match=r"'check' \(choice\) needs the case's 'choices'"):
        build_check({"type": "choice"}, case=Case("c", prompt="q", target="B"))
    # A list of acceptable answers: letters or texts.
    assert check({"type": "choice"}, ["A", "Venus"], "ANSWER: C", choices=PLANETS)[0] is True


# -- equals, starts_with, includes -------------------------------------------------------


def test_equals_normalises_case_white_space_and_surrounding_punctuation():
    assert check({"type": "equals"}, "Paris", "  paris. ")[0] is True
    assert check({"type": "equals"}, "New York", "new   york!")[0] is True
    assert check({"type": "equals"}, "Paris", '"Paris"')[0] is True
    # only the ends: inner punctuation stays
    assert check({"type": "equals"}, "St Ives", "St. Ives")[0] is False
    assert check({"type": "equals"}, "Paris", "Paris, France") == (
        False,
        "is not 'Paris'",
        None,
    )


@pytest.mark.parametrize(
    ("option", "answer"),
    [("ignore_case", "paris"), ("ignore_whitespace", "Paris  "), ("ignore_punctuation", "Paris.")],
)
def test_each_equals_normalisation_can_be_turned_off(option, answer):
    assert check({"type": "equals"}, "Paris", answer)[0] is True
    assert check({"type": "equals", option: False}, "Paris", answer)[0] is False


def test_equals_numbers_and_lists_of_targets():
    assert check({"type": "equals"}, 42, "42.")[0] is True
    assert check({"type": "equals"}, ["NYC", "New York"], "new york")[0] is True
    assert check({"type": "equals"}, ["NYC", "New York"], "Boston")[1] == (
        "is not 'NYC' or 'New York'"
    )


def test_starts_with_and_includes():
    assert check({"type": "starts_with"}, "Yes", "yes, it does")[0] is True
    assert check({"type": "starts_with"}, "Yes", "Well, yes") == (
        False,
        "does not start with 'Yes'",
        None,
    )
    assert check({"type": "includes"}, "Paris", "It is PARIS, of course")[0] is True
    assert check({"type": "includes"}, "Paris", "Lyon")[1] == "does not include 'Paris'"


# -- fuzzy_match ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "answer"),
    [
        ("Paris", "The capital is Paris."),  # the target inside the answer
        ("Paris, France", "paris"),  # the answer inside the target
        ("The Beatles", "beatles!"),  # articles and punctuation dropped
        (["Tokyo", "Edo"], "It was called Edo."),
    ],
)
def test_fuzzy_match_either_direction(target, answer):
    assert check({"type": "fuzzy_match"}, target, answer)[0] is True


def test_fuzzy_match_failures_and_empty_answers():
    assert check({"type": "fuzzy_match"}, "Paris", "Lyon") == (
        False,
        "no fuzzy match with 'Paris'",
        None,
    )
    # an answer of only an article normalises to nothing: it matches nothing
    assert check({"type": "fuzzy_match"}, "Paris", "The.")[0] is False


# -- shared rules ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["equals", "starts_with", "includes", "fuzzy_match", "numeric"])
def test_a_reference_check_on_a_case_without_target_is_an_error_before_running(kind):
    with pytest.raises(ValueError, match=rf"'checks\[0\]' \({kind}\) compares with the case's"):
        build_checks([{"type": kind}], case=Case("c", prompt="q"))


def test_checks_are_named_by_their_type_and_two_of_a_type_need_a_name():
    case = Case("c", prompt="q", target="Paris")
    checks = build_checks(
        [{"type": "equals"}, {"type": "contains", "text": "Paris"}, {"type": "fuzzy_match"}],
        case=case,
    )
    assert [c.name for c in checks] == ["equals", "contains", "fuzzy_match"]
    twice = [{"type": "contains", "text": "a"}, {"type": "contains", "text": "b"}]
    with pytest.raises(ValueError, match=r"got 'contains' again \(first at checks\[0\]\); give"):
        build_checks(twice)
    named = build_checks([twice[0], {**twice[1], "name": "contains b"}])
    assert [c.name for c in named] == ["contains", "contains b"]
