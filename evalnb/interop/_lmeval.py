"""lm-evaluation-harness task YAML, with its documents from a local file, as an evalnb suite.

``import_lm_eval("gsm8k-cot.yaml", dest, data="test.jsonl")``:

- ``include:`` is read beside the task (the task's own keys win), within the caps;
- documents come from ``data`` (JSONL, JSON, CSV or Parquet): a hub dataset cannot be
  fetched, and the error says to give ``--data``;
- ``doc_to_text`` / ``doc_to_target`` / ``doc_to_choice`` (a Jinja2 template, a field
  name, a list or an index, as lm-eval reads them) are rendered per document into the
  case's prompt, target and choices; ``description`` (a template too) starts each
  prompt, then ``fewshot_config.samples`` with ``num_fewshot`` as lm-eval joins them
  (``target_delimiter``, ``fewshot_delimiter``), as lm-eval builds a context without a
  chat template;
- ``generate_until``: ``generation_kwargs`` become request params (``until`` as
  ``stop``, ``max_gen_toks`` as ``max_tokens``, ``do_sample: false`` as temperature 0);
  each ``filter_list`` entry of ``regex`` (+ ``take_first``) becomes an
  ``extract_match`` check named by the filter, with ``exact_match``'s options;
- ``multiple_choice`` is scored by loglikelihood, which a generation-only target cannot
  give: it is listed as approximated and offered as a generated letter read by the
  ``choice`` check.

Anything else (``!function`` hooks, other metrics and filters, loglikelihood tasks) is
listed, never dropped.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Any

from evalnb._types import render_template
from evalnb.cases import safe_loader
from evalnb.interop._bounded import Limits, Sources
from evalnb.interop._records import records
from evalnb.interop._shapes import shown
from evalnb.interop._suite import (
    ImportNotes,
    ImportResult,
    reading,
    source_error,
    write_suite,
)

__all__ = ["import_lm_eval"]

#: Task keys read here; the others are listed as not imported.
_READ = {
    "task",
    "tag",
    "group",
    "include",
    "dataset_path",
    "dataset_name",
    "dataset_kwargs",
    "training_split",
    "validation_split",
    "test_split",
    "fewshot_split",
    "output_type",
    "doc_to_text",
    "doc_to_target",
    "doc_to_choice",
    "target_delimiter",
    "fewshot_delimiter",
    "fewshot_config",
    "num_fewshot",
    "generation_kwargs",
    "filter_list",
    "metric_list",
    "repeats",
    "metadata",
    "description",
    "should_decontaminate",
    "doc_to_decontamination_query",
}


class _Function:
    """A ``!function module.name`` hook: code evalnb does not run."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"!function {self.name}"


def _load_yaml(path: Path, text: str, sources: Sources) -> Any:
    """The task YAML (PyYAML's safe reading, ``!function`` kept as a marker), refused past
    ``Limits.yaml_nodes`` expanded nodes."""

    class Loader(safe_loader()):  # type: ignore[misc]
        pass

    Loader.add_constructor(
        "!function", lambda loader, node: _Function(str(loader.construct_scalar(node)))
    )
    return sources.yaml(path, text, loader=Loader)


