"""Builders shared by the tests: small runs written as evalnb writes them, samples, and
the review panel's hostile strings."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from evalnb._types import Action, CheckResult, Sample
from evalnb.review import Annotator
from evalnb.store import (
    VERDICTS_SCHEMA,
    RunWriter,
    create_run_dir,
    write_json_atomic,
)

T0 = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)


def manifest(
    run_id: str,
    cases: Sequence[Mapping[str, Any]],
    variants: Sequence[str],
    repeats: int,
    status: str = "complete",
) -> dict[str, Any]:
    """A manifest with every key the store's contract names."""
    planned = [[c["id"], v, r] for r in range(repeats) for c in cases for v in variants]
    return {
        "schema_version": 1,
        "run_id": run_id,
        "status": status,
        "started_at": T0.isoformat(),
        "ended_at": (T0 + dt.timedelta(minutes=5)).isoformat(),
        "evalnb_version": "0.1.0",
        "python": "3.11",
        "platform": {"system": "Linux", "machine": "x86_64"},
        "command": ["evalnb", "run"],
        "cases_file": None,
        "cases": [
            {
                "prompt": f"question {c['id']}",
                "fixtures": {},
                "checks": [{"type": "contains", "text": "x"}],
                "review": None,
                "group": c["id"],
                "split": "dev",
                "tags": [],
                "metadata": {},
                **c,
            }
            for c in cases
        ],
        "variants": [{"name": v, "prefix": None, "system": None, "params": {}} for v in variants],
        "repeats": repeats,
        "order": {"scheme": "alternate", "seed": 0, "planned": planned},
        "target": {"kind": "function"},
        "git_revision": None,
    }


