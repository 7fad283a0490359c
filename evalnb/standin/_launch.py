"""Running the stand-in: ``StandIn`` (a context manager for tests and notebooks) and ``serve``.

>>> with StandIn(seed=0) as server:           # doctest: +SKIP
...     client = openai.OpenAI(base_url=server.base_url, api_key="unused")
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from evalnb._exceptions import ArgumentError
from evalnb._numbers import is_whole
from evalnb._process import stop_process
from evalnb.standin._faults import Fault, parse_faults
from evalnb.standin._server import make_app

__all__ = ["StandIn", "add_arguments", "main", "serve"]

_LISTENING = "evalnb stand-in listening on {url}/v1"
_LISTENING_RE = re.compile(r"^evalnb stand-in listening on (?P<url>http://\S+)/v1$")
_START_TIMEOUT = 30.0
_STOP_TIMEOUT = 5.0
# A handler still sleeping in a "hang" fault is cancelled this long after stop() begins.
_SHUTDOWN_GRACE = 0.25


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def _start_site(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(
        app, access_log=None, handler_cancellation=True, shutdown_timeout=_SHUTDOWN_GRACE
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, backlog=1024)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, runner.addresses[0][1]


def _check_args(seed: Any, host: Any, port: Any) -> None:
    if not is_whole(seed):
        raise TypeError(f"'seed' must be an int; got {seed!r}")
    if not isinstance(host, str) or not host:
        raise ArgumentError(f"'host' must be a host name or address; got {host!r}")
    if not is_whole(port, 0, 65535):
        raise ArgumentError(
            f"'port' must be a whole number from 0 to 65535 (0: any free); got {port!r}"
        )


class StandIn:
    """A stand-in server on 127.0.0.1, started on entry and stopped on exit.

    ``seed`` fixes every answer; ``faults`` are server-wide fault specs (see
    ``evalnb.standin._faults``); ``port=0`` picks a free port. By default the server runs
    in a background thread of this process; ``process=True`` runs
    ``python -m evalnb.standin`` as a child process instead (only built-in assistants).
    """

    def __init__(
        self,
        seed: int = 0,
        faults: Any = None,
        host: str = "127.0.0.1",
        port: int = 0,
        process: bool = False,
    ):
        _check_args(seed, host, port)
        self.seed = seed
        self.faults: tuple[Fault, ...] = parse_faults(faults)
        self.host = host
        self.process = bool(process)
        self._requested_port = port
        self._port: int | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._child: subprocess.Popen[str] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        where = self.url if self.running else "stopped"
        return f"StandIn(seed={self.seed!r}, process={self.process!r}, {where})"

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._port is not None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the stand-in is not running; call start() or use 'with'")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        return _url(self.host, self.port)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, what OpenAI clients call ``base_url``."""
        return self.url + "/v1"

    @property
    def pid(self) -> int | None:
        """The child's process id in process mode, else ``None``."""
        return self._child.pid if self._child is not None else None

    def requests(self) -> list[dict[str, Any]]:
        """The requests the server has received (``GET /_standin/requests``)."""
        import httpx

        response = httpx.get(self.url + "/_standin/requests", timeout=10)
        response.raise_for_status()
        requests: list[dict[str, Any]] = response.json()
        return requests

    def start(self) -> StandIn:
        if self.running:
            raise RuntimeError(f"the stand-in is already running at {self.url}")
        if self.process:
            self._start_process()
        else:
            self._start_thread()
        return self

    def stop(self) -> None:
        """Stop the server; calling it again, or before start, does nothing."""
        try:
            if self._child is not None:
                self._stop_process()
            elif self._thread is not None:
                self._stop_thread()
        finally:
            self._port = None

    # -- thread mode -------------------------------------------------------------------

    def _start_thread(self) -> None:
        ready = threading.Event()
        self._error = None
        self._thread = threading.Thread(
            target=self._run_thread, args=(ready,), name="evalnb-standin", daemon=True
        )
        self._thread.start()
        ready.wait(_START_TIMEOUT)
        if self._error is not None or self._port is None:
            self._stop_thread()
            error = self._error or TimeoutError(f"not listening after {_START_TIMEOUT:g} s")
            raise RuntimeError(
                f"the stand-in could not start on {self.host}:{self._requested_port}: {error}"
            ) from error

    def _run_thread(self, ready: threading.Event) -> None:
        try:
            asyncio.run(self._serve_in_thread(ready))
        except BaseException as exc:
            self._error = exc
        finally:
            ready.set()

    async def _serve_in_thread(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        app = make_app(self.seed, self.faults)
        runner, self._port = await _start_site(app, self.host, self._requested_port)
        ready.set()
        try:
            await self._stopping.wait()
        finally:
            await runner.cleanup()

    def _stop_thread(self) -> None:
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None and not loop.is_closed():
            # The loop may finish between the check and the call.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        thread.join(_STOP_TIMEOUT + _SHUTDOWN_GRACE)
        self._thread = self._loop = self._stopping = None

    # -- process mode ------------------------------------------------------------------

    def _start_process(self) -> None:
        command = [sys.executable, "-m", "evalnb.standin", "--host", self.host]
        command += ["--port", str(self._requested_port), "--seed", str(self.seed)]
        if self.faults:
            command += ["--faults", json.dumps([f.to_dict() for f in self.faults])]
        env = dict(os.environ)
        # The child must import this same evalnb, even when it is not installed.
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, env=env
        )
        # A server someone forgot to stop still goes when this interpreter exits.
        self._finalizer = weakref.finalize(self, _terminate, self._child)
        line: list[str] = []
        stdout = self._child.stdout
        assert stdout is not None  # stdout=PIPE above
        reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(_START_TIMEOUT)
        match = _LISTENING_RE.match(line[0].strip()) if line else None
        if match is None:
            self._stop_process()
            got = repr(line[0]) if line else f"nothing within {_START_TIMEOUT:g} s"
            raise RuntimeError(
                f"the stand-in process did not report its address: expected "
                f"{_LISTENING.format(url='http://HOST:PORT')!r}; got {got}"
            )
        self._port = int(match["url"].rsplit(":", 1)[1])

    def _stop_process(self) -> None:
        finalizer, self._child, self._finalizer = self._finalizer, None, None
        if finalizer is not None:
            finalizer()


