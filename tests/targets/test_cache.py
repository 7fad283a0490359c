"""The development cache: a second run is served every sample from it, repeats stay
separate draws, the samples table and the manifest say so, and no API key is stored."""

from __future__ import annotations

import secrets
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evalnb
from evalnb import store
from evalnb.cli import main
from evalnb.standin import StandIn
from evalnb.store._doctor import diagnose

SHOP = evalnb.cases.suites.path("shop.jsonl")
DATA = Path(__file__).resolve().parents[2] / "data"
REPEATS = 6
KEY_ENV = "EVALNB_TEST_CACHE_KEY"


def _variants():
    return [evalnb.Variant("v1"), evalnb.Variant("v2", params={"model": "shop-v2"})]


def _samples(out):
    frame = store.read_table(out, "samples").to_pandas()
    return frame.set_index(["case_id", "variant", "repeat"]).sort_index()


@pytest.fixture
def api_key(monkeypatch):
    key = f"sk-test-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, key)
    return key


def test_a_second_run_is_served_from_the_cache_with_repeats_still_separate_draws(tmp_path, api_key):
    cache = tmp_path / "cache"
    options = {"variants": _variants(), "repeats": REPEATS, "progress": False, "cache": cache}
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1", api_key_env=KEY_ENV)
        evalnb.run(SHOP, target, out=tmp_path / "first", **options)
        asked = server.requests()
        assert len(asked) == 4 * 2 * REPEATS and all(r["authorized"] for r in asked)
        evalnb.run(SHOP, target, out=tmp_path / "second", **options)
        # The second run sent no chat request at all.
        assert len(server.requests()) == len(asked)

    first, second = _samples(tmp_path / "first"), _samples(tmp_path / "second")
    assert len(second) == 4 * 2 * REPEATS
    assert first["cached"].eq(False).all()
    assert second["cached"].eq(True).all()
    assert second["retries"].eq(0).all()
    for column in ("answer", "status", "prompt_tokens", "completion_tokens", "model"):
        assert second[column].equals(first[column]), column
    # Each repeat got its own draw: where the model's draws differ, the cached repeats
    # differ the same way (not one answer for every repeat).
    distinct = second.groupby(["case_id", "variant"])["answer"].nunique()
    assert distinct.max() > 1
    assert distinct.equals(first.groupby(["case_id", "variant"])["answer"].nunique())

    m1 = store.read_manifest(tmp_path / "first")
    m2 = store.read_manifest(tmp_path / "second")
    assert m1["cache"] == {"path": str(cache), "hits": 0, "misses": 4 * 2 * REPEATS}
    assert m2["cache"] == {"path": str(cache), "hits": 4 * 2 * REPEATS, "misses": 0}

    # The key reached the server (above) but is nowhere in the cache.
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert len(files) == 4 * 2 * REPEATS
    for path in files:
        data = path.read_bytes()
        assert api_key.encode() not in data, path
        assert b"Bearer" not in data and b"Authorization" not in data, path
        assert path.stat().st_mode & 0o777 == 0o600


def test_the_cache_from_the_command_line_survives_a_new_standin_port(tmp_path, capsys):
    cache = tmp_path / "cache"
    argv = ["run", str(SHOP), "--standin", "--model", "shop-v1", "--repeats", "3"]
    argv += ["--cache", str(cache), "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    a, b = _samples(tmp_path / "a"), _samples(tmp_path / "b")
    assert a["cached"].eq(False).all() and b["cached"].eq(True).all()
    assert b["answer"].equals(a["answer"])
    assert store.read_manifest(tmp_path / "b")["cache"]["hits"] == 4 * 3


def test_a_failure_is_not_cached_and_is_asked_again(tmp_path):
    cache = tmp_path / "cache"
    variant = evalnb.Variant("v1", params={"standin_fault": {"kind": "status_500"}})
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1", max_retries=0)
        evalnb.run(
            SHOP, target, variants=[variant], out=tmp_path / "a", cache=cache, progress=False
        )
        samples = _samples(tmp_path / "a")
        assert set(samples["status"]) == {"error"}
        assert samples["cached"].eq(False).all()
        assert not any(p.is_file() for p in cache.rglob("*"))
        evalnb.run(
            SHOP, target, variants=[variant], out=tmp_path / "b", cache=cache, progress=False
        )
        assert len(server.requests()) == 2 * 4


def test_without_a_cache_the_column_is_null(standin, tmp_path):
    out = tmp_path / "run"
    evalnb.run(SHOP, evalnb.OpenAIChat(standin.base_url, "shop-v1"), out=out, progress=False)
    assert _samples(out)["cached"].isna().all()
    assert "cache" not in store.read_manifest(out)


def test_runs_written_before_the_column_still_load_resume_and_pass_the_doctor(standin, tmp_path):
    old = DATA / "runs" / "shop-review"
    part = next((old / "samples").glob("part-*.parquet"))
    assert "cached" not in pq.read_schema(part).names
    assert evalnb.load(old).samples["cached"].isna().all()

    # A run whose parts were written before the column (stopped by a budget after its
    # first sample), resumed with a cache: old and new parts read as one table.
    out = tmp_path / "run"
    target = evalnb.OpenAIChat(standin.base_url, "shop-v1")
    options = {"repeats": 2, "out": out, "progress": False, "concurrency": 1}
    assert evalnb.run(SHOP, target, max_tokens=1, **options).status == "interrupted"
    for part in (out / "samples").glob("part-*.parquet"):
        pq.write_table(pq.read_table(part).drop_columns(["cached"]), part)
    assert diagnose(out) == []
    evalnb.run(SHOP, target, resume=True, cache=tmp_path / "cache", **options)
    samples = _samples(out)
    assert len(samples) == 4 * 2 and not samples.index.duplicated().any()
    assert samples["cached"].isna().sum() == 1 and samples["cached"].eq(False).sum() == 7
    assert diagnose(out) == []


def test_the_cache_needs_an_http_target(tmp_path):
    with pytest.raises(TypeError, match=r"needs an HTTP target \(OpenAIChat, .*got Function"):
        evalnb.run(SHOP, evalnb.Function(lambda r: "x"), out=tmp_path / "r", cache=tmp_path / "c")
    assert not (tmp_path / "r").exists()
