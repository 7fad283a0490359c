"""The one ledger every importer keeps: what came in, how, and what was refused."""

from __future__ import annotations

from pathlib import Path

from evalnb.interop import ImportNotes


def test_the_ledger_keeps_each_kind_in_order_and_makes_the_result() -> None:
    notes = ImportNotes()
    notes.map("contains", "config.yaml:3", "contains (case-sensitive)")
    notes.approximate("weight", "config.yaml:4", "every check weighs the same")
    notes.refuse("python", "config.yaml:5", "code is not run on import")
    notes.refuse("webhook", "config.yaml:6", "no counterpart")
    files = [{"path": "config.yaml", "bytes": 10, "sha256": "0" * 64}]
    result = notes.result("promptfoo", Path("config.yaml"), files)
    assert [n.name for n in result.mapped] == ["contains"]
    assert [n.how for n in result.approximated] == ["every check weighs the same"]
    assert [u.name for u in result.unsupported] == ["python", "webhook"]
    assert result.files == files and result.source_sha256 == "0" * 64
    assert result.refusals(limit=1) == "refused: python (code is not run on import); and 1 more"


def test_undo_forgets_repeated_refusals_but_keeps_every_mapping() -> None:
    notes = ImportNotes()
    notes.refuse("python", "test 1", "code is not run on import")
    mark = notes.mark()
    # the second case a list-valued var makes repeats the first one's assertions
    notes.map("contains", "test 1", "contains")
    notes.refuse("python", "test 1", "code is not run on import")
    notes.approximate("weight", "test 1", "equal weights")
    notes.undo(mark)
    assert [u.where for u in notes.unsupported] == ["test 1"]
    assert notes.approximated == [] and [n.name for n in notes.mapped] == ["contains"]
