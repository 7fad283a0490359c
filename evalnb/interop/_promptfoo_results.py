"""promptfoo results (``promptfoo eval -o output.json``) as an evalnb run directory.

Both shapes promptfoo has written are read: the current one (``{"evalId", "results":
{"version": 3, "prompts", "results": [...]}, "config"}``) and the early one (a top-level
``results`` list whose rows carry ``prompt.display``).

- each provider and prompt is a variant named ``PROVIDER/LABEL`` (the provider's label or
  id, the prompt's label, cut to 60 characters); each test (``testIdx``, or its vars) is
  a case with its ``vars``;
- repeats: a row's ``repeatIndex`` when given, else rows of one (prompt, provider, test) are
  numbered in file order;
- each assertion's result (``gradingResult.componentResults``) is a check named by its
  type; a row without them has one ``promptfoo`` check from ``success``;
- ``failureReason`` 0 is a pass, 1 an assertion that failed (a completed sample with its
  checks), 2 an error (an incomplete sample, its checks failed); a row's ``cost`` is kept
  in its stored response.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._exceptions import CasesError
from evalnb._types import Case, CheckResult, Variant
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._reserved import renamed_keys, renames, report
from evalnb.interop._runs import ImportedRun, status_of
from evalnb.interop._shapes import (
    ANY,
    BOOL,
    COUNT,
    INDEX,
    LIST,
    NUMBER,
    OBJECT,
    TEXT,
    either,
    fields,
    objects,
    shown,
)
from evalnb.interop._suite import ImportResult, Note, read_json_source, reading, source_error

__all__ = ["import_promptfoo_results"]

_ERROR_REASON = 2  # promptfoo's ResultFailureReason.ERROR

#: The shapes read: a field absent or null is always accepted.
_TOP = {"evalId": TEXT}
_INNER = {"version": NUMBER, "timestamp": TEXT, "prompts": LIST}
_ROW = {
    "prompt": OBJECT,
    "provider": either(OBJECT, TEXT),
    "promptIdx": INDEX,
    "testIdx": INDEX,
    "repeatIndex": INDEX,
    "testCase": OBJECT,
    "vars": OBJECT,
    "metadata": OBJECT,
    "response": OBJECT,
    "error": ANY,
    "failureReason": NUMBER,
    "latencyMs": NUMBER,
    "gradingResult": OBJECT,
    "success": BOOL,
}
_PROMPT = {"raw": TEXT, "label": TEXT, "display": TEXT}
_COMPONENT = {"assertion": OBJECT, "pass": BOOL, "score": NUMBER, "reason": ANY}
_USAGE = {"prompt": COUNT, "completion": COUNT, "total": COUNT}


def _rows(path: Path, sources: Sources) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = read_json_source(path, "promptfoo results", sources)
    results = data.get("results") if isinstance(data, dict) else None
    if isinstance(results, dict) and isinstance(results.get("results"), list):
        fields(data, _TOP, str(path))
        fields(results, _INNER, str(path), prefix="results.")
        return _checked(path, results["results"]), data
    if isinstance(results, list):
        fields(data, _TOP, str(path))
        return _checked(path, results), data
    raise source_error(
        path, "not promptfoo results: expected 'results' (a list, or an object with 'results')"
    )


def _checked(path: Path, rows: list[Any]) -> list[dict[str, Any]]:
    """The rows, each an object whose fields are of the shapes read."""
    for order, row in enumerate(rows):
        where = f"{path}: results[{order}]"
        if not isinstance(row, dict):
            raise CasesError(f"{where} must be an object; got {shown(row)}")
        fields(row, _ROW, where)
        fields(row.get("prompt") or {}, _PROMPT, where, prefix="prompt.")
        if isinstance(row.get("provider"), dict):
            fields(row["provider"], {"id": TEXT}, where, prefix="provider.")
        test = fields(row.get("testCase") or {}, {"vars": OBJECT}, where, prefix="testCase.")
        fields(test.get("metadata") or {}, {}, where, prefix="testCase.")
        fields(row.get("metadata") or {}, {"repeatIndex": INDEX}, where, prefix="metadata.")
        response = row.get("response") or {}
        fields(response, {"tokenUsage": OBJECT}, where, prefix="response.")
        fields(response.get("tokenUsage") or {}, _USAGE, where, prefix="response.tokenUsage.")
        grading = fields(
            row.get("gradingResult") or {},
            {"componentResults": LIST},
            where,
            prefix="gradingResult.",
        )
        components = grading.get("componentResults")
        for i, component in enumerate(objects(components, where, "gradingResult.componentResults")):
            at = f"gradingResult.componentResults[{i}]."
            fields(component, _COMPONENT, where, prefix=at)
            fields(
                component.get("assertion") or {}, {"type": TEXT}, where, prefix=f"{at}assertion."
            )
    return rows


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _provider(row: dict[str, Any]) -> str:
    """The row's provider: its ``label`` when it has one, else its id."""
    provider = row.get("provider")
    if isinstance(provider, str):
        return provider
    found = _obj(provider)
    return str(found.get("label") or found.get("id") or "")


