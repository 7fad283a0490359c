"""openai/evals samples (JSONL lines with an ``input`` chat list and an ``ideal`` string or
list) as an evalnb suite; the eval class picks the check (:data:`EVAL_CLASSES`).

A registry entry (``evals/registry/evals/NAME.yaml``) is read too:
:func:`import_openai_evals_registry` follows the eval's ``id`` to its class and ``args``,
reads ``samples_jsonl`` under the registry's ``data/`` folder, and for
``ModelBasedClassify`` the ``modelgraded_spec`` under ``modelgraded/`` (its prompt becomes
the judge's rubric, its passing choices named in it). A Git LFS pointer where the samples
should be is named as one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._records import item_hint, lfs_pointer, messages, records
from evalnb.interop._shapes import shown
from evalnb.interop._suite import (
    ImportNotes,
    ImportResult,
    reading,
    source_error,
    write_suite,
)

__all__ = ["EVAL_CLASSES", "import_openai_evals", "import_openai_evals_registry"]

#: openai/evals eval classes and the check each becomes.
EVAL_CLASSES: dict[str, dict[str, Any]] = {
    # Match: the answer starts with an ideal answer, as sampled (nothing stripped).
    "Match": {
        "type": "starts_with",
        "ignore_case": False,
        "ignore_whitespace": False,
        "ignore_punctuation": False,
    },
    # Includes: an ideal answer appears in the answer.
    "Includes": {
        "type": "includes",
        "ignore_case": False,
        "ignore_whitespace": False,
        "ignore_punctuation": False,
    },
    "FuzzyMatch": {"type": "fuzzy_match"},
    "ModelBasedClassify": {
        "type": "judge",
        "rubric": "The answer agrees with the ideal answer: {{ target }}",
    },
    "JsonMatch": {"type": "json_match"},
}
#: The request parameters an eval class fixes in its ``eval_sample`` (openai/evals
#: ``evals/elsuite/basic``): Match and FuzzyMatch sample at temperature 0, FuzzyMatch
#: with ``max_tokens`` 100 (its default).
CLASS_PARAMS: dict[str, dict[str, Any]] = {
    "Match": {"temperature": 0.0},
    "FuzzyMatch": {"temperature": 0.0, "max_tokens": 100},
}


def import_openai_evals(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    eval_class: str = "Match",
    repeats: int = 5,
    limits: Limits | None = None,
    check: dict[str, Any] | None = None,
    notes: ImportNotes | None = None,
    sources: Sources | None = None,
) -> ImportResult:
    """Import an openai/evals samples JSONL into ``DEST/cases.yaml`` +
    ``DEST/experiment.toml``; the file is read within ``limits`` (default :class:`Limits`:
    a regular file of at most 256 MiB)."""
    if eval_class not in EVAL_CLASSES:
        raise ArgumentError(
            f"'eval_class' must be one of {', '.join(EVAL_CLASSES)}; got {eval_class!r}"
        )
    path = Path(source)
    sources = sources or Sources(limits)
    if path.suffix != ".jsonl":
        raise source_error(path, "openai/evals samples must be a .jsonl file")
    notes = notes or ImportNotes()
    if eval_class == "ModelBasedClassify" and check is None:
        notes.refuse(
            "modelgraded spec",
            str(path),
            "the registry's grading prompt is not read; evalnb's judge asks whether the "
            "answer agrees with the ideal answer",
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
                chat = messages(raw, where, notes)
                if chat is None:
                    continue
                case["messages"] = chat
            else:
                raise source_error(
                    Path(where),
                    f"expected 'input' (a chat list or text); got {shown(raw)}"
                    + (item_hint(record, "") or ' (each line: {"input": ..., "ideal": ...})'),
                )
            ideals = ideal if isinstance(ideal, list) else [ideal]
            if not ideals or not all(isinstance(i, str | int | float) and str(i) for i in ideals):
                raise source_error(
                    Path(where),
                    f"expected 'ideal' (a string or a list of strings); got {shown(ideal)}",
                )
            texts = [str(i) for i in ideals]
            case["target"] = texts[0] if len(texts) == 1 else texts
            extra = {k: v for k, v in record.items() if k not in ("input", "ideal")}
            if extra:
                case["metadata"] = extra
            case["checks"] = [dict(check or EVAL_CLASSES[eval_class])]
            cases.append(case)
        if not notes.mapped and not notes.approximated:
            how = f"{EVAL_CLASSES[eval_class]['type']} check"
            notes.map(f"class {eval_class}", str(path), how)
        variant: dict[str, Any] = {"name": "baseline"}
        if eval_class in CLASS_PARAMS:
            variant["params"] = dict(CLASS_PARAMS[eval_class])
            shown_params = ", ".join(f"{k} {v:g}" for k, v in variant["params"].items())
            notes.map(
                f"class {eval_class} sampling",
                str(path),
                f"request params {shown_params}, as the class samples",
            )
        result = notes.result("openai-evals", path, sources.files)
        judge = eval_class == "ModelBasedClassify"
        return write_suite(
            result, dest, cases=cases, variants=[variant], repeats=repeats, judge=judge
        )


def _registry_yaml(path: Path, sources: Sources, what: str) -> Any:
    text = sources.text(path, what)
    lfs_pointer(path, text)
    return sources.yaml(path, text)


def _rubric(spec: dict[str, Any], where: Path) -> tuple[str, str]:
    """A modelgraded spec as a judge rubric, and how it differs from the spec."""
    prompt = spec.get("prompt")
    if isinstance(prompt, list):  # a chat prompt: its text, in order
        prompt = "\n\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    if not isinstance(prompt, str) or not prompt.strip():
        raise source_error(where, f"expected a modelgraded 'prompt'; got {shown(prompt)}")
    choices = str(spec.get("choice_strings", ""))
    scores = spec.get("choice_scores")
    passing = (
        [c for c, v in scores.items() if isinstance(v, int | float) and v >= 1]
        if isinstance(scores, dict)
        else []
    )
    text = (
        prompt.replace("{ideal}", "{{ target }}")
        .replace("{input}", "the question below")
        .replace("{completion}", "the answer below")
    )
    if passing:
        text += f"\n\nPASS when your choice would be {', '.join(passing)}; FAIL otherwise."
    else:
        text += "\n\nPASS when the answer is acceptable by the options above; FAIL otherwise."
    how = (
        f"the judge answers PASS/FAIL for the spec's choices {choices or '?'} "
        f"(passing: {', '.join(passing) or 'judged from the options'}); {{input}} and "
        "{completion} are the question and answer evalnb shows the judge"
    )
    return text, how


def import_openai_evals_registry(
    source: str | os.PathLike[str],
    name: str,
    dest: str | os.PathLike[str],
    *,
    repeats: int = 5,
    limits: Limits | None = None,
) -> ImportResult:
    """Import the eval ``name`` of an openai/evals registry YAML (see the module); the
    samples and spec files must lie inside the registry folder (``evals/``'s parent)."""
    path = Path(source)
    root = path.parent.parent if path.parent.name == "evals" else path.parent
    sources = Sources(limits, root=root)
    with reading(path):
        registry = _registry_yaml(path, sources, "the openai/evals registry")
        if not isinstance(registry, dict) or name not in registry:
            names = ", ".join(sorted(k for k in (registry or {}) if "." not in str(k)))
            raise source_error(path, f"names no eval {name!r}; evals here: {names}")
        entry = registry[name]
        if isinstance(entry, dict) and "id" in entry and "class" not in entry:
            entry = registry.get(entry["id"])
        if not isinstance(entry, dict) or not isinstance(entry.get("class"), str):
            raise source_error(
                path, f"{name}: expected an entry with a 'class'; got {shown(entry)}"
            )
        cls = entry["class"].rpartition(":")[2]
        args = entry.get("args") or {}
        notes = ImportNotes()
        where = f"{path}: {name}"
        if cls not in EVAL_CLASSES:
            raise source_error(
                path,
                f"{name}: class {entry['class']!r} is not one evalnb reads "
                f"({', '.join(EVAL_CLASSES)})",
            )
        samples = args.get("samples_jsonl")
        if not isinstance(samples, str):
            raise source_error(path, f"{name}: expected args.samples_jsonl; got {shown(samples)}")
        expected = root / "data" / samples
        if not expected.is_file():
            raise source_error(
                path,
                f"{name}: args.samples_jsonl {samples!r} is read under the registry's data/ "
                f"folder, as openai/evals reads it, and {expected} is no file: keep the "
                "registry's layout (evals/ and data/ side by side)",
            )
        samples_path = sources.reference(root / "data" / "x", f"file://{samples}", where)[0]
        check = dict(EVAL_CLASSES[cls])
        if cls == "ModelBasedClassify":
            spec_name = args.get("modelgraded_spec")
            spec_ref = f"file://{spec_name}.yaml"
            spec_path = sources.reference(root / "modelgraded" / "x", spec_ref, where)[0]
            spec = _registry_yaml(spec_path, sources, "the modelgraded spec")
            if isinstance(spec, dict) and "prompt" not in spec and spec_name in spec:
                spec = spec[spec_name]  # the older layout: the spec under its own name
            if not isinstance(spec, dict):
                raise source_error(spec_path, f"expected a modelgraded spec; got {shown(spec)}")
            check["rubric"], how = _rubric(spec, spec_path)
            notes.approximate(f"modelgraded_spec {spec_name}", where, how)
        else:
            notes.map(f"class {cls}", where, f"{check['type']} check")
        if "eval_type" in args:
            notes.approximate(
                f"args.eval_type {args['eval_type']}",
                where,
                "evalnb's judge explains briefly, then answers PASS or FAIL",
            )
        read = {"samples_jsonl", "modelgraded_spec", "eval_type"}
        if cls == "Includes" and isinstance(args.get("ignore_case"), bool):
            check["ignore_case"] = args["ignore_case"]
            notes.map("args.ignore_case", where, "the includes check's ignore_case")
            read.add("ignore_case")
        for key in sorted(set(args) - read, key=str):
            notes.refuse(f"args.{key}", where, "evalnb has no counterpart")
        return import_openai_evals(
            samples_path,
            dest,
            eval_class=cls,
            repeats=repeats,
            check=check,
            notes=notes,
            sources=sources,
        )