class _Task:
    def __init__(self, path: Path, sources: Sources, limits: Limits):
        self.path = path
        self.sources = sources
        self.limits = limits
        self.where = str(path)
        self.notes = ImportNotes()

    def config(self, path: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
        """The task at ``path`` with its ``include:`` chain merged under it (``chain``: the
        files that include it, outermost first)."""
        text = self.sources.text(path, "the lm-eval task")
        data = _load_yaml(path, text, self.sources)
        if not isinstance(data, dict):
            raise source_error(
                path, f"not an lm-eval task: expected a YAML object; got {shown(data)}"
            )
        include = data.pop("include", None)
        if include is None:
            return data
        if not isinstance(include, str):
            raise source_error(path, f"'include' must name a YAML file beside it; got {include!r}")
        base_path, _ = self.sources.reference(path, include, f"{path}: include")
        chain = (*chain, path)
        if base_path.resolve() in {p.resolve() for p in chain}:
            loop = " -> ".join(p.name for p in (*chain, base_path))
            raise source_error(path, f"'include' makes a loop: {loop}")
        if len(chain) > 8:
            raise source_error(path, f"'include' chains are at most 8 files deep; got {include!r}")
        base = self.config(base_path, chain)
        self.notes.map("include", self.where, f"{include} read and merged under the task")
        return {**base, **data}


def _field(spec: Any, doc: dict[str, Any], where: str, what: str) -> Any:
    """An lm-eval ``doc_to_*`` value for ``doc``: a field name, a template, a list, an
    index."""
    if isinstance(spec, str):
        if spec in doc:
            return doc[spec]
        if "{{" in spec or "{%" in spec:
            try:
                return render_template(spec, doc)
            except ValueError as exc:
                raise source_error(Path(where), f"{what}: {exc}") from None
        return spec
    return spec


def _template(text: str, doc: dict[str, Any], where: str, what: str) -> str:
    """``text`` rendered with ``doc`` when it is a template (lm-eval's ``apply_template``)."""
    if "{{" not in text and "{%" not in text:
        return text
    try:
        return str(render_template(text, doc))
    except ValueError as exc:
        raise source_error(Path(where), f"{what}: {exc}") from None


def _choices(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise source_error(
                Path(where), f"doc_to_choice must give a list; got {value[:80]!r}"
            ) from None
    if not isinstance(value, list | tuple) or not value:
        raise source_error(Path(where), f"doc_to_choice must give a list; got {value!r}")
    return [str(v) for v in value]


def _documents(task: _Task, data: Path) -> list[tuple[str, dict[str, Any]]]:
    if data.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        raw = task.sources.read(data, "the documents file")
        try:
            table = pq.read_table(pa.BufferReader(raw))
        except (pa.ArrowInvalid, OSError) as exc:
            raise source_error(data, f"not a Parquet file ({exc})") from None
        return [(f"{data}[{i}]", row) for i, row in enumerate(table.to_pylist())]
    if data.suffix not in (".jsonl", ".json", ".csv"):
        raise source_error(data, "--data must be a .jsonl, .json, .csv or .parquet file")
    return list(records(data, "lm-eval documents", task.sources))


def _params(task: _Task, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    params: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "until":
            params["stop"] = [value] if isinstance(value, str) else list(value)[:4]
            if isinstance(value, list) and len(value) > 4:
                task.notes.approximate(
                    "generation_kwargs.until", task.where, "only the first 4 stop strings are sent"
                )
        elif key == "max_gen_toks":
            params["max_tokens"] = value
        elif key == "do_sample":
            if value is False:
                params.setdefault("temperature", 0)
        elif key in ("temperature", "top_p", "seed"):
            params[key] = value
        else:
            task.notes.refuse(
                f"generation_kwargs.{key}", task.where, "not an OpenAI request parameter"
            )
    if params:
        task.notes.map("generation_kwargs", task.where, f"request params {sorted(params)}")
    return params


def _match_options(task: _Task, metrics: Any) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for metric in metrics if isinstance(metrics, list) else []:
        name = metric.get("metric") if isinstance(metric, dict) else metric
        if name == "exact_match" and isinstance(metric, dict):
            for key in ("ignore_case", "ignore_punctuation", "regexes_to_ignore"):
                if key in metric:
                    options[key] = metric[key]
            task.notes.map("metric exact_match", task.where, "extract_match with its options")
        elif name in ("acc", "acc_norm"):
            task.notes.approximate(
                f"metric {name}", task.where, "the choice check's pass rate (a generated letter)"
            )
        else:
            task.notes.refuse(f"metric {name}", task.where, "no evalnb check computes it")
    return options


def _checks(task: _Task, config: dict[str, Any], options: dict[str, Any]) -> list[dict[str, Any]]:
    filters = config.get("filter_list")
    if not filters:
        return [{"name": "exact_match", "type": "extract_match", **options}]
    checks = []
    for i, entry in enumerate(filters if isinstance(filters, list) else []):
        entry = entry if isinstance(entry, dict) else {}
        name = entry.get("name", f"filter-{i + 1}")
        steps = [s for s in entry.get("filter") or [] if isinstance(s, dict)]
        functions = [s.get("function") for s in steps]
        if functions not in (["regex", "take_first"], ["regex"]):
            task.notes.refuse(
                f"filter {name}",
                task.where,
                f"filters {functions}: only regex (+ take_first) is read",
            )
            continue
        regex_step = steps[0]
        check: dict[str, Any] = {"name": str(name), "type": "extract_match", **options}
        check["pattern"] = str(regex_step.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
        if "group_select" in regex_step:
            check["group_select"] = regex_step["group_select"]
        task.notes.map(
            f"filter {name}",
            task.where,
            "extract_match: the regex reads the answer, then exact_match",
        )
        checks.append(check)
    return checks


def _fewshot(task: _Task, config: dict[str, Any]) -> str:
    count = config.get("num_fewshot") or 0
    fewshot = config.get("fewshot_config") or {}
    samples = fewshot.get("samples") if isinstance(fewshot, dict) else None
    if not count:
        return ""
    if isinstance(samples, _Function) or not isinstance(samples, list):
        task.notes.approximate(
            "num_fewshot",
            task.where,
            f"{count} examples from a dataset split cannot be read: zero-shot",
        )
        return ""
    delimiter = str(config.get("target_delimiter", " "))
    between = str(config.get("fewshot_delimiter", "\n\n"))
    shots = []
    for n, sample in enumerate(samples[:count]):
        where = f"{task.path}: fewshot_config.samples[{n}]"
        text = _field(config.get("doc_to_text"), sample, where, "doc_to_text")
        target = _field(config.get("doc_to_target"), sample, where, "doc_to_target")
        shots.append(f"{text}{delimiter}{target}{between}")
    task.notes.map(
        "fewshot_config.samples", task.where, f"{len(shots)} examples before each prompt"
    )
    return "".join(shots)


def _description(task: _Task, config: dict[str, Any]) -> str:
    """The task's ``description``: lm-eval renders it with each document and puts it first
    in the context, before the few-shot examples and the document's text."""
    description = config.get("description")
    if description is None or description == "":
        return ""
    if not isinstance(description, str):
        raise source_error(task.path, f"'description' must be text; got {shown(description)}")
    task.notes.map("description", task.where, "rendered per document at the start of each prompt")
    return description


def import_lm_eval(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    data: str | os.PathLike[str] | None = None,
    repeats: int = 5,
    limits: Limits | None = None,
) -> ImportResult:
    """Import an lm-eval task YAML and its documents (``data``) into ``DEST/cases.yaml`` +
    ``DEST/experiment.toml`` (see the module)."""
    path = Path(source)
    limits = limits or Limits()
    sources = Sources(limits, root=path.parent)
    task = _Task(path, sources, limits)
    with reading(path):
        config = task.config(path)
        if data is None:
            hub = config.get("dataset_path", "?")
            raise source_error(
                path,
                f"its documents live on a dataset hub ({hub!r}), which evalnb does not fetch: "
                "give a local file with --data FILE (JSONL, JSON, CSV or Parquet)",
            )
        return _build(task, config, Path(data), dest, repeats)


def _build(
    task: _Task, config: dict[str, Any], data: Path, dest: str | os.PathLike[str], repeats: int
) -> ImportResult:
    path = task.path
    for key in sorted(set(config) - _READ, key=str):
        task.notes.refuse(key, task.where, "this task field has no evalnb counterpart")
    if config.get("repeats") not in (None, 1):
        task.notes.approximate(
            "repeats",
            task.where,
            f"lm-eval generates {config['repeats']} answers per document; the experiment "
            f"plans {repeats} repeats of each case (--repeats), each scored on its own",
        )
    if config.get("should_decontaminate"):
        task.notes.refuse(
            "should_decontaminate",
            task.where,
            "evalnb does not look for the documents in training data (lm-eval's "
            "decontamination report); the scores are the same",
        )
    hooks = [k for k, v in config.items() if isinstance(v, _Function)]
    for key in hooks:
        task.notes.refuse(
            key,
            task.where,
            f"{config[key]!r} is Python in the task's module; evalnb does not run it",
        )
    if {"doc_to_text", "doc_to_target"} & set(hooks):
        refused = task.notes.result("lm-eval", path).refusals()
        raise source_error(path, f"no case can be built; {refused}")
    output = config.get("output_type", "generate_until")
    if output not in ("generate_until", "multiple_choice"):
        raise source_error(
            path,
            f"output_type {output!r} is scored by loglikelihood, which a generation-only "
            "target cannot give; evalnb imports generate_until and multiple_choice tasks",
        )
    if config.get("dataset_path"):
        task.notes.approximate(
            "dataset_path",
            task.where,
            f"documents from {data.name}, not the hub's {config['dataset_path']!r}",
        )
    variant: dict[str, Any] = {"name": str(config.get("task") or "baseline")}
    variant["name"] = re.sub(r"[^A-Za-z0-9_.-]+", "-", variant["name"])
    options = _match_options(task, config.get("metric_list"))
    prefix = _fewshot(task, config)
    cases: list[dict[str, Any]] = []
    if output == "generate_until":
        params = _params(task, config.get("generation_kwargs"))
        if params:
            variant["params"] = params
        checks = _checks(task, config, options)
    else:
        task.notes.approximate(
            "output_type multiple_choice",
            task.where,
            "lm-eval compares the loglikelihood of each choice; a generation-only target "
            "cannot give it, so the model is shown the choices and its letter is read by "
            "the choice check",
        )
        checks = [{"name": "acc", "type": "choice"}]
    description = _description(task, config)
    for where, doc in _documents(task, data):
        text = _field(config.get("doc_to_text"), doc, where, "doc_to_text")
        target = _field(config.get("doc_to_target"), doc, where, "doc_to_target")
        head = _template(description, doc, where, "description")
        case: dict[str, Any] = {
            "id": f"doc-{len(cases) + 1}",
            "prompt": f"{head}{prefix}{text}",
        }
        if output == "multiple_choice":
            choices = _choices(
                _field(config.get("doc_to_choice"), doc, where, "doc_to_choice"), where
            )
            if isinstance(target, str) and target.strip().isdigit():
                target = int(target.strip())
            if isinstance(target, int):
                if not 0 <= target < len(choices):
                    raise source_error(Path(where), f"doc_to_target {target} is not a choice index")
                target = choices[target]
            case["choices"] = choices
        case["target"] = str(target)
        case["checks"] = checks
        case["metadata"] = {"source": where}
        cases.append(case)
    task.notes.map(
        "doc_to_text / doc_to_target",
        task.where,
        "rendered per document: the case's prompt and target",
    )
    result = task.notes.result("lm-eval", path, task.sources.files)
    return write_suite(result, dest, cases=cases, variants=[variant], repeats=repeats)
