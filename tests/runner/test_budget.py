"""Budgets: --max-cost and --max-tokens stop a stand-in run cleanly; --resume finishes it
with every key once; the costs shown match a hand computation from the stored tokens."""

from __future__ import annotations

import json

import pytest

import evalnb
from evalnb import store
from evalnb.cli import main
from evalnb.runner._budget import Budget

SHOP = evalnb.cases.suites.path("shop.jsonl")
CASES, VARIANTS, REPEATS = 4, 2, 5
PRICES = {"shop-v1": (0.15, 0.60), "shop-v2": (2.5, 10.0)}
PRICES_TOML = """
[models."shop-v1"]
input = 0.15
output = 0.60

[models."shop-v2"]
input = 2.5
output = 10
"""
CONCURRENCY = 2


def _variants():
    return [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]


def _by_hand(samples):
    """Dollars of each stored sample, from its own token counts and the table above."""
    return [
        (r.prompt_tokens * PRICES[r.model][0] + r.completion_tokens * PRICES[r.model][1]) / 1e6
        for r in samples.itertuples()
    ]


def _samples(out):
    return store.read_table(out, "samples").to_pandas()


def test_max_tokens_stops_the_run_and_a_resume_finishes_it_with_every_key_once(standin, tmp_path):
    out = tmp_path / "run"
    target = evalnb.OpenAIChat(standin.base_url, "shop-v1")
    options = {
        "variants": _variants(),
        "repeats": REPEATS,
        "out": out,
        "concurrency": CONCURRENCY,
        "progress": False,
    }
    limit = 400
    first = evalnb.run(SHOP, target, max_tokens=limit, **options)
    manifest = store.read_manifest(out)
    stored = _samples(out)
    tokens = stored["prompt_tokens"] + stored["completion_tokens"]
    assert first.status == manifest["status"] == "interrupted"
    assert manifest["stopped"]["reason"] == "max_tokens"
    assert manifest["stopped"]["limit"] == limit
    assert manifest["stopped"]["spent"] >= limit
    assert manifest["stopped"]["tokens"] == tokens.sum()  # in-flight samples included
    assert manifest["budget"]["max_tokens"] == limit
    assert 0 < len(stored) < CASES * VARIANTS * REPEATS
    # No sample started once the limit was reached: only those in flight then finished.
    assert tokens.sum() - tokens.nlargest(CONCURRENCY).sum() < limit
    assert "stopped: max_tokens reached" in first.summary()

    # The same limit again: the run has spent it already, nothing new starts.
    again = evalnb.run(SHOP, target, max_tokens=limit, resume=True, **options)
    assert again.status == "interrupted" and len(_samples(out)) == len(stored)

    done = evalnb.run(SHOP, target, max_tokens=10**9, resume=True, **options)
    samples = _samples(out)
    manifest = store.read_manifest(out)
    assert done.status == manifest["status"] == "complete"
    assert "stopped" not in manifest
    assert manifest["resumes"][0]["after_stop"]["reason"] == "max_tokens"
    keys = samples[["case_id", "variant", "repeat"]]
    assert len(samples) == CASES * VARIANTS * REPEATS
    assert not keys.duplicated().any()
    assert set(map(tuple, keys.to_numpy())) == {
        (case, variant, repeat)
        for case in {c.id for c in evalnb.load_cases(SHOP)}
        for variant in ("v1", "v2")
        for repeat in range(REPEATS)
    }


