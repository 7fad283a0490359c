"""The run manifest: what produced a run (``store.provenance``) above what it was asked
to do (its :class:`~evalnb.cases.RunDesign`), written before the first sample and updated
as the run ends (``docs/schema.md`` lists its fields)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalnb import store
from evalnb._exceptions import StoreError
from evalnb._types import Case, Variant
from evalnb.cases import RunDesign

__all__ = ["check_same_target", "new_manifest"]


def new_manifest(
    run_id: str,
    started: dt.datetime,
    design: RunDesign,
    planned: Sequence[tuple[Case, Variant, int]],
    command: Sequence[str] | None,
) -> dict[str, Any]:
    """The manifest of a new run, status ``running``; the runner adds the target."""
    manifest = {**store.provenance(run_id, started, command), **design.to_manifest()}
    manifest["order"]["planned"] = [[c.id, v.name, r] for c, v, r in planned]
    manifest["target"] = None
    return manifest


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
