"""``evalnb run``, ``evalnb demo`` and ``evalnb score``: the commands that write runs."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalnb._types import Variant
from evalnb.cases import (
    Experiment,
    JudgeSpec,
    RunDesign,
    load_experiment,
    parse_value,
    parse_variant,
)
from evalnb.cases.suites import PREFIX, resolve
from evalnb.cli._ci import show_progress
from evalnb.cli._common import UsageError, interrupts_once
from evalnb.cli._rules import race_note, repeats_flag, until_flag
from evalnb.runner import run
from evalnb.store import Manifest
from evalnb.targets import TARGET_TYPES, Command, Containment, OpenAIChat, Target, http_target

__all__ = [
    "add_demo_arguments",
    "add_run_arguments",
    "add_score_arguments",
    "demo_command",
    "run_command",
    "score_command",
]


def add_run_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb run`` arguments to ``p``."""
    p.add_argument(
        "cases",
        nargs="?",
        help=f"cases file (.jsonl, .json, .yaml or .csv), or {PREFIX}NAME (packaged)",
    )
    p.add_argument(
        "--experiment", help=f"experiment file (TOML) or {PREFIX}NAME; flags override it"
    )
    p.add_argument("--standin", action="store_true", help="target: the embedded stand-in model")
    p.add_argument(
        "--base-url", help="target: OpenAI-compatible URL, e.g. http://127.0.0.1:8080/v1"
    )
    p.add_argument(
        "--command",
        help="target: harness command, e.g. '{python} app.py --url {base_url} {request}'",
    )
    p.add_argument(
        "--target",
        choices=list(TARGET_TYPES),
        help="the server's protocol (default openai: chat completions); the stand-in speaks all",
    )
    p.add_argument("--model", help="model name sent in every request")
    p.add_argument(
        "--containment",
        action="store_true",
        help="command target: private marker files, and check nothing leaks or changes",
    )
    p.add_argument(
        "--require-trace", action="store_true", help="command target: no usable trace = malformed"
    )
    p.add_argument(
        "--api-key-env",
        help="name of the environment variable holding the API key (a command target's "
        "harness gets it; its value is never stored)",
    )
    p.add_argument(
        "--pass-env",
        action="append",
        default=[],
        metavar="NAME",
        help="command target: pass this secret-named variable (e.g. OPENAI_API_KEY) to the "
        "harness; others named like secrets are left out of its environment",
    )
    p.add_argument("--param", action="append", default=[], help="request param KEY=VALUE")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME, NAME=@PREFIX_FILE, NAME=PREFIX or NAME:key=value,... with prefix, system, "
        "template (@FILE allowed) or request params (repeatable)",
    )
    p.add_argument(
        "--repeats",
        metavar="N|settled[:max=N,alpha=A,tol=T]",
        help="samples per case and variant (default 1); settled: draw each case's repeats "
        "until its verdict (stable pass, flaky, stable fail) is settled, up to max (default "
        "10; evalnb.UntilSettled)",
    )
    p.add_argument("--concurrency", type=int, help="samples in flight at once (default 8)")
    p.add_argument("--order", choices=["alternate", "shuffle"], help="execution order scheme")
    p.add_argument("--seed", type=int, help="seed of the shuffled order")
    p.add_argument("--request-timeout", type=float, help="per-request / per-process timeout (s)")
    p.add_argument("--out", help="run directory to create (default runs/run-<time>-<hex>)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted run in --out")
    _until_arguments(p)
    _budget_and_cache_arguments(p)
    _progress_arguments(p)
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the samples as shards on this Dask scheduler, e.g. tcp://HOST:8786 "
        "(every worker must see --out at the same path)",
    )
    p.add_argument("--shard-size", type=int, help="samples per shard with --dask (default 100)")
    p.add_argument("--judge-model", help="model for 'judge' checks (default URL: the target's)")
    p.add_argument("--judge-base-url", help="OpenAI-compatible URL of the judge model")
    p.add_argument(
        "--judge-api-key-env",
        help="environment variable holding the judge's API key (a judge at another URL "
        "never gets the target's key)",
    )
    _trust_argument(p)
    return p


def _trust_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust-code",
        action="store_true",
        help="run the code the suite carries (Python graders, promptfoo assertions with "
        "JavaScript; bounded, out of process); without "
        "it, a suite with code stops before anything runs unless that code was trusted before",
    )


def _until_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--until",
        metavar="best[:eps=E,delta=D,check=NAME]",
        help="race the variants to the best one (evalnb.Best): cases run in a seeded random "
        "order, a variant another beats by more than eps (default 0) stops drawing samples, "
        "and the run stops once one is left; the best is eliminated with chance at most "
        "delta (default 0.05)",
    )
    p.add_argument(
        "--until-decided",
        nargs="+",
        metavar="VARIANT",
        help="run until decided: A B [B2 ...], the baseline then the others; cases run in a "
        "seeded random order until an anytime-valid sequence decides (or cases/budget run out)",
    )
    p.add_argument(
        "--alpha", type=float, help="--until-decided: family-wise error rate (default 0.05)"
    )
    p.add_argument(
        "--margin",
        type=float,
        help="--until-decided: also stop as 'equivalent' once the difference is inside +-MARGIN",
    )