def write_run(
    path: Path,
    rows: Iterable[Mapping[str, Any]],
    *,
    cases: Sequence[Mapping[str, Any]] | None = None,
    run_id: str | None = None,
    status: str = "complete",
    batch: int = 1000,
) -> Path:
    """Write a run directory with evalnb's store.

    Each row is a sample: ``case_id``, ``variant``, ``repeat`` and optionally
    ``status`` ("completed"), ``latency_ms``, ``answer``, ``canonical``, and ``checks``
    (a mapping of check name to outcome True / False / None).
    """
    rows = list(rows)
    run_id = run_id or path.name
    case_ids = list(dict.fromkeys(r["case_id"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    repeats = max(r["repeat"] for r in rows) + 1 if rows else 0
    cases = cases if cases is not None else [{"id": c} for c in case_ids]
    create_run_dir(path)
    write_json_atomic(path / "manifest.json", manifest(run_id, cases, variants, repeats, status))
    writer = RunWriter(path)
    for start in range(0, len(rows), batch):
        samples, results = [], []
        for i, row in enumerate(rows[start : start + batch], start):
            sample_status = row.get("status", "completed")
            sample = Sample(
                run_id=run_id,
                case_id=row["case_id"],
                variant=row["variant"],
                repeat=row["repeat"],
                order=i,
                started_at=T0 + dt.timedelta(seconds=i),
                latency_ms=row.get("latency_ms", 100.0),
                status=sample_status,
                error=None if sample_status == "completed" else f"{sample_status} happened",
                answer=row.get("answer", "SECRET ANSWER" if sample_status == "completed" else None),
                prompt=f"question {row['case_id']}",
                request=None,
                response=None,
                canonical=row.get("canonical"),
            )
            samples.append(sample)
            for name, outcome in row.get("checks", {}).items():
                detail = "" if outcome else ("not applicable" if outcome is None else "failed")
                results.append((sample, CheckResult(name, "python", outcome, detail)))
        writer.write(samples, results)
    return path


def counts_rows(
    passes: Mapping[str, Sequence[int]], repeats: int, case_ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Sample rows where case i of variant v passes check ``ok`` in passes[v][i] repeats."""
    first = next(iter(passes.values()))
    case_ids = case_ids or [f"case-{i:02d}" for i in range(len(first))]
    return [
        {
            "case_id": case_id,
            "variant": variant,
            "repeat": r,
            "checks": {"ok": r < counts[i]},
        }
        for r in range(repeats)
        for variant, counts in passes.items()
        for i, case_id in enumerate(case_ids)
    ]


def counts_run(
    path: Path,
    passes: Mapping[str, Sequence[int]],
    repeats: int,
    *,
    groups: Sequence[str] | None = None,
) -> Path:
    """A run from per-case pass counts per variant (one check, ``ok``)."""
    rows = counts_rows(passes, repeats)
    case_ids = list(dict.fromkeys(r["case_id"] for r in rows))
    cases = [{"id": c, **({"group": groups[i]} if groups else {})} for i, c in enumerate(case_ids)]
    return write_run(path, rows, cases=cases)


def write_verdicts(path: Path, verdicts: Sequence[Mapping[str, Any]]) -> None:
    """One verdicts part; each verdict names case_id, variant, repeat, annotator, verdict."""
    run_id = json.loads((path / "manifest.json").read_text())["run_id"]
    table = pa.Table.from_pylist(
        [
            {
                "run_id": run_id,
                "reason": "",
                "created_at": T0 + dt.timedelta(minutes=v.get("minute", 0)),
                **{k: val for k, val in v.items() if k != "minute"},
            }
            for v in verdicts
        ],
        schema=VERDICTS_SCHEMA,
    )
    RunWriter(path).write_verdicts(table)


def sample(answer="", status="completed"):
    return Sample(
        run_id="r",
        case_id="c",
        variant="v",
        repeat=0,
        order=0,
        started_at=dt.datetime.now(dt.UTC),
        latency_ms=1.0,
        status=status,
        error=None if status == "completed" else "boom",
        answer=answer,
        prompt="p",
        request=None,
        response=None,
    )


ATTACK = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def tool_run(path: Path) -> Path:
    """Two cases x two variants x two repeats; tool actions, an attack, an incomplete one."""
    cases = [
        {"id": "read", "review": "Pass if notes.txt was read <and> the project named."},
        {"id": "<i>x</i>", "review": None},
    ]
    create_run_dir(path)
    write_json_atomic(path / "manifest.json", manifest(path.name, cases, ["v1", "v2"], 2))
    rows = []
    order = 0
    for case in ("read", "<i>x</i>"):
        for variant in ("v1", "v2"):
            for repeat in range(2):
                incomplete = (case, variant, repeat) == ("read", "v2", 1)
                sample = Sample(
                    run_id=path.name, case_id=case, variant=variant, repeat=repeat, order=order,
                    started_at=T0, latency_ms=5.0,
                    status="timeout" if incomplete else "completed",
                    error="<b>took</b> too long" if incomplete else None,
                    answer=None if incomplete else (ATTACK if repeat == 0 else "Paper Kite"),
                    prompt=f"prompt <u>{case}</u>", request=None, response=None,
                    requested=(Action("read_note", '{"path": "<notes>.txt"}', "<notes>.txt"),),
                    executed=(
                        Action("read_note", '{"path": "<notes>.txt"}', "<notes>.txt", False,
                               "<img src=y onerror=alert(1)>" + "z" * 1000),
                    ),
                )  # fmt: skip
                order += 1
                rows.append(
                    (sample, CheckResult("<b>terms</b>", "python", repeat == 0, "<i>why</i>"))
                )
                rows.append((sample, CheckResult("unscored", "python", None, "not applicable")))
    RunWriter(path).write([s for s, _ in rows[::2]], rows)
    return path


def shown(panel: Annotator) -> tuple[str, str, int]:
    key = panel.current
    assert key is not None
    return key["case_id"], key["variant"], key["repeat"]


GOOD = '{"vendor": "Acme Tools", "total_cents": 1950, "currency": "USD"}'
UNIT_BUG = '{"vendor": "Acme Tools", "total_cents": 19.50, "currency": "USD"}'


def invoice_rows(canonical: bool) -> list[dict]:
    answers = [GOOD, "  " + GOOD.replace(", ", ",\n  "), GOOD, UNIT_BUG, GOOD.upper()]
    rows = [
        {
            "case_id": "invoice_extract_v3",
            "variant": "v",
            "repeat": r,
            "answer": answer,
            "checks": {"schema": True, "values": answer != UNIT_BUG},
            **({"canonical": "bug" if answer == UNIT_BUG else "ok"} if canonical else {}),
        }
        for r, answer in enumerate(answers)
    ]
    rows += [
        {
            "case_id": "refund_abstain_v1",
            "variant": "v",
            "repeat": r,
            "answer": '{"status": "unknown"}',
            "checks": {"schema": True, "values": True},
            **({"canonical": "unknown"} if canonical else {}),
        }
        for r in range(4)
    ]
    rows.append(
        {
            "case_id": "refund_abstain_v1",
            "variant": "v",
            "repeat": 4,
            "status": "timeout",
            "checks": {"schema": False, "values": False},
        }
    )
    return rows


CASES = [
    {"id": "invoice_extract_v3", "metadata": {"agreement_min": 0.8}},
    {"id": "refund_abstain_v1", "metadata": {"agreement_min": 1.0}},
]
