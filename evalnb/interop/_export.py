"""A run out, for other tools: CSV, JSONL, Every Eval Ever, Inspect ``precomputed_scores``.

- :func:`export_samples` — one row per sample: its key and answer, one ``check:NAME``
  column per check (``true``/``false``/empty for unscored), the case fields joined
  (``group``, ``split``, ``tags``, ``target``, ``metadata``); in CSV a text cell that a
  spreadsheet would run as a formula gets a ``'`` in front (unless ``raw=True``);
- :func:`export_eee` — Every Eval Ever (schema 0.2.3): an aggregate record per variant
  whose results are evalnb's suite rates, the interval in ``uncertainty`` with its method
  named, and one instance record per (sample, check), the repeat in ``metadata``;
- :func:`export_inspect_scores` — human verdicts as the JSONL Inspect's
  ``precomputed_scores`` scorer reads: ``{id, epoch, value, explanation}``, ``C`` for a
  pass, ``I`` for a fail (``needs_review`` is no verdict and is left out).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import uuid as uuid_module
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from evalnb._exceptions import ArgumentError
from evalnb.analysis import Run, load, suite_rate
from evalnb.analysis._stopped import refuse_stopped
from evalnb.store import Manifest

__all__ = ["EEE_SCHEMA_VERSION", "export_eee", "export_inspect_scores", "export_samples"]

EEE_SCHEMA_VERSION = "0.2.3"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def samples_frame(run: Run) -> pd.DataFrame:
    """One row per sample: key, answer and status, ``check:NAME`` outcomes, case fields."""
    samples = run.samples[
        [
            "run_id",
            "case_id",
            "variant",
            "repeat",
            "status",
            "error",
            "answer",
            "prompt",
            "model",
            "latency_ms",
            "prompt_tokens",
            "completion_tokens",
        ]
    ].astype({"run_id": object, "case_id": object, "variant": object})
    checks = run.checks.astype({"run_id": object, "case_id": object, "variant": object})
    key = ["run_id", "case_id", "variant", "repeat"]
    if not checks.empty:
        wide = checks.pivot_table(
            index=key, columns="check", values="outcome", aggfunc="first", dropna=False
        )
        wide.columns = [f"check:{c}" for c in wide.columns]
        samples = samples.merge(wide.reset_index(), on=key, how="left")
    cases = []
    for run_id, manifest in run.manifests.items():
        for case in manifest.get("cases", []):
            cases.append(
                {
                    "run_id": run_id,
                    "case_id": case["id"],
                    "group": case.get("group") or case["id"],
                    "split": case.get("split") or "dev",
                    "tags": ",".join(case.get("tags") or []),
                    "target": _json(case["target"]) if "target" in case else None,
                    "metadata": _json(case.get("metadata") or {}),
                }
            )
    if cases:
        samples = samples.merge(pd.DataFrame(cases), on=["run_id", "case_id"], how="left")
    return samples.sort_values(key, kind="stable").reset_index(drop=True)


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """``value`` with a ``'`` in front when it is text a spreadsheet would run as a formula
    (it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return); the OWASP rule.

    >>> neutralise("=HYPERLINK(\"http://x\")")
    '\'=HYPERLINK("http://x")'
    """
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def _neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell through :func:`neutralise` (numbers stay numbers)."""
    out = frame.copy()
    for column in out.columns:
        dtype = out[column].dtype
        if pd.api.types.is_object_dtype(dtype) or isinstance(
            dtype, pd.CategoricalDtype | pd.StringDtype
        ):
            out[column] = out[column].astype(object).map(neutralise)
    return out