def _until(args: argparse.Namespace, experiment: Experiment) -> Any:
    """The ``[until]`` table with --until-decided, --alpha and --margin over it, or the
    rule ``--until`` names."""
    if args.until is not None:
        if args.until_decided:
            raise UsageError("--until and --until-decided both stop the run; give one of them")
        rule = until_flag(args.until)
        for key in ("alpha", "margin"):
            if getattr(args, key) is not None:
                raise UsageError(f"--{key} is a setting of --until-decided; not of --until best")
        return rule
    spec = dict(experiment.until)
    if args.until_decided:
        if len(args.until_decided) < 2:
            raise UsageError(
                f"--until-decided needs a baseline and at least one other variant: A B; "
                f"got {args.until_decided!r}"
            )
        spec.update(a=args.until_decided[0], b=args.until_decided[1:])
    for key in ("alpha", "margin"):
        if getattr(args, key) is not None:
            if not spec:
                raise UsageError(f"--{key} needs --until-decided A B")
            spec[key] = getattr(args, key)
    return spec or None


def _judge(args: argparse.Namespace, experiment: Experiment) -> JudgeSpec | None:
    """The ``[judge]`` table with --judge-model, --judge-base-url and --judge-api-key-env
    over it."""
    spec = experiment.judge.to_dict() if experiment.judge else {}
    if args.judge_model:
        spec["model"] = args.judge_model
    if spec:
        if args.judge_base_url:
            spec["base_url"] = args.judge_base_url
        if args.judge_api_key_env:
            spec["api_key_env"] = args.judge_api_key_env
    elif args.judge_base_url or args.judge_api_key_env:
        raise UsageError("--judge-base-url and --judge-api-key-env need --judge-model NAME")
    return JudgeSpec(**spec) if spec else None


def _budget_and_cache_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="stop the run (resumable) once finished samples cost this much; needs --prices",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="stop the run (resumable) once finished samples used N tokens",
    )
    p.add_argument(
        "--prices", metavar="FILE", help="price table (TOML, dollars per million tokens)"
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="development cache: store responses by request body and repeat, reuse them",
    )


def _stopped_note(result: Any, argv: Sequence[str], resumed: bool) -> None:
    """After a budget stop: say so and how to finish the run (stderr; the exit stays 0,
    the run did what it was asked, and ``gate`` refuses an interrupted run)."""
    if result.stopped is None:
        return
    again = shlex.join(["evalnb", *argv, *([] if resumed else ["--resume"])])
    print(
        "the budget stopped the run; what finished is saved. Resume (raise the limit to go "
        f"further) with:\n  {again}",
        file=sys.stderr,
    )


def _progress_arguments(p: argparse.ArgumentParser) -> None:
    shown = p.add_mutually_exclusive_group()
    shown.add_argument(
        "--progress", action="store_true", help="draw the progress bar (default: on a terminal)"
    )
    shown.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def add_demo_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb demo`` arguments to ``p``."""
    p.add_argument(
        "--cases", default=f"{PREFIX}shop40", help=f"cases file (default: {PREFIX}shop40)"
    )
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=0, help="stand-in seed")
    p.add_argument("--out", help="run directory (default runs/demo-<time>)")
    _progress_arguments(p)
    return p


def add_score_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``evalnb score`` arguments to ``p``."""
    p.add_argument("run_dir", help="the run directory")
    p.add_argument("--cases", help="cases file with the checks to use (default: the manifest's)")
    p.add_argument("--check", action="append", default=[], help="JSON check spec for every case")
    p.add_argument("--label", help="name of the new scoring (default score-<time>)")
    p.add_argument("--judge-base-url", help="judge model URL, for 'judge' checks")
    p.add_argument("--judge-model", help="judge model name")
    p.add_argument("--api-key-env", help="environment variable holding the judge's API key")
    p.add_argument(
        "--partial",
        action="store_true",
        help="score an interrupted run as it is (labelled partial; never read by default)",
    )
    _trust_argument(p)
    return p


