"""``evalnb report`` and ``evalnb gate``: reading runs back, from the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evalnb._exceptions import ArgumentError
from evalnb.cli._common import EXIT_FAILED, EXIT_OK, UsageError, guarded

if TYPE_CHECKING:
    from evalnb.analysis import GatePolicy

# The analysis (pandas, statsmodels) loads when a command runs, not when `evalnb run` starts.
ALL = "all"

__all__ = [
    "add_gate_arguments",
    "add_report_arguments",
    "gate_command",
    "policy_from_args",
    "report_command",
]


def add_report_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb report`` arguments to ``parser`` (a subcommand parser)."""
    parser.add_argument(
        "run", nargs="*", metavar="RUN_DIR", help="run directory (several load as one)"
    )
    parser.add_argument(
        "--history",
        metavar="DIR",
        help="instead: every run under DIR in time order, each against the one before",
    )
    parser.add_argument("--html", metavar="FILE", help="also write the report as an HTML page")
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print the report as Markdown tables (e.g. >> $GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument("--baseline", metavar="VARIANT", help="variant to compare the others with")
    parser.add_argument(
        "--check", default=ALL, metavar="NAME", help="check to report (default: all)"
    )
    parser.add_argument("--level", type=float, default=0.95, metavar="L", help="confidence level")
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="price table (TOML, dollars per million tokens): add what each variant cost",
    )
    return parser


def report_command(
    args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``evalnb report``: print the report; 0 on success, 2 on misuse."""
    return guarded("report", lambda: _report(args, stdout or sys.stdout, stderr), stderr)


def _report(args: argparse.Namespace, stdout: TextIO, stderr: TextIO | None) -> int:
    from evalnb.analysis import load
    from evalnb.report import Report
    from evalnb.store import write_text_file

    if bool(args.run) == bool(args.history):
        raise UsageError("give run directories or --history DIR (not both)")
    options = {"check": args.check, "level": args.level, "prices": args.prices}
    if args.history:
        if args.baseline:
            raise UsageError("--baseline compares variants of one run; not with --history")
        report = Report.history(args.history, **options)
    else:
        report = Report.of(load(args.run), baseline=args.baseline, **options)
    # The figures are drawn by as many processes as this one may use: it has no threads
    # of its own, so forking it is safe.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    text = report.markdown() if args.markdown else report.text()
    page = report.html(processes=cpus) if args.html else None
    if page is not None:
        try:
            write_text_file(args.html, page)
        except OSError as exc:
            raise UsageError(f"--html {args.html}: cannot write ({exc.strerror})") from None
    print(text, end="", file=stdout)
    if page is not None:
        print(f"wrote {args.html}", file=stderr or sys.stderr)
    return EXIT_OK


def add_gate_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb gate`` arguments to ``parser`` (a subcommand parser)."""
    parser.add_argument(
        "run", nargs="+", metavar="RUN_DIR", help="run directory (several load as one)"
    )
    parser.add_argument(
        "--policy", metavar="FILE", help="JSON file with policy keys; flags override"
    )
    parser.add_argument(
        "--min-rate", type=float, metavar="X", help="suite rate of each variant >= X"
    )
    parser.add_argument("--min-case-rate", type=float, metavar="X", help="every case's rate >= X")
    parser.add_argument(
        "--every-case-passes",
        action="store_true",
        default=None,
        help="every case passes at least once",
    )
    parser.add_argument(
        "--no-flaky",
        action="store_true",
        default=None,
        help="no case is flaky (an exact interval on its own pass rate excludes 0 and 1)",
    )
    parser.add_argument(
        "--agreement",
        nargs="?",
        const=True,
        metavar="MIN",
        help="every case meets its metadata agreement_min, or MIN when given",
    )
    parser.add_argument(
        "--no-worse-than",
        metavar="VARIANT|MARGIN",
        help="fail when VARIANT is better than another variant; with --baseline, a number: "
        "the drop from the baseline tolerated (default 0)",
    )
    parser.add_argument(
        "--baseline",
        metavar="OLD_RUN",
        help="an earlier run of the same cases: fail a variant that is worse than there",
    )
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        help="apply rules to this variant (repeatable)",
    )
    parser.add_argument("--check", metavar="NAME", help="check the rates use (default: all)")
    parser.add_argument("--split", choices=["dev", "heldout"], help="only cases of this split")
    parser.add_argument("--level", type=float, metavar="L", help="confidence level (default 0.95)")
    parser.add_argument(
        "--junit", metavar="FILE", help="also write the rules as JUnit XML test cases"
    )
    parser.add_argument(
        "--junit-cases",
        action="store_true",
        help="with --junit, also one test case per case and variant (--min-case-rate, or "
        "passing at least once)",
    )
    parser.add_argument(
        "--allow-interrupted",
        action="store_true",
        help="do not require the run's status to be complete",
    )
    return parser


