"""What every suite importer shares: the report of what came in and what could not, and
writing the cases file (YAML) and the experiment file (TOML) that ``evalnb run`` reads."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._exceptions import CasesError
from evalnb.cases import file_sha256, load_cases, load_experiment
from evalnb.interop._bounded import Sources

__all__ = [
    "LFS_HEADER",
    "ImportNotes",
    "ImportResult",
    "Note",
    "Unsupported",
    "parse_json",
    "read_json_source",
    "reading",
    "source_error",
    "toml_value",
    "undone_on_error",
    "write_suite",
]

#: A JSON escape of a UTF-16 surrogate (as text, as bytes): text to check once parsed.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")

#: The first line of a Git LFS pointer file.
LFS_HEADER = "version https://git-lfs.github.com/spec/v1"

#: The file beside the imported suite (or in the run directory) that lists what came in.
RECORD = store.IMPORTED


@dataclass(frozen=True)
class Unsupported:
    """Something in the source evalnb cannot express: kept in the report, never dropped."""

    name: str
    where: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "where": self.where, "reason": self.reason}


@dataclass(frozen=True)
class Note:
    """Something in the source that came in: what it became (mapped) or how it was
    approximated."""

    name: str
    where: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "where": self.where, "how": self.how}


@dataclass
class ImportNotes:
    """The ledger of one import, kept by every importer: what came in as its evalnb
    counterpart (``mapped``), as something close (``approximated``, ``how`` says what
    differs) and what was refused (``unsupported``, ``reason`` says why), in order.

    >>> notes = ImportNotes()
    >>> notes.refuse("assert python", "promptfooconfig.yaml:7", "code is not run on import")
    >>> notes.result("promptfoo", Path("promptfooconfig.yaml")).refusals()
    'refused: assert python (code is not run on import)'
    """

    unsupported: list[Unsupported] = field(default_factory=list)
    mapped: list[Note] = field(default_factory=list)
    approximated: list[Note] = field(default_factory=list)

    def refuse(self, name: str, where: str, reason: str) -> None:
        self.unsupported.append(Unsupported(name, where, reason))

    def map(self, name: str, where: str, how: str) -> None:
        self.mapped.append(Note(name, where, how))

    def approximate(self, name: str, where: str, how: str) -> None:
        self.approximated.append(Note(name, where, how))

    def mark(self) -> tuple[int, int]:
        """Where the refusals and approximations stand, for :meth:`undo`."""
        return len(self.unsupported), len(self.approximated)

    def undo(self, mark: tuple[int, int]) -> None:
        """Forget the refusals and approximations noted since ``mark`` (a repeat of ones
        already kept); mapped notes stay, as ``imported.json`` counts each."""
        del self.unsupported[mark[0] :], self.approximated[mark[1] :]

    def result(
        self, format: str, source: Path, files: list[dict[str, Any]] | None = None
    ) -> ImportResult:
        """The :class:`ImportResult` of this import, its notes and the files it read."""
        return ImportResult(
            format,
            source,
            unsupported=self.unsupported,
            files=files if files is not None else [],
            mapped=self.mapped,
            approximated=self.approximated,
        )


def _grouped(notes: list[Note]) -> list[dict[str, Any]]:
    """Notes of one name and one outcome as one entry: the count and the first place."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for note in notes:
        key = (note.name, note.how)
        if key in groups:
            groups[key]["count"] += 1
        else:
            groups[key] = {**note.to_dict(), "count": 1}
    return list(groups.values())


