"""``evalnb import`` and ``evalnb export``: other tools' suites and logs in, results out."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from evalnb.cli._common import EXIT_OK, UsageError, guarded

if TYPE_CHECKING:
    from evalnb.interop import Limits

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "add_export_arguments",
    "add_import_arguments",
    "export_command",
    "import_command",
]

IMPORT_FORMATS = (
    "promptfoo",
    "inspect",
    "openai-evals",
    "lm-eval",
    "inspect-log",
    "promptfoo-results",
    "openai-graders",
)
EXPORT_FORMATS = ("csv", "jsonl", "eee", "inspect-scores")


_READERS = ("auto", "inspect", "evalnb")
_READER_HELP = (
    "inspect-log: 'inspect' reads with Inspect's own read_eval_log (evalnb[inspect], or the "
    "Python INSPECT_AI_PYTHON names), 'evalnb' with evalnb's, 'auto' with Inspect's when "
    "evalnb's Python has it"
)


def add_import_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb import`` arguments to ``parser`` (a subcommand parser)."""
    parser.add_argument(
        "format", choices=IMPORT_FORMATS, metavar="FORMAT", help=", ".join(IMPORT_FORMATS)
    )
    parser.add_argument("source", metavar="SOURCE", help="the other tool's file")
    parser.add_argument(
        "name",
        nargs="?",
        metavar="EVAL_NAME",
        help="openai-evals: the eval to read from a registry YAML (SOURCE)",
    )
    parser.add_argument(
        "--out", required=True, metavar="DEST", help="new folder (a suite) or run directory (a log)"
    )
    parser.add_argument(
        "--field",
        metavar="MAP",
        help="inspect: field names, like Inspect's FieldSpec (input=question,target=answer); "
        "a dotted path (choices=choices.text) reads a nested field",
    )
    parser.add_argument(
        "--scorer", metavar="NAME", help="inspect: the check standing for the task's scorer"
    )
    parser.add_argument(
        "--target-base",
        type=int,
        choices=(0, 1),
        metavar="0|1",
        help="inspect: multiple-choice targets given as indexes count from 0 or 1 "
        "(default: detected and reported)",
    )
    parser.add_argument(
        "--eval-class",
        default="Match",
        metavar="CLASS",
        help="openai-evals: Match, Includes, FuzzyMatch or ModelBasedClassify",
    )
    parser.add_argument(
        "--criteria",
        metavar="FILE",
        help="openai-graders: the testing_criteria JSON (a list, or an eval object holding it)",
    )
    parser.add_argument("--reader", choices=_READERS, default="auto", help=_READER_HELP)
    parser.add_argument(
        "--data",
        metavar="FILE",
        help="lm-eval: the task's documents (JSONL, JSON, CSV or Parquet)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, metavar="N", help="suites: repeats to plan"
    )
    parser.add_argument(
        "--allow-outside",
        action="append",
        default=[],
        metavar="PATH",
        help="promptfoo: also read file:// references inside PATH (a file or folder outside "
        "the config's folder; repeatable)",
    )
    caps = parser.add_argument_group(
        "caps", "what an import reads at most (a cap hit is one line naming the option)"
    )
    caps.add_argument(
        "--max-file-size",
        type=_size,
        metavar="SIZE",
        help="any one file read: the source, each file:// reference (default 256M)",
    )
    caps.add_argument(
        "--max-member-size",
        type=_size,
        metavar="SIZE",
        help="inspect-log: one .eval zip member, inflated (default 64M)",
    )
    caps.add_argument(
        "--max-total-size",
        type=_size,
        metavar="SIZE",
        help="all an import reads: files, each use of a file:// reference, zip members "
        "inflated (default 1G)",
    )
    caps.add_argument(
        "--max-zip-ratio",
        type=float,
        metavar="N",
        help="inspect-log: how many times a zip member may inflate (default 100)",
    )
    caps.add_argument(
        "--max-yaml-nodes",
        type=int,
        metavar="N",
        help="promptfoo: YAML nodes once aliases and list-valued vars are expanded "
        "(default 1000000)",
    )
    return parser


def _size(text: str) -> int:
    from evalnb.interop import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The cap options and the :class:`~evalnb.interop.Limits` field each sets.
_CAPS = {
    "max_file_size": "file_bytes",
    "max_member_size": "member_bytes",
    "max_total_size": "total_bytes",
    "max_zip_ratio": "zip_ratio",
    "max_yaml_nodes": "yaml_nodes",
}


def _limits(args: argparse.Namespace) -> Limits:
    """The :class:`~evalnb.interop.Limits` the cap options ask for."""
    from evalnb.interop import Limits

    given = {}
    for option, field in _CAPS.items():
        value = getattr(args, option)
        if value is not None and not value >= 1:
            name = "--" + option.replace("_", "-")
            raise UsageError(f"{name} must be at least 1; got {value:g}")
        if value is not None:
            given[field] = value
    return Limits(**given)


