"""The report tells the pairwise preferences of a run, in the words of evalnb.preferences,
among its first verdicts; a run without preferences has no such section."""

from __future__ import annotations

import evalnb
from evalnb.analysis._preference import preference_story
from evalnb.report import Report
from evalnb.store import PreferenceStore
from tests.builders import write_run


def test_the_report_tells_the_preferences(tmp_path):
    rows = [
        {"case_id": f"c{c}", "variant": v, "repeat": 0, "checks": {"ok": v == "v2"}}
        for c in range(12)
        for v in ("v1", "v2")
    ]
    run_dir = write_run(tmp_path / "run", rows)
    assert "Preferences" not in Report.of(evalnb.load(run_dir)).text()
    store = PreferenceStore(run_dir)
    for c in range(12):
        choice = "both_bad" if c == 11 else ("a_better" if c == 10 else "b_better")
        store.save(f"c{c}", 0, a="v1", b="v2", left="v2", annotator="ana", preference=choice)
    run = evalnb.load(run_dir)
    report = Report.of(run)
    text = report.text()
    expected = preference_story(evalnb.preferences(run, a="v1", b="v2").iloc[0])
    line = expected.line("v1", "v2", "preference")
    assert line.startswith("v2 better · v2 vs v1 on preference: v2 wins 90.9%")
    # among the verdicts at the top, and its own section with the table
    verdicts = report.sections[0]
    assert verdicts.title == "Verdicts" and line in verdicts.lines
    assert "Preferences (pairwise review)" in text and "both bad" in text
    assert "'both bad' is no preference and is left out" in report.markdown()
