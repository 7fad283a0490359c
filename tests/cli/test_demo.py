"""``evalnb demo``: the product's first minute decides, and says what its numbers are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import evalnb
from evalnb.analysis._story import story
from evalnb.cli import main


def test_the_demo_decides_on_forty_cases_with_one_p_and_a_named_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--repeats", "3", "--no-progress", "--out", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    run = evalnb.load(tmp_path / "d")
    assert len(run.cases) == 40
    row = evalnb.compare(run, a="v1", b="v2").iloc[0]
    # The printed line is compare's own story of the run just made, word for word.
    assert f"Paired comparison, 3 repeats a case: {story(row).line('v1', 'v2', 'all')}" in out
    assert row["verdict"] == "B better" and row["bounded"]
    assert row["interval_method"] == "paired t across cases" and row["low"] > 0
    said = re.search(r" and p (=|<) (0\.\d{3}) \(paired t across cases\); ", out)
    assert said is not None
    if said[1] == "=":
        assert round(row["p_value"], 3) == float(said[2])
    else:
        assert row["p_value"] < float(said[2])
    assert f"95% CI +{row['low'] * 100:.1f} to +{row['high'] * 100:.1f} pp and p " in out
    assert out.count("paired t across cases") == 1  # the test named once
    # No "All checks passed" heading rates of 64-100%: the header says what a pass is.
    assert "All checks passed" not in out
    assert "a sample passes when every check of its case passes" in out
    rates = re.findall(r"^  (v1|v2)\s+(\d+\.\d)%", out, flags=re.M)
    suite = evalnb.suite_rate(run)
    assert [(v, float(r)) for v, r in rates] == [
        (v, round(e * 100, 1)) for v, e in zip(suite["variant"], suite["estimate"], strict=True)
    ]
