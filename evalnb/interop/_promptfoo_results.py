"""promptfoo results (``promptfoo eval -o output.json``) as an evalnb run directory.

Both shapes promptfoo has written are read: the current one (``{"evalId", "results":
{"version": 3, "prompts", "results": [...]}, "config"}``) and the early one (a top-level
``results`` list whose rows carry ``prompt.display``).

- each prompt is a variant, named by its label (with the provider in front when the file
  holds several providers); each test (``testIdx``, or its vars) is a case with its ``vars``;
- repeats: a row's ``repeatIndex`` when given, else rows of one (prompt, provider, test) are
  numbered in file order;
- each assertion's result (``gradingResult.componentResults``) is a check named by its
  type; a row without them has one ``promptfoo`` check from ``success``;
- a row with an ``error`` (or promptfoo's error reason) is incomplete and fails its checks.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._types import Case, CheckResult, Sample, Variant
from evalnb.interop._suite import RECORD, ImportResult, read_json_source, source_error
from evalnb.runner._manifest import new_manifest, now

__all__ = ["import_promptfoo_results"]

_ERROR_REASON = 2  # promptfoo's ResultFailureReason.ERROR


def _rows(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = read_json_source(path, "promptfoo results")
    results = data.get("results") if isinstance(data, dict) else None
    if isinstance(results, dict) and isinstance(results.get("results"), list):
        return results["results"], data
    if isinstance(results, list):
        return results, data
    raise source_error(
        path, "not promptfoo results: expected 'results' (a list, or an object with 'results')"
    )


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _label(row: dict[str, Any], prompts: list[dict[str, Any]]) -> str:
    prompt = _obj(row.get("prompt"))
    index = row.get("promptIdx")
    if isinstance(index, int) and 0 <= index < len(prompts):
        given = prompts[index].get("label") or prompts[index].get("raw")
    else:
        given = prompt.get("label") or prompt.get("display") or prompt.get("raw")
    return str(given or "prompt")


def import_promptfoo_results(
    source: str | os.PathLike[str], dest: str | os.PathLike[str]
) -> ImportResult:
    """Write a promptfoo ``output.json`` as the run directory ``dest`` (a new path)."""
    path = Path(source)
    rows, data = _rows(path)
    if not rows:
        raise source_error(path, "the results hold no rows")
    inner = _obj(data.get("results"))
    prompts = [p for p in inner.get("prompts") or [] if isinstance(p, dict)]
    providers = {str((r.get("provider") or {}).get("id", "")) for r in rows}
    labels: dict[str, str] = {}
    variants: dict[str, Variant] = {}
    cases: dict[str, Case] = {}
    case_of_vars: dict[str, str] = {}
    seen: Counter[tuple[str, str]] = Counter()
    samples: list[tuple[Sample, list[CheckResult]]] = []
    started = now()
    for order, row in enumerate(rows):
        if not isinstance(row, dict):
            raise source_error(path, f"results[{order}] must be an object; got {row!r}")
        label = _label(row, prompts)
        provider = str((row.get("provider") or {}).get("id", ""))
        name = f"{provider}/{label}" if len(providers) > 1 else label
        short = labels.setdefault(name, f"prompt-{len(labels) + 1}" if len(name) > 60 else name)
        variants.setdefault(short, Variant(short, template=None))
        test = _obj(row.get("testCase"))
        raw_vars = test.get("vars") or row.get("vars") or {}
        shown_vars = {k: v for k, v in raw_vars.items() if not str(k).startswith("__")}
        key = json.dumps(shown_vars, sort_keys=True, default=str)
        if isinstance(row.get("testIdx"), int):
            case_id = f"test-{row['testIdx'] + 1}"
        else:
            case_id = case_of_vars.setdefault(key, f"test-{len(case_of_vars) + 1}")
        if case_id not in cases:
            metadata = {"source": f"{path}: results[{order}]"}
            if test.get("description"):
                metadata["description"] = str(test["description"])
            text = _obj(row.get("prompt")).get("raw") or json.dumps(shown_vars, default=str)
            cases[case_id] = Case(
                case_id, prompt=str(text), vars=json.loads(key), metadata=metadata
            )
        repeat = row.get("repeatIndex", (row.get("metadata") or {}).get("repeatIndex"))
        if not isinstance(repeat, int):
            repeat = seen[(short, case_id)]
        seen[(short, case_id)] += 1
        response = row.get("response") or {}
        answer = _text(response.get("output"))
        error = row.get("error") or response.get("error")
        status = "completed"
        if error or row.get("failureReason") == _ERROR_REASON:
            status = "error"
        elif not answer or not answer.strip():
            status = "empty"
        usage = response.get("tokenUsage") or {}
        prompt_text = str((row.get("prompt") or {}).get("raw") or cases[case_id].prompt)
        sample = Sample(
            run_id=Path(dest).name,
            case_id=case_id,
            variant=short,
            repeat=repeat,
            order=order,
            started_at=started,
            latency_ms=float(row.get("latencyMs") or 0.0),
            status=status,
            error=_text(error) if error else None,
            answer=answer,
            prompt=prompt_text,
            request=None,
            response=json.dumps(response, ensure_ascii=False, default=str),
            fingerprint=hashlib.sha256(prompt_text.encode()).hexdigest()[:12],
            canonical=" ".join(answer.split()).casefold() if answer else None,
            model=provider or None,
            prompt_tokens=usage.get("prompt"),
            completion_tokens=usage.get("completion"),
            total_tokens=usage.get("total"),
        )
        grading = row.get("gradingResult") or {}
        components = [c for c in grading.get("componentResults") or [] if isinstance(c, dict)]
        results = []
        names: set[str] = set()
        for component in components or [{"pass": row.get("success"), "reason": ""}]:
            kind = str((component.get("assertion") or {}).get("type") or "promptfoo")
            check, n = kind, 1
            while check in names:
                n += 1
                check = f"{kind}-{n}"
            names.add(check)
            passed = component.get("pass")
            score = component.get("score")
            graded = isinstance(score, int | float) and 0 < score < 1
            outcome = passed if isinstance(passed, bool) else None
            detail = str(component.get("reason") or "") if outcome is not True else ""
            if status != "completed":
                outcome, detail = False, f"incomplete sample: {status}"
            results.append(
                CheckResult(check, "promptfoo", outcome, detail, None, score if graded else None)
            )
        samples.append((sample, results))
    run_dir = store.create_run_dir(dest)
    repeats = max(s.repeat for s, _ in samples) + 1
    variant_list = list(variants.values())
    manifest = new_manifest(
        run_dir.name,
        started,
        cases=list(cases.values()),
        cases_file=None,
        extra_checks=[],
        variants=variant_list,
        repeats=repeats,
        concurrency=1,
        order="promptfoo",
        seed=0,
        planned=[(cases[s.case_id], variants[s.variant], s.repeat) for s, _ in samples],
        command=None,
    )
    timestamp = inner.get("timestamp")
    manifest.update(
        status="complete",
        ended_at=timestamp or dt.datetime.now(dt.UTC).isoformat(),
        target={"type": "promptfoo-results", "model": ", ".join(sorted(providers)) or None},
        source="promptfoo",
        provenance={
            "file": str(path),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "eval_id": data.get("evalId"),
            "version": inner.get("version"),
            "timestamp": timestamp,
            "providers": sorted(providers),
            "prompts": {short: full for full, short in labels.items()},
        },
    )
    store.write_json_atomic(run_dir / "manifest.json", manifest)
    writer = store.RunWriter(run_dir)
    writer.write_cases(list(cases.values()))
    writer.write([s for s, _ in samples], [(s, r) for s, rs in samples for r in rs])
    result = ImportResult("promptfoo-results", path, written=[run_dir])
    result.counts = {"cases": len(cases), "variants": len(variants), "samples": len(samples)}
    (run_dir / RECORD).write_text(json.dumps(result.record(), indent=2) + "\n", encoding="utf-8")
    return result
