"""``manifest.json`` read as a typed value: every key the runner or an importer writes, with
its type and meaning in one place (``docs/schema.md`` is generated from these fields).

A reader asks ``Manifest.read(run_dir).repeats`` rather than ``manifest.get("repeats")``:
a key that is missing or of the wrong type is one error naming the file and the key, not a
``KeyError`` somewhere in the analysis. The run's design (cases, variants, repeats, order,
judge, rule, limits) is rebuilt by :meth:`evalnb.RunDesign.from_manifest`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnb._exceptions import StoreError
from evalnb.store._rundir import read_manifest
from evalnb.store._schema import tables_markdown

__all__ = ["MEANING", "Manifest", "schema_markdown"]


#: What each key of ``manifest.json`` means (docs/schema.md is generated from it).
MEANING: dict[str, str] = {
    "run_id": "the run's id: its directory's name",
    "status": "`running`, `complete` or `interrupted`",
    "schema_version": "the run directory's schema version",
    "started_at": "when the run (its first session) started, ISO 8601 UTC",
    "ended_at": "when its last session ended; null while it runs",
    "evalnb_version": "the evalnb that wrote it",
    "python": "the Python that wrote it",
    "platform": "system, release, machine, implementation",
    "command": "the command line (the CLI's), or null from Python",
    "cwd": "the working directory",
    "git_revision": "the working directory's git revision, when it has one",
    "cases_file": "the cases file: `path`, `sha256`, `defaults`, `imported` (the import record)",
    "cases": "every case's definition, as `Case.to_dict()`",
    "extra_checks": "the checks given to every case, as specs",
    "variants": "the variants: name, prefix, system, params...",
    "repeats": "samples per case and variant",
    "concurrency": "samples in flight at once",
    "order": "`scheme`, `seed` and the `planned` keys in their order",
    "timeout": "seconds one sample may take; null: the target's own limits",
    "target": "the target as it describes itself, secrets removed",
    "judge": "the judge: its `spec`, `target` and `calls`",
    "until": "a stopping rule's record: `rule`, `order`, `looks`, `stopped`, `verdicts`",
    "budget": "`max_cost`, `max_tokens` and the price table",
    "stopped": "why a budget stopped the run, when one did",
    "cache": "the development cache: `path`, `hits`, `misses`",
    "resumes": "each resume: `started_at`, `command`",
    "clusters": "each Dask session of a sharded run",
    "source": "the tool an imported run came from (`inspect`, `promptfoo`)",
    "provenance": "an imported run's source file and its SHA-256",
}


@dataclass(frozen=True)
class Manifest:
    """A run's manifest, typed (:meth:`read` a run directory, :meth:`from_dict` a dict);
    the module's ``MEANING`` says what each key means."""

    run_id: str = ""
    status: str = ""
    schema_version: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    evalnb_version: str | None = None
    python: str | None = None
    platform: dict[str, Any] | None = None
    command: list[str] | None = None
    cwd: str | None = None
    git_revision: str | None = None
    cases_file: dict[str, Any] | None = None
    cases: list[dict[str, Any]] = field(default_factory=list)
    extra_checks: list[dict[str, Any]] = field(default_factory=list)
    variants: list[dict[str, Any]] = field(default_factory=list)
    repeats: int = 1
    concurrency: int | None = None
    order: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    target: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    until: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
    stopped: dict[str, Any] | None = None
    cache: dict[str, Any] | None = None
    resumes: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    source: str | None = None
    provenance: dict[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "manifest.json") -> Manifest:
        """The typed manifest of ``data``; ``where`` names the file in errors."""
        values: dict[str, Any] = {}
        hints = typing.get_type_hints(cls)
        for spec in dataclasses.fields(cls):
            if spec.name == "raw" or spec.name not in data:
                continue
            value = data[spec.name]
            if value is None and _nullable(hints[spec.name]):
                values[spec.name] = None
                continue
            expected = _bases(hints[spec.name])
            if float in expected and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, expected) or isinstance(value, bool) != (bool in expected):
                kinds = " or ".join(t.__name__ for t in expected)
                raise StoreError(f"{where}: '{spec.name}' must be {kinds}; got {value!r}")
            values[spec.name] = value
        return cls(**values, raw=dict(data))

    @classmethod
    def read(cls, run_dir: str | os.PathLike[str]) -> Manifest:
        """The manifest of the run in ``run_dir`` (a clear error when it is not a run)."""
        return cls.from_dict(read_manifest(run_dir), f"{Path(run_dir) / 'manifest.json'}")

    @property
    def variant_names(self) -> list[str]:
        return [str(v["name"]) for v in self.variants]

    @property
    def case_ids(self) -> list[str]:
        return [str(c["id"]) for c in self.cases]

    @property
    def started(self) -> dt.datetime | None:
        return None if self.started_at is None else dt.datetime.fromisoformat(self.started_at)

    @property
    def stopped_by_rule(self) -> bool:
        """Whether a stopping rule (``until=``) decided how many cases ran."""
        return bool(self.until)


def _nullable(hint: Any) -> bool:
    return isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)


def _bases(hint: Any) -> tuple[type, ...]:
    """The classes a value of type ``hint`` may be (``None`` aside)."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return tuple(typing.get_origin(a) or a for a in args if a is not type(None))


def schema_markdown() -> str:
    """The run directory as Markdown: the tables, the other files and the manifest's keys
    (docs/schema.md is generated from this)."""
    return "\n".join([tables_markdown(), *_manifest_markdown()])


def _manifest_markdown() -> list[str]:
    """The manifest's keys as a Markdown table."""
    hints = typing.get_type_hints(Manifest)
    lines = [
        "## manifest.json",
        "",
        "What produced the run and what it was asked to do, written before the first sample",
        "and updated as the run ends; read typed with `evalnb.store.Manifest.read(run_dir)`,",
        "the design rebuilt with `evalnb.RunDesign.from_manifest(...)`.",
        "",
        "| key | type | null | meaning |",
        "|---|---|---|---|",
    ]
    for spec in dataclasses.fields(Manifest):
        if spec.name == "raw":
            continue
        hint = hints[spec.name]
        null = "yes" if _nullable(hint) else "no"
        kinds = " or ".join(t.__name__ for t in _bases(hint))
        lines.append(f"| `{spec.name}` | `{kinds}` | {null} | {MEANING[spec.name]} |")
    return [*lines, ""]