def _command_argv(spec: dict[str, Any], server: str | None, base_dir: Path) -> list[str]:
    """The harness argv with ``{python}``, ``{base_url}`` and ``{model}`` filled in, and
    script paths made absolute (the process runs in a fresh workspace)."""
    argv = spec["command"]
    argv = shlex.split(argv) if isinstance(argv, str) else list(argv)
    values = {"python": sys.executable, "base_url": server, "model": spec.get("model")}
    out = []
    for arg in argv:
        for name, value in values.items():
            if f"{{{name}}}" in arg:
                if value is None:
                    raise UsageError(
                        f"the command uses {{{name}}}, but no {name} was given "
                        "(--standin or --base-url, --model)"
                    )
                arg = arg.replace(f"{{{name}}}", value)
        local = base_dir / arg
        out.append(str(local.resolve()) if not os.path.isabs(arg) and local.is_file() else arg)
    return out


def _target(spec: dict[str, Any], stack: contextlib.ExitStack, base_dir: Path) -> Target:
    """The target an experiment's settings describe.

    ``standin`` or ``base_url`` name the model server; with ``command`` the target is the
    harness (which reaches that server through ``{base_url}`` in its argv), otherwise
    the server itself through ``OpenAIChat``.
    """
    if spec.get("standin") and spec.get("base_url"):
        raise UsageError("choose one model server: --standin or --base-url URL, not both")
    server = spec.get("base_url")
    if spec.get("standin"):
        from evalnb.standin import StandIn

        server = stack.enter_context(StandIn()).base_url
    if spec.get("command"):
        containment = Containment() if spec.get("containment") else None
        return Command(
            _command_argv(spec, server, base_dir),
            setup=containment.setup if containment else None,
            inspect=containment.inspect if containment else None,
            require_trace=bool(spec.get("require_trace")),
            # The harness reaches the model with the key: passed to it, never stored.
            pass_env=[*spec.get("pass_env", []), *filter(None, [spec.get("api_key_env")])],
            **({"timeout": spec["timeout"]} if spec.get("timeout") else {}),
        )
    return http_target(spec, server)


def _params(items: Sequence[str]) -> dict[str, Any]:
    params = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--param must be KEY=VALUE; got {item!r}")
        params[key] = parse_value(value)
    return params


def _cluster_settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.shard_size is not None and not args.dask:
        raise UsageError("--shard-size needs --dask ADDRESS (shards run on a cluster)")
    settings: dict[str, Any] = {"cluster": args.dask} if args.dask else {}
    if args.shard_size is not None:
        settings["shard_size"] = args.shard_size
    return settings


def _design(args: argparse.Namespace, experiment: Experiment) -> RunDesign:
    """The run's design: the experiment file's (an empty one without ``--experiment``)
    with the flags over it, the path ``run_experiment`` takes too."""
    if args.max_cost is not None and args.prices is None:
        raise UsageError("--max-cost needs --prices FILE (the price table, TOML)")
    cases = resolve(args.cases, ".jsonl") if args.cases else None
    if cases is None and experiment.cases is None:
        raise UsageError("no cases: give a cases file, or an experiment file with 'cases'")
    design = experiment.design(
        cases,
        variants=[parse_variant(v) for v in args.variant] or None,
        repeats=repeats_flag(args.repeats),
        concurrency=args.concurrency,
        order=args.order,
        seed=args.seed,
        judge=_judge(args, experiment),
        until=_until(args, experiment),
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
        prices=args.prices,
        cache=args.cache,
    )
    if args.until is not None and len(design.variants) < 2:
        raise UsageError(
            f"--until best races two or more variants (--variant NAME...); the run has "
            f"{len(design.variants)}"
        )
    return design


def _target_spec(args: argparse.Namespace, experiment: Experiment) -> dict[str, Any]:
    """The ``[target]`` table with the target flags over it."""
    spec = dict(experiment.target)
    flags = {
        "standin": args.standin or None,
        "base_url": args.base_url,
        "command": args.command,
        "model": args.model,
        "type": args.target,
        "api_key_env": args.api_key_env,
        "timeout": args.request_timeout,
    }
    if flags["standin"] or flags["base_url"]:
        spec.pop("standin", None)
        spec.pop("base_url", None)
    if flags["command"]:
        spec.pop("command", None)
    for key in ("containment", "require_trace"):
        if getattr(args, key):
            spec[key] = True
    if args.pass_env:
        spec["pass_env"] = [*spec.get("pass_env", []), *args.pass_env]
    spec.update({k: v for k, v in flags.items() if v is not None})
    if args.param:
        spec["params"] = {**spec.get("params", {}), **_params(args.param)}
    return spec


