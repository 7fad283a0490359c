"""What every suite importer shares: the report of what came in and what could not, and
writing the cases file (YAML) and the experiment file (TOML) that ``evalnb run`` reads."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnb._exceptions import CasesError
from evalnb.cases._experiment import load_experiment
from evalnb.cases._files import file_sha256, load_cases

__all__ = ["ImportResult", "Unsupported", "source_error", "toml_value", "write_suite"]

#: The file beside the imported suite (or in the run directory) that lists what came in.
RECORD = "imported.json"


@dataclass(frozen=True)
class Unsupported:
    """Something in the source evalnb cannot express: kept in the report, never dropped."""

    name: str
    where: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "where": self.where, "reason": self.reason}


@dataclass
class ImportResult:
    """What an importer wrote: the files, what was imported and what was not."""

    format: str
    source: Path
    written: list[Path] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    unsupported: list[Unsupported] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": str(self.source),
            "source_sha256": file_sha256(self.source) if self.source.is_file() else None,
            "imported_at": dt.datetime.now(dt.UTC).isoformat(),
            "counts": dict(self.counts),
            "unsupported": [u.to_dict() for u in self.unsupported],
        }

    def summary(self) -> str:
        """The one-screen report: counts, the files written, each unsupported item."""
        counts = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        lines = [f"imported {self.format} {self.source}: {counts}"]
        lines += [f"  wrote {path}" for path in self.written]
        if self.unsupported:
            lines.append(f"not imported ({len(self.unsupported)}): evalnb cannot express these")
            shown = self.unsupported[:15]
            lines += [f"  {u.where}: {u.name}: {u.reason}" for u in shown]
            if len(self.unsupported) > len(shown):
                rest = len(self.unsupported) - len(shown)
                lines.append(f"  ... and {rest} more (all listed in {RECORD})")
        else:
            lines.append("not imported: nothing")
        return "\n".join(lines) + "\n"


def source_error(path: Path, message: str) -> CasesError:
    return CasesError(f"{path}: {message}")


def read_json_source(path: Path, what: str) -> Any:
    """The JSON in ``path``; ``what`` names the format in the one-line error (``an Inspect
    log``, ``promptfoo results``)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise source_error(path, f"cannot read {what} ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise source_error(path, f"not {what}: not valid JSON ({exc})") from None


def toml_value(value: Any) -> str:
    """A TOML value for strings, numbers, booleans, lists and tables (inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        # A JSON string is a TOML basic string (both escape quotes, backslashes, controls).
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"cannot write {value!r} as TOML")


def _yaml_text(cases: list[dict[str, Any]], defaults: dict[str, Any] | None, title: str) -> str:
    import yaml  # type: ignore[import-untyped]

    body: dict[str, Any] = {}
    if defaults:
        body["defaults"] = defaults
    body["cases"] = cases
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)
    return f"# {title}\n{text}"


def write_suite(
    result: ImportResult,
    dest: str | os.PathLike[str],
    *,
    cases: list[dict[str, Any]],
    defaults: dict[str, Any] | None = None,
    variants: list[dict[str, Any]] | None = None,
    repeats: int = 5,
    judge: bool = False,
) -> ImportResult:
    """Write ``DEST/cases.yaml``, ``DEST/experiment.toml`` and ``DEST/imported.json``, then
    read both back with evalnb's own loaders (an import evalnb cannot run is an error)."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise CasesError(f"{dest}: output directory exists and is not empty; choose a new path")
    if not cases:
        raise source_error(result.source, "no cases found")
    dest.mkdir(parents=True, exist_ok=True)
    title = f"Imported from {result.format} {result.source.name} by `evalnb import`"
    cases_path = dest / "cases.yaml"
    cases_path.write_text(_yaml_text(cases, defaults, title), encoding="utf-8")
    lines = [
        f"# {title}; see imported.json for what was not imported.",
        "# The target is the embedded stand-in: point it at your model with",
        "#   evalnb run --experiment experiment.toml --base-url URL --model NAME",
        'cases = "cases.yaml"',
        f"repeats = {repeats}",
        "",
        "[target]",
        "standin = true",
        'model = "echo"',
    ]
    if judge:
        lines += ["", "[judge]", 'model = "judge"']
    for variant in variants or [{"name": "baseline"}]:
        lines += ["", "[[variants]]"]
        lines += [f"{key} = {toml_value(value)}" for key, value in variant.items()]
    experiment_path = dest / "experiment.toml"
    experiment_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    experiment = load_experiment(experiment_path)
    load_cases(cases_path, defaults=experiment.defaults)
    result.written += [cases_path, experiment_path, dest / RECORD]
    result.counts = {"cases": len(cases), "variants": len(variants) if variants else 1}
    (dest / RECORD).write_text(json.dumps(result.record(), indent=2) + "\n", encoding="utf-8")
    return result
