"""Whether the code a suite carries may run: asked once per suite, remembered by SHA-256.

Code that came with a suite (``python_code`` checks: promptfoo's and OpenAI's ``python``
graders; ``promptfoo`` checks whose assertion carries code promptfoo runs, see
:mod:`evalnb.checks._promptfoo_code`) is data until the user says otherwise. Building,
loading, importing and reporting only parse it. A run or a scoring whose checks hold such
code calls :func:`require_trust` first: without ``trust_code=True`` (``--trust-code``) and
without an earlier approval of the very same code, it stops with one line naming the files
or checks; with either, it prints one line naming them and the bounds they run under,
records the approval, and the checks may run. evalnb's own ``javascript`` checks run in a
sandbox without Node's API and are not asked about.

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

__all__ = ["approvals_path", "carried_code", "code_checks", "require_approved", "require_trust"]

_lock = threading.Lock()
_approved: set[str] = set()


def carried_code(check: Any) -> str | None:
    """The code ``check`` carries from the suite (None: none): a ``python_code`` check's
    source, or what another check's ``carried_code()`` says (a ``promptfoo`` check: what
    promptfoo would run of its assertion)."""
    if getattr(check, "type", None) == "python_code":
        return str(check.values["code"])
    method = getattr(check, "carried_code", None)
    return method() if callable(method) else None


def _digest(check: Any) -> str:
    return hashlib.sha256(str(carried_code(check)).encode()).hexdigest()


def _name(check: Any) -> str:
    case = getattr(getattr(check, "case", None), "id", None)
    of_case = f" of case {case!r}" if case is not None else ""
    if check.type != "python_code":
        return f"{check.code_label()}{of_case}"
    given = check.values.get("file")
    return str(given) if given else f"inline Python in check {check.name!r}{of_case}"


def code_checks(checks: Iterable[Iterable[Any]]) -> list[Any]:
    """The checks, among every case's, whose code came with the suite."""
    return [c for group in checks for c in group if carried_code(c) is not None]


def _shown(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


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
    python = sorted({_name(c) for c in found if c.type == "python_code"})
    named = sorted({_name(c) for c in found if c.type != "python_code"})
    if not trust_code and not hashes <= _recorded():
        language = "code" if named else "Python code"
        raise ArgumentError(
            f"the suite carries {language} ({_shown(python + named)}) that runs only "
            f"when you say so: {action} again with --trust-code (trust_code=True) if you trust "
            "its source; nothing was run"
        )
    if trust_code:
        _record(hashes)
    with _lock:
        _approved.update(hashes)
    notices = []
    if python:
        from evalnb.checks._sandbox import python_layers

        notices.append(f"the suite's Python ({_shown(python)}): {python_layers()}")
    by_kind: dict[Any, list[Any]] = {}
    for check in found:
        if check.type != "python_code":
            by_kind.setdefault(type(check), []).append(check)
    for kind, group in by_kind.items():
        names = sorted({_name(c) for c in group})
        notices.append(f"the suite's code ({_shown(names)}): {kind.code_bounds()}")
    print(f"evalnb: running {'; and '.join(notices)}", file=sys.stderr)


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