def run_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``evalnb run``: the first Ctrl-C or SIGTERM, at any step (a template rendering as
    the design is checked, a sample in flight), ends it in one line."""
    started: list[Path] = []

    def starting(path: Path) -> None:
        started.append(path)
        print(f"writing {path}", file=sys.stderr)

    with interrupts_once():
        try:
            return _run(args, argv, starting)
        except KeyboardInterrupt:
            if not started:
                print("\ninterrupted before the run started; nothing was written", file=sys.stderr)
                return 130
            again = shlex.join(["evalnb", *argv, *([] if args.resume else ["--resume"])])
            print(
                f"\ninterrupted; what finished is saved. Resume with:\n  {again}",
                file=sys.stderr,
            )
            return 130


def _run(args: argparse.Namespace, argv: Sequence[str], on_start: Callable[[Path], None]) -> int:
    experiment = (
        load_experiment(resolve(args.experiment, ".toml"))
        if args.experiment
        else Experiment(Path.cwd() / "command line")
    )
    design = _design(args, experiment)
    spec = _target_spec(args, experiment)
    with contextlib.ExitStack() as stack:
        base_dir = experiment.path.parent if args.experiment and not args.command else Path.cwd()
        result = run(
            design,
            _target(spec, stack, base_dir),
            out=args.out,
            resume=args.resume,
            progress=show_progress(args),
            command=["evalnb", *argv],
            on_start=on_start,
            trust_code=args.trust_code,
            **_cluster_settings(args),
        )
    print(result.summary())
    if design.until is not None:
        _until_note(result.path)

    _stopped_note(result, argv, args.resume)
    return 0


def _until_note(path: Path) -> None:
    """The rule's verdicts, one line per comparison, as the run's last look left them."""
    until = Manifest.read(path).until or {}
    rule, looks = until.get("rule") or {}, until.get("looks") or []
    raced = race_note(until)
    if raced is not None:
        print(raced)
    for entry in until.get("verdicts") or []:
        low, high = entry.get("low"), entry.get("high")
        print(
            f"until decided: {entry['b']} vs {rule.get('a')}: {entry['verdict']} after "
            f"{len(looks)} of {len(until.get('order') or [])} cases (stopped: "
            f"{until.get('stopped')}); {100 * (1 - rule.get('alpha_each', 0.05)):g}% "
            f"anytime-valid interval {100 * low:+.1f} to {100 * high:+.1f} pp"
        )


def demo_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from evalnb.analysis import compare, load, suite_rate
    from evalnb.analysis._story import story
    from evalnb.standin import StandIn

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) if args.out else Path("runs") / f"demo-{stamp}"
    variants = [Variant("v1"), Variant("v2", params={"model": "shop-v2"})]
    with StandIn(seed=args.seed) as server:
        target = OpenAIChat(server.base_url, "shop-v1")
        result = run(
            resolve(args.cases, ".jsonl"),
            target,
            variants=variants,
            repeats=args.repeats,
            out=out,
            concurrency=16,
            progress=show_progress(args),
            command=["evalnb", *argv],
        )
    print(result.summary())
    run_frames = load(out)
    table = suite_rate(run_frames, check="all")
    print(
        "\nPass rate (a sample passes when every check of its case passes), per variant: "
        "the mean of per-case rates, its interval across cases:"
    )
    for row in table.itertuples():
        print(
            f"  {row.variant:<4} {row.estimate:6.1%}  ({row.level:.0%} CI {row.low:.1%} to "
            f"{row.high:.1%}), {row.cases} cases x {row.repeats:g} repeats "
            f"({row.method}, effective sample size)"
        )
    diff = compare(run_frames, a="v1", b="v2").iloc[0]
    told = story(diff)  # the words of compare's display and of the report
    print(f"\nPaired comparison, {diff.repeats_a:g} repeats a case: {told.line('v1', 'v2', 'all')}")
    if told.note:  # why the verdict is what it is (too few cases for the exact test...)
        print(f"Note: {told.note.rstrip('.')}.")
    print(
        f"\nThe run is in {out}/ (Parquet + manifest.json). Next, in a notebook:\n"
        f"  import evalnb\n  run = evalnb.load({str(out)!r})\n"
        '  evalnb.compare(run, a="v1", b="v2")'
    )
    return 0


def score_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from evalnb.runner import score
    from evalnb.store import scorings

    judge = None
    if args.judge_model:
        if not args.judge_base_url:
            raise UsageError("--judge-model needs --judge-base-url")
        judge = OpenAIChat(args.judge_base_url, args.judge_model, api_key_env=args.api_key_env)
    checks = [parse_value(text) for text in args.check]
    for i, spec in enumerate(checks):
        if not isinstance(spec, dict):
            raise UsageError(f"--check #{i + 1} must be a JSON object; got {spec!r}")
        if spec.get("type") == "python" and "base" not in spec:
            # A module named on the command line is looked for in the current folder first.
            spec["base"] = str(Path.cwd())
    label = score(
        args.run_dir,
        cases=args.cases,
        checks=checks,
        label=args.label,
        judge=judge,
        partial=args.partial,
        trust_code=args.trust_code,
    )
    info = next(i for i in scorings(args.run_dir) if i["label"] == label)
    what = "partially (labelled partial)" if info.get("partial") else "again"
    print(f"scored {args.run_dir} {what} as {label!r} (the earlier results are kept)")
    return 0
