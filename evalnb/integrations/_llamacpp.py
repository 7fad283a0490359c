"""llama.cpp's OpenAI-compatible server for a GGUF model, and the target that talks to it.

- :class:`GgufServer`: ``python -m llama_cpp.server`` on a free loopback port, started on
  entry and stopped by its PID on exit, its log in a file;
- :class:`GgufChat`: the :class:`~evalnb.OpenAIChat` target for that server, one request at a
  time, whose description puts the GGUF file and its SHA-256 in the run manifest;
- :func:`run_experiment`: an experiment file on the model it names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb._types import Case, Completion, Request
from evalnb.cases import suites
from evalnb.targets import OpenAIChat

if TYPE_CHECKING:
    from evalnb.cases import Experiment, RunDesign
    from evalnb.runner import RunResult


from evalnb._numbers import is_number, is_whole
from evalnb._process import die_with_parent, free_port, stop_process, watchdog
from evalnb.integrations._models import (
    DEFAULT_MODEL,
    MODELS,
    find_model,
    model_sha256,
    model_spec,
    setup_hint,
)

__all__ = [
    "EXPECT_KEYS",
    "GgufChat",
    "GgufServer",
    "expect_keys_schema",
    "experiment_design",
    "run_experiment",
]

# A `schema` with this value in a `response_format` is replaced per case (see GgufChat).
EXPECT_KEYS = "expect_keys"
_POLL = 0.2
_LOG_TAIL = 20
_PORT_ATTEMPTS = 3


def _whole(name: str, value: Any, low: int, high: int | None = None) -> int:
    if not is_whole(value, low, high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ArgumentError(f"'{name}' must be a whole number {bound}; got {value!r}")
    return int(value)


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(f"'{name}' must be a non-empty string; got {value!r}")
    return value


def _seconds(name: str, value: Any) -> float:
    if not is_number(value, 0, open_low=True):
        raise ArgumentError(f"'{name}' must be a number of seconds > 0; got {value!r}")
    return float(value)


class GgufServer:
    """llama.cpp's OpenAI-compatible server for one GGUF file, on 127.0.0.1.

    ``model`` names one of :data:`MODELS` (default ``"gemma"``): its file (unless
    ``model_path`` gives another), its ``alias`` and its ``chat_format`` are the
    defaults. On entry it starts ``python -m llama_cpp.server`` on ``port`` (0: a free
    one), with the model served as ``alias``, and waits until ``/v1/models`` answers;
    if the process dies or ``startup_timeout`` passes first, it is stopped and the
    error quotes the end of its log. On exit it is stopped by its PID: SIGTERM, then SIGKILL after
    ``stop_timeout``. Its output goes to ``log_path`` (default: a new file in the
    temporary directory, kept afterwards for reading), never to the terminal.

    The server answers one request at a time; concurrent requests queue inside it.
    ``model_path`` defaults to ``find_model(model=model)``.

    >>> with GgufServer(model="smollm2") as server:                # doctest: +SKIP
    ...     print(server.base_url, server.pid, server.model_sha256)
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        model: str = DEFAULT_MODEL,
        port: int = 0,
        alias: str | None = None,
        n_ctx: int = 2048,
        n_threads: int = 2,
        chat_format: str | None = None,
        log_path: str | os.PathLike[str] | None = None,
        startup_timeout: float = 120.0,
        stop_timeout: float = 10.0,
        python: str | os.PathLike[str] | None = None,
    ):
        if model_path is not None and not isinstance(model_path, str | os.PathLike):
            raise TypeError(f"'model_path' must be a path or None; got {model_path!r}")
        if model_path is not None and not Path(model_path).is_file():
            raise ArgumentError(f"'model_path' must be an existing GGUF file; got {model_path!r}")
        spec = model_spec(model)
        self.model = spec.name
        self.host = "127.0.0.1"
        self._requested_port = _whole("port", port, 0, 65535)
        self.alias = _text("alias", spec.name if alias is None else alias)
        self.n_ctx = _whole("n_ctx", n_ctx, 16)
        self.n_threads = _whole("n_threads", n_threads, 1)
        self.chat_format = _text(
            "chat_format", spec.chat_format if chat_format is None else chat_format
        )
        self.startup_timeout = _seconds("startup_timeout", startup_timeout)
        self.stop_timeout = _seconds("stop_timeout", stop_timeout)
        self.python = str(python) if python is not None else sys.executable
        self.model_path = (
            Path(model_path).resolve() if model_path is not None else find_model(model=model)
        )
        self._log_request = Path(log_path) if log_path is not None else None
        self.log_path: Path | None = None
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"GgufServer({self.model_path.name!r}, alias={self.alias!r}, {where})"

    def __enter__(self) -> GgufServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def command(self, port: int) -> list[str]:
        """The command line that serves the model on ``port``."""
        return [
            self.python,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--host",
            self.host,
            "--port",
            str(port),
            "--chat_format",
            self.chat_format,
            "--n_threads",
            str(self.n_threads),
            "--n_ctx",
            str(self.n_ctx),
            "--model_alias",
            self.alias,
        ]

    @property
    def running(self) -> bool:
        """Whether the server process is up (it may have died since it started)."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's process id while it is started, else ``None``."""
        return self._process.pid if self._process is not None else None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``)."""
        if self.port is None:
            raise RuntimeError("the server is not running; call start() or use 'with'")
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, what OpenAI clients call ``base_url``."""
        return self.url + "/v1"

    @cached_property
    def model_sha256(self) -> str:
        """SHA-256 of the GGUF file (computed once, cached beside the file)."""
        return model_sha256(self.model_path)

    def describe(self) -> dict[str, Any]:
        """The model file and server settings, for a run manifest."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            llama_version: str | None = version("llama_cpp_python")
        except PackageNotFoundError:
            llama_version = None
        return {
            "path": str(self.model_path),
            "file": self.model_path.name,
            "size": self.model_path.stat().st_size,
            "sha256": self.model_sha256,
            "alias": self.alias,
            "chat_format": self.chat_format,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "llama_cpp_python": llama_version,
        }

    def log_tail(self, lines: int = _LOG_TAIL) -> str:
        """The last ``lines`` lines of the server's log ('' before it starts)."""
        if self.log_path is None or not self.log_path.is_file():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> GgufServer:
        if self._process is not None:
            raise RuntimeError(f"the server is already running at {self.base_url}")
        self.log_path = self._log_request or self._new_log()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # A free port can be taken between choosing it and the server binding it.
        attempts = 1 if self._requested_port else _PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            port = self._requested_port or free_port(self.host)
            try:
                self._launch(port)
                self._wait_ready(port)
                break
            except EvalnbError:
                lost_race = "address already in use" in self.log_tail().casefold()
                self.stop()
                if not (lost_race and attempt < attempts):
                    raise
            except BaseException:  # Ctrl-C while waiting must not leave a server behind
                self.stop()
                raise
        self.port = port
        return self

    def stop(self) -> None:
        """Stop the server by its PID; calling it again, or before start, does nothing."""
        finalizer, self._finalizer = self._finalizer, None
        self._process = None
        self.port = None
        if finalizer is not None:
            finalizer()

    def _new_log(self) -> Path:
        handle, name = tempfile.mkstemp(prefix="evalnb-gguf-", suffix=".log")
        os.close(handle)
        return Path(name)

    def _launch(self, port: int) -> None:
        assert self.log_path is not None  # set by start()
        with self.log_path.open("ab") as log:
            log.write(f"# evalnb: {' '.join(self.command(port))}\n".encode())
            log.flush()
            # A new session: Ctrl-C in the terminal reaches us, and we stop the server. Should
            # this process die without stopping it (a notebook kernel killed when JupyterLab
            # stops), the server dies too: the kernel's PR_SET_PDEATHSIG where the starting
            # thread lives as long as this process (the main thread), and the watchdog,
            # which kills the server's process group when this process is gone.
            main = threading.current_thread() is threading.main_thread()
            fd = watchdog().fd()
            self._process = subprocess.Popen(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
                preexec_fn=die_with_parent(watched_by=fd) if main else _register_group(fd),
            )
        group = self._process.pid  # start_new_session made it a process-group leader
        watchdog().watch(group)
        # A server nobody stopped still goes when this interpreter exits.
        self._finalizer = weakref.finalize(
            self, _stop_server, self._process, self.stop_timeout, group
        )

    def _wait_ready(self, port: int) -> None:
        assert self._process is not None  # set by _launch()
        deadline = time.monotonic() + self.startup_timeout
        url = f"http://{self.host}:{port}/v1/models"
        # Loopback only: a proxy from the environment must not be asked.
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while True:
                code = self._process.poll()
                if code is not None:
                    self._fail(f"the llama.cpp server exited with status {code} while starting")
                try:
                    if client.get(url).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    self._fail(
                        f"the llama.cpp server did not answer {url} "
                        f"within {self.startup_timeout:g} s"
                    )
                time.sleep(_POLL)

    def _fail(self, reason: str) -> None:
        tail = self.log_tail()
        if "No module named" in tail:
            reason = setup_hint(f"{reason}: a module is missing")
        raise EvalnbError(f"{reason}. Log {self.log_path}, last lines:\n{tail}")


