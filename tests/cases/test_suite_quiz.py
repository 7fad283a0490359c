"""The packaged quiz suite end to end on the stand-in: reference answers (target), multiple
choice shuffled per sample, vars and two prompt templates, a graded judge and defaults."""

import re
import subprocess
import sys

import pytest

import evalnb
from evalnb import OpenAIChat, store
from evalnb.analysis._scores import scores
from evalnb.cases import JudgeSpec, suites
from evalnb.cases._experiment import load_experiment


@pytest.fixture(scope="module")
def quiz(tmp_path_factory):
    out = tmp_path_factory.mktemp("quiz") / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalnb.cli",
            "run",
            "--experiment",
            "builtin:quiz",
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_the_packaged_quiz_suite_uses_every_new_piece():
    experiment = load_experiment(suites.path("quiz.toml"))
    assert [v.name for v in experiment.variants] == ["plain", "careful"]
    assert all(v.template and v.shuffle_choices for v in experiment.variants)
    assert experiment.judge == JudgeSpec(model="judge")
    assert [c["name"] for c in experiment.defaults["checks"]] == ["answered"]
    cases = evalnb.load_cases(experiment.cases, defaults=experiment.defaults)
    assert all(c.vars and c.target is not None and c.tags == ("quiz",) for c in cases)
    assert sum(c.choices is not None for c in cases) == 3
    judged = [c for c in cases if any(k.type == "judge" for k in c.checks)]
    assert [c.id for c in judged] == ["capital-france", "hamlet"]
    assert all(k.scale == 5 for c in judged for k in c.checks if k.type == "judge")


def test_the_quiz_suite_runs_end_to_end_and_prints_its_summary(quiz):
    out, stdout = quiz
    print(stdout)  # the summary, as `evalnb run --experiment builtin:quiz` shows it
    for variant in ("plain", "careful"):
        assert re.search(rf"{variant} +completed 160/160 ", stdout)
    # one row per check type across cases (no per-case names), the judge with its mean score
    for name, n in (("numeric", 60), ("choice", 60), ("fuzzy_match", 40), ("answered", 160)):
        assert len(re.findall(rf"\b{name} \d+/{n}\b", stdout)) == 2, name
    assert len(re.findall(r"judge \d+/40 \(mean score \d\.\d\d\)", stdout)) == 2

    run = evalnb.load(out)
    manifest = run.manifest
    assert manifest["cases_file"]["defaults"]["tags"] == ["quiz"]
    assert manifest["judge"]["calls"] == 2 * 2 * 20
    assert [v.get("template") is not None for v in manifest["variants"]] == [True, True]
    samples = run.samples
    choice_cases = {"largest-planet", "gold", "capital-australia"}
    shuffled = samples[samples.case_id.isin(choice_cases)]
    assert shuffled.choice_order.notna().all()
    assert samples[~samples.case_id.isin(choice_cases)].choice_order.isna().all()
    # the same (case, repeat) shows the same order to both variants: the pairs stay paired
    orders = {
        (row.case_id, row.repeat, row.variant): tuple(row.choice_order)
        for row in shuffled.itertuples()
    }
    plain = {(c, r): o for (c, r, v), o in orders.items() if v == "plain"}
    careful = {(c, r): o for (c, r, v), o in orders.items() if v == "careful"}
    assert len(plain) == 60 and plain == careful
    assert len(set(plain.values())) > 3

    rates = evalnb.rates(run, by="variant", check=["numeric", "choice", "fuzzy_match"])
    pooled = rates.groupby("variant", observed=True)[["k", "n"]].sum()
    # the quiz's true error rates are 0.30 (plain) and 0.10 (careful): 140 answers each
    assert pooled.loc["plain", "n"] == pooled.loc["careful", "n"] == 160
    assert 0.55 < pooled.loc["plain", "k"] / 160 < 0.85
    assert 0.80 < pooled.loc["careful", "k"] / 160 <= 1.0

    graded = scores(run, check="judge").set_index("variant")
    assert list(graded["cases"]) == [2, 2] and list(graded["samples"]) == [40, 40]
    assert graded.loc["careful", "estimate"] > graded.loc["plain", "estimate"]
    checks = run.checks
    judge = checks[checks.check == "judge"]
    assert judge.score.between(0, 1).all() and judge.score.notna().all()
    assert graded.loc["plain", "estimate"] == pytest.approx(
        judge[judge.variant == "plain"].groupby("case_id", observed=True).score.mean().mean()
    )
    assert checks[checks.check != "judge"].score.isna().all()


def test_the_quiz_run_can_be_rescored_from_its_manifest(quiz, standin):
    out, _ = quiz
    with pytest.raises(ValueError, match="pass judge=<target>"):
        evalnb.score(out)
    label = evalnb.score(out, label="again", judge=OpenAIChat(standin.base_url, "judge"))
    again = store.read_table(out, "checks", scoring=label).to_pandas()
    first = store.read_table(out, "checks", scoring="run").to_pandas()
    assert len(again) == len(first)
    # every check is rebuilt from the manifest (templates rendered again, the stored choice
    # order read again): the deterministic ones give the same outcomes
    key = ["case_id", "variant", "repeat", "check"]
    fixed = first[first.check != "judge"]
    same = fixed.merge(again, on=key, suffixes=("", "_again"))
    assert len(same) == len(fixed)
    assert (same.outcome == same.outcome_again).all()
    assert again[again.check == "judge"].score.notna().all()
