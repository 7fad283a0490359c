"""``evalnb standin`` and ``evalnb serve-gguf``: the model servers evalnb can start."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

__all__ = ["serve_gguf_command", "standin_command"]


def standin_command(argv: Sequence[str]) -> int:
    """Serve the stand-in model; it parses its own flags (``evalnb standin --help``)."""
    from evalnb import standin

    return standin.main(list(argv))


def serve_gguf_command(args: argparse.Namespace) -> int:
    """Serve a real GGUF model with llama.cpp until Ctrl-C."""
    from evalnb.gguf import serve_command

    return serve_command(args)
