"""openai/evals samples (JSONL lines with an ``input`` chat list and an ``ideal`` string or
list) as an evalnb suite; the eval class picks the check (:data:`EVAL_CLASSES`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._records import messages, records
from evalnb.interop._suite import ImportResult, Unsupported, reading, source_error, write_suite

__all__ = ["EVAL_CLASSES", "import_openai_evals"]

#: openai/evals eval classes and the check each becomes.
EVAL_CLASSES: dict[str, dict[str, Any]] = {
    # Match: the answer starts with an ideal answer.
    "Match": {"type": "starts_with", "ignore_case": False, "ignore_punctuation": False},
    # Includes: an ideal answer appears in the answer.
    "Includes": {"type": "includes", "ignore_case": False, "ignore_punctuation": False},
    "FuzzyMatch": {"type": "fuzzy_match"},
    "ModelBasedClassify": {
        "type": "judge",
        "rubric": "The answer agrees with the ideal answer: {{ target }}",
    },
}


def import_openai_evals(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    eval_class: str = "Match",
    repeats: int = 5,
    limits: Limits | None = None,
) -> ImportResult:
    """Import an openai/evals samples JSONL into ``DEST/cases.yaml`` +
    ``DEST/experiment.toml``; the file is read within ``limits`` (default :class:`Limits`:
    a regular file of at most 256 MiB)."""
    if eval_class not in EVAL_CLASSES:
        raise ArgumentError(
            f"'eval_class' must be one of {', '.join(EVAL_CLASSES)}; got {eval_class!r}"
        )
    path = Path(source)
    sources = Sources(limits)
    if path.suffix != ".jsonl":
        raise source_error(path, "openai/evals samples must be a .jsonl file")
    unsupported: list[Unsupported] = []
    if eval_class == "ModelBasedClassify":
        unsupported.append(
            Unsupported(
                "modelgraded spec",
                str(path),
                "the registry's grading prompt is not read; evalnb's judge asks whether the "
                "answer agrees with the ideal answer",
            )
        )
    with reading(path):
        cases = []
        for n, (where, record) in enumerate(
            records(path, "openai/evals samples", sources), start=1
        ):
            raw, ideal = record.get("input"), record.get("ideal")
            case: dict[str, Any] = {"id": f"sample-{n}"}
            if isinstance(raw, str) and raw.strip():
                case["prompt"] = raw
            elif isinstance(raw, list) and raw:
                chat = messages(raw, where, unsupported)
                if chat is None:
                    continue
                case["messages"] = chat
            else:
                raise source_error(
                    Path(where), f"expected 'input' (a chat list or text); got {raw!r}"
                )
            ideals = ideal if isinstance(ideal, list) else [ideal]
            if not ideals or not all(isinstance(i, str | int | float) and str(i) for i in ideals):
                raise source_error(
                    Path(where), f"expected 'ideal' (a string or a list of strings); got {ideal!r}"
                )
            texts = [str(i) for i in ideals]
            case["target"] = texts[0] if len(texts) == 1 else texts
            extra = {k: v for k, v in record.items() if k not in ("input", "ideal")}
            if extra:
                case["metadata"] = extra
            case["checks"] = [dict(EVAL_CLASSES[eval_class])]
            cases.append(case)
        result = ImportResult("openai-evals", path, unsupported=unsupported, files=sources.files)
        judge = eval_class == "ModelBasedClassify"
        return write_suite(result, dest, cases=cases, repeats=repeats, judge=judge)