def _stop_server(process: subprocess.Popen[bytes], grace: float, group: int) -> None:
    """Stop the server by its PID, then tell the watchdog its group is over."""
    stop_process(process, grace)
    watchdog().release(group)


def _register_group(fd: int | None) -> Any:
    """Off the main thread, PR_SET_PDEATHSIG would kill the server when the starting thread
    ends: the child only registers its group with the watchdog (``None`` without one)."""
    if fd is None:
        return None

    def setup() -> None:
        # Runs in the child between fork and exec: no locks, no imports.
        with contextlib.suppress(OSError):
            os.write(fd, b"+%d\n" % os.getpgid(0))

    return setup


def expect_keys_schema(keys: Sequence[str]) -> dict[str, Any]:
    """A JSON schema for an object with exactly ``keys``, each holding one JSON scalar.

    Scalars, because extracted fields are, and because with any value allowed this
    base model fills a key with ``{}``. The type of each key is left open: the schema
    says which keys, not the answers.
    """
    scalar = {"type": ["string", "number", "boolean", "null"]}
    return {
        "type": "object",
        "properties": {key: scalar for key in keys},
        "required": list(keys),
        "additionalProperties": False,
    }


def _draw_seed(base: int, case: Case, repeat: int) -> int:
    text = json.dumps([base, case.id, repeat])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") >> 1


