"""The ``evalnb`` command line: every command's parsing and exit codes, in one place.

Exit codes: 0 the command did its job (for ``run``: the experiment ran and was written,
whatever the model did); 1 a gate failed; 2 bad input or usage; 130 interrupted.
Every ordinary mistake is one line on stderr, ``evalnb COMMAND: error: ...``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from evalnb.cli._analyse import (
    add_gate_arguments,
    add_report_arguments,
    gate_command,
    report_command,
)
from evalnb.cli._common import Parser, guarded
from evalnb.cli._doctor import add_doctor_arguments, doctor_command
from evalnb.cli._interop import (
    add_export_arguments,
    add_import_arguments,
    export_command,
    import_command,
)
from evalnb.cli._run import (
    add_demo_arguments,
    add_run_arguments,
    add_score_arguments,
    demo_command,
    run_command,
    score_command,
)
from evalnb.cli._serve import add_serve_arguments, serve_gguf_command, standin_command

__all__ = ["main"]


#: Each command's name, what ``evalnb --help`` says of it, and what adds its arguments.
_ARGUMENTS: list[tuple[str, str, Callable[[argparse.ArgumentParser], object]]] = [
    ("run", "run cases x variants x repeats against a target", add_run_arguments),
    ("demo", "the shop comparison (v1 vs v2) on the stand-in", add_demo_arguments),
    ("score", "recompute checks of a stored run (no model calls)", add_score_arguments),
    ("gate", "apply an explicit pass/fail policy to a run", add_gate_arguments),
    ("report", "rates, suite rate, comparison, latency", add_report_arguments),
    ("doctor", "find (and --repair) duplicates, orphans, unreadable files", add_doctor_arguments),
    ("import", "another tool's suite or log as cases or a run", add_import_arguments),
    ("export", "a run as CSV, JSONL, EEE, Inspect scores", add_export_arguments),
    ("serve-gguf", "serve a real GGUF model with llama.cpp on 127.0.0.1", add_serve_arguments),
]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="evalnb", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command_name", required=True, metavar="COMMAND")
    for name, summary, add_arguments in _ARGUMENTS:
        add_arguments(sub.add_parser(name, help=summary))
    sub.add_parser("standin", help="serve the stand-in model on 127.0.0.1", add_help=False)
    return parser


_COMMANDS: dict[str, Callable[[argparse.Namespace, list[str]], int]] = {
    "run": run_command,
    "demo": demo_command,
    "score": score_command,
    "gate": lambda args, argv: gate_command(args),
    "report": lambda args, argv: report_command(args),
    "doctor": lambda args, argv: doctor_command(args),
    "import": lambda args, argv: import_command(args),
    "export": lambda args, argv: export_command(args),
    "serve-gguf": lambda args, argv: serve_gguf_command(args),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command, return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["standin"]:
        return standin_command(argv[1:])
    args = _parser().parse_args(argv)
    name = args.command_name
    return guarded(name, lambda: _COMMANDS[name](args, argv))
