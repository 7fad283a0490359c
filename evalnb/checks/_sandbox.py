"""Where code that came with a suite runs: a child process bounded in time, memory and reach.

Every layer is used where the platform has it, and :func:`layers` says which are active:

- resource limits set between fork and exec: memory (``RLIMIT_AS`` for Python,
  ``RLIMIT_DATA`` for Node.js, whose engine reserves address space it never uses, while
  ``RLIMIT_DATA`` counts every private writable page, ArrayBuffers included), CPU seconds,
  no core files;
- an environment of ``PATH`` and ``LANG`` only: no secret of evalnb's environment;
- a network namespace of its own with no interfaces (``unshare -rn``), where the kernel
  lets this user make one (Docker's default seccomp profile does not);
- Landlock (Linux 5.13 and later), for Python graders: reads only beneath the suite's folder
  and Python's standard library, no writes, no programs started, no TCP, no signals to
  other processes and no abstract UNIX sockets;
- its own process group, killed when the call ends, and registered with evalnb's
  :func:`~evalnb._process.watchdog` before it runs anything, so it dies with the run even when
  the run is killed by SIGKILL.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from typing import Any

from evalnb._process import watchdog

__all__ = [
    "PYTHON_MEMORY_MB",
    "WORKERS",
    "Lines",
    "isolated",
    "landlock_abi",
    "python_layers",
    "run_python",
    "spawn",
    "stop",
]

#: The address space of one Python grader's process, in MB.
PYTHON_MEMORY_MB = 512
#: How many code graders run at once (Python processes, Node.js workers).
WORKERS = max(2, min(4, os.cpu_count() or 2))
#: The most a worker's reply may hold, in bytes.
REPLY_BYTES = 1 << 20

_python_slots = threading.BoundedSemaphore(WORKERS)


def _limits(memory_mb: int, cpu_seconds: int | None, data: bool) -> Callable[[], None]:
    """A ``preexec_fn``: the limits, then the new group registered with the watchdog."""
    fd = watchdog().fd()
    memory = memory_mb << 20
    which = resource.RLIMIT_DATA if data else resource.RLIMIT_AS

    def setup() -> None:
        # Runs in the child between fork and exec: no locks, no imports.
        resource.setrlimit(which, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cpu_seconds is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        if fd is not None:
            with contextlib.suppress(OSError):  # no watchdog: the caller still kills it
                os.write(fd, b"+%d\n" % os.getpgid(0))

    return setup


@functools.cache
def _unshare() -> str | None:
    """``unshare`` when it can make a user and network namespace here, else None."""
    found = shutil.which("unshare")
    if found is None:
        return None
    try:
        probe = subprocess.run([found, "-rn", "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if probe.returncode == 0 else None


def isolated(command: list[str]) -> list[str]:
    """``command`` in a network namespace of its own when ``unshare`` can make one."""
    found = _unshare()
    return [found, "-rn", *command] if found else command


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = int(libc.syscall(444, None, 0, 1))  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def spawn(
    command: list[str], *, memory_mb: int, cpu_seconds: int | None = None, data: bool = False
) -> subprocess.Popen[bytes]:
    """Start ``command`` bounded (see the module), in its own process group, with pipes."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        cwd="/",
        start_new_session=True,
        preexec_fn=_limits(memory_mb, cpu_seconds, data),
    )
    watchdog().watch(process.pid)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the process's whole group and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    watchdog().release(process.pid)


class Lines:
    """Lines read from a pipe with a deadline, never past :data:`REPLY_BYTES`."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def next(self, deadline: float) -> bytes | None:
        """The next line; None at end of file, a deadline passed or a line too long."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or len(self.buffer) > REPLY_BYTES:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        return line


def python_layers() -> str:
    """One line: which layers bound a Python grader here."""
    reach = (
        "reads only its folder and the standard library, no writes, programs, TCP or signals "
        "(Landlock)"
        if landlock_abi() >= 1
        else "no Landlock here: the file system is not fenced"
    )
    network = "no network (own namespace)" if _unshare() else "no network namespace here"
    return (
        f"a separate process per call with {PYTHON_MEMORY_MB} MB of address space, "
        f"PATH and LANG only; {network}; {reach}"
    )