class GgufChat(OpenAIChat):
    """:class:`~evalnb.OpenAIChat` for a running :class:`GgufServer`.

    - **One request at a time** (``max_in_flight=1``): the server computes one answer
      at a time and queues the rest, so a queued request would spend its timeout
      waiting its turn. With ``max_in_flight=1`` a request is sent only when the
      previous one has finished, and its timeout starts then. Run it with
      ``concurrency=1`` as well, so a sample's latency is its own request only.
    - **The model in the manifest**: ``describe()`` adds ``gguf`` (file, size, SHA-256,
      alias, server settings) to what the server says about itself (``/v1/models``).
    - **Schemas per case**: a ``response_format`` of ``{"type": "json_object",
      "schema": "expect_keys"}`` is sent with the schema of the case's ``expect_keys``
      (:func:`expect_keys_schema`), which llama.cpp turns into a grammar.
    - **Repeatable draws**: with ``draw_seed``, every request that has no ``seed`` of
      its own gets one derived from ``(draw_seed, case id, repeat)``: a rerun draws the
      same answers, the draws of a case differ, and the variants of a pair share theirs.

    HTTP 500 and other transient failures are retried ``max_retries`` times, then the
    sample is an ``error`` with the server's message. A reply cut at ``max_tokens``
    (``finish_reason="length"``) is completed when it has text, else ``budget``.
    """

    def __init__(
        self,
        server: GgufServer,
        *,
        params: Mapping[str, Any] | None = None,
        draw_seed: int | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        max_in_flight: int | None = 1,
        **options: Any,
    ):
        if draw_seed is not None:
            _whole("draw_seed", draw_seed, 0)
        super().__init__(
            server.base_url,
            server.alias,
            params=params,
            timeout=timeout,
            max_retries=max_retries,
            max_in_flight=max_in_flight,
            **options,
        )
        self.draw_seed = draw_seed
        self.gguf = server.describe()

    async def complete(self, request: Request) -> Completion:
        params = dict(request.params)
        response_format = {**self.params, **params}.get("response_format")
        if isinstance(response_format, Mapping) and response_format.get("schema") == EXPECT_KEYS:
            if not request.case.expect_keys:
                raise ArgumentError(
                    f"case {request.case.id!r}: a 'schema' of {EXPECT_KEYS!r} needs the "
                    "case's 'expect_keys'"
                )
            schema = expect_keys_schema(request.case.expect_keys)
            params["response_format"] = {**response_format, "schema": schema}
        if self.draw_seed is not None and "seed" not in {**self.params, **params}:
            params["seed"] = _draw_seed(self.draw_seed, request.case, request.repeat)
        return await super().complete(dataclasses.replace(request, params=params))

    async def describe(self) -> dict[str, Any]:
        info = await super().describe()
        info["draw_seed"] = self.draw_seed
        info["gguf"] = self.gguf
        return info