@dataclass
class ImportResult:
    """What an importer wrote: the files, what was imported and what was not.

    ``mapped`` lists each source item that became its evalnb counterpart, ``approximated``
    each that became something close (``how`` says what differs), ``unsupported`` each
    refused (``reason`` says why), and ``unchecked`` the cases left with no check (they
    run, but no check's rate counts them).
    """

    format: str
    source: Path
    written: list[Path] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    unsupported: list[Unsupported] = field(default_factory=list)
    #: Every file read, in order: ``{"path", "bytes", "sha256"}`` (a zip: ``"members"``).
    files: list[dict[str, Any]] = field(default_factory=list)
    mapped: list[Note] = field(default_factory=list)
    approximated: list[Note] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    #: The engine that grades the imported checks (``promptfoo 0.121.20``), if any.
    engine: str | None = None
    #: The code that read the source, when there is a choice (``inspect_ai 0.3.285
    #: (read_eval_log)``, or evalnb's own reader).
    reader: str | None = None
    #: Each source item graded by evalnb's own translation, not the tool's engine, and why.
    fallback: list[Note] = field(default_factory=list)
    #: Who rendered the imported prompts, when there is a choice: ``{"engine", "line",
    #: ...}`` (``line`` the report's one line; see ``evalnb.interop._promptfoo_expand``).
    expansion: dict[str, Any] | None = None

    def refusals(self, limit: int = 5) -> str:
        """The first refusals on one line (for a fatal error), or empty text."""
        if not self.unsupported:
            return ""
        shown = "; ".join(f"{u.name} ({u.reason})" for u in self.unsupported[:limit])
        more = len(self.unsupported) - limit
        return f"refused: {shown}" + (f"; and {more} more" if more > 0 else "")

    @property
    def source_sha256(self) -> str | None:
        """The SHA-256 of the source as it was read (None: not read)."""
        return next((str(f["sha256"]) for f in self.files if f["path"] == str(self.source)), None)

    def record(self) -> dict[str, Any]:
        sha256 = self.source_sha256
        if sha256 is None and self.source.is_file():
            sha256 = file_sha256(self.source)
        return {
            "format": self.format,
            "source": str(self.source),
            "source_sha256": sha256,
            "imported_at": dt.datetime.now(dt.UTC).isoformat(),
            "counts": dict(self.counts),
            "files_read": list(self.files),
            "mapped": _grouped(self.mapped),
            "approximated": [a.to_dict() for a in self.approximated],
            "unsupported": [u.to_dict() for u in self.unsupported],
            "cases_without_checks": list(self.unchecked),
            "engine": self.engine,
            "reader": self.reader,
            "fallback": [f.to_dict() for f in self.fallback],
            **({"expansion": self.expansion} if self.expansion is not None else {}),
        }

    def summary(self) -> str:
        """The one-screen report: counts, the files written, each unsupported item."""
        counts = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        lines = [f"imported {self.format} {self.source}: {counts}"]
        lines += [f"  wrote {path}" for path in self.written]
        if self.mapped:
            lines.append(f"mapped ({len(self.mapped)}):")
            groups = _grouped(self.mapped)
            lines += [f"  {g['name']} x{g['count']}: {g['how']}" for g in groups[:15]]
            if len(groups) > 15:
                lines.append(f"  ... and {len(groups) - 15} more kinds (all listed in {RECORD})")
        if self.reader:
            lines.append(f"read by {self.reader}")
        if self.expansion is not None:
            lines.append(str(self.expansion["line"]))
            differing = self.expansion.get("differing") or []
            lines += [f"  {d['case']} / {d['variant']}: {d['how']}" for d in differing[:5]]
            if len(differing) > 5:
                lines.append(f"  ... and {len(differing) - 5} more (all listed in {RECORD})")
        if self.engine:
            lines.append(f"graded by {self.engine}: every check not listed under fallback")
        if self.fallback:
            lines.append(f"fallback ({len(self.fallback)}): graded by evalnb's own translation")
            lines += [f"  {f.where}: {f.name}: {f.how}" for f in self.fallback[:15]]
            if len(self.fallback) > 15:
                lines.append(f"  ... and {len(self.fallback) - 15} more (all listed in {RECORD})")
        if self.approximated:
            lines.append(f"approximated ({len(self.approximated)}):")
            lines += [f"  {a.where}: {a.name}: {a.how}" for a in self.approximated[:15]]
            if len(self.approximated) > 15:
                rest = len(self.approximated) - 15
                lines.append(f"  ... and {rest} more (all listed in {RECORD})")
        if self.unsupported:
            lines.append(f"not imported ({len(self.unsupported)}): evalnb cannot express these")
            shown = self.unsupported[:15]
            lines += [f"  {u.where}: {u.name}: {u.reason}" for u in shown]
            if len(self.unsupported) > len(shown):
                rest = len(self.unsupported) - len(shown)
                lines.append(f"  ... and {rest} more (all listed in {RECORD})")
        else:
            lines.append("not imported: nothing")
        if self.unchecked:
            ids = ", ".join(self.unchecked[:10]) + (", ..." if len(self.unchecked) > 10 else "")
            lines.append(
                f"cases with no check ({len(self.unchecked)}): {ids}; they run, but no "
                "check's rate counts them"
            )
        return "\n".join(lines) + "\n"


def source_error(path: Path, message: str) -> CasesError:
    return CasesError(f"{path}: {message}")


