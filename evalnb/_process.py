"""Starting and stopping the model servers evalnb runs as child processes (the stand-in,
llama.cpp): a free loopback port, and a stop by PID that never leaves one behind."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
from typing import Any

__all__ = ["free_port", "stop_process"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (it can still be taken before the server binds it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def stop_process(process: subprocess.Popen[Any], grace: float) -> None:
    """SIGTERM the process by its PID; SIGKILL it if it outlives ``grace`` seconds."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()
