"""A run sharded over a real Dask LocalCluster (two worker processes on 127.0.0.1): the same
samples as without a cluster, every key once whatever dies, no secret in what is sent."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

distributed = pytest.importorskip("distributed")

import evalnb  # noqa: E402
from evalnb import Case, EvalnbError, Function, OpenAIChat, Variant  # noqa: E402
from evalnb.runner._distributed import Sharded, split  # noqa: E402
from evalnb.store import read_table  # noqa: E402
from evalnb.store._doctor import diagnose  # noqa: E402

# Workers unpickle this module's target functions by value: they need not import tests/.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROOT = Path(__file__).resolve().parents[2]
CHECKS = [{"type": "contains", "text": "ok"}]


def seeded(request: Any) -> str:
    """An answer drawn from the sample's key alone: the same wherever and whenever it runs."""
    rng = random.Random(f"{request.case.id}/{request.variant.name}/{request.repeat}")
    return rng.choice(["ok", "ok fine", "no", "nope ok", "wrong"])


def slow(request: Any) -> str:
    time.sleep(0.02)
    return seeded(request)


def cases(n: int) -> list[Case]:
    return [Case(f"c{i:02d}", prompt=f"say {i}", checks=CHECKS) for i in range(n)]


def rows(run_dir: Path, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    data = read_table(run_dir, table, columns)
    return sorted(zip(*(data.column(c).to_pylist() for c in columns), strict=True))


@pytest.fixture
def cluster() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def test_workers_import_this_checkout(cluster: Any) -> None:
    where = cluster.run(lambda: __import__("evalnb").__file__)
    assert len(where) == 2
    assert all(Path(path).is_relative_to(ROOT) for path in where.values())


def test_2000_samples_on_the_cluster_equal_the_run_without_one(
    cluster: Any, tmp_path: Path
) -> None:
    suite, variants = cases(20), [Variant("a"), Variant("b", system="be brief")]
    settings: dict[str, Any] = {"variants": variants, "repeats": 50, "progress": False}
    here = evalnb.run(suite, Function(seeded), out=tmp_path / "here", **settings)
    there = evalnb.run(
        suite,
        Function(seeded),
        out=tmp_path / "there",
        cluster=cluster,
        shard_size=150,
        **settings,
    )
    samples = ["case_id", "variant", "repeat", "order", "status", "answer", "canonical"]
    got = rows(there.path, "samples", samples)
    assert len(got) == len({r[:3] for r in got}) == 20 * 2 * 50
    assert got == rows(here.path, "samples", samples)
    outcomes = ["case_id", "variant", "repeat", "check", "outcome"]
    assert rows(there.path, "checks", outcomes) == rows(here.path, "checks", outcomes)
    tallies = [(r["variant"], r["completed"], r["total"], r["checks"]) for r in there.rows()]
    assert tallies == [(r["variant"], r["completed"], r["total"], r["checks"]) for r in here.rows()]
    manifest = json.loads((there.path / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    record = manifest["clusters"][0]
    assert record["workers"] == 2 and record["threads"] == 4 and record["shard_size"] == 150
    assert record["scheduler"].startswith("tcp://127.0.0.1:")
    assert set(record["versions"]) == {"dask", "distributed", "python"}
    assert len(list((there.path / "shards").glob("*-*.json"))) == 14  # ceil(2000 / 150)


def test_a_worker_killed_mid_run_still_stores_every_key_once(cluster: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    pids = cluster.run(os.getpid)
    victim = sorted(pids.values())[0]
    killed = threading.Event()

    def kill_once_shards_commit() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(list((out / "shards").glob("*-*.json"))) >= 2:
                os.kill(victim, signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_once_shards_commit)
    killer.start()
    # Small flushes: the killed worker's attempts leave parts behind, which must not count.
    result = evalnb.run(
        cases(10),
        Function(slow),
        variants=["a", "b"],
        repeats=20,
        out=out,
        cluster=cluster,
        shard_size=10,
        concurrency=2,
        flush_every=3,
        progress=False,
    )
    killer.join()
    assert killed.is_set()
    keys = rows(result.path, "samples", ["case_id", "variant", "repeat"])
    assert len(keys) == len(set(keys)) == 10 * 2 * 20
    checks = rows(result.path, "checks", ["case_id", "variant", "repeat", "check"])
    assert len(checks) == len(set(checks)) == 10 * 2 * 20
    assert victim not in cluster.run(os.getpid).values()
    # What the dead worker wrote is at most uncommitted parts, which doctor finds.
    assert {p.kind for p in diagnose(result.path)} <= {"orphan"}


DRIVER = """
import random, sys, time
import distributed
import evalnb
from evalnb import Case, Function

def slow(request):
    time.sleep(0.05)
    rng = random.Random(f"{request.case.id}/{request.variant.name}/{request.repeat}")
    return rng.choice(["ok", "ok fine", "no", "nope ok", "wrong"])

if __name__ == "__main__":
    cases = [Case(f"c{i:02d}", prompt=f"say {i}", checks=[{"type": "contains", "text": "ok"}])
             for i in range(10)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as local:
        with distributed.Client(local) as client:
            evalnb.run(cases, Function(slow), variants=["a", "b"], repeats=10,
                       out=sys.argv[1], cluster=client, shard_size=10, concurrency=2,
                       progress=False)
"""


def test_a_driver_killed_mid_run_is_resumed_without_a_cluster(tmp_path: Path) -> None:
    out = tmp_path / "run"
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [sys.executable, str(script), str(out)], env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while len(list((out / "shards").glob("*-*.json"))) < 3:
            assert driver.poll() is None, "the driver ended before it was killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver, its scheduler and its workers
        driver.wait()
    before = rows(out, "samples", ["case_id", "variant", "repeat"])
    assert 30 <= len(before) < 200
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"

    suite = [Case(f"c{i:02d}", prompt=f"say {i}", checks=CHECKS) for i in range(10)]
    result = evalnb.run(
        suite,
        Function(seeded),
        variants=["a", "b"],
        repeats=10,
        out=out,
        resume=True,
        progress=False,
    )
    keys = rows(result.path, "samples", ["case_id", "variant", "repeat"])
    assert len(keys) == len(set(keys)) == 10 * 2 * 10
    assert set(before) <= set(keys)
    answers = rows(result.path, "samples", ["case_id", "variant", "repeat", "answer"])
    assert all(answer == seeded_answer(key) for *key, answer in answers)
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def seeded_answer(key: list[Any]) -> str:
    case_id, variant, repeat = key
    return random.Random(f"{case_id}/{variant}/{repeat}").choice(
        ["ok", "ok fine", "no", "nope ok", "wrong"]
    )


SECRET = "sk-evalnb-test-0123456789abcdef"


def test_an_api_key_reaches_workers_through_their_environment_only(
    standin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALNB_DASK_TEST_KEY", SECRET)
    with (  # started after the key is set: worker processes inherit the environment
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        target = OpenAIChat(standin.base_url, "shop-v1", api_key_env="EVALNB_DASK_TEST_KEY")
        suite = cases(3)
        result = evalnb.run(
            suite, target, repeats=4, out=tmp_path / "run", cluster=client, progress=False
        )
        assert rows(result.path, "samples", ["status"]) == [("completed",)] * 12

        # What the driver sends: the shared job and every shard, serialised as Dask does.
        from evalnb.runner._session import _default_canonical, _Execution, plan

        execution = _Execution(
            target,
            None,
            "run",
            {},
            timeout=None,
            flush_every=5000,
            flush_seconds=5.0,
            canonical=_default_canonical,  # type: ignore[arg-type]
        )
        sharded = Sharded(client, 2, "s")
        job = sharded.job(execution, 8, str(tmp_path / "run"), None)
        pending = list(enumerate(plan(suite, [Variant("baseline")], 4)))
        payloads = [distributed.protocol.pickle.dumps(job)] + [
            distributed.protocol.pickle.dumps(shard) for shard in split(pending, "s", 2)
        ]
        assert all(SECRET.encode() not in payload for payload in payloads)
        assert b"EVALNB_DASK_TEST_KEY" in payloads[0]
        for path in result.path.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path

        # A worker without the variable says so (by name), instead of sending no key.
        client.run(lambda: os.environ.pop("EVALNB_DASK_TEST_KEY"))
        with pytest.raises(EvalnbError, match="'EVALNB_DASK_TEST_KEY' \\(the API key\\) is not"):
            evalnb.run(suite, target, out=tmp_path / "nokey", cluster=client, progress=False)


def test_evalnb_run_dask_writes_the_run_and_records_the_cluster(
    cluster: Any, tmp_path: Path
) -> None:
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(
        "".join(json.dumps({"id": f"c{i}", "prompt": f"say {i}"}) + "\n" for i in range(5))
    )
    address = cluster.scheduler.address
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    evalnb_cli = [sys.executable, "-m", "evalnb.cli"]
    out = tmp_path / "run"
    done = subprocess.run(
        [
            *evalnb_cli,
            "run",
            str(cases_file),
            "--standin",
            "--model",
            "shop-v1",
            "--repeats",
            "4",
            "--out",
            str(out),
            "--dask",
            address,
            "--shard-size",
            "6",
            "--no-progress",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "completed 20/20" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["clusters"][0]["scheduler"] == address
    assert manifest["clusters"][0]["shard_size"] == 6
    assert len(list((out / "shards").glob("*-*.json"))) == 4

    misuse = subprocess.run(
        [*evalnb_cli, "run", str(cases_file), "--standin", "--shard-size", "6"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert misuse.returncode == 2
    assert misuse.stderr.strip().splitlines() == [
        "evalnb run: error: --shard-size needs --dask ADDRESS (shards run on a cluster)"
    ]