def experiment_design(
    experiment: Experiment, repeats: int | None, run_options: Mapping[str, Any]
) -> tuple[RunDesign, dict[str, Any]]:
    """The design :func:`run_experiment` runs, by the path ``evalnb run --experiment``
    takes (:meth:`~evalnb.cases.Experiment.design`): ``repeats`` and the design keywords
    among ``run_options`` over the file's values (a llama.cpp server answers one request
    at a time: the packaged experiments say ``concurrency = 1``). Returns the design and
    the options left for :func:`evalnb.run`."""
    from evalnb.cases import RunDesign

    keywords = set(inspect.signature(RunDesign.build).parameters) - {"cls", "cases"}
    flags = {k: v for k, v in run_options.items() if k in keywords}
    flags["repeats"] = repeats
    return experiment.design(**flags), {k: v for k, v in run_options.items() if k not in keywords}


def run_experiment(
    out: str | os.PathLike[str] | None = None,
    *,
    experiment: str | os.PathLike[str] | None = None,
    model: str | None = None,
    repeats: int | None = None,
    draw_seed: int | None = None,
    model_path: str | os.PathLike[str] | None = None,
    server_options: Mapping[str, Any] | None = None,
    **run_options: Any,
) -> RunResult:
    """Start a :class:`GgufServer`, run an experiment file against it, stop the server.

    ``model`` (a name in :data:`MODELS`) is the model served; without it, the one the
    experiment's ``[target] model`` names, else Gemma. ``experiment`` defaults to the
    model's packaged experiment: ``run_experiment(out, model="smollm2")`` runs
    ``smollm2_shop.toml``, ``run_experiment(out)`` Gemma's ``real_model.toml``.

    The experiment's design (cases, variants, repeats, ``[judge]``, ``[defaults]``,
    ``[until]``...) is built as ``evalnb run --experiment`` builds it, with ``repeats`` and
    any design keyword in ``run_options`` over the file's values; its ``[target]`` gives
    ``model`` (the alias), ``params``, ``timeout`` and ``max_retries``. ``server_options`` go to
    :class:`GgufServer` (``log_path``, ``n_threads``...), ``run_options`` to
    :func:`evalnb.run` (``progress``, ``command``, ``flush_seconds``...). Returns the
    :class:`~evalnb.RunResult`.
    """
    from evalnb.cases import load_experiment
    from evalnb.runner import run

    if experiment is None:
        experiment = suites.path(model_spec(DEFAULT_MODEL if model is None else model).experiment)
    spec = load_experiment(experiment)
    if spec.cases is None:
        raise ArgumentError(f"'experiment' {str(experiment)!r} names no cases file")
    design, run_options = experiment_design(spec, repeats, run_options)
    target = spec.target
    options = {k: target[k] for k in ("timeout", "max_retries") if k in target}
    if model is None:
        model = target["model"] if target.get("model") in MODELS else DEFAULT_MODEL
    served: dict[str, Any] = {"model": model_spec(model).name}
    if "model" in target:
        served["alias"] = target["model"]
    served.update(server_options or {})
    with GgufServer(model_path, **served) as server:
        chat = GgufChat(server, params=target.get("params"), draw_seed=draw_seed, **options)
        return run(design, chat, out=out, **run_options)
