"""Where each file of a run directory lives: the one place that knows the layout.

::

    runs/<run_id>/
      manifest.json                        what produced the run
      imported.json                        an imported suite's record (what came in, what not)
      samples/ checks/ verdicts/ cases/    part-*.parquet, one folder a table
      verdicts/drafts-<who>-<digest>.json  an annotator's unsaved reasons
      scores/<label>/                      a rescoring: part-*.parquet, then scoring.json
      shards/                              commit markers of shards run elsewhere
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from evalnb._secrets import redact
from evalnb.store._atomic import write_atomic

__all__ = [
    "IMPORTED",
    "MANIFEST",
    "SCORES",
    "SCORING",
    "drafts_path",
    "imported_path",
    "is_run_dir",
    "manifest_path",
    "part_paths",
    "scoring_path",
    "write_import_record",
]

#: The run's manifest.
MANIFEST = "manifest.json"
#: The record an import writes beside a suite; a run of that suite keeps a copy.
IMPORTED = "imported.json"
#: The folder of rescorings, one folder a label.
SCORES = "scores"
#: The file that commits a rescoring, written last in its folder.
SCORING = "scoring.json"


def manifest_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / MANIFEST


def is_run_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds a run (its manifest)."""
    return manifest_path(path).is_file()


def imported_path(folder: str | os.PathLike[str]) -> Path:
    """The import record of a suite's folder or of a run directory."""
    return Path(folder) / IMPORTED


def write_import_record(folder: str | os.PathLike[str], record: Any) -> Path:
    """Write an import record (JSON, indented) into ``folder``: atomically, ``0600``."""
    path = imported_path(folder)
    write_atomic(path, redact(json.dumps(record, indent=2, ensure_ascii=False) + "\n"))
    return path


def scoring_path(run_dir: str | os.PathLike[str], label: str) -> Path:
    """The folder of the rescoring ``label``."""
    return Path(run_dir) / SCORES / label


def part_paths(run_dir: str | os.PathLike[str], table: str, token: str) -> list[Path]:
    """The parts of ``table`` one writer (its ``token``) wrote, by name."""
    return sorted((Path(run_dir) / table).glob(f"part-{token}-*.parquet"))


def drafts_path(run_dir: str | os.PathLike[str], who: str, digest: str) -> Path:
    """An annotator's drafts (reasons typed, not yet saved) beside the verdicts."""
    return Path(run_dir) / "verdicts" / f"drafts-{who}-{digest}.json"