def _terminate(child: subprocess.Popen[str]) -> None:
    """SIGTERM the child, SIGKILL it if it is still there after the grace period."""
    try:
        stop_process(child, _STOP_TIMEOUT)
    finally:
        if child.stdout is not None:
            child.stdout.close()


async def _serve(host: str, port: int, seed: int, faults: Sequence[Fault]) -> None:
    runner, bound = await _start_site(make_app(seed, faults), host, port)
    try:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            # Not on Windows, nor outside the main thread: Ctrl-C still stops it there.
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stopping.set)
        print(_LISTENING.format(url=_url(host, bound)), flush=True)
        await stopping.wait()
    finally:
        await runner.cleanup()


def serve(host: str = "127.0.0.1", port: int = 0, seed: int = 0, faults: Any = None) -> None:
    """Serve until SIGINT or SIGTERM, after printing ``evalnb stand-in listening on URL``."""
    _check_args(seed, host, port)
    parsed = parse_faults(faults)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(host, port, seed, parsed))


def _faults_arg(text: str) -> tuple[Fault, ...]:
    try:
        return parse_faults(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--host``, ``--port``, ``--seed`` and ``--faults`` (as ``serve`` takes them)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free)")
    parser.add_argument("--seed", type=int, default=0, help="seed fixing every answer (default 0)")
    parser.add_argument(
        "--faults",
        type=_faults_arg,
        default=(),
        metavar="JSON",
        help='server-wide faults, e.g. \'[{"kind": "status_429", "times": 1}]\'',
    )
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m evalnb.standin") -> int:
    """``python -m evalnb.standin``: parse the flags and serve (``prog`` names it in --help)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the evalnb stand-in model (OpenAI chat API, seeded) on 127.0.0.1.",
    )
    args = add_arguments(parser).parse_args(argv)
    try:
        serve(host=args.host, port=args.port, seed=args.seed, faults=args.faults)
    except (OSError, ValueError, TypeError) as exc:
        print(f"evalnb stand-in: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
