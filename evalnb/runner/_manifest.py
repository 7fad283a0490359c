"""The run manifest: what produced a run, written before the first sample and updated
as the run ends (``docs/schema.md`` lists its fields)."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evalnb._exceptions import StoreError
from evalnb._types import Case, Variant
from evalnb.store import SCHEMA_VERSION

__all__ = ["check_resume", "check_same_target", "new_manifest", "now"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evalnb")
    except PackageNotFoundError:
        return "0+unknown"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def new_manifest(
    run_id: str,
    started: dt.datetime,
    *,
    cases: Sequence[Case],
    cases_file: dict[str, str] | None,
    extra_checks: Iterable[Any],
    variants: Sequence[Variant],
    repeats: int,
    concurrency: int,
    order: str,
    seed: int,
    planned: Sequence[tuple[Case, Variant, int]],
    command: Sequence[str] | None,
) -> dict[str, Any]:
    """The manifest of a new run, status ``running``; the runner adds the target."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "status": "running",
        "started_at": started.isoformat(),
        "ended_at": None,
        "evalnb_version": _version(),
        "python": sys.version.split()[0],
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "implementation": platform.python_implementation(),
        },
        "command": list(command) if command else None,
        "cwd": os.getcwd(),
        "git_revision": _git_revision(),
        "cases_file": cases_file,
        "cases": [c.to_dict() for c in cases],
        "extra_checks": [c.spec for c in extra_checks],
        "variants": [v.to_dict() for v in variants],
        "repeats": repeats,
        "concurrency": concurrency,
        "order": {
            "scheme": order,
            "seed": seed,
            "planned": [[c.id, v.name, r] for c, v, r in planned],
        },
        "target": None,
    }


def check_resume(
    manifest: dict[str, Any],
    path: Path,
    cases: Sequence[Case],
    variants: Sequence[Variant],
    repeats: int,
    order: str,
    seed: int,
) -> None:
    """Refuse to resume a run with other cases, variants, repeats or order."""
    expected = {
        "cases": [c.to_dict() for c in cases],
        "variants": [v.to_dict() for v in variants],
        "repeats": repeats,
        "order.scheme": order,
        "order.seed": seed,
    }
    found = {
        "cases": manifest.get("cases"),
        "variants": manifest.get("variants"),
        "repeats": manifest.get("repeats"),
        "order.scheme": manifest.get("order", {}).get("scheme"),
        "order.seed": manifest.get("order", {}).get("seed"),
    }
    for key, value in expected.items():
        if json.loads(json.dumps(value, default=str)) != found[key]:
            raise StoreError(
                f"{path}/manifest.json: '{key}' differs from this resume's; "
                "resume with exactly the cases, variants, repeats and order of the original run"
            )


#: What makes a target the same one on resume. Not its URL or argv: a stand-in or a local
#: server may come back on another port; its model, params and harness files must not
#: change. A Python function is not compared: a notebook redefines it under the same name.
_TARGET_IDENTITY = ("type", "model", "params", "executable_sha256", "files")


def check_same_target(recorded: dict[str, Any], described: dict[str, Any], path: Path) -> None:
    """Refuse to resume a run against another model, other params or other harness files."""
    for key in _TARGET_IDENTITY:
        was, now_ = recorded.get(key), described.get(key)
        if json.loads(json.dumps(was, default=str)) != json.loads(json.dumps(now_, default=str)):
            raise StoreError(
                f"{path}/manifest.json: the target's {key!r} was {was!r}; this resume's is "
                f"{now_!r}. Resume with the original target (model, params, harness)"
            )
