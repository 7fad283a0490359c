"""``evalnb doctor RUN [--repair]``: find, and on request repair, what is wrong in a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from evalnb.cli._common import EXIT_FAILED, EXIT_OK, UsageError
from evalnb.store import QUARANTINE, diagnose, repair, stopped_writer

__all__ = ["add_doctor_arguments", "doctor_command"]


def add_doctor_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb doctor`` arguments to ``p``."""
    p.add_argument("run_dir", help="the run directory")
    p.add_argument(
        "--repair",
        action="store_true",
        help=f"move what is wrong into RUN_DIR/{QUARANTINE}/ (nothing is deleted)",
    )
    return p


def doctor_command(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """0 when the run is healthy or was repaired; 1 when problems remain."""
    out = stdout or sys.stdout
    if not Path(args.run_dir).is_dir():
        raise UsageError(f"{args.run_dir}: not a run directory (no such folder)")
    problems = repair(args.run_dir) if args.repair else diagnose(args.run_dir)
    for problem in problems:
        print(str(problem), file=out)
    note = stopped_writer(args.run_dir)
    if note:
        print(f"{args.run_dir}: note: {note}", file=out)
    left = [p for p in problems if p.kind == "manifest" or not args.repair]
    if not problems:
        print(f"{args.run_dir}: no problems found", file=out)
    elif args.repair:
        moved = len(problems) - len(left)
        print(f"{args.run_dir}: repaired {moved} problem(s); see {QUARANTINE}/", file=out)
    else:
        print(f"{args.run_dir}: {len(problems)} problem(s); --repair quarantines them", file=out)
    return EXIT_FAILED if left else EXIT_OK
