"""Inspect datasets (JSONL, JSON, CSV with ``input``, ``target``, ``choices``, ``id``,
``metadata``) as an evalnb suite.

``fields`` maps Inspect's sample fields to the record's names, like Inspect's
``FieldSpec`` (``{"input": "question", "target": "answer"}``); record fields that are not
mapped go to the case's ``metadata``. The check stands for the task's scorer
(:data:`SCORERS`); ``files``, ``setup`` and ``sandbox`` are listed as not imported.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

import regex

from evalnb._exceptions import ArgumentError
from evalnb._types import LETTERS
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._records import Images, item_hint, messages, records
from evalnb.interop._shapes import shown
from evalnb.interop._suite import (
    ImportNotes,
    ImportResult,
    Note,
    parse_json,
    reading,
    source_error,
    write_suite,
)

__all__ = ["SCORERS", "import_inspect"]

#: Inspect scorers and the evalnb check that stands for each.
SCORERS = {
    "choice": "choice (the letter the answer picks)",
    "match": "regex: the target at the end of the answer, ignoring case and the "
    "punctuation and whitespace at both ends (match())",
    "includes": "includes: the target anywhere in the answer, ignoring case only (includes())",
    "exact": "equals (exact())",
    "model_graded_fact": "judge: agrees with the target (model_graded_fact())",
    "none": "no check (score later with evalnb score)",
}
#: How the check that stands for a scorer can grade otherwise than Inspect's scorer.
_DIFFERS = {
    "exact": "Inspect's exact() also drops articles and all punctuation and reads numbers "
    "as numbers; evalnb's equals ignores case, runs of spaces and punctuation at the ends",
    "model_graded_fact": "evalnb's judge with its own prompt, not Inspect's grading "
    "template (its verdict can differ on the same answer)",
}
_FIELDS = ("input", "target", "choices", "id", "metadata")
#: Fields that mean something to the tool that wrote the file (DeepEval's goldens and test
#: cases) but that no evalnb check reads: kept as metadata, and each said so.
_UNGRADED = {
    "expected_output": "the expected answers; make them the target with "
    "--field target=expected_output",
    "actual_output": "the answers the file recorded; a run asks the target again",
    "tools_called": "the tool calls the file recorded; a run records its own",
    "expected_tools": "the tools each case expects; write required_action checks for them",
    "retrieval_context": "the retrieved context that RAG metrics read",
    "context": "the ideal context that RAG metrics read",
}
_LEFT_OUT = ("files", "setup", "sandbox")


#: What Inspect's ``match()`` strips from both ends of the answer and the target before
#: comparing (``strip_punctuation``: ASCII whitespace and punctuation).
_STRIPPED = string.whitespace + string.punctuation


def _check(scorer: str, case: dict[str, Any]) -> dict[str, Any] | None:
    if scorer == "none" or "target" not in case:
        return None
    if scorer == "match":
        # Inspect's match(): the answer, stripped of punctuation and whitespace at its
        # ends, ends with a target stripped alike, ignoring case.
        targets = case["target"] if isinstance(case["target"], list) else [case["target"]]
        either = "|".join(regex.escape(str(t).strip(_STRIPPED)) for t in targets)
        spaces = "".join(f"\\x{ord(c):02x}" for c in string.whitespace)
        tail = f"[{spaces}{regex.escape(string.punctuation)}]*"
        return {"type": "regex", "pattern": f"(?:{either}){tail}\\Z", "ignore_case": True}
    if scorer == "includes":
        # Inspect's includes(): the target in the answer, case folded, nothing else changed.
        return {"type": "includes", "ignore_whitespace": False, "ignore_punctuation": False}
    if scorer == "model_graded_fact":
        return {"type": "judge", "rubric": "The answer states the facts of: {{ target }}"}
    return {"type": {"exact": "equals"}.get(scorer, scorer)}


def _target(value: Any) -> Any:
    if isinstance(value, list):
        kept = [str(v) for v in value if str(v).strip()]
        return kept or None
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return (
        value
        if isinstance(value, str | int | float) and not isinstance(value, bool)
        else str(value)
    )


_MISSING = object()


def _get(record: dict[str, Any], path: str) -> Any:
    """The value at ``path`` in ``record``: a key, or a dotted path into nested objects
    (``choices.text``); :data:`_MISSING` when it leads nowhere."""
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def import_inspect(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    fields: dict[str, str] | None = None,
    scorer: str | None = None,
    repeats: int = 5,
    limits: Limits | None = None,
    target_base: int | None = None,
) -> ImportResult:
    """Import an Inspect dataset file into ``DEST/cases.yaml`` + ``DEST/experiment.toml``.

    A multiple-choice target given as an index (``2``, or ``"2"``) is read as the letter of
    that choice: ``target_base`` 0 or 1 says how choices are counted; without it the base is
    detected (an index 0 means 0-based, an index equal to the number of choices 1-based) and
    reported, and an import that cannot tell is one line asking for it.

    ``scorer`` is one of :data:`SCORERS` (default: ``choice`` for cases with choices,
    else ``includes``). The file is read within ``limits`` (default :class:`Limits`: a
    regular file of at most 256 MiB).
    """
    path = Path(source)
    sources = Sources(limits)
    spec = {name: name for name in _FIELDS}
    for key, value in (fields or {}).items():
        if key not in _FIELDS:
            raise ArgumentError(f"'fields' keys must be among {', '.join(_FIELDS)}; got {key!r}")
        spec[key] = value
    if scorer is not None and scorer not in SCORERS:
        raise ArgumentError(f"'scorer' must be one of {', '.join(SCORERS)}; got {scorer!r}")
    metadata_fields = spec["metadata"].split("|") if fields and "metadata" in fields else None
    images = Images(path, sources)
    notes = ImportNotes()
    with reading(path):
        cases = []
        seen: set[str] = set()
        for n, (where, record) in enumerate(records(path, "Inspect dataset", sources), start=1):
            raw_input = _get(record, spec["input"])
            if raw_input is _MISSING or raw_input is None:
                raise source_error(
                    Path(where),
                    f"expected the input field {spec['input']!r} (map another with "
                    f"--field input=NAME); fields: {', '.join(record)}"
                    + item_hint(record, "input"),
                )
            given_id = _get(record, spec["id"])
            case: dict[str, Any] = {"id": str(n if given_id is _MISSING else given_id)}
            if case["id"] in seen:
                raise source_error(Path(where), f"'id' must be unique; got {case['id']!r} again")
            seen.add(case["id"])
            if isinstance(raw_input, list) and raw_input:
                chat = messages(raw_input, where, notes, images=images)
                if chat is None:
                    continue
                case["messages"] = chat
            elif isinstance(raw_input, str) and raw_input.strip():
                case["prompt"] = raw_input
            else:
                raise source_error(
                    Path(where),
                    f"'{spec['input']}' must be text or chat messages; got {raw_input!r}",
                )
            _reference(case, record, spec, where, notes)
            for name in _LEFT_OUT:
                if record.get(name):
                    notes.refuse(name, where, "sample files/setup/sandbox")
            used = {spec[k].split(".")[0] for k in ("input", "target", "choices", "id")}
            used |= {spec[k] for k in ("input", "target", "choices", "id")} | set(_LEFT_OUT)
            metadata = record.get("metadata") if spec["metadata"] == "metadata" else None
            extra = {k: v for k, v in record.items() if k not in used and k != "metadata"}
            if metadata_fields is not None:
                extra = {k: record[k] for k in metadata_fields if k in record}
            merged = {**(metadata if isinstance(metadata, dict) else {}), **extra}
            if merged:
                case["metadata"] = merged
            check = _check(scorer or ("choice" if "choices" in case else "includes"), case)
            if check is not None:
                case["checks"] = [check]
            cases.append(case)
        _mapped(notes, path, spec, scorer, cases)
        for note in _index_targets(cases, target_base, path):
            notes.map(note.name, note.where, note.how)
        result = notes.result("inspect", path, sources.files)
        judge = scorer == "model_graded_fact"
        return write_suite(result, dest, cases=cases, repeats=repeats, judge=judge)


def _index_targets(cases: list[dict[str, Any]], base: int | None, path: Path) -> list[Note]:
    """Index targets of multiple-choice cases as letters; the note says the base used."""
    indexed = [
        c
        for c in cases
        if "choices" in c
        and (
            (isinstance(c.get("target"), int) and not isinstance(c["target"], bool))
            or (isinstance(c.get("target"), str) and c["target"].strip().isdigit())
        )
    ]
    if not indexed:
        return []
    numbers = [int(c["target"]) for c in indexed]
    how = "said (--target-base)"
    if base is None:
        how = "detected"
        if 0 in numbers:
            base, why = 0, "an index 0 appears"
        elif any(n == len(c["choices"]) for n, c in zip(numbers, indexed, strict=True)):
            base, why = 1, "an index equals its number of choices"
        else:
            raise source_error(
                path,
                "the targets are choice indexes, 0- or 1-based: say which with "
                "--target-base 0 or --target-base 1 (target_base=)",
            )
        how = f"detected: {why}"
    for case, number in zip(indexed, numbers, strict=True):
        index = number - base
        if not 0 <= index < len(case["choices"]):
            raise source_error(
                path,
                f"case {case['id']!r}: target {number} is no choice of {len(case['choices'])} "
                f"({base}-based)",
            )
        case["target"] = LETTERS[index]
    return [Note("target index", str(path), f"{len(indexed)} targets, {base}-based, {how}")]


def _reference(
    case: dict[str, Any],
    record: dict[str, Any],
    spec: dict[str, str],
    where: str,
    notes: ImportNotes,
) -> None:
    """The case's target and choices from ``record``; a dotted ``--field`` path that leads
    nowhere, or to no list of choices, is listed."""
    for key in ("target", "choices"):
        if "." in spec[key] and _get(record, spec[key]) is _MISSING:
            notes.refuse(
                f"--field {key}={spec[key]}",
                where,
                f"the path leads nowhere in this record: the case has no {key}",
            )
    raw_target = _get(record, spec["target"])
    target = _target(None if raw_target is _MISSING else raw_target)
    if target is not None:
        case["target"] = target
    choices = _get(record, spec["choices"])
    if isinstance(choices, str) and choices.strip().startswith("["):
        choices = parse_json(choices, f"{where}: {spec['choices']!r}", "a list of choices")
    if isinstance(choices, list) and choices:
        case["choices"] = [str(c) for c in choices]
    elif choices is not _MISSING and choices is not None and spec["choices"] != "choices":
        notes.refuse(
            f"--field choices={spec['choices']}",
            where,
            f"expected a list of choices there; got {shown(choices)}",
        )


def _mapped(
    notes: ImportNotes,
    path: Path,
    spec: dict[str, str],
    scorer: str | None,
    cases: list[dict[str, Any]],
) -> None:
    """Note what the import mapped: renamed fields, the scorer's check, image parts."""
    used = scorer or ("choice" if any("choices" in c for c in cases) else "includes")
    for key in ("input", "target", "choices", "id"):
        if spec[key] != key:
            notes.map(f"field {key}", str(path), f"read from {spec[key]!r}")
    if scorer is None:
        notes.approximate(
            f"scorer {used}",
            str(path),
            f"{SCORERS[used]}: evalnb's default, as a dataset names no scorer (the task's "
            "is in its code, which is not read); say which with --scorer",
        )
    elif used in _DIFFERS:
        notes.approximate(f"scorer {used}", str(path), f"{SCORERS[used]}: {_DIFFERS[used]}")
    else:
        notes.map(f"scorer {used}", str(path), SCORERS[used])
    kept: dict[str, int] = {}
    for case in cases:
        for key in case.get("metadata") or {}:
            kept[key] = kept.get(key, 0) + 1
    if kept:
        names = ", ".join(f"{k} ({n})" if n < len(cases) else k for k, n in kept.items())
        notes.map(
            "metadata",
            str(path),
            f"kept with each case, as Inspect keeps them; no check reads them: {names}",
        )
    for key, why in _UNGRADED.items():
        if key in kept and key not in (spec["input"], spec["target"]):
            notes.approximate(key, str(path), f"kept as metadata, graded by no check ({why})")
    parts = sum(
        1
        for c in cases
        for m in c.get("messages", [])
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    )
    if parts:
        notes.map("image parts", str(path), f"{parts} sent as image_url parts")
