"""The development cache keeps draws apart: each (case, variant, repeat) has its own entry,
so an A/A comparison served from the cache is still two independent sets of draws, two
cases with one prompt get their own draws, and a damaged or wrongly typed entry is asked
again and overwritten instead of reaching the samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalnb
from evalnb import store
from evalnb.standin import StandIn

SHOP = evalnb.cases.suites.path("shop.jsonl")
REPEATS = 5


def _samples(out: Path):
    frame = store.read_table(out, "samples").to_pandas()
    return frame.set_index(["case_id", "variant", "repeat"]).sort_index()


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*.json") if p.is_file())


def test_an_aa_run_from_the_cache_keeps_independent_draws(tmp_path):
    cache = tmp_path / "cache"
    # Two variants that send the very same request: an A/A comparison.
    options = {
        "variants": [evalnb.Variant("a"), evalnb.Variant("b")],
        "repeats": REPEATS,
        "progress": False,
        "cache": cache,
    }
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1")
        evalnb.run(SHOP, target, out=tmp_path / "first", **options)
        asked = len(server.requests())
        evalnb.run(SHOP, target, out=tmp_path / "second", **options)
        assert len(server.requests()) == asked == 4 * 2 * REPEATS

    first, second = _samples(tmp_path / "first"), _samples(tmp_path / "second")
    assert second["cached"].eq(True).all()
    # Every key is served exactly what the first run drew for it (not another key's draw).
    assert second["answer"].equals(first["answer"])
    assert len(_entries(cache)) == 4 * 2 * REPEATS

    a = second.xs("a", level="variant")["answer"]
    b = second.xs("b", level="variant")["answer"]
    same = int((a == b).sum())
    # Not a = b on every pair: the two variants are separate draws, as without the cache.
    assert same < len(a) == 4 * REPEATS
    fresh_a = first.xs("a", level="variant")["answer"]
    fresh_b = first.xs("b", level="variant")["answer"]
    assert same == int((fresh_a == fresh_b).sum())


def test_two_cases_with_one_prompt_get_their_own_draws(tmp_path):
    cases = tmp_path / "cases.jsonl"
    prompt = "Where is my order A-1042?"
    cases.write_text(
        "\n".join(json.dumps({"id": name, "prompt": prompt}) for name in ("one", "two")) + "\n"
    )
    cache = tmp_path / "cache"
    repeats = 10
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1")
        evalnb.run(cases, target, repeats=repeats, out=tmp_path / "a", cache=cache, progress=False)
        evalnb.run(cases, target, repeats=repeats, out=tmp_path / "b", cache=cache, progress=False)
        # Both cases were asked every repeat: neither was served the other's entry.
        assert len(server.requests()) == 2 * repeats
    first, second = _samples(tmp_path / "a"), _samples(tmp_path / "b")
    assert first["cached"].eq(False).all() and second["cached"].eq(True).all()
    assert second["answer"].equals(first["answer"])
    one = second.xs("one", level="case_id")["answer"].to_numpy()
    two = second.xs("two", level="case_id")["answer"].to_numpy()
    assert (one != two).any()
    assert len(_entries(cache)) == 2 * repeats


POISONS = {
    "a token count that is text": {"prompt_tokens": "lots"},
    "an answer that is an object": {"text": {"content": "hi"}},
    "a negative token count": {"completion_tokens": -500, "total_tokens": -480},
    "a token count past int64": {"total_tokens": 2**64},
    "a float token count": {"prompt_tokens": 1.5},
    "a tool call of the wrong shape": {"tool_calls": [{"name": 3}]},
    "an unknown field": {"surprise": True},
}


@pytest.mark.parametrize("poison", POISONS, ids=list(POISONS))
def test_a_poisoned_entry_is_asked_again_overwritten_and_the_run_completes(tmp_path, poison):
    cache = tmp_path / "cache"
    options = {"repeats": 2, "progress": False, "cache": cache}
    with StandIn(seed=0) as server:
        target = evalnb.OpenAIChat(server.base_url, "shop-v1")
        evalnb.run(SHOP, target, out=tmp_path / "first", **options)
        entries = _entries(cache)
        assert len(entries) == 4 * 2
        victims = entries[:2]
        for path in victims:
            entry = json.loads(path.read_text())
            entry["completion"].update(POISONS[poison])
            path.write_text(json.dumps(entry))
        # A torn entry (not JSON at all) is a miss too.
        entries[2].write_text('{"version": 2, "key": ')

        evalnb.run(SHOP, target, out=tmp_path / "second", **options)
        assert len(server.requests()) == 4 * 2 + 3
        evalnb.run(SHOP, target, out=tmp_path / "third", **options)
        assert len(server.requests()) == 4 * 2 + 3  # overwritten: served from now on

    second = _samples(tmp_path / "second")
    assert store.read_manifest(tmp_path / "second")["status"] == "complete"
    assert len(second) == 4 * 2
    assert int(second["cached"].eq(False).sum()) == 3
    assert second["status"].eq("completed").all()
    assert second["answer"].map(type).eq(str).all()
    assert (second["prompt_tokens"] >= 0).all() and (second["completion_tokens"] >= 0).all()
    record = store.read_manifest(tmp_path / "second")["cache"]
    assert record["misses"] == 3 and record["rejected"] == 3 and record["hits"] == 4 * 2 - 3
    for path in victims:
        fields = json.loads(path.read_text())["completion"]
        assert isinstance(fields["text"], str) and isinstance(fields["prompt_tokens"], int)
    assert _samples(tmp_path / "third")["cached"].eq(True).all()