def export_samples(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    format: str = "csv",
    raw: bool = False,
) -> Path:
    """Write one row per sample as ``format`` ``"csv"`` or ``"jsonl"``; returns the path.

    Answers, prompts and case ids are text from models and other people: in CSV a cell
    starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a ``'`` in
    front, so a spreadsheet shows it as text instead of running it (``=HYPERLINK(...)``,
    ``=cmd|' /C calc'!A0``). ``raw=True`` writes every cell as it is (CSV only; JSONL is
    always written as it is).
    """
    if format not in ("csv", "jsonl"):
        raise ArgumentError(f"'format' must be 'csv' or 'jsonl'; got {format!r}")
    if not isinstance(raw, bool):
        raise ArgumentError(f"'raw' must be True or False; got {raw!r}")
    frame = samples_frame(load(run_dir))
    out = Path(out)
    if format == "csv":
        # CRLF ends a row (RFC 4180): then a cell holding a lone CR is quoted too (Python
        # 3.11's csv writer quotes only the characters of its line terminator).
        (frame if raw else _neutralised(frame)).to_csv(out, index=False, lineterminator="\r\n")
    else:
        frame.to_json(out, orient="records", lines=True, force_ascii=False, date_format="iso")
    return out


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "_"


def _sample_hash(prompt: str, target: Any) -> str:
    return hashlib.sha256(f"{prompt}\n{_json(target)}".encode()).hexdigest()


@dataclass(frozen=True)
class _Evaluation:
    """One variant of the run as Every Eval Ever names it: its model and evaluation id."""

    variant: str
    model: str
    evaluation_id: str


def _model(manifest: Manifest, variant: str) -> str:
    """The variant's ``params.model``, else the target's model, else the variant's name."""
    model = str((manifest.target or {}).get("model") or variant)
    params = next(
        (v.get("params") or {} for v in manifest.variants if v["name"] == variant),
        {},
    )
    return str(params.get("model") or model)


def _folder(run_id: str, model: str) -> Path:
    developer, _, name = model.rpartition("/")
    # The Every Eval Ever layout: data/<eval>/<developer>/<model>/<uuid>_samples.jsonl
    return Path("data", _safe(run_id), _safe(developer or "unknown"), _safe(name))


def _uncertainty(row: pd.Series) -> dict[str, Any]:
    uncertainty: dict[str, Any] = {"num_samples": int(row["samples"])}
    if pd.notna(row["low"]):
        uncertainty["confidence_interval"] = {
            "lower": float(row["low"]),
            "upper": float(row["high"]),
            "confidence_level": float(row["level"]),
            "method": f"evalnb suite_rate: {row['method']} ({row['basis']})",
        }
    if pd.notna(row["se"]) and row["se"] > 0:
        uncertainty["standard_error"] = {
            "value": float(row["se"]),
            "method": "across cases (clustered by group)",
        }
    return uncertainty


def _result(row: pd.Series, variant: str, dataset: str) -> dict[str, Any]:
    """The aggregate result of one check: its suite rate and interval."""
    return {
        "evaluation_result_id": f"{variant}/{row['check']}",
        "evaluation_name": str(row["check"]),
        "source_data": {"dataset_name": dataset, "source_type": "other"},
        "metric_config": {
            "evaluation_description": f"evalnb check {row['check']!r}: mean of "
            "per-case pass rates (the case is the unit; repeats are draws)",
            "metric_name": "pass rate",
            "metric_kind": "accuracy",
            "metric_unit": "proportion",
            "lower_is_better": False,
            "score_type": "continuous",
            "min_score": 0,
            "max_score": 1,
        },
        "score_details": {
            "score": float(row["estimate"]) if pd.notna(row["estimate"]) else 0.0,
            "details": {
                "cases": str(int(row["cases"])),
                "repeats": str(row["repeats"]),
                "incomplete": str(int(row["incomplete"])),
                "note": str(row["note"] or ""),
            },
            "uncertainty": _uncertainty(row),
        },
    }


def _references(case: dict[str, Any]) -> list[str]:
    reference = case.get("target")
    references = [str(r) for r in (reference if isinstance(reference, list) else [])]
    if reference is not None and not references:
        references = [str(reference)]
    return references


