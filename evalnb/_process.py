"""Starting and stopping the processes evalnb runs as children (the stand-in, llama.cpp,
a command target's harnesses): a free loopback port, a stop by PID that never leaves one
behind, a child that dies with its parent, and whether a PID is still alive."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["die_with_parent", "free_port", "pid_alive", "stop_process", "watchdog"]

#: ``prctl`` option: the signal the kernel sends a process when its parent dies.
_PR_SET_PDEATHSIG = 1


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


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (one of another user's counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def die_with_parent(watched_by: int | None = None) -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when the process that started it
    dies, however it dies (SIGKILL included): ``prctl(PR_SET_PDEATHSIG)``, Linux only
    (``None`` elsewhere). The kernel sends it when the *thread* that forked the child
    ends: start children from a thread that lives as long as they should (an event loop's).

    ``watched_by``: the write end of the :func:`watchdog`'s pipe (:meth:`_Watchdog.fd`); the
    child, the leader of a new session, registers its own process group there before it
    runs anything, so no moment passes in which the runner could die with the group unknown
    to the watchdog (the parent's :meth:`_Watchdog.watch` comes only after the spawn).
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def setup() -> None:
        # Runs in the child between fork and exec: no locks, no imports.
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(137)
        if watched_by is not None:
            with contextlib.suppress(OSError):  # no watchdog: PDEATHSIG still holds
                os.write(watched_by, b"+%d\n" % os.getpgid(0))  # one atomic pipe write

    return setup


@functools.cache
def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


#: The watchdog's program: it reads "+PGID" and "-PGID" lines, and at end of file (its parent
#: closed the pipe, or died) kills every process group still listed.
_WATCHDOG = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    sign, pgid = line[:1], line[1:].strip()
    if pgid.isdigit():
        (groups.add if sign == "+" else groups.discard)(int(pgid))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class _Watchdog:
    """A small helper process that kills the process groups it was told of once this
    process is gone, however it went (SIGKILL included): the kernel closes the pipe to it.
    Where ``PR_SET_PDEATHSIG`` reaches only a harness itself, this reaches every process
    left in its group."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._owner = 0

    def fd(self) -> int | None:
        """The write end of the pipe to the watchdog (started if need be), for a child to
        register its own group between fork and exec; None without a watchdog."""
        with self._lock:
            process = self._ensure()
            return None if process is None or process.stdin is None else process.stdin.fileno()

    def watch(self, pgid: int) -> None:
        """Kill process group ``pgid`` if this process dies before :meth:`release`."""
        self._send(f"+{pgid}\n")

    def release(self, pgid: int) -> None:
        """Process group ``pgid`` is over: forget it."""
        self._send(f"-{pgid}\n")

    def _ensure(self) -> subprocess.Popen[bytes] | None:
        """The running watchdog of this process, started if there is none (the lock held)."""
        process = self._process
        if process is None or self._owner != os.getpid() or process.poll() is not None:
            process = self._process = self._start()
            self._owner = os.getpid()
            if process is not None:
                atexit.register(self._close, process)
        return process

    def _send(self, line: str) -> None:
        with self._lock:
            process = self._ensure()
            if process is None or process.stdin is None:
                return
            try:
                process.stdin.write(line.encode())
                process.stdin.flush()
            except OSError:  # it died: the next line starts another
                self._process = None

    @staticmethod
    def _close(process: subprocess.Popen[bytes]) -> None:
        """At a normal exit: end of file for the watchdog, which then ends (every group it
        was told of was released already)."""
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(2)

    @staticmethod
    def _start() -> subprocess.Popen[bytes] | None:
        try:
            return subprocess.Popen(
                [sys.executable, "-S", "-c", _WATCHDOG],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # not killed with the terminal's Ctrl-C
            )
        except OSError:
            return None


_watchdog = _Watchdog()


def watchdog() -> _Watchdog:
    """This process's watchdog (started on first use, again in a forked child)."""
    return _watchdog
