"""Inspect logs (``.eval`` or ``.json``) as an evalnb run directory.

Read without Inspect: a ``.eval`` log is a zip; this reads its ``header.json`` (the
eval spec, plan, stats; ``_journal/start.json`` when a log never finished) and every
``samples/<id>_epoch_<n>.json``. A ``.json`` log holds the same in one object
(``eval``, ``plan``, ``stats``, ``samples``). Strings stored as ``attachment://HASH``
are resolved from the sample's ``attachments``.

- a sample is a case, its epoch a repeat (``repeat = epoch - 1``), the model the variant;
- each scorer is a check named after it, of type ``inspect``: ``C`` (correct) passes;
  ``I`` (incorrect) and ``N`` (no answer) fail; ``P`` (partial) fails with score 0.5;
  ``True``/``False`` pass/fail; a number in [0, 1] is a score passing at 0.5 (1 and 0 are
  pass and fail); any other value is unscored, and listed;
- a sample with an ``error`` is incomplete (status ``error``, the message kept) and fails
  every scorer, as evalnb's own incomplete samples do; one with no answer is ``empty``;
- usage, model, stop reason and time are kept; the manifest says ``source: inspect``
  with the log's provenance (task, run id, model, revision, packages).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import zipfile
from pathlib import Path
from typing import Any

from evalnb._types import Case, CheckResult, Variant
from evalnb.checks._base import THRESHOLD
from evalnb.interop._records import text_of
from evalnb.interop._runs import ImportedRun, status_of
from evalnb.interop._suite import ImportResult, Unsupported, read_json_source, source_error
from evalnb.runner._manifest import now

__all__ = ["import_inspect_log", "read_inspect_log", "score_outcome"]

#: The eval spec's keys the manifest's provenance keeps.
_SPEC_KEYS = ("run_id", "task", "task_version", "created", "model", "dataset")


def read_inspect_log(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(header, samples)`` of a ``.eval`` or ``.json`` Inspect log, samples in file order."""
    path = Path(path)
    if path.suffix == ".json":
        data = read_json_source(path, "an Inspect log")
        if not isinstance(data, dict) or "eval" not in data:
            raise source_error(path, "not an Inspect log: expected a JSON object with 'eval'")
        return data, list(data.get("samples") or [])
    if path.suffix != ".eval":
        raise source_error(path, "an Inspect log must end in .eval or .json")
    try:
        archive = zipfile.ZipFile(path)
    except OSError as exc:
        raise source_error(path, f"cannot read the Inspect log ({exc.strerror})") from None
    except zipfile.BadZipFile:
        raise source_error(path, "not an Inspect .eval log (not a zip file)") from None
    with archive:
        names = archive.namelist()
        head = next((n for n in ("header.json", "_journal/start.json") if n in names), None)
        if head is None:
            raise source_error(path, "not an Inspect .eval log: no header.json in the zip")
        try:
            header = json.loads(archive.read(head))
            samples = [
                json.loads(archive.read(n))
                for n in names
                if n.startswith("samples/") and n.endswith(".json")
            ]
        except json.JSONDecodeError as exc:
            raise source_error(path, f"a JSON file in the zip is not valid ({exc})") from None
    return header, samples


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value.removeprefix("attachment://"), value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def score_outcome(value: Any) -> tuple[bool | None, float | None, str]:
    """``(outcome, score, detail)`` of an Inspect score value (the mapping documented in
    the module docstring)."""
    if value in ("C", "I", "N", "P"):
        return {
            "C": (True, None, ""),
            "I": (False, None, "incorrect (I)"),
            "N": (False, None, "no answer (N)"),
            "P": (False, 0.5, "partially correct (P)"),
        }[value]
    if isinstance(value, bool):
        return value, None, "" if value else "false"
    if isinstance(value, int | float) and 0 <= value <= 1:
        if value in (0, 1):
            return value == 1, None, "" if value == 1 else "score 0"
        passed = value >= THRESHOLD
        return passed, float(value), "" if passed else f"score {value:g} < {THRESHOLD:g}"
    return None, None, f"value {json.dumps(value)[:60]} has no pass/fail reading"


def _case(sample: dict[str, Any], attachments: dict[str, str]) -> Case:
    raw = _resolve(sample.get("input"), attachments)
    fields: dict[str, Any] = {"id": str(sample["id"])}
    if isinstance(raw, str):
        fields["prompt"] = raw or " "
    else:
        fields["messages"] = [
            {"role": m.get("role", "user"), "content": text_of(m.get("content")) or ""}
            for m in raw or []
        ] or [{"role": "user", "content": " "}]
    target = sample.get("target")
    if isinstance(target, list) and any(str(t).strip() for t in target):
        fields["target"] = [str(t) for t in target if str(t).strip()]
    elif isinstance(target, str) and target.strip():
        fields["target"] = target
    if sample.get("choices"):
        fields["choices"] = [str(c) for c in sample["choices"]]
    if sample.get("metadata"):
        fields["metadata"] = json.loads(json.dumps(sample["metadata"], default=str))
    try:
        return Case(**fields)
    except ValueError:
        # A target that names no choice (a log may hold one) is kept as metadata only.
        fields.pop("choices", None)
        return Case(**fields)


