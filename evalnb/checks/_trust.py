"""Whether the code a suite carries may run: asked once per suite, remembered by SHA-256.

Code that came with a suite (``python_code`` checks: promptfoo's and OpenAI's ``python``
graders) is data until the user says otherwise. Building, loading, importing and reporting
only parse it. A run or a scoring whose checks hold such code calls :func:`require_trust`
first: without ``trust_code=True`` (``--trust-code``) and without an earlier approval of the
very same code, it stops with one line naming the files; with either, it prints one line
naming them and the bounds they run under, records the approval, and the checks may run.

Approvals live in ``$XDG_CONFIG_HOME/evalnb/trusted-code.json`` (``~/.config/...``), one
SHA-256 per code text: an edited grader is a new one and is asked about again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalnb._exceptions import ArgumentError

__all__ = ["approvals_path", "code_checks", "require_approved", "require_trust"]

_lock = threading.Lock()
_approved: set[str] = set()


def _digest(check: Any) -> str:
    return hashlib.sha256(str(check.values["code"]).encode()).hexdigest()


def _name(check: Any) -> str:
    given = check.values.get("file")
    return str(given) if given else f"inline Python in check {check.name!r}"


def code_checks(checks: Iterable[Iterable[Any]]) -> list[Any]:
    """The checks, among every case's, whose code came with the suite."""
    return [c for group in checks for c in group if getattr(c, "type", None) == "python_code"]


def approvals_path() -> Path:
    """The file that records which code the user trusted."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "evalnb" / "trusted-code.json"


def _recorded() -> set[str]:
    try:
        data = json.loads(approvals_path().read_text("utf-8"))
    except (OSError, ValueError):
        return set()
    hashes = data.get("sha256") if isinstance(data, dict) else None
    return {h for h in hashes if isinstance(h, str)} if isinstance(hashes, list) else set()


def _record(hashes: set[str]) -> None:
    path = approvals_path()
    known = _recorded()
    if hashes <= known:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"sha256": sorted(known | hashes)}, indent=1), "utf-8")
        os.chmod(temporary, 0o600)
        temporary.replace(path)
    except OSError as exc:  # trusted for this run all the same
        print(f"evalnb: the approval was not recorded ({exc})", file=sys.stderr)


def require_trust(checks: Iterable[Iterable[Any]], trust_code: bool, action: str) -> None:
    """Stop with one line unless the suite's code is trusted (see the module); ``action``
    is what the user was doing (``run``, ``score``)."""
    found = code_checks(checks)
    if not found:
        return
    if not isinstance(trust_code, bool):
        raise TypeError(f"'trust_code' must be True or False; got {trust_code!r}")
    hashes = {_digest(c) for c in found}
    names = sorted({_name(c) for c in found})
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    if not trust_code and not hashes <= _recorded():
        raise ArgumentError(
            f"the suite carries Python code ({shown}) that runs only when you say so: "
            f"{action} again with --trust-code (trust_code=True) if you trust its source; "
            "nothing was run"
        )
    if trust_code:
        _record(hashes)
    with _lock:
        _approved.update(hashes)
    from evalnb.checks._sandbox import python_layers

    print(f"evalnb: running the suite's Python ({shown}): {python_layers()}", file=sys.stderr)


def require_approved(check: Any) -> None:
    """Raise unless this check's code was trusted: in this process (by
    :func:`require_trust`), or recorded as trusted (a Dask worker on the same machine)."""
    digest = _digest(check)
    if digest not in _approved and digest in _recorded():
        with _lock:
            _approved.add(digest)
    if digest not in _approved:
        raise ArgumentError(
            f"{_name(check)} was not trusted: run or score with --trust-code (trust_code=True)"
        )
