"""An application under test, run as an unchanged executable once per sample.

Each sample gets a fresh temporary directory, removed afterwards whatever happens::

    evalnb-<runner pid>-<random>/
      workspace/          the process's working directory, holding the case's fixtures
      io/request.json     what to answer (case_id, variant, repeat, messages, prompt, params)
      io/trace.jsonl      where the harness may write a JSONL trace

The process reads nothing from stdin (it is at end of file, so nothing can approve an
action) and runs in its own process group, which is killed as a whole when the sample
ends, so no helper it started outlives the sample. Should the runner die, even by SIGKILL,
the process gets SIGKILL from the kernel on Linux (``PR_SET_PDEATHSIG``), and a small
watchdog process, which sees the runner's end as the end of a pipe, kills its whole process
group. A sample directory left behind by a runner that was killed is removed when the next
:class:`Command` starts its first sample (a directory whose runner's PID is alive, or that
another user owns, is left alone).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from evalnb._evidence import parse_trace
from evalnb._exceptions import ArgumentError, TargetError
from evalnb._numbers import is_number, is_whole
from evalnb._process import die_with_parent, pid_alive, watchdog
from evalnb._secrets import register, secret_env, withhold
from evalnb._types import Case, Completion, Request
from evalnb.cases import file_sha256

__all__ = ["Command"]

#: How long to wait for the pipes to close once the process group is dead. Only a
#: descendant that left the group (``setsid``) can hold them open that long.
_DRAIN_SECONDS = 2.0

_PLACEHOLDER = re.compile(r"\{(request|trace|workspace|prompt)\}")

#: A sample directory's name: ``evalnb-<pid of the runner that made it>-<random>``.
_PREFIX = "evalnb-"
_SAMPLE_DIR = re.compile(r"evalnb-(\d+)-[A-Za-z0-9_]+")

Setup = Callable[[Path, Path, Request], Awaitable[None] | None]
Inspect = Callable[[Path, Path, Request, Completion], Any]


class Command:
    """Run ``argv`` once per sample in a fresh workspace; the answer is its stdout.

    In any element of ``argv`` the placeholders ``{request}``, ``{trace}``,
    ``{workspace}`` and ``{prompt}`` are replaced by the request file, the trace path,
    the workspace and the prompt as sent (plain replacement: other braces are left
    alone). The process also finds them in ``EVALNB_REQUEST``, ``EVALNB_TRACE`` and
    ``EVALNB_WORKSPACE``, next to ``EVALNB_CASE_ID``, ``EVALNB_VARIANT`` and
    ``EVALNB_REPEAT``; ``env`` is merged over the parent environment, from which
    secrets are left out unless named in ``pass_env``: variables named like secrets
    (``OPENAI_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ``*CREDENTIAL*``,
    ``*_KEY``, ``*KEY_ID*``) and any whose value is a URL with user info
    (``DB_URL=postgres://u:pw@host/db``). The values of both, passed or withheld, are
    redacted from everything stored (a withheld value of fewer than 8 characters is left
    alone: it is an ordinary word). Request params are only in ``request.json``.

    The process runs in the workspace, so give a script as an absolute path;
    ``describe()`` records the SHA-256 of the executable and of every absolute file
    path in ``argv``, and the interpreter's version when ``argv[0]`` is a Python.
    ``setup(tmpdir, workspace, request)``, sync or async, runs before the process
    starts, e.g. to place files the application must not read; ``inspect(tmpdir,
    workspace, request, completion)`` runs after it ends (also after a timeout or a
    crash) and returns facts to keep on the sample (``Completion.facts``).
    With ``require_trace`` a missing or unreadable trace makes the sample ``malformed``:
    an answer without its evidence is not a completed sample.

    stdout and stderr are kept up to ``max_output`` bytes each and the trace up to
    ``max_trace`` bytes; the rest is read and dropped so the process never blocks on a
    full pipe. After ``timeout`` seconds the process group is killed and the sample is
    a ``timeout``; a non-zero exit is an ``error`` and an empty stdout is ``empty``.

    >>> target = Command(["python3", "/opt/notes/harness.py", "--request", "{request}"])
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 130.0,
        max_output: int = 128 * 1024,
        max_trace: int = 1024 * 1024,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        answer: str = "stdout",
        setup: Setup | None = None,
        inspect: Inspect | None = None,
        require_trace: bool = False,
    ):
        if isinstance(argv, str | bytes) or not isinstance(argv, Sequence):
            raise TypeError(f"'argv' must be a list of strings; got {argv!r}")
        if not argv:
            raise ArgumentError(f"'argv' must name a program; got {argv!r}")
        if not all(isinstance(arg, str) for arg in argv):
            raise TypeError(f"'argv' must hold only strings; got {argv!r}")
        program = argv[0]
        if not program or (os.sep in program and not os.path.isabs(program)):
            raise ArgumentError(
                "'argv[0]' must be a command name found on PATH or an absolute path "
                f"(the process runs in a fresh workspace); got {program!r}"
            )
        if not is_number(timeout, 0, open_low=True):
            raise ArgumentError(f"'timeout' must be a positive number of seconds; got {timeout!r}")
        for name, value in (("max_output", max_output), ("max_trace", max_trace)):
            if not is_whole(value, 1):
                raise ArgumentError(f"{name!r} must be a positive number of bytes; got {value!r}")
        if env is not None and not (
            isinstance(env, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise TypeError(f"'env' must map names to strings; got {env!r}")
        if isinstance(pass_env, str) or not all(isinstance(n, str) for n in pass_env):
            raise TypeError(f"'pass_env' must be a list of variable names; got {pass_env!r}")
        if answer != "stdout":
            raise ArgumentError(f"'answer' must be 'stdout'; got {answer!r}")
        for name, hook in (("setup", setup), ("inspect", inspect)):
            if hook is not None and not callable(hook):
                raise TypeError(f"{name!r} must be callable; got {hook!r}")
        self.argv = list(argv)
        self.timeout = float(timeout)
        self.max_output = max_output
        self.max_trace = max_trace
        self.env = dict(env or {})
        self.pass_env = sorted(set(pass_env))
        for name in self.pass_env:  # passed to the harness, still never stored
            register(os.environ.get(name))
        self.answer = answer
        self.setup = setup
        self.inspect = inspect
        self.require_trace = require_trace
        self._swept = False

    async def complete(self, request: Request) -> Completion:
        if not self._swept:
            self._swept = True
            sweep_stale_workspaces()
        tmpdir = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
        try:
            return await self._run(tmpdir, request)
        finally:
            _remove_tree(tmpdir)

    async def describe(self) -> dict[str, Any]:
        return await asyncio.to_thread(self._describe)

    def _describe(self) -> dict[str, Any]:
        executable = shutil.which(self.argv[0], path=self._environ().get("PATH"))
        files = {
            arg: file_sha256(arg)
            for arg in self.argv[1:]
            if os.path.isabs(arg) and os.path.isfile(arg)
        }
        return {
            "type": "command",
            "argv": list(self.argv),
            "timeout": self.timeout,
            "max_output": self.max_output,
            "max_trace": self.max_trace,
            "answer": self.answer,
            "executable": executable,
            "executable_sha256": file_sha256(executable) if executable else None,
            "files": files,
            "interpreter": _interpreter_version(executable),
            "require_trace": self.require_trace,
            # Values may be secrets; the names are enough to reproduce the setup.
            "env": sorted(self.env),
            "pass_env": self.pass_env,
        }

    def _environ(self) -> dict[str, str]:
        """The parent's environment without its secrets (unless passed), then ``env``;
        every secret's value, passed or withheld, is registered for redaction."""
        passed = set(self.pass_env)
        inherited = {}
        for name, value in os.environ.items():
            if name in passed:
                register(value)
                inherited[name] = value
            elif secret_env(name, value):
                withhold(value)
            else:
                inherited[name] = value
        return {**inherited, **self.env}

    async def _run(self, tmpdir: Path, request: Request) -> Completion:
        workspace, io_dir = tmpdir / "workspace", tmpdir / "io"
        payload = _lay_out(workspace, io_dir, request)
        if self.setup is not None:
            result = self.setup(tmpdir, workspace, request)
            if inspect.isawaitable(result):
                await result
        values = {
            "request": str(io_dir / "request.json"),
            "trace": str(io_dir / "trace.jsonl"),
            "workspace": str(workspace),
            "prompt": request.prompt,
        }
        # One pass, so a prompt that contains "{workspace}" is not expanded again.
        argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in self.argv]
        transport, harness, timed_out = await self._execute(
            argv, self._process_env(values, request), workspace, payload
        )
        trace, trace_truncated = _read_bounded(io_dir / "trace.jsonl", self.max_trace)
        stdout, stderr = harness.text(1), harness.text(2)
        completion = Completion(
            text=stdout.strip(),
            request=payload,
            exit_code=transport.get_returncode(),
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=harness.truncated[1],
            stderr_truncated=harness.truncated[2],
            trace=trace,
            trace_truncated=trace_truncated,
        )
        if self.inspect is not None:
            facts = self.inspect(tmpdir, workspace, request, completion)
            if inspect.isawaitable(facts):
                facts = await facts
            completion = dataclasses.replace(completion, facts=dict(facts))
        self._refuse_unusable(completion, timed_out)
        return completion

    def _process_env(self, values: Mapping[str, str], request: Request) -> dict[str, str]:
        """The process's environment: :meth:`_environ` and where to find what it needs."""
        env = self._environ()
        env.update(
            EVALNB_REQUEST=values["request"],
            EVALNB_TRACE=values["trace"],
            EVALNB_WORKSPACE=values["workspace"],
            EVALNB_CASE_ID=request.case.id,
            EVALNB_VARIANT=request.variant.name,
            EVALNB_REPEAT=str(request.repeat),
        )
        return env

    async def _execute(
        self, argv: list[str], env: dict[str, str], workspace: Path, payload: dict[str, Any]
    ) -> tuple[asyncio.SubprocessTransport, _Harness, bool]:
        """Run the process to its end or its timeout, then kill its whole group; also
        whether it timed out."""
        loop = asyncio.get_running_loop()
        try:
            transport, harness = await loop.subprocess_exec(
                lambda: _Harness(self.max_output),
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workspace,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent(watched_by=watchdog().fd()),
            )
        except (OSError, ValueError) as exc:
            raise TargetError(
                f"cannot start {argv[0]!r}: {exc}",
                partial=Completion(text="", request=payload),
            ) from exc

        # The process group id is the pid: start_new_session made it a leader. Should the
        # runner die, the watchdog kills the group (the harness's own children too).
        group = transport.get_pid()
        watchdog().watch(group)
        # The low-level protocol API, because Process.wait() in Python 3.11 also waits
        # for the pipes to close, which a leftover grandchild can delay forever.
        timed_out = False
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    await harness.exited.wait()
            except TimeoutError:
                timed_out = True
        finally:
            _kill_group(group)
            watchdog().release(group)
            try:
                async with asyncio.timeout(_DRAIN_SECONDS):
                    await harness.exited.wait()
                    await harness.closed.wait()
            except TimeoutError:
                pass
            finally:
                transport.close()
        return transport, harness, timed_out

    def _refuse_unusable(self, completion: Completion, timed_out: bool) -> None:
        """Raise the sample's status when the process timed out, failed, said nothing or
        (``require_trace``) left no usable trace."""
        code = completion.exit_code
        if timed_out:
            raise TargetError(
                f"timed out after {self.timeout:g} s", status="timeout", partial=completion
            )
        if code != 0:
            last = _last_line(completion.stderr or "")
            message = f"exit code {code}: {last}" if last else f"exit code {code}"
            raise TargetError(message, status="error", partial=completion)
        if not completion.text:
            raise TargetError("empty answer", status="empty", partial=completion)
        if self.require_trace:
            trace = completion.trace
            problem = (
                "no trace was written"
                if trace is None
                else parse_trace(trace, completion.trace_truncated).problem
            )
            if problem:
                raise TargetError(
                    f"unusable trace: {problem}", status="malformed", partial=completion
                )


def _lay_out(workspace: Path, io_dir: Path, request: Request) -> dict[str, Any]:
    """Make the sample's folders, its fixtures and ``request.json``; return what that holds."""
    workspace.mkdir()
    io_dir.mkdir()
    _write_fixtures(workspace, request.case)
    payload = {
        "case_id": request.case.id,
        "variant": request.variant.name,
        "repeat": request.repeat,
        "messages": [dict(message) for message in request.messages],
        "prompt": request.prompt,
        "params": dict(request.params),
    }
    request_path = io_dir / "request.json"
    request_path.write_text(json.dumps(payload, ensure_ascii=False, indent=2), "utf-8")
    return payload


class _Harness(asyncio.SubprocessProtocol):
    """Keeps the first ``limit`` bytes of stdout and stderr and drops the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.buffers = {1: bytearray(), 2: bytearray()}
        self.truncated = {1: False, 2: False}
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buffer = self.buffers[fd]
        room = self.limit - len(buffer)
        if len(data) > room:
            self.truncated[fd] = True
            data = data[:room]
        buffer += data

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open:
            self.closed.set()

    def process_exited(self) -> None:
        self.exited.set()

    def text(self, fd: int) -> str:
        return self.buffers[fd].decode("utf-8", errors="replace")


def _write_fixtures(workspace: Path, case: Case) -> None:
    for name, content in case.fixtures.items():
        parts = PurePosixPath(name).parts
        if not parts or parts[0] == "/" or ".." in parts:
            raise TargetError(
                f"case {case.id!r}: fixture path {name!r} must be relative and stay "
                "inside the workspace"
            )
        path = workspace.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, "utf-8")
        except OSError as exc:
            raise TargetError(f"case {case.id!r}: cannot write fixture {name!r}: {exc}") from exc


def sweep_stale_workspaces(folder: str | None = None) -> list[Path]:
    """Remove the sample directories in ``folder`` (the temporary folder) that a runner
    no longer alive left behind; return them. Only this user's directories are touched."""
    root = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _SAMPLE_DIR.fullmatch(entry.name)
        if match is None or pid_alive(int(match.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            _remove_tree(Path(entry.path))
            removed.append(Path(entry.path))
    return removed


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # every member had already exited
    except PermissionError:
        pass  # macOS answers EPERM for a group whose members are all zombies


def _read_bounded(path: Path, limit: int) -> tuple[str | None, bool]:
    """The first ``limit`` bytes of a regular file as text, and whether there was more.

    Never through a symlink (the harness could point it at a file it must not hand over)
    and never a FIFO or device (one could block or never end): those read as no file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # missing, or a symlink (ELOOP)
        return None, False
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None, False
        data = handle.read(limit + 1)
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def _interpreter_version(executable: str | None) -> str | None:
    """``python --version`` of a Python executable; other programs are not run."""
    if executable is None or not os.path.basename(executable).startswith("python"):
        return None
    try:
        done = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout or done.stderr).strip() or None


def _last_line(text: str, width: int = 300) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:width] if lines else ""


def _remove_tree(path: Path) -> None:
    """Remove ``path``, even where the process took permissions off folders it made."""
    shutil.rmtree(path, ignore_errors=True)
    if not path.exists():
        return
    os.chmod(path, stat.S_IRWXU)
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            folder = os.path.join(root, name)
            if not os.path.islink(folder):  # chmod would follow a link out of the tree
                os.chmod(folder, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        warnings.warn(f"could not remove the sample directory {path}", RuntimeWarning, stacklevel=2)
