"""The stand-in's quiz model over real HTTP: reference, multiple-choice and template cases
with known true error rates, read by evalnb's own checks; and the judge's grades."""

import dataclasses

import httpx
import pytest

from evalnb import Case, Variant
from evalnb.checks import build_check, run_checks
from evalnb.checks._judge import judge_messages
from tests.builders import sample

HTTP = httpx.Client(timeout=30)


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    HTTP.close()


def draws(server, messages, n=2000, model="quiz"):
    body = {"model": model, "messages": list(messages), "n": n}
    response = HTTP.post(f"{server.base_url}/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return [c["message"]["content"] for c in response.json()["choices"]]


def pass_rate(texts, case, spec, order=None):
    check = build_check(spec, case=case)
    passed = [
        run_checks([check], dataclasses.replace(sample(t), choice_order=order))[0].outcome
        for t in texts
    ]
    return sum(passed) / len(passed), set(passed)


CASES = {
    "arithmetic": (
        Case("times", vars={"question": "What is 17 times 25?"}, target=425),
        {"type": "numeric"},
    ),
    "shopping": (
        Case("mugs", vars={"question": "A mug costs $12.50. What do 4 mugs cost?"}, target=50),
        {"type": "numeric"},
    ),
    "fact": (
        Case("capital", vars={"question": "What is the capital of France?"}, target="Paris"),
        {"type": "fuzzy_match"},
    ),
    "choice": (
        Case(
            "planet",
            vars={"question": "Which planet is the largest?"},
            choices=["Mars", "Jupiter", "Venus", "Mercury"],
            target="Jupiter",
        ),
        {"type": "choice"},
    ),
}
PLAIN = Variant("plain", template="{{ question }}{% if choices %}\n\n{{ choices_text }}{% endif %}")
CAREFUL = Variant(
    "careful",
    template="Check your work before you answer.\n\n{{ question }}"
    "{% if choices %}\n\n{{ choices_text }}{% endif %}",
)


@pytest.mark.parametrize(("variant", "rate"), [(PLAIN, 0.70), (CAREFUL, 0.90)])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_quiz_pass_rates_match_the_true_rates(standin, variant, rate, kind):
    case, spec = CASES[kind]
    texts = draws(standin, variant.messages_for(case))
    observed, outcomes = pass_rate(texts, case, spec)
    # Binomial standard error at n=2000 is at most 0.011; 0.04 is about 4 of them.
    assert abs(observed - rate) < 0.04, (kind, observed)
    assert outcomes == {True, False}  # every wording is read; slips fail, answers pass


def test_the_quiz_finds_the_right_letter_wherever_the_choices_were_shuffled(standin):
    case, spec = CASES["choice"]
    shuffled = dataclasses.replace(CAREFUL, shuffle_choices=True)
    for repeat in range(4):
        order = shuffled.choice_order(case, repeat)
        texts = draws(standin, shuffled.messages_for(case, repeat), n=500)
        observed, _ = pass_rate(texts, case, spec, order=order)
        assert abs(observed - 0.90) < 0.06, (order, observed)
        # read without its order, the same answers mostly name another planet
        if order != (0, 1, 2, 3) and order[1] != 1:
            assert pass_rate(texts, case, spec)[0] < 0.5


def test_a_question_the_quiz_does_not_know_is_answered_the_same_every_time(standin):
    assert set(draws(standin, [{"role": "user", "content": "Why is the sky blue?"}], n=50)) == {
        "I don't know."
    }


def test_the_judge_grades_on_a_scale_when_asked(standin):
    good = judge_messages('Mentions "Paris".', "Capital of France?", "It is Paris.", scale=5)
    bad = judge_messages('Mentions "Paris".', "Capital of France?", "It is Lyon.", scale=5)
    for messages, true_grade, off in ((good, 5, 4), (bad, 1, 2)):
        replies = draws(standin, messages, n=2000, model="judge")
        last = [r.splitlines()[-1] for r in replies]
        share = {g: last.count(f"GRADE: {g}") / len(last) for g in (true_grade, off)}
        unclear = 1 - sum(share.values())
        # unclear 5%; of the rest, one grade off 5%: 0.9025 true, 0.0475 off
        assert abs(share[true_grade] - 0.9025) < 0.03, share
        assert abs(share[off] - 0.0475) < 0.02, share
        assert abs(unclear - 0.05) < 0.02
