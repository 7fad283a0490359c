"""The one writer of imported runs: an Inspect log and a promptfoo results file become run
directories of the same shape, each sample derived as the runner derives its own."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import pytest

import evalnb
from evalnb.interop import import_inspect_log, import_promptfoo_results
from evalnb.interop._runs import status_of

DATA = Path(__file__).parents[1] / "data" / "peers"
LOGS = [
    (import_inspect_log, DATA / "inspect_logs" / "security_guide.json", "inspect"),
    (import_inspect_log, DATA / "inspect_logs" / "popularity_scored.eval", "inspect"),
    (import_promptfoo_results, DATA / "promptfoo_results" / "v3-repeat-output.json", "promptfoo"),
    (import_promptfoo_results, DATA / "promptfoo_results" / "simple-test-output.json", "promptfoo"),
]


@pytest.mark.parametrize(("importer", "source", "tool"), LOGS, ids=lambda x: getattr(x, "name", ""))
def test_an_imported_run_has_the_same_shape_whichever_tool_wrote_it(
    importer, source: Path, tool: str, tmp_path: Path
) -> None:
    result = importer(source, tmp_path / "run")
    assert result.written == [tmp_path / "run"]
    run = evalnb.load(tmp_path / "run")
    manifest = run.manifest
    assert manifest["source"] == manifest["order"]["scheme"] == tool
    provenance = manifest["provenance"]
    assert list(provenance)[:2] == ["file", "sha256"] and provenance["file"] == str(source)
    assert provenance["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    record = json.loads((tmp_path / "run" / "imported.json").read_text())
    assert record["counts"] == result.counts and record["source"] == str(source)
    # Every file of the run, the import record too, is written privately.
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "run").rglob("*")}
    assert modes["imported.json"] == 0o600
    assert {m for name, m in modes.items() if "." in name} == {0o600}
    samples = run.samples.sort_values("order")
    assert samples["order"].tolist() == list(range(len(samples)))
    assert manifest["repeats"] == samples["repeat"].max() + 1
    planned = {tuple(p) for p in manifest["order"]["planned"]}
    assert planned == set(
        zip(samples["case_id"], samples["variant"], samples["repeat"], strict=True)
    )
    for sample in samples.itertuples():
        assert sample.fingerprint == hashlib.sha256(sample.prompt.encode()).hexdigest()[:12]
        if isinstance(sample.answer, str) and sample.answer:
            assert sample.canonical == " ".join(sample.answer.split()).casefold()


@pytest.mark.parametrize(
    ("failed", "answer", "status"),
    [
        (True, "an answer", "error"),
        (False, None, "empty"),
        (False, " \n", "empty"),
        (False, "an answer", "completed"),
    ],
)
def test_status_of_a_record(failed: bool, answer: str | None, status: str) -> None:
    assert status_of(failed, answer) == status
