"""run(..., until=Best()) against the real stand-in: eight shop variants (shop-v2 slips 10%,
the others 30-60%) race to shop-v2, eliminated variants stop drawing samples, the manifest
records each elimination and its look, and a race killed mid-way resumes the same race."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import evalnb
from evalnb import ArgumentError, Best, Variant, store
from evalnb._stopping import CaseOutcomes
from evalnb.standin._shop import SLIP_RATES
from tests.runner.test_until import shop_cases

SHOP = [Variant(name.removeprefix("shop-"), params={"model": name}) for name in SLIP_RATES]


def _race(fresh_standin, out, **kwargs):
    evalnb.run(
        shop_cases(),
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=SHOP,
        repeats=2,
        out=out,
        progress=False,
        seed=kwargs.pop("seed", 3),
        until=kwargs.pop("until", Best()),
        **kwargs,
    )
    return json.loads((out / "manifest.json").read_text())


def test_an_eight_variant_shop_race_names_shop_v2_and_records_each_elimination(
    fresh_standin, tmp_path
):
    out = tmp_path / "r"
    manifest = _race(fresh_standin, out, concurrency=1)
    until = manifest["until"]
    looks = until["looks"]
    assert until["stopped"] == "decided" and until["rule"]["rule"] == "best"
    assert looks[-1]["alive"] == ["v2"] and 5 < len(looks) < len(until["order"])
    gone = until["eliminations"]
    assert sorted(e["variant"] for e in gone) == sorted(v.name for v in SHOP if v.name != "v2")
    assert [e["look"] for e in gone] == sorted(e["look"] for e in gone)
    # each elimination is in the look it happened at, and the variant ran no later case
    samples = store.read_table(out, "samples", ["case_id", "variant"]).to_pandas()
    at = {case: i + 1 for i, case in enumerate(until["order"])}
    for e in gone:
        assert e in looks[e["look"] - 1]["eliminated"]
        ran = samples[samples.variant == e["variant"]].case_id.map(at)
        assert ran.max() == e["look"] and (ran.value_counts() == 2).all()
    assert len(samples) < len(SHOP) * 2 * len(looks)  # fewer than every variant every case

    table = evalnb.race(evalnb.load(out))
    assert table["variant"].iloc[0] == "v2" and table["status"].iloc[0] == "best"
    assert (table["status"].iloc[1:] == "eliminated").all()
    assert table["samples"].sum() == len(samples)
    row = evalnb.compare(evalnb.load(out), b="v1").iloc[0]
    assert (row["a"], row["b"]) == ("v2", "v1")
    assert "successive elimination" in row["method"] and "eliminated after" in row["note"]
    assert row["verdict"] == "A better" and row["high"] < 0
    # the report tells the race through compare's note
    assert "v1 was eliminated after" in evalnb.report_text(evalnb.load(out))


def test_a_race_with_eps_stops_once_the_pairs_left_are_within_it(fresh_standin, tmp_path):
    out = tmp_path / "r"
    pick = [v for v in SHOP if v.name in ("v1", "v3")]
    evalnb.run(
        shop_cases(60),
        evalnb.OpenAIChat(fresh_standin.base_url, "shop-v1"),
        variants=pick,
        repeats=5,
        out=out,
        progress=False,
        seed=1,
        until=Best(eps=0.4),
    )
    until = json.loads((out / "manifest.json").read_text())["until"]
    assert until["stopped"] == "decided" and sorted(until["looks"][-1]["alive"]) == ["v1", "v3"]
    survivors = until["looks"][-1]["survivors"]
    assert all(s["low"] > -0.4 and s["high"] < 0.4 for s in survivors)


def test_best_checks_its_arguments_and_reads_its_record_back():
    rule = Best(["a", "b", "c"], eps=0.02, delta=0.1)
    assert Best.from_record(rule.describe()) == rule
    assert evalnb._stopping.rule_from_record(rule.describe()) == rule
    assert Best().variants == () and Best(["a", "b"]).variants == ("a", "b")
    for bad in ({"variants": "ab"}, {"variants": ["a"]}, {"eps": -0.1}, {"delta": 0.7}):
        with pytest.raises(ArgumentError, match=next(iter(bad))):
            Best(**bad)


_KILLED = """
import sys
import evalnb
from evalnb import Best
from tests.runner.test_race import SHOP
from tests.runner.test_until import shop_cases
evalnb.run(shop_cases(), evalnb.OpenAIChat(sys.argv[1], "shop-v1"), variants=SHOP,
           repeats=2, out=sys.argv[2], progress=False, concurrency=1, seed=7,
           flush_every=4, until=Best())
"""


def _replayed(out, order, looks):
    """The looks a fresh Best() makes over the stored samples, in the drawn order."""
    checks = store.read_table(
        out, "checks", ["case_id", "variant", "repeat", "check", "outcome"]
    ).to_pylist()
    per: dict = {}
    for row in checks:
        sample = per.setdefault(row["case_id"], {}).setdefault(row["variant"], {})
        sample.setdefault(row["repeat"], {})[row["check"]] = row["outcome"]
    rule, made = Best(), []
    cases = [
        CaseOutcomes(c, {v: tuple(s[r] for r in sorted(s)) for v, s in per[c].items()})
        for c in order[:looks]
    ]
    for k in range(1, looks + 1):
        made.append(rule.look(cases[:k]).look)
    return made


def test_a_killed_race_resumes_and_ends_the_same(fresh_standin, tmp_path):
    out = tmp_path / "r"
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(_KILLED))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, str(script), fresh_standin.base_url, str(out)], env=env
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "samples").is_dir() and len(store.sample_keys(out)) >= 120:
            break
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    kept = len(store.sample_keys(out))
    before = json.loads((out / "manifest.json").read_text())
    assert before["status"] == "running" and kept >= 120
    after = _race(fresh_standin, out, concurrency=1, seed=7, resume=True)
    until = after["until"]
    assert len(after["resumes"]) == 1 and until["stopped"] == "decided"
    assert until["order"] == before["until"]["order"]
    looks = until["looks"]
    assert [look["cases"] for look in looks] == list(range(1, len(looks) + 1))
    assert len(looks) > kept // 16 and looks[-1]["alive"] == ["v2"]
    # one race from the first case: the stored samples, raced afresh, give the same looks
    assert _replayed(out, until["order"], len(looks)) == looks