def run_python(request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run a Python grader (``code``, ``function``, ``output``, ``context``, ``folder``)
    in a bounded process; its reply ``{"ok", "value" | "error"}``."""
    command = isolated([sys.executable, "-I", "-S", "-c", _WORKER])
    payload = json.dumps(
        {**request, "stdlib": sysconfig.get_paths()["stdlib"], "landlock": landlock_abi()}
    ).encode()
    with _python_slots:
        started = time.monotonic()
        process = spawn(command, memory_mb=PYTHON_MEMORY_MB, cpu_seconds=int(timeout) + 1)
        try:
            assert process.stdin is not None and process.stdout is not None
            with contextlib.suppress(BrokenPipeError, OSError):
                process.stdin.write(payload)
                process.stdin.close()
            line = Lines(process.stdout.fileno()).next(started + timeout)
        finally:
            stop(process)
    if line is None:
        took = time.monotonic() - started
        why = (
            f"took longer than {timeout:g} s"
            if took >= timeout
            else f"ended without a reply (past its {PYTHON_MEMORY_MB} MB, or killed)"
        )
        return {"ok": False, "error": f"the Python grader {why}"}
    try:
        reply: dict[str, Any] = json.loads(line)
    except ValueError:
        return {"ok": False, "error": "the Python grader's process gave no readable reply"}
    return reply


#: The Python worker: reads one request on stdin, fences itself in (Landlock), runs the
#: grader and writes one JSON line on its own stdout (the grader's prints are kept apart).
_WORKER = r"""
import ctypes, io, json, os, sys
import collections, datetime, difflib, functools, itertools, math, random, re, statistics
import string, unicodedata
req = json.loads(sys.stdin.buffer.read())
out = os.dup(1)
sys.stdout = io.StringIO()

def fence(abi, folder, stdlib):
    libc = ctypes.CDLL(None, use_errno=True)
    fs = (1 << 13) - 1
    if abi >= 2: fs |= 1 << 13
    if abi >= 3: fs |= 1 << 14
    if abi >= 5: fs |= 1 << 15
    net = 3 if abi >= 4 else 0
    scoped = 3 if abi >= 6 else 0
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    attr = (ctypes.c_uint64 * 3)(fs, net, scoped)
    ruleset = libc.syscall(444, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), 'landlock_create_ruleset')
    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [('allowed', ctypes.c_uint64), ('fd', ctypes.c_int32)]
    for path in (folder, stdlib):
        if not path or not os.path.isdir(path):
            continue
        fd = os.open(path, os.O_PATH)
        rule = Beneath((1 << 2) | (1 << 3), fd)
        if libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), 'landlock_add_rule')
        os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'no_new_privs')
    if libc.syscall(446, ruleset, 0) != 0:
        raise OSError(ctypes.get_errno(), 'landlock_restrict_self')

LIMIT = 100000

def reply(value):
    text = json.dumps(value, default=str)
    if len(text) > LIMIT:  # a long reason is cut, its size kept in the text
        v = value.get('value')
        if isinstance(v, dict) and isinstance(v.get('reason'), str):
            r = v['reason']
            v = {'pass': v.get('pass'), 'score': v.get('score'),
                 'reason': r[:LIMIT] + ' [cut: %d characters in all]' % len(r)}
            text = json.dumps({'ok': True, 'value': v}, default=str)
        if len(text) > 2 * LIMIT:
            text = json.dumps({'ok': False, 'error': 'the grader returned %d characters of '
                               'JSON (over %d)' % (len(text), LIMIT)})
    os.write(out, (text + '\n').encode())
    os._exit(0)

try:
    if req['landlock'] >= 1:
        fence(req['landlock'], req.get('folder'), req['stdlib'])
    namespace = {'__name__': 'evalnb_grader'}
    exec(compile(req['code'], req['where'], 'exec'), namespace)
    function = namespace[req['function']]
    output = req['output']
    if req.get('json_output'):
        try:
            output = json.loads(output)
        except ValueError as exc:
            reply({'ok': False, 'error': 'the transform JSON.parse(output) failed: ' + str(exc)})
    value = function(output, req['context'])
    reply({'ok': True, 'value': json.loads(json.dumps(value, default=str))})
except BaseException as exc:
    reply({'ok': False, 'error': ('raised %s: %s' % (type(exc).__name__, exc)).split('\n')[0]})
"""
