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
  with the log's provenance (task, run id, model, revision, packages, each scorer's
  options and the metrics Inspect reported).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._exceptions import ArgumentError, CasesError
from evalnb._types import Case, CheckResult, Variant, text_of
from evalnb.checks import THRESHOLD
from evalnb.interop._bounded import Limits, Sources, ZipMembers
from evalnb.interop._runs import ImportedRun, status_of
from evalnb.interop._shapes import (
    ANY,
    COUNT,
    EPOCH,
    LIST,
    NUMBER,
    OBJECT,
    TEXT,
    either,
    fields,
    objects,
    shown,
)
from evalnb.interop._suite import (
    ImportNotes,
    ImportResult,
    parse_json,
    read_json_source,
    reading,
    source_error,
)

__all__ = [
    "INSPECT_PYTHON_ENV",
    "READERS",
    "import_inspect_log",
    "read_inspect_log",
    "score_outcome",
]

#: The eval spec's keys the manifest's provenance keeps.
_SPEC_KEYS = ("run_id", "task", "task_version", "created", "model", "dataset")

#: The shapes read: a field absent or null is always accepted.
_HEADER = {"eval": OBJECT, "stats": OBJECT, "status": TEXT, "plan": ANY, "samples": LIST}
_SPEC = {"model": TEXT, "scorers": LIST}
_STATS = {"started_at": TEXT, "completed_at": TEXT}
_SAMPLE = {
    "id": either(TEXT, NUMBER),
    "epoch": EPOCH,
    "input": either(TEXT, LIST),
    "target": either(TEXT, LIST),
    "choices": LIST,
    "metadata": OBJECT,
    "attachments": OBJECT,
    "messages": LIST,
    "output": OBJECT,
    "error": either(OBJECT, TEXT),
    "scores": OBJECT,
    "total_time": NUMBER,
}
_OUTPUT = {"completion": TEXT, "choices": LIST, "usage": OBJECT, "model": TEXT, "time": NUMBER}
_CHOICE = {"message": OBJECT, "stop_reason": TEXT}
_USAGE = {"input_tokens": COUNT, "output_tokens": COUNT, "total_tokens": COUNT}


def _checked_header(header: Any, where: str) -> dict[str, Any]:
    """The log's header, its ``eval`` spec, ``stats`` and scorers of the shapes read."""
    checked = fields(header, _HEADER, where, name="the log's header")
    fields(header.get("eval") or {}, _SPEC, where, prefix="eval.")
    fields(header.get("stats") or {}, _STATS, where, prefix="stats.")
    scorers = (header.get("eval") or {}).get("scorers")
    for i, scorer in enumerate(objects(scorers, where, "eval.scorers")):
        fields(scorer, {"name": TEXT}, where, prefix=f"eval.scorers[{i}].")
    return checked


def _checked_sample(sample: Any, where: str) -> dict[str, Any]:
    """One sample whose fields are of the shapes read (see ``_SAMPLE``)."""
    checked = fields(sample, _SAMPLE, where, name="a sample", required=("id",))
    if isinstance(sample.get("input"), list):
        objects(sample["input"], where, "input")
    objects(sample.get("messages"), where, "messages")
    for key, value in (sample.get("attachments") or {}).items():
        if not isinstance(value, str):
            raise CasesError(f"{where}: 'attachments.{key}' must be text; got {shown(value)}")
    for name, score in (sample.get("scores") or {}).items():
        fields(score, {}, where, name=f"'scores.{name}'")
    output = fields(sample.get("output") or {}, _OUTPUT, where, prefix="output.")
    fields(output.get("usage") or {}, _USAGE, where, prefix="output.usage.")
    for i, choice in enumerate(objects(output.get("choices"), where, "output.choices")):
        fields(choice, _CHOICE, where, prefix=f"output.choices[{i}].")
    return checked


#: A log as read: its header and, in file order, ``(where, sample)``.
_Log = tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]