def test_max_cost_from_the_command_line_then_resume_and_costs_by_hand(standin, tmp_path, capsys):
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES_TOML)
    out = tmp_path / "run"
    argv = [
        "run",
        str(SHOP),
        "--base-url",
        standin.base_url,
        "--model",
        "shop-v1",
        "--variant",
        "v1",
        "--variant",
        "v2:model=shop-v2",
        "--repeats",
        str(REPEATS),
        "--concurrency",
        str(CONCURRENCY),
        "--out",
        str(out),
        "--prices",
        str(prices),
        "--no-progress",
    ]
    limit = 0.002
    assert main([*argv, "--max-cost", str(limit)]) == 0
    captured = capsys.readouterr()
    manifest = store.read_manifest(out)
    stored = _samples(out)
    dollars = _by_hand(stored)
    assert manifest["status"] == "interrupted"
    assert manifest["stopped"]["reason"] == "max_cost"
    assert manifest["stopped"]["limit"] == limit
    assert limit <= manifest["stopped"]["spent"] <= sum(dollars)
    assert manifest["stopped"]["cost"] == pytest.approx(sum(dollars), rel=1e-12)
    assert sum(dollars) - sum(sorted(dollars)[-CONCURRENCY:]) < limit
    assert len(stored) < CASES * VARIANTS * REPEATS
    assert "max_cost reached" in captured.out
    assert "--resume" in captured.err and "--max-cost" in captured.err

    assert main([*argv, "--resume", "--max-cost", "100"]) == 0
    summary = capsys.readouterr().out
    samples = _samples(out)
    assert store.read_manifest(out)["status"] == "complete"
    assert len(samples) == CASES * VARIANTS * REPEATS
    assert not samples.duplicated(["case_id", "variant", "repeat"]).any()

    # The summary's costs, per variant and for the run, from the stored token counts.
    samples["dollars"] = _by_hand(samples)
    per_variant = samples.groupby("variant")["dollars"].sum()
    lines = {
        line.split()[0]: line.split()[-1] for line in summary.splitlines() if " cost $" in line
    }
    for variant in ("v1", "v2"):
        assert float(lines[variant].lstrip("$")) == pytest.approx(per_variant[variant], rel=1e-5)
    assert float(lines["run"].lstrip("$")) == pytest.approx(per_variant.sum(), rel=1e-5)
    # evalnb.costs agrees with the hand computation too.
    table = evalnb.costs(evalnb.load(out), prices=prices).set_index("variant")
    for variant in ("v1", "v2"):
        assert table.loc[variant, "cost"] == pytest.approx(per_variant[variant], rel=1e-12)

    # ...and so does the Cost section of `evalnb report --prices`.
    assert main(["report", str(out), "--prices", str(prices)]) == 0
    report = capsys.readouterr().out
    section = report[report.index("\nCost\n") :].splitlines()
    header = section[3].split()
    assert header[:2] == ["variant", "samples"] and header[-2:] == ["cost", "$"]
    rows = {line.split()[0]: float(line.split()[-1]) for line in section[4:7]}
    # Six decimals shown: half a unit of the last, plus the float error of a sum that ends in
    # exactly 5 there (0.0036225 is shown as 0.003622).
    shown = 5e-7 + 1e-12
    assert rows["v1"] == pytest.approx(per_variant["v1"], abs=shown)
    assert rows["v2"] == pytest.approx(per_variant["v2"], abs=shown)
    assert rows["all"] == pytest.approx(per_variant.sum(), abs=shown)


def test_a_completed_sample_that_cannot_be_priced_stops_a_cost_budget(standin, tmp_path):
    out = tmp_path / "run"
    target = evalnb.OpenAIChat(standin.base_url, "shop-v1")
    result = evalnb.run(
        SHOP,
        target,
        repeats=3,
        out=out,
        concurrency=1,
        progress=False,
        max_cost=1.0,
        prices={"some-other-model": (1.0, 1.0)},
    )
    manifest = store.read_manifest(out)
    assert result.status == "interrupted"
    assert manifest["stopped"]["reason"] == "unmeasured"
    assert "'shop-v1' is not in the price table" in manifest["stopped"]["detail"]
    assert len(_samples(out)) == 1
    assert "1 unpriced samples" in result.summary()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_cost": 1.0}, "'max_cost' needs 'prices'"),
        ({"max_cost": -1, "prices": PRICES}, "'max_cost' must be a number of dollars > 0"),
        ({"max_tokens": 0}, "'max_tokens' must be a whole number >= 1"),
        ({"max_tokens": 2.5}, "'max_tokens' must be a whole number >= 1"),
        ({"prices": {"m": (1,)}}, "'prices['m']' must be (input, output)"),
    ],
)
def test_bad_budgets_are_refused_before_anything_runs(kwargs, message):
    with pytest.raises(ValueError) as info:
        Budget(**kwargs)
    assert message in str(info.value)


def test_the_command_line_refuses_max_cost_without_prices(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", str(SHOP), "--standin", "--out", str(out), "--max-cost", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == (
        "evalnb run: error: --max-cost needs --prices FILE (the price table, TOML)"
    )
    assert not out.exists()


def test_a_run_without_a_budget_records_none(standin, tmp_path):
    out = tmp_path / "run"
    evalnb.run(SHOP, evalnb.OpenAIChat(standin.base_url, "shop-v1"), out=out, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "budget" not in manifest and "stopped" not in manifest