def _label(row: dict[str, Any], prompts: list[dict[str, Any]]) -> str:
    prompt = _obj(row.get("prompt"))
    index = row.get("promptIdx")
    if isinstance(index, int) and 0 <= index < len(prompts):
        given = prompts[index].get("label") or prompts[index].get("raw")
    else:
        given = prompt.get("label") or prompt.get("display") or prompt.get("raw")
    return str(given or "prompt")


def _errored(row: dict[str, Any], error: Any) -> bool:
    """Whether the row is an error sample: promptfoo's ``failureReason`` 2 (1 is an
    assertion that failed, whose text promptfoo also puts in ``error``); a file without
    ``failureReason`` errs when it has an ``error`` and no assertion results."""
    reason = row.get("failureReason")
    if isinstance(reason, int | float):
        return reason == _ERROR_REASON
    components = _obj(row.get("gradingResult")).get("componentResults")
    return bool(error) and not components


def _checks(row: dict[str, Any], status: str) -> list[CheckResult]:
    """A check per assertion result, named by its type (``-2``, ``-3`` for repeats of a
    type); one ``promptfoo`` check from ``success`` when the row has none."""
    grading = _obj(row.get("gradingResult"))
    components = [c for c in grading.get("componentResults") or [] if isinstance(c, dict)]
    results = []
    names: set[str] = set()
    for component in components or [{"pass": row.get("success"), "reason": ""}]:
        kind = str(_obj(component.get("assertion")).get("type") or "promptfoo")
        check, n = kind, 1
        while check in names:
            n += 1
            check = f"{kind}-{n}"
        names.add(check)
        passed = component.get("pass")
        score = component.get("score")
        graded = isinstance(score, int | float) and 0 < score < 1
        outcome = passed if isinstance(passed, bool) else None
        detail = str(component.get("reason") or "")
        if status != "completed":
            outcome, detail = False, f"incomplete sample: {status}"
        results.append(
            CheckResult(check, "promptfoo", outcome, detail, None, score if graded else None)
        )
    return results


