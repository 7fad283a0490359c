"""Each endpoint gets only its own key: a judge at another URL never receives the target's."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from evalnb.cli import main
from evalnb.standin import StandIn

CASES = str(Path(__file__).resolve().parents[2] / "data" / "cases" / "shop_judged.jsonl")


def _authorized(server: StandIn) -> set[bool]:
    """Whether each chat request the server logged came with a key (the log holds no value)."""
    log = httpx.get(f"{server.url}/_standin/requests").json()
    return {entry["authorized"] for entry in log}


@pytest.mark.parametrize("judge_key", [None, "EVALNB_JUDGE_KEY"])
def test_a_judge_elsewhere_gets_only_its_own_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_key: str | None
) -> None:
    monkeypatch.setenv("EVALNB_TARGET_KEY", "sk-target-0123456789")
    monkeypatch.setenv("EVALNB_JUDGE_KEY", "sk-judge-9876543210")
    with StandIn() as target, StandIn() as judge:
        args = [
            *("run", CASES, "--base-url", target.base_url, "--model", "shop-v1"),
            *("--api-key-env", "EVALNB_TARGET_KEY", "--judge-base-url", judge.base_url),
            *("--judge-model", "judge", "--out", str(tmp_path / "r"), "--no-progress"),
        ]
        if judge_key:
            args += ["--judge-api-key-env", judge_key]
        assert main(args) == 0
        assert _authorized(target) == {True}
        assert _authorized(judge) == {judge_key is not None}