def read_inspect_log(
    path: str | os.PathLike[str], *, limits: Limits | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(header, samples)`` of a ``.eval`` or ``.json`` Inspect log, samples in file
    order, each of the shapes read, within ``limits`` (default :class:`Limits`)."""
    header, samples = _read(Path(path), Sources(limits))
    return header, [sample for _, sample in samples]


def _read(path: Path, sources: Sources) -> _Log:
    if path.suffix == ".json":
        data = read_json_source(path, "an Inspect log", sources)
        if not isinstance(data, dict) or "eval" not in data:
            raise source_error(path, "not an Inspect log: expected a JSON object with 'eval'")
        header = _checked_header(data, str(path))
        wheres = (f"{path}: samples[{i}]" for i in range(len(header.get("samples") or [])))
        samples = zip(wheres, header.get("samples") or [], strict=True)
        return header, [(where, _checked_sample(s, where)) for where, s in samples]
    if path.suffix != ".eval":
        raise source_error(path, "an Inspect log must end in .eval or .json")
    with sources.zip(path, "the Inspect log") as members:
        return _read_zip(path, members)


def _read_zip(path: Path, members: ZipMembers) -> _Log:
    """The header (``header.json``, else ``_journal/start.json``) and every
    ``samples/*.json`` member; nothing else in the zip is inflated."""
    infos = {info.filename: info for info in members.infos()}
    head = next((infos[n] for n in ("header.json", "_journal/start.json") if n in infos), None)
    if head is None:
        raise source_error(path, "not an Inspect .eval log: no header.json in the zip")
    where = f"{path}: {head.filename!r}"
    header = _checked_header(parse_json(members.read(head), where, "an Inspect header"), where)
    samples = []
    for name, info in infos.items():
        if name.startswith("samples/") and name.endswith(".json"):
            where = f"{path}: {name!r}"
            sample = parse_json(members.read(info), where, "an Inspect sample")
            samples.append((where, _checked_sample(sample, where)))
    return header, samples


#: A Python that has ``inspect_ai``, for when evalnb's own does not (Inspect's pins can
#: clash with other tools, so it may live in a virtualenv of its own).
INSPECT_PYTHON_ENV = "INSPECT_AI_PYTHON"
#: Seconds Inspect's reader may take in that Python.
INSPECT_READ_TIMEOUT = 300.0
#: Run in that Python: the log as Inspect reads it, and Inspect's version.
_READ_WITH_INSPECT = (
    "import json, sys, inspect_ai\n"
    "from inspect_ai.log import read_eval_log\n"
    "log = json.loads(read_eval_log(sys.argv[1]).model_dump_json())\n"
    "json.dump({'version': inspect_ai.__version__, 'log': log}, sys.stdout)\n"
)
#: The readers :func:`import_inspect_log` takes.
READERS = ("auto", "inspect", "evalnb")


def _inspect_reader(path: Path, elsewhere: bool) -> tuple[dict[str, Any], str] | None:
    """The log as Inspect's ``read_eval_log`` reads it, dumped as its JSON log form, and
    the reader's name; None when no Inspect is here: in evalnb's Python, or (``elsewhere``)
    in the Python :data:`INSPECT_PYTHON_ENV` names."""
    try:
        import inspect_ai
        from inspect_ai.log import read_eval_log
    except ImportError:
        return _inspect_elsewhere(path) if elsewhere else None
    log = json.loads(read_eval_log(str(path)).model_dump_json())
    return log, f"inspect_ai {inspect_ai.__version__} (read_eval_log)"


def _inspect_elsewhere(path: Path) -> tuple[dict[str, Any], str] | None:
    """:func:`_inspect_reader` in the Python :data:`INSPECT_PYTHON_ENV` names (None: unset)."""
    python = os.environ.get(INSPECT_PYTHON_ENV, "").strip()
    if not python:
        return None
    try:
        done = subprocess.run(
            [python, "-c", _READ_WITH_INSPECT, str(path)],
            capture_output=True,
            timeout=INSPECT_READ_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise source_error(path, f"Inspect's reader in {python} failed ({exc})") from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.decode(errors="replace").splitlines()]
        said = [line for line in lines if line and not line.startswith("For further")]
        why = (said or ["?"])[-1]
        raise source_error(path, f"Inspect's reader in {python} refused the log ({why})")
    found = json.loads(done.stdout)
    return found["log"], f"inspect_ai {found['version']} (read_eval_log, {python})"


def _builtin_reader_name(path: Path) -> str:
    """What evalnb's own reader used for ``path``'s members."""
    if path.suffix != ".eval":
        return "evalnb's reader (json)"
    try:
        zstandard = importlib.metadata.version("zstandard")
    except importlib.metadata.PackageNotFoundError:
        zstandard = None
    how = "zipfile" + (f"; Zstandard members by zstandard {zstandard}" if zstandard else "")
    return f"evalnb's reader ({how})"


def _read_log(path: Path, sources: Sources, reader: str) -> tuple[_Log, str]:
    """The log and the name of the reader that read it (see :func:`import_inspect_log`)."""
    if reader not in READERS:
        raise ArgumentError(f"'reader' must be one of {', '.join(READERS)}; got {reader!r}")
    # evalnb's bounded reading first: a log past a cap never reaches Inspect's reader.
    ours = _read(path, sources)
    if reader != "evalnb" and path.suffix == ".eval":
        try:
            found = _inspect_reader(path, elsewhere=reader == "inspect")
        except CasesError as exc:
            if reader == "inspect":
                raise
            # A log Inspect's own reader refuses (an older or partial one) is still read.
            return ours, f"{_builtin_reader_name(path)}, as {exc}"
        if found is not None:
            data, name = found
            where = str(path)
            header = _checked_header(data, where)
            wheres = (f"{path}: samples[{i}]" for i in range(len(data.get("samples") or [])))
            pairs = zip(wheres, data.get("samples") or [], strict=True)
            return (header, [(w, _checked_sample(s, w)) for w, s in pairs]), name
        if reader == "inspect":
            raise source_error(
                path,
                "Inspect's reader is not installed: pip install 'evalnb[inspect]', or set "
                f"{INSPECT_PYTHON_ENV} to a Python that has inspect_ai",
            )
    return ours, _builtin_reader_name(path)


def _openai_message(message: dict[str, Any]) -> dict[str, Any]:
    """An Inspect chat message as the OpenAI chat message evalnb's traces hold."""
    role = str(message.get("role") or "user")
    content = message.get("content")
    text = text_of(content, sep="", strict=True)
    out: dict[str, Any] = {"role": role, "content": text if text is not None else content}
    if role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": call.get("function"),
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments") or {}, ensure_ascii=False),
                },
            }
            for call in message["tool_calls"]
            if isinstance(call, dict)
        ]
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
        if message.get("function"):
            out["name"] = message["function"]
        error = message.get("error")
        if isinstance(error, dict) and error.get("message"):
            out["content"] = f"error: {error['message']}"
    return out


def _transcript(sample: dict[str, Any], attachments: dict[str, str]) -> str | None:
    """The sample's messages, tool calls and results included, as an evalnb trace: one
    request of the messages before the last, and the last as the response (None: the log
    keeps no messages)."""
    messages = [
        _openai_message(m)
        for m in _resolve(sample.get("messages") or [], attachments)
        if isinstance(m, dict)
    ]
    if not messages:
        return None
    last = messages[-1] if messages[-1]["role"] == "assistant" else None
    asked = messages[:-1] if last is not None else messages
    events = [{"event": "request", "body": {"messages": asked}}]
    if last is not None:
        events.append({"event": "response", "body": {"choices": [{"message": last}]}})
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"


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


def _text(content: Any) -> str | None:
    """A message's text as Inspect keeps it: its text parts run together; None when it
    holds other parts."""
    return text_of(content, sep="", strict=True)


def _case(sample: dict[str, Any], attachments: dict[str, str], where: str) -> Case:
    raw = _resolve(sample.get("input"), attachments)
    fields: dict[str, Any] = {"id": str(sample["id"])}
    if isinstance(raw, str):
        fields["prompt"] = raw or " "
    else:
        fields["messages"] = [
            {
                "role": str(m.get("role") or "user"),
                "content": text_of(m.get("content"), sep="", strict=True) or "",
            }
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
    try:
        return Case(**fields)
    except ValueError as exc:
        raise CasesError(f"{where}: not a case evalnb can keep ({exc})") from None


def _answer(output: dict[str, Any]) -> tuple[str | None, str | None]:
    choices = output.get("choices") or [{}]
    if isinstance(output.get("completion"), str):
        completion = output["completion"]
    else:
        completion = _text((choices[0].get("message") or {}).get("content"))
    return completion, choices[0].get("stop_reason")


def _prompt(sample: dict[str, Any], attachments: dict[str, str]) -> str:
    messages = _resolve(sample.get("messages") or [], attachments)
    users = [
        text_of(m.get("content"), sep="", strict=True) for m in messages if m.get("role") == "user"
    ]
    if users and users[-1] is not None:
        return users[-1]
    raw = _resolve(sample.get("input"), attachments)
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


def _time(text: Any, fallback: dt.datetime) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(text)).astimezone(dt.UTC)
    except (ValueError, OverflowError):
        return fallback


def _scorers(spec: dict[str, Any], samples: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The spec's scorers, then any other a sample was scored by, in order of appearance."""
    scorers = [s["name"] for s in spec.get("scorers") or [] if s.get("name")]
    for _, sample in samples:
        scorers += [name for name in sample.get("scores") or {} if name not in scorers]
    return scorers


def _check(
    name: str, scores: dict[str, Any], status: str, where: str, notes: ImportNotes
) -> CheckResult:
    """The check for scorer ``name``; a value with no pass/fail reading is listed."""
    if name not in scores:
        outcome, score, detail = None, None, "not scored in the log"
    else:
        outcome, score, detail = score_outcome(scores[name].get("value"))
        if outcome is None:
            notes.refuse(f"score {name}", where, detail)
    if status != "completed":
        outcome, score, detail = False, None, f"incomplete sample: {status}"
    evidence = {k: v for k, v in scores.get(name, {}).items() if k != "value"}
    shown = json.dumps(evidence, ensure_ascii=False, default=str) if evidence else None
    return CheckResult(name, "inspect", outcome, detail, shown, score)


def _add_sample(
    run: ImportedRun,
    where: str,
    sample: dict[str, Any],
    variant: str,
    scorers: list[str],
    notes: ImportNotes,
) -> None:
    """Add one sample of the log (its case on first sight) with a check per scorer."""
    attachments = sample.get("attachments") or {}
    case_id = str(sample["id"])
    if case_id not in run.cases:
        run.cases[case_id] = _case(sample, attachments, where)
    repeat = (sample.get("epoch") or 1) - 1
    if (case_id, variant, repeat) in run.keys:
        raise CasesError(f"{where}: sample {case_id!r} epoch {repeat + 1} appears twice")
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
        (case_id, variant, repeat),
        [_check(name, scores, status, f"sample {case_id}", notes) for name in scorers],
        prompt=_prompt(sample, attachments),
        answer=answer,
        status=status,
        error=str(error) if error else None,
        latency_ms=float(seconds) * 1000,
        response=json.dumps(output, ensure_ascii=False, default=str) if output else None,
        model=output.get("model"),
        usage=(usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens")),
        finish_reason=stop,
        trace=_transcript(sample, attachments),
    )


def _scoring(header: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """What each scorer was asked and what Inspect reported of it: its options (the eval
    spec's ``scorers[].options``, else ``results.scores[].params``: a custom
    ``model_graded_fact`` keeps its ``instructions`` there) and its metrics' values."""
    options: dict[str, Any] = {}
    for scorer in spec.get("scorers") or []:
        if isinstance(scorer, dict) and scorer.get("options"):
            options[str(scorer.get("name"))] = scorer["options"]
    metrics: dict[str, Any] = {}
    results = header.get("results")
    scores = results.get("scores") if isinstance(results, dict) else None
    for score in scores if isinstance(scores, list) else []:
        if not isinstance(score, dict):
            continue
        name = str(score.get("name"))
        if score.get("params") and name not in options:
            options[name] = score["params"]
        found = score.get("metrics")
        if isinstance(found, dict):
            metrics[name] = {
                str(k): m.get("value") for k, m in found.items() if isinstance(m, dict)
            }
    return {"scorer_options": options, "inspect_metrics": metrics}


def _provenance(header: dict[str, Any], spec: dict[str, Any], scorers: list[str]) -> dict[str, Any]:
    """What the manifest keeps of the log: its status, the eval spec's identity, the plan,
    each scorer's options and the metrics Inspect reported."""
    return {
        "log_status": header.get("status"),
        **{k: spec.get(k) for k in _SPEC_KEYS},
        "revision": spec.get("revision"),
        "packages": spec.get("packages"),
        "scorers": scorers,
        **_scoring(header, spec),
        "plan": header.get("plan"),
    }


def import_inspect_log(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    reader: str = "auto",
) -> ImportResult:
    """Write an Inspect log as the run directory ``dest`` (a new path).

    ``reader``: ``"auto"`` reads a ``.eval`` log with Inspect's own ``read_eval_log`` when
    evalnb's Python has it (``pip install 'evalnb[inspect]'``), else with evalnb's reader;
    ``"inspect"`` insists on Inspect's, in evalnb's Python or else in the Python
    :data:`INSPECT_PYTHON_ENV` names (Inspect's pins may need a virtualenv of their own);
    ``"evalnb"`` uses evalnb's. The result's ``reader`` names the one used. Either way
    evalnb's reader reads the log first, within ``limits``.

    The log is read within ``limits`` (default :class:`Limits`): a regular file of at most
    256 MiB; of a ``.eval`` zip only ``header.json`` (or ``_journal/start.json``) and
    ``samples/*.json`` are inflated, streaming, each member at most 64 MiB, 1 GiB in all,
    and at most 100 times its compressed size. A field of the wrong JSON type is a
    :class:`~evalnb.CasesError` naming the file, the sample and the field.
    """
    path = Path(source)
    sources = Sources(limits)
    with reading(path):
        (header, samples), read_by = _read_log(path, sources, reader)
        spec = header.get("eval") or {}
        if not samples:
            raise source_error(
                path, "the log holds no samples (was it written with --no-log-samples?)"
            )
        stats = header.get("stats") or {}
        model = spec.get("model") or "model"
        run = ImportedRun("inspect", Path(dest).name, _time(stats.get("started_at"), store.now()))
        run.variants[model] = Variant(model)
        scorers = _scorers(spec, samples)
        notes = ImportNotes()
        samples.sort(key=lambda item: (item[1].get("epoch") or 1, str(item[1]["id"])))
        for where, sample in samples:
            _add_sample(run, where, sample, model, scorers, notes)
    counts = {"cases": len(run.cases), "epochs": run.repeats, "samples": len(run.rows)}
    counts["scorers"] = len(scorers)
    result = notes.result("inspect-log", path, sources.files)
    result.counts = counts
    result.reader = read_by
    return run.write(
        dest,
        result,
        status="complete" if header.get("status", "success") == "success" else "interrupted",
        ended_at=stats.get("completed_at"),
        target={"type": "inspect-log", "model": model},
        provenance={**_provenance(header, spec, scorers), "reader": read_by},
    )
