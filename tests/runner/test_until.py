"""run(..., until=Decided(...)) against the real stand-in: the shop's v1 (slips 30%) and
v2 (slips 10%) on many cases stop early with a verdict, compare names the sequence, and a
run killed mid-way continues the same sequence when resumed."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import evalnb
from evalnb import ArgumentError, Decided, Variant, store
from evalnb.cases import load_cases
from evalnb.cases.suites import path as suite_path

COPIES = 40  # 4 shop cases x 40 = 160 cases


def shop_cases(copies: int = COPIES) -> list[evalnb.Case]:
    base = load_cases(suite_path("shop.jsonl"))
    return [
        dataclasses.replace(c, id=f"{c.id}-{i:03d}", group=f"{c.id}-{i:03d}")
        for i in range(copies)
        for c in base
    ]


VARIANTS = [Variant("v1"), Variant("v2", params={"model": "shop-v2"})]


def test_a_shop_run_stops_early_with_a_verdict_and_compare_names_the_sequence(
    fresh_standin, tmp_path
):
    out = tmp_path / "r"
    cases = shop_cases()
    evalnb.run(
        cases,
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=3,
        out=out,
        progress=False,
        concurrency=1,
        seed=5,
        until=Decided(a="v1", b="v2"),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    until = manifest["until"]
    looks = until["looks"]
    assert manifest["status"] == "complete" and until["stopped"] == "decided"
    assert until["rule"]["a"] == "v1" and until["rule"]["b"] == ["v2"]
    assert sorted(until["order"]) == sorted(c.id for c in cases)
    assert until["order"] != [c.id for c in cases]  # a seeded random order
    assert [look["cases"] for look in looks] == list(range(1, len(looks) + 1))
    assert 5 < len(looks) < len(cases)
    assert [look["samples"] for look in looks] == [6 * k for k in range(1, len(looks) + 1)]
    last = looks[-1]["comparisons"][0]
    assert last["verdict"] == "B better" and last["low"] > 0
    assert all(look["comparisons"][0]["verdict"] == "can't tell yet" for look in looks[:-1])
    # the samples written are those of the cases looked at: one at a time, nothing more
    assert len(store.sample_keys(out)) == 6 * len(looks)

    result = evalnb.compare(evalnb.load(out))
    row = result.iloc[0]
    assert "betting confidence sequence" in row["method"]
    assert row["verdict"] == "B better" and row["cases"] == len(looks)
    assert row["note"].startswith(f"stopped early after {len(looks)} of {len(cases)} cases")
    assert (row["low"], row["high"]) == pytest.approx((last["low"], last["high"]))
    assert "B better" in evalnb.compare(evalnb.load(out))._repr_html_()


def test_samples_in_flight_finish_and_are_kept(fresh_standin, tmp_path):
    out = tmp_path / "r"
    evalnb.run(
        shop_cases(),
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=3,
        out=out,
        progress=False,
        concurrency=8,
        seed=5,
        until=Decided(a="v1", b="v2"),
    )
    until = json.loads((out / "manifest.json").read_text())["until"]
    looked = len(until["looks"])
    samples = store.read_table(out, "samples", ["case_id"]).to_pandas()
    assert until["stopped"] == "decided"
    # every case looked at is complete; the few begun when the rule fired are kept
    assert set(until["order"][:looked]) <= set(samples.case_id)
    assert 6 * looked <= len(samples) < 6 * looked + 8
    row = evalnb.compare(evalnb.load(out)).iloc[0]
    assert row["verdict"] == "B better" and row["cases"] >= looked


_KILLED = """
import dataclasses, sys
import evalnb
from evalnb import Decided, Variant
from evalnb.cases import load_cases
from evalnb.cases.suites import path
base = load_cases(path("shop.jsonl"))
cases = [dataclasses.replace(c, id=f"{c.id}-{i:03d}", group=f"{c.id}-{i:03d}")
         for i in range(COPIES) for c in base]
evalnb.run(cases, evalnb.OpenAIChat(sys.argv[1], "shop-v1"),
           variants=[Variant("v1"), Variant("v2", params={"model": "shop-v2"})],
           repeats=3, out=sys.argv[2], progress=False, concurrency=1, seed=11,
           flush_every=6, until=Decided(a="v1", b="v2", alpha=0.01))