def _instance(
    evaluation: _Evaluation, check: dict[str, Any], sample: dict[str, Any], case: dict[str, Any]
) -> dict[str, Any]:
    """The instance record of one scored (sample, check)."""
    answer = sample["answer"] if isinstance(sample["answer"], str) else ""
    score = check["score"] if pd.notna(check["score"]) else float(bool(check["outcome"]))
    return {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": evaluation.evaluation_id,
        "model_id": evaluation.model,
        "evaluation_name": str(check["check"]),
        "evaluation_result_id": f"{evaluation.variant}/{check['check']}",
        "sample_id": str(check["case_id"]),
        "sample_hash": _sample_hash(str(sample["prompt"]), case.get("target")),
        "interaction_type": "single_turn",
        "input": {"raw": str(sample["prompt"]), "reference": _references(case)},
        "output": {"raw": [answer]},
        "answer_attribution": [
            {
                "turn_idx": 0,
                "source": "output.raw",
                "extracted_value": answer,
                "extraction_method": f"evalnb check {check['check_type']}",
                "is_terminal": True,
            }
        ],
        "evaluation": {"score": float(score), "is_correct": bool(check["outcome"])},
        "performance": {"latency_ms": float(sample["latency_ms"])},
        "error": sample["error"] if isinstance(sample["error"], str) else None,
        "metadata": {
            "repeat": str(int(check["repeat"])),
            "variant": evaluation.variant,
            "status": str(sample["status"]),
            "detail": str(check["detail"] or ""),
        },
    }


_SAMPLE_COLUMNS = ["case_id", "repeat", "status", "error", "answer", "prompt", "latency_ms"]
_CHECK_COLUMNS = ["case_id", "repeat", "check", "check_type", "outcome", "score", "detail"]


def _instances(
    evaluation: _Evaluation,
    samples: pd.DataFrame,
    checks: pd.DataFrame,
    cases: dict[str, dict[str, Any]],
) -> list[str]:
    """One JSON line per scored check of the variant, in the order of its checks; each
    check finds its sample in a dict keyed once by (case, repeat)."""
    by_key: dict[tuple[Any, Any], dict[str, Any]] = {}
    for sample in samples[_SAMPLE_COLUMNS].to_dict("records"):
        by_key.setdefault((sample["case_id"], sample["repeat"]), sample)
    lines = []
    for check in checks[_CHECK_COLUMNS].to_dict("records"):
        if pd.isna(check["outcome"]):
            continue  # unscored is not a score
        sample = by_key[(check["case_id"], check["repeat"])]
        case = cases.get(check["case_id"], {})
        lines.append(_json(_instance(evaluation, check, sample, case)))
    return lines


def _aggregate(
    evaluation: _Evaluation,
    manifest: Manifest,
    *,
    organization: str,
    retrieved: str,
    results: list[dict[str, Any]],
    detailed: dict[str, Any],
) -> dict[str, Any]:
    """The aggregate record of one variant: the source, the model, the results."""
    return {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": evaluation.evaluation_id,
        "evaluation_timestamp": str(manifest.started_at),
        "retrieved_timestamp": retrieved,
        "source_metadata": {
            "source_name": f"evalnb run {manifest.run_id}",
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "evaluator_relationship": "third_party",
        },
        "model_info": {
            "name": evaluation.model,
            "id": evaluation.model,
            "additional_details": {
                "deployment_type": "unknown",
                "model_availability": "unknown",
                "variant": evaluation.variant,
            },
        },
        "eval_library": {
            "name": "evalnb",
            "version": str(manifest.evalnb_version or "unknown"),
        },
        "evaluation_results": results,
        "detailed_evaluation_results": detailed,
    }


def _write_instances(out: Path, path: Path, lines: list[str]) -> dict[str, Any]:
    """Write the instance lines to ``out / path``; returns the aggregate's pointer to them
    (``detailed_evaluation_results``)."""
    (out / path).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return {
        "format": "jsonl",
        "file_path": path.as_posix(),
        "hash_algorithm": "sha256",
        "checksum": hashlib.sha256((out / path).read_bytes()).hexdigest(),
        "total_rows": len(lines),
    }


