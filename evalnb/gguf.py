"""Kept for one release: the real models moved to :mod:`evalnb.integrations` and the
``serve-gguf`` command line to :mod:`evalnb.cli.serve`. ``python -m evalnb.gguf`` still
serves a model, as ``evalnb serve-gguf`` does."""

from __future__ import annotations

import argparse
import sys

from evalnb.cli._common import guarded
from evalnb.cli.serve import add_serve_arguments, gguf_main, serve_gguf_command
from evalnb.integrations import *  # noqa: F403
from evalnb.integrations import __all__ as _moved

main = gguf_main


def serve_command(args: argparse.Namespace) -> int:
    """``evalnb serve-gguf``'s work, its errors one line and exit 2."""
    return guarded("serve-gguf", lambda: serve_gguf_command(args))


__all__ = [*_moved, "add_serve_arguments", "main", "serve_command"]

if __name__ == "__main__":
    sys.exit(main())