def _answer(output: dict[str, Any]) -> tuple[str | None, str | None]:
    if isinstance(output.get("completion"), str):
        completion = output["completion"]
    else:
        choices = output.get("choices") or [{}]
        completion = text_of((choices[0].get("message") or {}).get("content"))
    choices = output.get("choices") or [{}]
    return completion, choices[0].get("stop_reason")


def _prompt(sample: dict[str, Any], attachments: dict[str, str]) -> str:
    messages = _resolve(sample.get("messages") or [], attachments)
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    if users and users[-1] is not None:
        return users[-1]
    raw = _resolve(sample.get("input"), attachments)
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


def _time(text: Any, fallback: dt.datetime) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(text)).astimezone(dt.UTC)
    except ValueError:
        return fallback


def _scorers(spec: dict[str, Any], samples: list[dict[str, Any]]) -> list[str]:
    """The spec's scorers, then any other a sample was scored by, in order of appearance."""
    scorers = [s.get("name") for s in spec.get("scorers") or [] if s.get("name")]
    for sample in samples:
        scorers += [name for name in sample.get("scores") or {} if name not in scorers]
    return scorers


def _check(
    name: str, scores: dict[str, Any], status: str, where: str, unsupported: list[Unsupported]
) -> CheckResult:
    """The check for scorer ``name``; a value with no pass/fail reading is listed."""
    if name not in scores:
        outcome, score, detail = None, None, "not scored in the log"
    else:
        outcome, score, detail = score_outcome(scores[name].get("value"))
        if outcome is None:
            unsupported.append(Unsupported(f"score {name}", where, detail))
    if status != "completed":
        outcome, score, detail = False, None, f"incomplete sample: {status}"
    evidence = {k: v for k, v in scores.get(name, {}).items() if k != "value"}
    shown = json.dumps(evidence, ensure_ascii=False, default=str) if evidence else None
    return CheckResult(name, "inspect", outcome, detail, shown, score)


def _add_sample(
    run: ImportedRun,
    sample: dict[str, Any],
    variant: str,
    scorers: list[str],
    unsupported: list[Unsupported],
) -> None:
    """Add one sample of the log (its case on first sight) with a check per scorer."""
    attachments = sample.get("attachments") or {}
    case = run.cases.setdefault(str(sample["id"]), _case(sample, attachments))
    output = sample.get("output") or {}
    answer, stop = _answer(output)
    error = sample.get("error")
    status = status_of(bool(error), answer)
    if error:
        error = error.get("message") if isinstance(error, dict) else str(error)
    usage = output.get("usage") or {}
    seconds = output.get("time") or sample.get("total_time") or 0.0
    scores = sample.get("scores") or {}
    run.add(
        (case.id, variant, int(sample.get("epoch", 1)) - 1),
        [_check(name, scores, status, f"sample {case.id}", unsupported) for name in scorers],
        prompt=_prompt(sample, attachments),
        answer=answer,
        status=status,
        error=str(error) if error else None,
        latency_ms=float(seconds) * 1000,
        response=json.dumps(output, ensure_ascii=False, default=str) if output else None,
        model=output.get("model"),
        usage=(usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens")),
        finish_reason=stop,
    )


def _provenance(header: dict[str, Any], spec: dict[str, Any], scorers: list[str]) -> dict[str, Any]:
    """What the manifest keeps of the log: its status, the eval spec's identity, the plan."""
    return {
        "log_status": header.get("status"),
        **{k: spec.get(k) for k in _SPEC_KEYS},
        "revision": spec.get("revision"),
        "packages": spec.get("packages"),
        "scorers": scorers,
        "plan": header.get("plan"),
    }


def import_inspect_log(
    source: str | os.PathLike[str], dest: str | os.PathLike[str]
) -> ImportResult:
    """Write an Inspect log as the run directory ``dest`` (a new path)."""
    path = Path(source)
    header, samples = read_inspect_log(path)
    spec = header.get("eval") or {}
    if not samples:
        raise source_error(path, "the log holds no samples (was it written with --no-log-samples?)")
    stats = header.get("stats") or {}
    model = str(spec.get("model") or "model")
    run = ImportedRun("inspect", Path(dest).name, _time(stats.get("started_at"), now()))
    run.variants[model] = Variant(model)
    scorers = _scorers(spec, samples)
    unsupported: list[Unsupported] = []
    samples.sort(key=lambda s: (int(s.get("epoch", 1)), str(s.get("id"))))
    for order, sample in enumerate(samples):
        if "id" not in sample:
            raise source_error(path, f"sample {order + 1} has no 'id'")
        _add_sample(run, sample, model, scorers, unsupported)
    counts = {"cases": len(run.cases), "epochs": run.repeats, "samples": len(run.rows)}
    counts["scorers"] = len(scorers)
    return run.write(
        dest,
        ImportResult("inspect-log", path, counts=counts, unsupported=unsupported),
        status="complete" if header.get("status", "success") == "success" else "interrupted",
        ended_at=stats.get("completed_at"),
        target={"type": "inspect-log", "model": model},
        provenance=_provenance(header, spec, scorers),
    )