def _fields(text: str | None) -> dict[str, str] | None:
    if text is None:
        return None
    fields = {}
    for item in text.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise UsageError(f"--field expects NAME=FIELD pairs separated by commas; got {item!r}")
        fields[key.strip()] = value.strip()
    return fields


def import_command(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """Run ``evalnb import``: write the suite or run, print what was (not) imported."""
    return guarded("import", lambda: _import(args, stdout or sys.stdout))


def _import(args: argparse.Namespace, stdout: TextIO) -> int:
    from evalnb import interop as importers

    if args.repeats < 1:
        raise UsageError(f"--repeats must be a whole number >= 1; got {args.repeats}")
    if args.format != "inspect" and (args.field or args.scorer or args.target_base is not None):
        raise UsageError("--field, --scorer and --target-base apply to the inspect format only")
    if args.format != "promptfoo" and args.allow_outside:
        raise UsageError("--allow-outside applies to the promptfoo format only")
    if (args.format == "openai-graders") != bool(args.criteria):
        raise UsageError(
            "openai-graders needs --criteria CRITERIA.json (and --criteria applies to it only)"
        )
    if args.format != "lm-eval" and args.data:
        raise UsageError("--data applies to the lm-eval format only")
    registry = args.format == "openai-evals" and args.source.endswith((".yaml", ".yml"))
    if registry and not args.name:
        raise UsageError(
            "openai-evals REGISTRY.yaml needs the eval's name: REGISTRY.yaml EVAL_NAME"
        )
    if args.name and not registry:
        raise UsageError(
            f"EVAL_NAME applies to an openai-evals registry YAML only; got {args.name!r}"
        )
    limits = _limits(args)
    if args.format == "promptfoo":
        result = importers.import_promptfoo(
            args.source,
            args.out,
            repeats=args.repeats,
            allow_outside=args.allow_outside,
            limits=limits,
        )
    elif args.format == "inspect":
        result = importers.import_inspect(
            args.source,
            args.out,
            fields=_fields(args.field),
            scorer=args.scorer,
            repeats=args.repeats,
            limits=limits,
            target_base=args.target_base,
        )
    elif registry:
        result = importers.import_openai_evals_registry(
            args.source, args.name, args.out, repeats=args.repeats, limits=limits
        )
    elif args.format == "lm-eval":
        result = importers.import_lm_eval(
            args.source, args.out, data=args.data, repeats=args.repeats, limits=limits
        )
    elif args.format == "openai-evals":
        result = importers.import_openai_evals(
            args.source, args.out, eval_class=args.eval_class, repeats=args.repeats, limits=limits
        )
    elif args.format == "openai-graders":
        result = importers.import_openai_graders(
            args.source, args.out, criteria=args.criteria, repeats=args.repeats, limits=limits
        )
    elif args.format == "inspect-log":
        result = importers.import_inspect_log(
            args.source, args.out, limits=limits, reader=args.reader
        )
    else:
        result = importers.import_promptfoo_results(args.source, args.out, limits=limits)
    print(result.summary(), end="", file=stdout)
    return EXIT_OK


def add_export_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb export`` arguments to ``parser`` (a subcommand parser)."""
    parser.add_argument("run", metavar="RUN_DIR", help="run directory")
    parser.add_argument(
        "--format",
        required=True,
        choices=EXPORT_FORMATS,
        metavar="FORMAT",
        help=", ".join(EXPORT_FORMATS),
    )
    parser.add_argument(
        "--out",
        required=True,
        metavar="PATH",
        help="file (csv, jsonl, inspect-scores) or folder (eee)",
    )
    parser.add_argument("--variant", metavar="NAME", help="inspect-scores: the variant to export")
    parser.add_argument(
        "--annotator", metavar="NAME", help="inspect-scores: only this annotator's verdicts"
    )
    parser.add_argument(
        "--organization", default="unknown", metavar="NAME", help="eee: who ran the evaluation"
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="csv: write cells as they are (by default a cell starting with =, +, -, @, tab "
        "or CR gets a ' in front, so a spreadsheet shows it as text, not a formula)",
    )
    return parser


def export_command(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    """Run ``evalnb export``: write the run in another tool's format."""
    return guarded("export", lambda: _export(args, stdout or sys.stdout))


def _export(args: argparse.Namespace, stdout: TextIO) -> int:
    from evalnb import interop as export

    if args.raw and args.format != "csv":
        raise UsageError("--raw applies to the csv format only")
    if args.format in ("csv", "jsonl"):
        written = [export.export_samples(args.run, args.out, format=args.format, raw=args.raw)]
    elif args.format == "eee":
        written = export.export_eee(args.run, args.out, organization=args.organization)
    else:
        written = [
            export.export_inspect_scores(
                args.run, args.out, variant=args.variant, annotator=args.annotator
            )
        ]
    for path in written:
        print(f"wrote {path}", file=stdout)
    return EXIT_OK