"""


def test_a_killed_run_resumes_the_same_sequence(fresh_standin, tmp_path):
    out = tmp_path / "r"
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(_KILLED.replace("COPIES", str(COPIES))))
    child = subprocess.Popen([sys.executable, str(script), fresh_standin.base_url, str(out)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "samples").is_dir() and len(store.sample_keys(out)) >= 40:
            break
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    before = json.loads((out / "manifest.json").read_text())
    kept = len(store.sample_keys(out))
    assert before["status"] == "running" and before["until"]["looks"] == []
    assert kept >= 40

    evalnb.run(
        shop_cases(),
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=3,
        out=out,
        resume=True,
        progress=False,
        concurrency=1,
        seed=11,
        until=Decided(a="v1", b="v2", alpha=0.01),
    )
    after = json.loads((out / "manifest.json").read_text())
    until = after["until"]
    assert until["order"] == before["until"]["order"] and len(after["resumes"]) == 1
    looks = until["looks"]
    # one sequence from the first case: the looks the killed session made, then more
    assert [look["cases"] for look in looks] == list(range(1, len(looks) + 1))
    assert 6 * len(looks) > kept and until["stopped"] == "decided"
    # the same sequence, recomputed from the stored samples in the drawn order
    per_case = evalnb.compare_cases(evalnb.load(out), a="v1", b="v2")
    diff = per_case.set_index("case_id")["diff"].reindex(until["order"][: len(looks)])
    seq = evalnb.confidence_sequence(diff.to_numpy(), alpha=0.01)
    last = looks[-1]["comparisons"][0]
    assert (seq["low"].iloc[-1], seq["high"].iloc[-1]) == pytest.approx(
        (last["low"], last["high"]), abs=1e-6
    )
    assert np.isfinite(seq["low"]).all()


def test_rules_the_run_cannot_follow_are_refused(fresh_standin, tmp_path):
    target = evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1")
    with pytest.raises(ArgumentError, match=r"'until' compares variants \['v1', 'v3'\]"):
        evalnb.run(
            shop_cases(1),
            target,
            variants=VARIANTS,
            out=tmp_path / "a",
            until=Decided(a="v1", b="v3"),
            progress=False,
        )
    with pytest.raises(ArgumentError, match="'order' must be 'alternate'; got 'shuffle'"):
        evalnb.run(
            shop_cases(1),
            target,
            variants=VARIANTS,
            out=tmp_path / "b",
            order="shuffle",
            until=Decided(a="v1", b="v2"),
            progress=False,
        )
    with pytest.raises(TypeError, match="'until' must be a stopping rule"):
        evalnb.run(
            shop_cases(1),
            target,
            variants=VARIANTS,
            out=tmp_path / "c",
            until="v2",
            progress=False,
        )
    assert not any(tmp_path.iterdir())


def test_cases_running_out_end_undecided_with_the_sequence_as_it_stands(fresh_standin, tmp_path):
    out = tmp_path / "r"
    evalnb.run(
        shop_cases(2),
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=2,
        out=out,
        progress=False,
        until=Decided(a="v1", b="v2"),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["until"]["stopped"] == "cases"
    assert len(manifest["until"]["looks"]) == 8
    assert manifest["until"]["verdicts"][0]["verdict"] == "can't tell yet"
    row = evalnb.compare(evalnb.load(out)).iloc[0]
    assert row["verdict"] == "can't tell yet"
    assert row["note"].startswith("every one of the 8 cases ran")
    # the sequence belongs to its rule: a resume under another one is refused
    with pytest.raises(evalnb.StoreError, match="the run's stopping rule was"):
        evalnb.run(
            shop_cases(2),
            evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
            variants=VARIANTS,
            repeats=2,
            out=out,
            resume=True,
            progress=False,
            until=Decided(a="v1", b="v2", alpha=0.1),
        )


def test_a_budget_ends_the_run_undecided(fresh_standin, tmp_path):
    out = tmp_path / "r"
    evalnb.run(
        shop_cases(),
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=VARIANTS,
        repeats=2,
        out=out,
        progress=False,
        concurrency=1,
        max_tokens=600,
        until=Decided(a="v1", b="v2"),
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["until"]["stopped"] == "budget"
    assert manifest["until"]["verdicts"][0]["verdict"] == "can't tell yet"


def test_several_variants_split_alpha_and_stop_only_when_all_are_decided(tmp_path):
    def answer(request):
        # v2 always names the case; v1 and v3 on even repeats only (no difference)
        if request.variant.name == "v2" or request.repeat % 2 == 0:
            return f"about {request.case.id}"
        return "no idea"

    cases = [
        evalnb.Case(
            f"c{i:02d}", prompt=f"c{i:02d}?", checks=[{"type": "contains", "text": f"c{i:02d}"}]
        )
        for i in range(60)
    ]
    out = tmp_path / "r"
    evalnb.run(
        cases,
        evalnb.Function(answer),
        variants=["v1", "v2", "v3"],
        repeats=2,
        out=out,
        progress=False,
        until=Decided(a="v1", b=["v2", "v3"]),
    )
    until = json.loads((out / "manifest.json").read_text())["until"]
    assert until["rule"]["alpha_each"] == 0.025 and until["stopped"] == "cases"
    assert len(until["looks"]) == 60
    verdicts = {v["b"]: v["verdict"] for v in until["verdicts"]}
    assert verdicts == {"v2": "B better", "v3": "can't tell yet"}
    result = evalnb.compare(evalnb.load(out)).set_index("b")
    assert result.loc["v2", "verdict"] == "B better" and result.loc["v3", "low"] < 0
    assert (result["level"] == 0.975).all() and (result["comparisons"] == 2).all()