def parse_json(data: str | bytes, where: str, what: str) -> Any:
    """The JSON in ``data``; ``where`` places it and ``what`` names the format in the
    one-line error (``an Inspect log``, ``promptfoo results``); a Git LFS pointer is named
    as one."""
    head = data[:60] if isinstance(data, str) else data[:60].decode("ascii", "replace")
    if head.startswith(LFS_HEADER):
        raise CasesError(
            f"{where}: not {what}: a Git LFS pointer, not the file it stands for; fetch the "
            "file itself (git lfs pull) and import again"
        )
    try:
        value = json.loads(data)
        if isinstance(data, str):
            found = _SURROGATE.search(data) is not None
        else:
            found = _SURROGATE_BYTES.search(data) is not None
        if found:
            # A \\uD800 escape alone is no character: refuse it here, not at the first write.
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        raise CasesError(
            f"{where}: not {what}: a \\u escape is half a surrogate pair, not a character"
        ) from None
    except json.JSONDecodeError as exc:
        raise CasesError(
            f"{where}: not {what}: not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None
    except UnicodeDecodeError as exc:
        raise CasesError(f"{where}: not {what}: not UTF-8 ({exc.reason})") from None
    except RecursionError:
        raise CasesError(f"{where}: not {what}: JSON nested too deeply to read") from None
    except MemoryError:
        raise CasesError(f"{where}: {what} needs more memory than there is to read") from None


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Inside, an importer reads ``path``: running out of stack (data nested too deeply)
    or of memory is one line naming the file, not a traceback."""
    try:
        yield
    except RecursionError:
        raise source_error(path, "nested too deeply to read") from None
    except MemoryError:
        raise source_error(path, "needs more memory than there is to import") from None


def read_json_source(path: Path, what: str, sources: Sources) -> Any:
    """The JSON in ``path``, read through ``sources`` (see :func:`parse_json`)."""
    return parse_json(sources.read(path, what), str(path), what)


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
    # libyaml's dumper when PyYAML has it: the same text, three times faster.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(body, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)
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
    notes: list[str] | None = None,
) -> ImportResult:
    """Write ``DEST/cases.yaml``, ``DEST/experiment.toml`` and ``DEST/imported.json``, then
    read both back with evalnb's own loaders (an import evalnb cannot run is an error, and
    leaves nothing behind)."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise CasesError(f"{dest}: output directory exists and is not empty; choose a new path")
    if not cases:
        refused = result.refusals()
        raise source_error(result.source, "no cases found" + (f"; {refused}" if refused else ""))
    title = (
        f"Imported from {result.format} {' '.join(result.source.name.split())} by `evalnb import`"
    )
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
    if notes:
        lines[3:3] = [f"# {note}" for note in notes]
    if judge:
        lines += ["", "[judge]", 'model = "judge"']
    for variant in variants or [{"name": "baseline"}]:
        lines += ["", "[[variants]]"]
        lines += [f"{key} = {toml_value(v)}" for key, v in variant.items() if key != "rendered"]
        if variant.get("rendered"):
            # The messages sent for some cases as they are: a table of one line per case.
            lines.append("[variants.rendered]")
            lines += [f"{toml_value(k)} = {toml_value(v)}" for k, v in variant["rendered"].items()]
    cases_path, experiment_path = dest / "cases.yaml", dest / "experiment.toml"
    with undone_on_error(dest, result.source):
        dest.mkdir(parents=True, exist_ok=True)
        cases_path.write_text(_yaml_text(cases, defaults, title), encoding="utf-8")
        experiment_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            experiment = load_experiment(experiment_path)
            load_cases(cases_path, defaults=experiment.defaults)
        except CasesError as exc:  # a gap in the importer: still one line naming the source
            message = f"imports as a suite evalnb cannot run ({exc})"
            raise source_error(result.source, message) from None
        result.written += [cases_path, experiment_path, store.imported_path(dest)]
        result.counts = {"cases": len(cases), "variants": len(variants) if variants else 1}
        default_checks = bool(defaults and defaults.get("checks"))
        result.unchecked = [
            str(c.get("id")) for c in cases if not c.get("checks") and not default_checks
        ]
        store.write_import_record(dest, result.record())
    return result


@contextlib.contextmanager
def undone_on_error(dest: Path, source: Path) -> Iterator[None]:
    """Inside, an import writes ``dest`` (a new or empty folder); on an error, what it
    added there and the folders made for it are removed, so a refused import leaves
    nothing (what was there before stays). Text that cannot be written (a lone surrogate
    from a JSON escape) is an error naming ``source``."""
    made = []
    for folder in (dest, *dest.parents):
        if folder.exists() or folder.is_symlink():
            break
        made.append(folder)
    before = set(dest.iterdir()) if dest.is_dir() else set()
    try:
        yield
    except BaseException as exc:
        if dest in made:
            shutil.rmtree(dest, ignore_errors=True)
        elif dest.is_dir() and not dest.is_symlink():
            for child in set(dest.iterdir()) - before:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        for folder in made[1:]:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, UnicodeEncodeError):
            raise source_error(
                source, f"holds text that is not valid Unicode ({exc.reason}); nothing written"
            ) from None
        raise
