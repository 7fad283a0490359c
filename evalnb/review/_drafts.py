"""Reasons typed but not yet saved with a verdict, kept on disk so none is ever lost.

One small JSON file per run and annotator, ``verdicts/drafts-<annotator>.json`` in the
run directory, maps a sample to the text typed for it. It is rewritten (a unique temporary
name in the same folder, then a rename) at each change, so a kernel that dies or restarts
keeps every draft; readers of verdicts only read ``verdicts/part-*.parquet`` and never see
it. Two kernels of one annotator share the file: each save merges this book's own changes
(drafts typed or dropped since its last save) into what the file holds now, under a lock
(``flock`` on a lock file beside it, where the system has one), so neither loses the
other's drafts; for one sample, the later change wins.

>>> book = DraftBook("runs/shop", "ana")                           # doctest: +SKIP
>>> book.put(("shop", "order-status", "v1", 3), "promises a date")  # doctest: +SKIP
>>> DraftBook("runs/shop", "ana").get(("shop", "order-status", "v1", 3))  # doctest: +SKIP
'promises a date'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator

from evalnb.store import drafts_path, write_atomic

try:
    import fcntl
except ImportError:  # Windows: saves still merge, without the lock
    fcntl = None  # type: ignore[assignment]

__all__ = ["DraftBook", "DraftKey"]

#: (run_id, case_id, variant, repeat)
DraftKey = tuple[str, str, str, int]
_SEP = "\x1f"


class DraftBook:
    """The drafts of ``annotator`` in the run directory ``run_dir``."""

    def __init__(self, run_dir: str | os.PathLike[str], annotator: str):
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", annotator)[:40]
        digest = hashlib.sha256(annotator.encode()).hexdigest()[:8]
        self.path = drafts_path(run_dir, slug, digest)
        self._drafts = self._read()
        #: This book's changes not yet merged into the file: a draft, or None (dropped).
        self._changes: dict[str, str | None] = {}

    def _read(self) -> dict[str, str]:
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {str(k): str(v) for k, v in loaded.items()}

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
        self._changes[name] = text
        self._write()

    def __len__(self) -> int:
        return len(self._drafts)

    def _write(self) -> None:
        """Merge this book's changes into the file as it is now, and take in what another
        kernel saved meanwhile."""
        folder = self.path.parent
        if not folder.is_dir():
            folder.mkdir(mode=0o700, exist_ok=True)
        with self._locked():
            merged = self._read()
            for name, text in self._changes.items():
                if text is None:
                    merged.pop(name, None)
                else:
                    merged[name] = text
            write_atomic(self.path, json.dumps(merged, ensure_ascii=False))
        self._drafts = merged
        self._changes = {}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        lock = self.path.with_name(f".{self.path.name}.lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def _name(key: DraftKey) -> str:
    run_id, case_id, variant, repeat = key
    return _SEP.join((run_id, case_id, variant, str(int(repeat))))