def _rates(run: Run, level: float) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few cases: the method and note say so per row
        return suite_rate(run, check=None, level=level)


def export_eee(
    run_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    organization: str = "unknown",
    level: float = 0.95,
) -> list[Path]:
    """Write Every Eval Ever records for a run under ``out_dir``, in that project's layout:
    per variant ``data/<run_id>/<developer>/<model>/<uuid>.json`` (the aggregate) and
    ``<uuid>_samples.jsonl`` (the instances) beside it; returns the paths. A run made with
    ``until=`` (optionally stopped) is refused: its suite intervals would be fixed-n ones."""
    run = load(run_dir)
    refuse_stopped(run, "interval in an export", "evalnb.confidence_sequence(run)")
    manifest = run.info
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    retrieved = str(int(dt.datetime.now(dt.UTC).timestamp()))
    rates = _rates(run, level)
    dataset = str((manifest.cases_file or {}).get("path") or manifest.run_id)
    cases = {c["id"]: c for c in manifest.cases}
    samples = run.samples.astype({"case_id": object, "variant": object})
    checks = run.checks.astype({"case_id": object, "variant": object})
    written = []
    for variant in run.variants:
        model = _model(manifest, variant)
        evaluation = _Evaluation(variant, model, f"{manifest.run_id}/{variant}/{retrieved}")
        folder = _folder(manifest.run_id, model)
        (out / folder).mkdir(parents=True, exist_ok=True)
        uuid = str(uuid_module.uuid4())
        mine = rates[rates["variant"] == variant]
        results = [_result(row, variant, dataset) for _, row in mine.iterrows()]
        lines = _instances(
            evaluation,
            samples[samples["variant"] == variant],
            checks[checks["variant"] == variant],
            cases,
        )
        instances = folder / f"{uuid}_samples.jsonl"
        detailed = _write_instances(out, instances, lines)
        aggregate = _aggregate(
            evaluation,
            manifest,
            organization=organization,
            retrieved=retrieved,
            results=results,
            detailed=detailed,
        )
        aggregate_path = out / folder / f"{uuid}.json"
        aggregate_path.write_text(_json(aggregate) + "\n", encoding="utf-8")
        written += [aggregate_path, out / instances]
    return written


def export_inspect_scores(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    variant: str | None = None,
    annotator: str | None = None,
) -> Path:
    """Write the run's human verdicts as Inspect ``precomputed_scores`` JSONL.

    The newest verdict of each sample counts (of ``annotator`` when given); a sample is
    ``{"id": case_id, "epoch": repeat + 1, "value": "C" | "I", "explanation": reason}``.
    A run with several variants needs ``variant``: an Inspect log holds one model.
    """
    run = load(run_dir)
    variants = run.variants
    if variant is None and len(variants) > 1:
        raise ArgumentError(
            f"'variant' must name one of {', '.join(variants)} (an Inspect log holds one)"
        )
    chosen = variant or (variants[0] if variants else None)
    if chosen not in variants:
        raise ArgumentError(f"'variant' must be one of {', '.join(variants)}; got {variant!r}")
    verdicts = run.verdicts.astype({"case_id": object, "variant": object})
    verdicts = verdicts[verdicts["variant"] == chosen]
    if annotator is not None:
        verdicts = verdicts[verdicts["annotator"] == annotator]
    newest = (
        verdicts.sort_values("created_at", kind="stable")
        .groupby(["case_id", "repeat"], observed=True)
        .tail(1)
    )
    lines = []
    for _, row in newest.sort_values(["case_id", "repeat"]).iterrows():
        if row["verdict"] not in ("pass", "fail"):
            continue
        record = {
            "id": str(row["case_id"]),
            "epoch": int(row["repeat"]) + 1,
            "value": "C" if row["verdict"] == "pass" else "I",
            "explanation": row["reason"] if isinstance(row["reason"], str) else "",
            "metadata": {"annotator": str(row["annotator"]), "variant": chosen},
        }
        lines.append(_json(record))
    out = Path(out)
    out.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return out
