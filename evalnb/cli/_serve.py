"""``evalnb standin`` and ``evalnb serve-gguf``: the model servers evalnb can start."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalnb.cli._common import UsageError
from evalnb.integrations import DEFAULT_MODEL, GGUF_TEMPLATE, MODELS, GgufServer

__all__ = ["add_serve_arguments", "serve_gguf_command", "standin_command"]


def standin_command(argv: Sequence[str]) -> int:
    """Serve the stand-in model; it parses its own flags (``evalnb standin --help``)."""
    from evalnb import standin

    return standin.main(list(argv))


def add_serve_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The flags of ``evalnb serve-gguf`` (the settings of :class:`GgufServer`)."""
    names = ", ".join(MODELS)
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        metavar="NAME|FILE",
        help=f"a model by name ({names}; default {DEFAULT_MODEL}) or a GGUF file, served "
        f"with {DEFAULT_MODEL}'s alias and chat format unless --alias/--chat-format say otherwise",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--alias", help="model name clients send (default: the model's name)")
    parser.add_argument("--n-ctx", type=int, default=2048, help="context tokens (2048)")
    parser.add_argument("--n-threads", type=int, default=2, help="CPU threads (2)")
    parser.add_argument(
        "--chat-format",
        help=f"llama.cpp chat format (default: the model's; {GGUF_TEMPLATE} is the GGUF's own)",
    )
    parser.add_argument("--log", help="server log file (default: a new file in the temp dir)")
    parser.add_argument(
        "--startup-timeout", type=float, default=120.0, help="seconds to wait for it (120)"
    )
    return parser


def serve_gguf_command(args: argparse.Namespace) -> int:
    """``evalnb serve-gguf``: serve until Ctrl-C or SIGTERM, then stop the server.

    Exit status 0 after a requested stop, 1 when the server died on its own, 2 when it
    could not start (not installed, bad flags).
    """
    stopping = threading.Event()

    def request_stop(signum: int, frame: Any) -> None:
        stopping.set()

    if args.model in MODELS:
        name, path = args.model, None
    elif Path(args.model).is_file():
        name, path = DEFAULT_MODEL, args.model
    else:
        raise UsageError(f"--model {args.model}: no such file (model names: {', '.join(MODELS)})")
    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with GgufServer(
            path,
            model=name,
            port=args.port,
            alias=args.alias,
            n_ctx=args.n_ctx,
            n_threads=args.n_threads,
            chat_format=args.chat_format,
            log_path=args.log,
            startup_timeout=args.startup_timeout,
        ) as server:
            print(
                f"serving {server.model_path.name} (sha256 {server.model_sha256}) as "
                f"{server.alias!r} at {server.base_url}\n"
                f"  pid {server.pid}, log {server.log_path}; one request at a time\n"
                f"  evalnb run CASES --base-url {server.base_url} --model {server.alias} "
                "--concurrency 1\n"
                "Ctrl-C stops it.",
                flush=True,
            )
            while not stopping.wait(0.5):
                if not server.running:
                    print(
                        f"evalnb serve-gguf: the server stopped on its own; "
                        f"see {server.log_path}:\n{server.log_tail()}",
                        file=sys.stderr,
                    )
                    return 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