class _Reader:
    """Reads rows into an :class:`ImportedRun`, keeping what naming needs across rows:
    the variant labels, the cases of rows without ``testIdx``, the repeats seen."""

    def __init__(
        self, path: Path, run: ImportedRun, prompts: list[dict[str, Any]], providers: set[str]
    ) -> None:
        self.path = path
        self.run = run
        self.prompts = prompts
        self.providers = providers
        self.labels: dict[str, str] = {}
        self.case_of_vars: dict[str, str] = {}
        self.seen: Counter[tuple[str, str]] = Counter()
        #: Vars named like evalnb's own case fields, kept under a new name.
        self.renamed: dict[str, str] = {}

    def variant(self, row: dict[str, Any]) -> str:
        """The row's variant: ``PROVIDER/LABEL`` (the provider's label or id, the prompt's
        label), the label cut to keep the name within 60 characters (``-2``, ``-3`` when
        two cut names meet); the full names are in the manifest."""
        label = _label(row, self.prompts)
        provider = _provider(row)
        name = f"{provider}/{label}" if provider else label
        if name not in self.labels:
            short = name
            if len(name) > 60:
                room = max(8, 59 - len(provider) - 1) if provider else 59
                cut = " ".join(label[:room].split())
                short = f"{provider}/{cut}…" if provider else f"{cut}…"
            taken = set(self.labels.values())
            base, n = short, 1
            while short in taken:
                n += 1
                short = f"{base}-{n}"
            self.labels[name] = short
        short = self.labels[name]
        self.run.variants.setdefault(short, Variant(short, template=None))
        return short

    def case(self, row: dict[str, Any], order: int) -> str:
        """The id of the row's case (``test-N``), made on first sight from its vars."""
        test = _obj(row.get("testCase"))
        raw_vars = test.get("vars") or row.get("vars") or {}
        shown_vars = {k: v for k, v in raw_vars.items() if not str(k).startswith("__")}
        key = json.dumps(shown_vars, sort_keys=True, default=str)
        if isinstance(row.get("testIdx"), int):
            case_id = f"test-{row['testIdx'] + 1}"
        else:
            case_id = self.case_of_vars.setdefault(key, f"test-{len(self.case_of_vars) + 1}")
        if case_id not in self.run.cases:
            metadata = {"source": f"{self.path}: results[{order}]"}
            if test.get("description"):
                metadata["description"] = str(test["description"])
            text = _obj(row.get("prompt")).get("raw") or json.dumps(shown_vars, default=str)
            given = json.loads(key)
            self.renamed.update(renames(given, "var"))
            kept = renamed_keys(given, self.renamed)
            self.run.cases[case_id] = Case(case_id, prompt=str(text), vars=kept, metadata=metadata)
        return case_id

    def repeat(self, row: dict[str, Any], variant: str, case_id: str) -> int:
        """The row's ``repeatIndex``, else how many rows of this variant and case came before."""
        repeat = row.get("repeatIndex", _obj(row.get("metadata")).get("repeatIndex"))
        if not isinstance(repeat, int):
            repeat = self.seen[(variant, case_id)]
        self.seen[(variant, case_id)] += 1
        return repeat

    def add(self, row: dict[str, Any], order: int) -> None:
        """Add the row as a sample of its variant, case and repeat, with its checks."""
        variant = self.variant(row)
        case_id = self.case(row, order)
        repeat = self.repeat(row, variant, case_id)
        if (case_id, variant, repeat) in self.run.keys:
            raise CasesError(
                f"{self.path}: results[{order}]: a second row for {case_id}, prompt "
                f"{variant!r}, repeat {repeat} (check 'testIdx' and 'repeatIndex')"
            )
        response = _obj(row.get("response"))
        answer = _text(response.get("output"))
        error = row.get("error") or response.get("error")
        status = status_of(_errored(row, error), answer)
        if isinstance(row.get("cost"), int | float) and "cost" not in response:
            response = {**response, "cost": row["cost"]}
        usage = _obj(response.get("tokenUsage"))
        prompt = str(_obj(row.get("prompt")).get("raw") or self.run.cases[case_id].prompt)
        self.run.add(
            (case_id, variant, repeat),
            _checks(row, status),
            prompt=prompt,
            answer=answer,
            status=status,
            error=_text(error) if error else None,
            latency_ms=float(row.get("latencyMs") or 0.0),
            response=json.dumps(response, ensure_ascii=False, default=str),
            model=_provider(row) or None,
            usage=(usage.get("prompt"), usage.get("completion"), usage.get("total")),
        )


def _started(timestamp: Any) -> dt.datetime:
    """When the eval ran: promptfoo's ``timestamp`` (its creation), else now."""
    try:
        return dt.datetime.fromisoformat(str(timestamp)).astimezone(dt.UTC)
    except (TypeError, ValueError, OverflowError):
        return store.now()


def import_promptfoo_results(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
) -> ImportResult:
    """Write a promptfoo ``output.json`` as the run directory ``dest`` (a new path).

    The file is read within ``limits`` (default :class:`Limits`: a regular file of at most
    256 MiB); a field of the wrong JSON type is a :class:`~evalnb.CasesError` naming the
    file, the row (``results[3]``) and the field.
    """
    path = Path(source)
    sources = Sources(limits)
    with reading(path):
        rows, data = _rows(path, sources)
        if not rows:
            raise source_error(path, "the results hold no rows")
        inner = _obj(data.get("results"))
        run = ImportedRun("promptfoo", Path(dest).name, _started(inner.get("timestamp")))
        prompts = [p for p in inner.get("prompts") or [] if isinstance(p, dict)]
        reader = _Reader(path, run, prompts, {_provider(row) for row in rows})
        for order, row in enumerate(rows):
            reader.add(row, order)
    providers = sorted(reader.providers)
    counts = {"cases": len(run.cases), "variants": len(run.variants), "samples": len(run.rows)}
    result = ImportResult("promptfoo-results", path, counts=counts, files=sources.files)
    if reader.renamed:
        result.mapped.append(
            Note("vars", str(path), report(reader.renamed, "var", rewritten=False))
        )
    return run.write(
        dest,
        result,
        status="complete",
        ended_at=inner.get("timestamp") or dt.datetime.now(dt.UTC).isoformat(),
        target={"type": "promptfoo-results", "model": ", ".join(providers) or None},
        provenance={
            "eval_id": data.get("evalId"),
            "version": inner.get("version"),
            "timestamp": inner.get("timestamp"),
            "providers": providers,
            "prompts": {short: full for full, short in reader.labels.items()},
        },
    )
