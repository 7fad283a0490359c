"""run(..., repeats=UntilSettled(...)): each case's repeats stop once its outcomes settle
it (stable after enough agreeing draws, flaky at the first disagreement), the manifest
records the rule and a design reads it back, flakiness() gives a stable case the rule's
anytime-valid interval, and a resumed run draws no repeat a settled case does not need."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

import evalnb
from evalnb import ArgumentError, RunDesign, UntilSettled, store


def _answer(request):
    # c0-c5 always right, c6-c7 always wrong, c8-c9 right on even repeats only
    i = int(request.case.id[1:])
    if i < 6 or (i >= 8 and request.repeat % 2 == 0):
        return f"about {request.case.id}"
    return "no idea"


CASES = [
    evalnb.Case(f"c{i}", prompt=f"c{i}?", checks=[{"type": "contains", "text": f"c{i}"}])
    for i in range(10)
]


def test_each_case_draws_until_its_verdict_is_settled(tmp_path):
    rule = UntilSettled(max=10, alpha=0.05)
    out = tmp_path / "r"
    evalnb.run(
        CASES, evalnb.Function(_answer), repeats=rule, out=out, progress=False, concurrency=1
    )
    samples = store.read_table(out, "samples", ["case_id"]).to_pandas()
    drawn = samples.case_id.value_counts().to_dict()
    assert rule.needed == 6
    assert {c: drawn[c] for c in ("c0", "c5", "c6", "c7")} == dict.fromkeys(
        ("c0", "c5", "c6", "c7"), 6
    )
    assert drawn["c8"] == 2 and drawn["c9"] == 2  # flaky at the first disagreement
    assert len(samples) == 8 * 6 + 2 * 2  # of the 100 that 10 fixed repeats draw
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["repeats"] == 10 and manifest["repeats_rule"]["rule"] == "settled"
    assert RunDesign.from_manifest(manifest).repeats == rule

    run = evalnb.load(out)
    flaky = evalnb.flakiness(run).set_index("case_id")
    assert flaky.loc["c8", "verdict"] == "flaky" and flaky.loc["c0", "verdict"] == "stable-pass"
    # 6 passes: at least 0.025 ** (1/6) = 54% by the anytime-valid sequence
    assert flaky.loc["c0", "low"] == pytest.approx(0.025 ** (1 / 6))
    assert "until settled" in flaky.loc["c0", "detail"] and "anytime" in flaky.loc["c0", "method"]
    assert flaky.loc["c8", "detail"].startswith("passed 1 of 2 repeats")
    # every case weighs the same in the suite rate, however many repeats it drew
    suite = evalnb.suite_rate(run).iloc[0]
    assert suite["estimate"] == pytest.approx((6 + 0.5 + 0.5) / 10)


def test_a_resumed_run_draws_only_what_unsettled_cases_need(tmp_path):
    out = tmp_path / "r"
    rule = UntilSettled(max=10, alpha=0.05)
    calls = []

    async def answer(request):
        calls.append(request.case.id)
        await asyncio.sleep(0.002)
        return _answer(request)

    async def interrupted():
        task = asyncio.create_task(
            evalnb.arun(
                CASES,
                evalnb.Function(answer),
                repeats=rule,
                out=out,
                progress=False,
                concurrency=1,
                flush_every=1,
            )
        )
        while len(calls) < 25:
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(BaseException):
            await task

    asyncio.run(interrupted())
    kept = len(store.sample_keys(out))
    assert 20 <= kept < 52
    calls.clear()
    evalnb.run(
        CASES,
        evalnb.Function(answer),
        repeats=rule,
        out=out,
        resume=True,
        progress=False,
        concurrency=1,
    )
    samples = store.read_table(out, "samples", ["case_id"]).to_pandas()
    assert samples.case_id.value_counts().to_dict() == {
        **{f"c{i}": 6 for i in range(8)},
        "c8": 2,
        "c9": 2,
    }
    assert len(calls) == 52 - kept  # the resume drew only what the unsettled cases lacked
    with pytest.raises(evalnb.StoreError, match="repeats"):
        evalnb.run(CASES, evalnb.Function(_answer), repeats=10, out=out, resume=True)


def test_a_repeat_rule_is_refused_beside_until_and_checks_its_arguments():
    with pytest.raises(ArgumentError, match="'repeats' as a rule and 'until'"):
        RunDesign.build(CASES, repeats=UntilSettled(), until=evalnb.Best(["a", "b"]))
    for bad in ({"max": 1}, {"alpha": 0.7}, {"tol": 0.8}):
        with pytest.raises(ArgumentError, match=next(iter(bad))):
            UntilSettled(**bad)
