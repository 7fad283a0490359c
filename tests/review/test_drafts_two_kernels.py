"""Two kernels of one reviewer save drafts into one run at the same time: neither raises,
and neither loses the other's drafts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from evalnb.review._drafts import DraftBook

KERNEL = """\
import sys, time
from pathlib import Path
from evalnb.review._drafts import DraftBook
run, name, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
book = DraftBook(run, "ana")
while not go.exists():
    time.sleep(0.001)
for i in range(n):
    book.put(("r", f"{name}-{i}", "v", 0), f"{name} draft {i}")
    if i % 3 == 0:
        book.put(("r", "shared", "v", i), f"{name} on shared {i}")
# Each drops one draft of its own: the other's stay.
book.put(("r", f"{name}-0", "v", 0), None)
print(len(book))
"""


def test_two_processes_saving_at_once_keep_every_draft(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "verdicts").mkdir(parents=True)
    go = tmp_path / "go"
    n = 150
    kernels = [
        subprocess.Popen(
            [sys.executable, "-c", KERNEL, str(run), name, str(n), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    time.sleep(0.5)  # both started and waiting
    go.touch()
    outputs = [k.communicate(timeout=120) for k in kernels]
    for kernel, (_, err) in zip(kernels, outputs, strict=True):
        assert kernel.returncode == 0, err
        assert "FileNotFoundError" not in err

    book = DraftBook(run, "ana")
    for name in ("left", "right"):
        assert book.get(("r", f"{name}-0", "v", 0)) is None
        for i in range(1, n):
            assert book.get(("r", f"{name}-{i}", "v", 0)) == f"{name} draft {i}"
    shared = [book.get(("r", "shared", "v", i)) for i in range(0, n, 3)]
    assert all(
        text is not None and text.endswith(f" {i}")
        for text, i in zip(shared, range(0, n, 3), strict=True)
    )
    assert len(book) == 2 * (n - 1) + len(shared)
    # No temporary file is left behind, and the drafts file is private.
    left = sorted(p.name for p in (run / "verdicts").iterdir())
    assert [p for p in left if p.endswith(".tmp")] == []
    assert book.path.stat().st_mode & 0o777 == 0o600
    assert json.loads(book.path.read_text())  # one whole JSON document


def test_a_book_sees_what_another_saved_once_it_saves(tmp_path: Path) -> None:
    (tmp_path / "verdicts").mkdir()
    first, second = DraftBook(tmp_path, "ana"), DraftBook(tmp_path, "ana")
    first.put(("r", "a", "v", 0), "from the first")
    second.put(("r", "b", "v", 0), "from the second")
    assert second.get(("r", "a", "v", 0)) == "from the first"
    assert DraftBook(tmp_path, "ana").get(("r", "b", "v", 0)) == "from the second"
    assert len(DraftBook(tmp_path, "ana")) == 2
