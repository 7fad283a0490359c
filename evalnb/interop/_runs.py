"""The one writer of imported runs: an Inspect log or a promptfoo results file becomes a run
directory written through evalnb's store, as the runner writes its own.

An importer fills an :class:`ImportedRun` with the log's cases and variants and, record by
record in file order, one sample and its check results; :meth:`ImportedRun.write` then
writes the manifest (``source`` and the file's provenance), the cases, the samples and
checks, and ``imported.json`` (what came in, what did not).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._evidence import normalise_answer, parse_trace
from evalnb._types import Case, CheckResult, Sample, Variant
from evalnb.interop._suite import ImportResult, Note, undone_on_error

__all__ = ["ImportedRun", "status_of"]

#: The token counts of a sample: prompt, completion, total.
Usage = tuple[int | None, int | None, int | None]


def status_of(failed: bool, answer: str | None) -> str:
    """``error`` for a record the log marks failed, ``empty`` for one without an answer
    (or only white space), else ``completed``."""
    if failed:
        return "error"
    return "empty" if not answer or not answer.strip() else "completed"


@dataclass
class ImportedRun:
    """What an importer read, in the shape of a run: ``source`` names the tool (the
    manifest's ``source`` and ``order.scheme``), ``run_id`` the run directory."""

    source: str
    run_id: str
    started: dt.datetime
    cases: dict[str, Case] = field(default_factory=dict)
    variants: dict[str, Variant] = field(default_factory=dict)
    rows: list[tuple[Sample, list[CheckResult]]] = field(default_factory=list)
    #: The ``(case_id, variant, repeat)`` of each sample added.
    keys: set[tuple[str, str, int]] = field(default_factory=set)

    @property
    def repeats(self) -> int:
        return max(sample.repeat for sample, _ in self.rows) + 1

    def add(
        self,
        key: tuple[str, str, int],
        checks: list[CheckResult],
        *,
        prompt: str,
        answer: str | None,
        status: str,
        error: str | None,
        latency_ms: float,
        response: str | None,
        model: str | None,
        usage: Usage,
        finish_reason: str | None = None,
        trace: str | None = None,
    ) -> None:
        """Add the next sample, ``key`` = ``(case_id, variant, repeat)``, and its checks;
        its order is its place in the log, its fingerprint and canonical answer are derived
        as the runner derives them. A ``trace`` (the transcript as JSONL request and
        response events, see :mod:`evalnb._evidence`) is stored with the tool actions it
        holds, requested and executed."""
        case_id, variant, repeat = key
        evidence = parse_trace(trace) if trace is not None else None
        sample = Sample(
            run_id=self.run_id,
            case_id=case_id,
            variant=variant,
            repeat=repeat,
            order=len(self.rows),
            started_at=self.started,
            latency_ms=latency_ms,
            status=status,
            error=error,
            answer=answer,
            prompt=prompt,
            request=None,
            response=response,
            fingerprint=hashlib.sha256(prompt.encode()).hexdigest()[:12],
            canonical=normalise_answer(answer) if answer else None,
            model=model,
            finish_reason=finish_reason,
            prompt_tokens=usage[0],
            completion_tokens=usage[1],
            total_tokens=usage[2],
            trace=trace,
            requested=evidence.requested if evidence else (),
            executed=evidence.executed if evidence else (),
            evidence_problem=evidence.problem if evidence else None,
        )
        self.rows.append((sample, checks))
        self.keys.add(key)

    def mapped(self, where: str) -> list[Note]:
        """What came in: each variant, and each check with how many results it holds."""
        notes = [Note(f"variant {name}", where, "a variant of the run") for name in self.variants]
        counts: Counter[tuple[str, str]] = Counter(
            (r.check, r.type) for _, checks in self.rows for r in checks
        )
        notes += [
            Note(f"check {name}", where, f"{n} results, type {kind}")
            for (name, kind), n in counts.items()
        ]
        return notes

    def write(
        self,
        dest: str | os.PathLike[str],
        result: ImportResult,
        *,
        status: str,
        ended_at: Any,
        target: dict[str, Any],
        provenance: dict[str, Any],
    ) -> ImportResult:
        """Write the run directory ``dest`` (a new path) and its ``imported.json``;
        ``provenance`` follows the source file's path and SHA-256 in the manifest. On an
        error nothing is left behind."""
        if not result.mapped:
            result.mapped = self.mapped(str(result.source))
        with undone_on_error(Path(dest), result.source):
            run_dir = store.create_run_dir(dest)
            cases = list(self.cases.values())
            planned = [[s.case_id, s.variant, s.repeat] for s, _ in self.rows]
            manifest = {
                **store.provenance(run_dir.name, self.started, None),
                "cases_file": None,
                "cases": [c.to_dict() for c in cases],
                "extra_checks": [],
                "variants": [v.to_dict() for v in self.variants.values()],
                "repeats": self.repeats,
                "concurrency": 1,
                "order": {"scheme": self.source, "seed": 0, "planned": planned},
            }
            manifest.update(
                status=status,
                ended_at=ended_at,
                target=target,
                source=self.source,
                provenance={
                    "file": str(result.source),
                    "sha256": result.source_sha256,
                    **provenance,
                },
            )
            store.write_json_atomic(store.manifest_path(run_dir), manifest)
            writer = store.RunWriter(run_dir)
            writer.write_cases(cases)
            writer.write(
                [s for s, _ in self.rows], [(s, r) for s, checks in self.rows for r in checks]
            )
            result.written.append(run_dir)
            store.write_import_record(run_dir, result.record())
        return result
