"""Rules over a real Dask LocalCluster (two worker processes on 127.0.0.1): a race's rule
looks between shard commits and the shards it makes skip eliminated variants, ending as the
same race on one machine; a driver killed mid-race is resumed to the same end; repeats until
settled skip the repeats of settled cases as shards are made."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

distributed = pytest.importorskip("distributed")

import evalnb  # noqa: E402
from evalnb import Best, Case, Function, Variant, store  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROOT = Path(__file__).resolve().parents[2]

#: Each variant's true pass rate: v0 is the best by 25 points.
RATES = {"v0": 0.9, "v1": 0.65, "v2": 0.6, "v3": 0.5}
VARIANTS = [Variant(name) for name in RATES]
CASES = [
    Case(f"c{i:03d}", prompt=f"say {i}", checks=[{"type": "contains", "text": "ok"}])
    for i in range(120)
]


def seeded(request: Any) -> str:
    """A pass drawn from the sample's key alone, at its variant's rate."""
    rng = random.Random(f"{request.case.id}/{request.variant.name}/{request.repeat}")
    return "ok" if rng.random() < RATES[request.variant.name] else "no"


@pytest.fixture
def cluster() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def _race(out: Path, **kwargs: Any) -> dict[str, Any]:
    evalnb.run(
        CASES,
        Function(seeded),
        variants=VARIANTS,
        repeats=2,
        out=out,
        progress=False,
        seed=4,
        until=Best(),
        **kwargs,
    )
    return json.loads((out / "manifest.json").read_text())


def _decisions(looks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The looks without their sample counts, which include samples of eliminated variants
    that happened to be in flight (they differ with timing; what the rule saw does not)."""
    return [{k: v for k, v in look.items() if k != "samples"} for look in looks]


def test_a_race_on_the_cluster_looks_between_commits_and_ends_as_on_one_machine(
    cluster: Any, tmp_path: Path
) -> None:
    here = _race(tmp_path / "here", concurrency=1)["until"]
    manifest = _race(tmp_path / "there", cluster=cluster, shard_size=8)
    there = manifest["until"]
    assert manifest["clusters"][0]["workers"] == 2
    assert here["stopped"] == there["stopped"] == "decided"
    assert there["looks"][-1]["alive"] == ["v0"]
    # the stand-in draws by key, so each look sees the same outcomes: the same race
    assert there["eliminations"] == here["eliminations"]
    assert _decisions(there["looks"]) == _decisions(here["looks"])
    samples = store.read_table(tmp_path / "there", "samples", ["case_id", "variant"]).to_pandas()
    assert len(samples) < len(CASES) * len(VARIANTS) * 2 // 2
    at = {case: i + 1 for i, case in enumerate(there["order"])}
    for gone in there["eliminations"]:
        ran = samples[samples.variant == gone["variant"]].case_id.map(at)
        # shards in flight when it went finish and are kept: a few cases, never many
        assert ran.max() <= gone["look"] + 2 * 8
    assert len(store.sample_keys(tmp_path / "there")) == len(samples)  # every key once


DRIVER = """
import sys, time
import distributed
import evalnb
from tests.runner import test_race_cluster as t

def slow(request):
    time.sleep(0.03)
    return t.seeded(request)

if __name__ == "__main__":
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as local:
        with distributed.Client(local) as client:
            evalnb.run(t.CASES, evalnb.Function(slow), variants=t.VARIANTS, repeats=2,
                       out=sys.argv[1], progress=False, seed=4, until=evalnb.Best(),
                       cluster=client, shard_size=8)
"""


def test_a_killed_race_driver_resumes_to_the_same_end(cluster: Any, tmp_path: Path) -> None:
    whole = _race(tmp_path / "whole", concurrency=1)["until"]
    out = tmp_path / "r"
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [sys.executable, str(script), str(out)], env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while len(list((out / "shards").glob("*-*.json"))) < 4:
            assert driver.poll() is None, "the driver ended before it was killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver, its scheduler and its workers
        driver.wait()
    before = json.loads((out / "manifest.json").read_text())
    kept = store.sample_keys(out)
    assert before["status"] == "running" and len(kept) >= 16

    after = _race(out, cluster=cluster, shard_size=8, resume=True)
    until = after["until"]
    assert len(after["resumes"]) == 1 and until["stopped"] == "decided"
    # the race the killed driver began, resumed: the same looks and eliminations as the
    # race run whole on one machine (each sample is drawn from its key)
    assert until["eliminations"] == whole["eliminations"]
    assert _decisions(until["looks"]) == _decisions(whole["looks"])
    keys = store.read_table(out, "samples", ["case_id", "variant", "repeat"]).to_pylist()
    assert len(keys) == len({tuple(k.values()) for k in keys})  # every key once
    assert kept <= {tuple(k.values()) for k in keys}


def flaky_or_not(request: Any) -> str:
    """c000-c059 always pass, c060-c099 always fail, the rest pass on even repeats only."""
    i = int(request.case.id[1:])
    return "ok" if i < 60 or (i >= 100 and request.repeat % 2 == 0) else "no"


def test_repeats_until_settled_on_the_cluster_draw_what_they_draw_on_one_machine(
    cluster: Any, tmp_path: Path
) -> None:
    rule = evalnb.UntilSettled(max=10)
    settings: dict[str, Any] = {"variants": VARIANTS[:2], "repeats": rule, "progress": False}
    evalnb.run(CASES, Function(flaky_or_not), out=tmp_path / "here", concurrency=1, **settings)
    evalnb.run(
        CASES,
        Function(flaky_or_not),
        out=tmp_path / "there",
        cluster=cluster,
        shard_size=20,
        **settings,
    )
    counts = {}
    for name in ("here", "there"):
        samples = store.read_table(tmp_path / name, "samples", ["case_id", "variant"])
        counts[name] = samples.to_pandas().value_counts().to_dict()
    # the plan draws every case's repeat r before any case's r + 1 (240 keys a repeat), and
    # the driver makes a shard once the shards before it have committed, but for the one
    # still in flight beside it (2 worker threads): its cases may draw a repeat more (two,
    # were it slower than the next repeat's whole layer of shards)
    assert set(counts["here"].values()) == {6, 2} and sum(counts["here"].values()) == 2 * (
        100 * 6 + 20 * 2
    )
    assert all(0 <= counts["there"][k] - n <= 2 for k, n in counts["here"].items())
    assert sum(counts["there"].values()) - sum(counts["here"].values()) <= 2 * 20
    verdicts = evalnb.flakiness(evalnb.load(tmp_path / "there"))["verdict"].value_counts()
    assert verdicts.to_dict() == {"stable-pass": 120, "stable-fail": 80, "flaky": 40}