def policy_from_args(args: argparse.Namespace) -> GatePolicy:
    """The policy a parsed ``evalnb gate`` command line asks for."""
    from evalnb.analysis import GatePolicy

    values: dict[str, Any] = {}
    if args.policy:
        try:
            values = json.loads(Path(args.policy).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ArgumentError(f"--policy {args.policy}: cannot read ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise ArgumentError(
                f"--policy {args.policy}:{exc.lineno}: not valid JSON ({exc.msg})"
            ) from None
        if not isinstance(values, dict):
            raise ArgumentError(f"--policy {args.policy}: must hold a JSON object; got {values!r}")
    flags = {
        "min_rate": args.min_rate,
        "min_case_rate": args.min_case_rate,
        "every_case_passes": args.every_case_passes,
        "no_flaky": args.no_flaky,
        "agreement": _agreement_flag(args.agreement),
        "no_worse_than": args.no_worse_than,
        "baseline": args.baseline,
        "variants": tuple(args.variant) if args.variant else None,
        "check": args.check,
        "split": args.split,
        "level": args.level,
    }
    values.update({k: v for k, v in flags.items() if v is not None})
    if values.get("baseline") is not None and values.get("no_worse_than") is not None:
        margin = _margin(values["no_worse_than"])
        if margin is not None:
            values["margin"] = margin
            del values["no_worse_than"]
    if args.allow_interrupted:
        values["require_complete"] = False
    return GatePolicy.from_mapping(values)


def _margin(value: Any) -> float | None:
    """A number given to --no-worse-than beside --baseline is the tolerated drop."""
    try:
        margin = float(value)
    except (TypeError, ValueError):
        return None
    if not 0 <= margin <= 1:
        raise ArgumentError(
            f"--no-worse-than with --baseline must be between 0 and 1; got {value!r}"
        )
    return margin


def _agreement_flag(value: Any) -> bool | float | None:
    if value is None or value is True:
        return value
    try:
        return float(value)
    except ValueError:
        raise ArgumentError(
            f"--agreement must be a number between 0 and 1; got {value!r}"
        ) from None


def gate_command(
    args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``evalnb gate``: print every rule; 1 when any fails, 0 when all pass, 2 on misuse."""
    return guarded("gate", lambda: _gate(args, stdout or sys.stdout), stderr)


def _gate(args: argparse.Namespace, stdout: TextIO) -> int:
    from evalnb.analysis import format_gate, gate, load

    if args.junit_cases and not args.junit:
        raise UsageError("--junit-cases needs --junit FILE")
    policy = policy_from_args(args)
    run = load(args.run)
    result = gate(run, policy=policy)
    if args.junit:
        _write_junit(args.junit, run, result, policy if args.junit_cases else None)
    print(format_gate(result), file=stdout)
    return EXIT_OK if bool(result["passed"].all()) else EXIT_FAILED


def _write_junit(path: str, run: Any, result: Any, policy: GatePolicy | None) -> None:
    from evalnb.analysis import rates
    from evalnb.cli._ci import case_rows, junit_xml
    from evalnb.store import write_text_file

    cases = None
    if policy is not None:
        per_case = rates(run, by=["variant", "case_id"], check=policy.check, level=policy.level)
        if policy.variants is not None:
            per_case = per_case[per_case["variant"].astype(str).isin(policy.variants)]
        cases = case_rows(per_case, policy.min_case_rate, no_flaky=policy.no_flaky)
    try:
        write_text_file(path, junit_xml(result, cases))
    except OSError as exc:
        raise UsageError(f"--junit {path}: cannot write ({exc.strerror})") from None
