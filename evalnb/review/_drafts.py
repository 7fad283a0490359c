"""Reasons typed but not yet saved with a verdict, kept on disk so none is ever lost.

One small JSON file per run and annotator, ``verdicts/drafts-<annotator>.json`` in the
run directory, maps a sample to the text typed for it. It is rewritten (temporary name,
rename) at each change, so a kernel that dies or restarts keeps every draft; readers of
verdicts only read ``verdicts/part-*.parquet`` and never see it.

>>> book = DraftBook("runs/shop", "ana")                           # doctest: +SKIP
>>> book.put(("shop", "order-status", "v1", 3), "promises a date")  # doctest: +SKIP
>>> DraftBook("runs/shop", "ana").get(("shop", "order-status", "v1", 3))  # doctest: +SKIP
'promises a date'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

__all__ = ["DraftBook", "DraftKey"]

#: (run_id, case_id, variant, repeat)
DraftKey = tuple[str, str, str, int]
_SEP = "\x1f"


class DraftBook:
    """The drafts of ``annotator`` in the run directory ``run_dir``."""

    def __init__(self, run_dir: str | os.PathLike[str], annotator: str):
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", annotator)[:40]
        digest = hashlib.sha256(annotator.encode()).hexdigest()[:8]
        self.path = Path(run_dir) / "verdicts" / f"drafts-{slug}-{digest}.json"
        self._drafts: dict[str, str] = {}
        if self.path.exists():
            try:
                loaded = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                loaded = {}
            if isinstance(loaded, dict):
                self._drafts = {str(k): str(v) for k, v in loaded.items()}

    def get(self, key: DraftKey) -> str | None:
        """The draft typed for ``key``, or None when there is none."""
        return self._drafts.get(_name(key))

    def put(self, key: DraftKey, text: str | None) -> None:
        """Keep ``text`` as the draft of ``key`` (None drops it), on disk at once."""
        name = _name(key)
        if text is None:
            if self._drafts.pop(name, None) is None:
                return
        elif self._drafts.get(name) == text:
            return
        else:
            self._drafts[name] = text
        self._write()

    def __len__(self) -> int:
        return len(self._drafts)

    def _write(self) -> None:
        folder = self.path.parent
        if not folder.is_dir():
            folder.mkdir(mode=0o700)
        temporary = folder / f".{self.path.name}.tmp"
        temporary.write_text(json.dumps(self._drafts, ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, self.path)


def _name(key: DraftKey) -> str:
    run_id, case_id, variant, repeat = key
    return _SEP.join((run_id, case_id, variant, str(int(repeat))))
