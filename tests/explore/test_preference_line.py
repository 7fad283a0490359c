"""The explorer shows the run's pairwise preferences in one sentence per compared pair."""

from __future__ import annotations

import evalnb
from evalnb.store import PreferenceStore
from tests.builders import write_run


def test_the_explorer_tells_the_preferences(tmp_path):
    rows = [
        {"case_id": f"c{c}", "variant": v, "repeat": 0, "checks": {"ok": True}}
        for c in range(4)
        for v in ("v1", "v2")
    ]
    run = write_run(tmp_path / "run", rows)
    assert evalnb.explore(run).preferences.value == ""
    store = PreferenceStore(run)
    for c in range(4):
        store.save(f"c{c}", 0, a="v1", b="v2", left="v1", annotator="ana", preference="a_better")
    store.save("c0", 0, a="v1", b="v2", left="v1", annotator="ben", preference="both_bad")
    line = evalnb.explore(run).preferences.value
    assert "<b>v1 better</b>" not in line  # 4 cases cannot reach p < 0.05: no verdict
    assert "<b>can&#x27;t tell yet</b> · v2 vs v1 on preference: v2 wins 0.0%" in line
    assert "both bad 1 (20.0% of choices, left out)" in line and "4 cases, 4 choices" in line
