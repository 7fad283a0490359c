"""Reading files from other people within stated caps.

Every file an importer reads comes through one :class:`Sources`, which states what it
reads and how much (:class:`Limits`):

- a file is read only when it is a regular file (never a named pipe, a device such as
  ``/dev/zero`` or ``/dev/urandom``, a socket or a folder) of at most
  :attr:`Limits.file_bytes`;
- a promptfoo ``file://`` reference resolves inside the suite's folder (symbolic links
  followed), or inside a path the user allowed (``--allow-outside``); anything else is
  refused by name;
- a zip member (an Inspect ``.eval`` log: stored, deflated, or Zstandard-compressed as
  current Inspect writes them, method 93, inflated by Python's :mod:`zipfile` where it
  reads that method and by the ``zstandard`` package otherwise) is read streaming and
  refused past
  :attr:`Limits.member_bytes`, or when it inflates more than :attr:`Limits.zip_ratio`
  times; its declared sizes are checked before a byte is inflated;
- all one import reads, each use of a ``file://`` reference and each zip member inflated
  counted, is at most :attr:`Limits.total_bytes`;
- a YAML document is refused when its aliases expand it past :attr:`Limits.yaml_nodes`
  nodes, or when an alias refers to a node that holds it.

A cap hit is a :class:`~evalnb.CasesError` of one line naming the file, the limit and the
option that raises it. Each file read is listed (path, size, SHA-256) for ``imported.json``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO

from evalnb._exceptions import ArgumentError, CasesError
from evalnb.cases import read_yaml

__all__ = [
    "GiB",
    "KiB",
    "Limits",
    "MiB",
    "Sources",
    "ZipMembers",
    "parse_size",
    "size_text",
]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

#: Below this many inflated bytes a zip member's ratio is not held against it (a small file
#: of repeated text compresses well and harms no one).
RATIO_FLOOR = 1 * MiB
#: How much of a zip member is inflated at a time.
_CHUNK = 1 * MiB
#: Zstandard's zip compression method (APPNOTE 4.4.5), as current Inspect logs use it.
ZIP_ZSTANDARD = 93
#: The methods Python's zipfile inflates here (3.14 adds Zstandard).
_ZIPFILE_METHODS = {
    zipfile.ZIP_STORED,
    zipfile.ZIP_DEFLATED,
    *([ZIP_ZSTANDARD] if getattr(zipfile, "ZIP_ZSTANDARD", None) == ZIP_ZSTANDARD else []),
}

#: The option that raises each cap, for the one-line error.
OPTIONS = {
    "file_bytes": "--max-file-size",
    "member_bytes": "--max-member-size",
    "total_bytes": "--max-total-size",
    "zip_ratio": "--max-zip-ratio",
    "yaml_nodes": "--max-yaml-nodes",
}


@dataclass(frozen=True)
class Limits:
    """The caps on what an importer reads; each has a command-line option that raises it.

    - ``file_bytes`` (``--max-file-size``, 256 MiB): any one file: the source itself and
      each ``file://`` reference;
    - ``member_bytes`` (``--max-member-size``, 64 MiB): one member of a ``.eval`` zip, as
      inflated;
    - ``total_bytes`` (``--max-total-size``, 1 GiB): all one import reads together: each
      file, each use of a ``file://`` reference, each zip member as inflated;
    - ``zip_ratio`` (``--max-zip-ratio``, 100): how many times a member, or the members
      read together, may inflate (held only past 1 MiB inflated);
    - ``yaml_nodes`` (``--max-yaml-nodes``, 1,000,000): the nodes a YAML file may expand
      to, an alias counted as the nodes it repeats (for promptfoo, also each case a
      list-valued var makes).

    >>> import_inspect_log("big.eval", "runs/big", limits=Limits(member_bytes=512 * 2**20))
    """

    file_bytes: int = 256 * MiB
    member_bytes: int = 64 * MiB
    total_bytes: int = 1 * GiB
    zip_ratio: float = 100.0
    yaml_nodes: int = 1_000_000

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if (
                not number
                or not value >= 1
                or (item.name != "zip_ratio" and not isinstance(value, int))
            ):
                kind = "a number >= 1" if item.name == "zip_ratio" else "a whole number >= 1"
                raise ArgumentError(f"Limits {item.name!r} must be {kind}; got {value!r}")

    def over(self, name: str, shown: str | None = None) -> str:
        """``over the 64 MiB limit (raise it with --max-member-size or
        Limits(member_bytes=...))``: the end of a cap's one-line error."""
        value = getattr(self, name)
        if shown is None:
            shown = size_text(value) if name.endswith("bytes") else f"{value:,}"
        return f"over the {shown} limit ({self.hint(name)})"

    @staticmethod
    def hint(name: str) -> str:
        """``raise it with --max-yaml-nodes or Limits(yaml_nodes=...)``."""
        return f"raise it with {OPTIONS[name]} or Limits({name}=...)"


def size_text(size: float) -> str:
    """``512 bytes``, ``1.5 KiB``, ``64 MiB``, ``3 GiB``."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{int(size)} bytes"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.I)


def parse_size(text: str) -> int:
    """Bytes from ``4096``, ``512K``, ``64M``, ``64MiB``, ``1.5G`` (binary units)."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"a size must be bytes or a number with K, M, G or T; got {text!r}")
    scale = 1 << (10 * " kmgt".index(match[2].lower() or " "))
    size = int(float(match[1]) * scale)
    if size < 1:
        raise ValueError(f"a size must be at least 1 byte; got {text!r}")
    return size


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


class Sources:
    """The files one import reads: each checked against :class:`Limits` and listed.

    ``root`` is the suite's folder, inside which ``file://`` references must resolve;
    ``allow_outside`` names files or folders outside it that may be read too.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        root: Path | None = None,
        allow_outside: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise ArgumentError(f"'limits' must be an evalnb.interop.Limits; got {limits!r}")
        if isinstance(allow_outside, str | os.PathLike):
            allow_outside = [allow_outside]
        self.limits = limits or Limits()
        self.root = Path(os.path.realpath(root)) if root is not None else None
        self.allowed = [Path(os.path.realpath(p)) for p in allow_outside]
        #: What was read, in order: ``{"path", "bytes", "sha256"}`` (zips: ``"members"`` too).
        self.files: list[dict[str, Any]] = []
        #: Bytes read so far, each use of a reference and each member inflated counted.
        self.total = 0
        self._references: dict[Path, str] = {}

    def spend(self, size: int, at: str) -> None:
        """Count ``size`` more bytes read; past :attr:`Limits.total_bytes` is an error."""
        self.total += size
        if self.total > self.limits.total_bytes:
            raise CasesError(
                f"{at}: the import reads {size_text(self.total)} in all (each file, each use "
                f"of a file:// reference, each zip member inflated), "
                f"{self.limits.over('total_bytes')}"
            )

    # -- plain files ----------------------------------------------------------------

    @contextlib.contextmanager
    def _open(self, path: Path, what: str, at: str) -> Iterator[BinaryIO]:
        """``path`` opened for reading once it is known to be a regular file within the
        size cap; opened without blocking (a FIFO) and checked again once open."""
        try:
            mode = os.stat(path).st_mode
            self._regular(mode, what, at)
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise CasesError(f"{at}: cannot read {what} ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            self._regular(info.st_mode, what, at)
            self._size(info.st_size, what, at)
            yield handle

    def _regular(self, mode: int, what: str, at: str) -> None:
        kind = _kind(mode)
        if kind is not None:
            raise CasesError(f"{at}: {what} is {kind}; only regular files are read")

    def _size(self, size: int, what: str, at: str) -> None:
        if size > self.limits.file_bytes:
            raise CasesError(f"{at}: {what} is {size_text(size)}, {self.limits.over('file_bytes')}")

    def read(self, path: Path, what: str, *, at: str | None = None) -> bytes:
        """The bytes of ``path``; ``what`` names it and ``at`` places it in an error
        (default: the path)."""
        at = at or str(path)
        with self._open(path, what, at) as handle:
            data = handle.read(self.limits.file_bytes + 1)
        self._size(len(data), what, at)  # a file that grew after it was opened
        self.spend(len(data), at)
        digest = hashlib.sha256(data).hexdigest()
        self.files.append({"path": str(path), "bytes": len(data), "sha256": digest})
        return data

    def text(self, path: Path, what: str, *, at: str | None = None) -> str:
        """The UTF-8 text of ``path`` (see :meth:`read`)."""
        data = self.read(path, what, at=at)
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CasesError(
                f"{at or path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None

    def yaml(self, path: Path, text: str, *, loader: Any = None) -> Any:
        """The YAML document ``text`` read from ``path`` (with ``loader``, default the safe
        one), refused past :attr:`Limits.yaml_nodes` expanded nodes."""
        limit = self.limits.yaml_nodes
        refusal = f"the YAML expands to more than {limit:,} nodes; {Limits.hint('yaml_nodes')}"
        return read_yaml(text, str(path), limit=limit, loader=loader, refusal=refusal).data

    # -- file:// references ---------------------------------------------------------

    def reference(self, config: Path, ref: str, at: str) -> tuple[Path, str]:
        """``(path, text)`` of a promptfoo ``file://`` reference made in ``config`` (``at``
        places it in an error); it must resolve inside the suite's folder or an allowed
        path. A file is read once; each use counts towards :attr:`Limits.total_bytes`."""
        path = Path(os.path.realpath(config.parent / ref.removeprefix("file://")))
        if not self._inside(path):
            root = self.root or Path(os.path.realpath(config.parent))
            raise CasesError(
                f"{at}: the file:// reference {ref!r} resolves to {path}, outside the suite's "
                f"folder {root}; only files inside it are read (allow more with "
                "--allow-outside PATH or allow_outside=[...])"
            )
        if path in self._references:
            text = self._references[path]
            self.spend(len(text), at)
        else:
            text = self.text(path, f"the file:// reference {ref!r} ({path})", at=at)
            self._references[path] = text
        return path, text

    def _inside(self, path: Path) -> bool:
        roots = [self.root, *self.allowed] if self.root is not None else self.allowed
        return any(path == root or path.is_relative_to(root) for root in roots)

    # -- zips -----------------------------------------------------------------------

    @contextlib.contextmanager
    def zip(self, path: Path, what: str) -> Iterator[ZipMembers]:
        """The zip ``path`` (a regular file within the size cap), its members read through
        :class:`ZipMembers`."""
        at = str(path)
        with self._open(path, what, at) as handle:
            digest = hashlib.sha256()
            size = 0
            while block := handle.read(_CHUNK):
                digest.update(block)
                size += len(block)
                self._size(size, what, at)
            handle.seek(0)
            try:
                archive = zipfile.ZipFile(handle)
            except zipfile.BadZipFile as exc:
                raise CasesError(
                    f"{at}: {what} is not a zip file, or a damaged one ({exc})"
                ) from None
            except (OSError, EOFError, ValueError, struct.error) as exc:
                raise CasesError(f"{at}: {what} is a damaged zip file ({exc})") from None
            record = {"path": at, "bytes": size, "sha256": digest.hexdigest(), "members": 0}
            self.files.append(record)
            with archive:
                members = ZipMembers(path, archive, self)
                yield members
                record["members"] = members.count


class ZipMembers:
    """The members of one zip, read streaming within the caps of :class:`Limits`."""

    def __init__(self, path: Path, archive: zipfile.ZipFile, sources: Sources) -> None:
        self.path = path
        self.archive = archive
        self.sources = sources
        self.limits = sources.limits
        self.count = 0
        #: Compressed and inflated bytes of the members read so far.
        self.packed = 0
        self.inflated = 0

    def infos(self) -> list[zipfile.ZipInfo]:
        return self.archive.infolist()

    def _check(self, name: str, inflated: int, packed: int, *, declared: bool) -> None:
        """Refuse a member whose ``inflated`` bytes (from ``packed`` compressed ones) pass
        a cap; ``declared``: the sizes are the zip's claims, not yet bytes read."""
        limits = self.limits
        at = f"{self.path}: member {name!r}"
        claim = " (as declared)" if declared else ""
        if inflated > limits.member_bytes:
            raise CasesError(
                f"{at} inflates to {size_text(inflated)}{claim}, {limits.over('member_bytes')}"
            )
        total = self.sources.total + inflated
        if total > limits.total_bytes:
            raise CasesError(
                f"{at}: the import would read {size_text(total)} in all{claim}, "
                f"{limits.over('total_bytes')}"
            )
        for size, compressed, whose in (
            (inflated, packed, "it inflates"),
            (self.inflated + inflated, self.packed + packed, "the members read inflate"),
        ):
            if size > RATIO_FLOOR and size > limits.zip_ratio * max(compressed, 1):
                times = f"{size / max(compressed, 1):,.0f}x"
                raise CasesError(
                    f"{at}: {whose} {times} ({size_text(compressed)} to {size_text(size)})"
                    f"{claim}, {limits.over('zip_ratio', f'{limits.zip_ratio:g}x')}"
                )

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """The inflated bytes of one member, refused at the first cap it passes."""
        name = info.filename
        if info.flag_bits & 0x1:
            raise CasesError(f"{self.path}: member {name!r} is encrypted; it cannot be read")
        zstd = info.compress_type == ZIP_ZSTANDARD and ZIP_ZSTANDARD not in _ZIPFILE_METHODS
        if info.compress_type not in _ZIPFILE_METHODS and not zstd:
            raise CasesError(
                f"{self.path}: member {name!r} uses compression method {info.compress_type}; "
                "only stored, deflated and Zstandard members are read"
            )
        self._check(name, info.file_size, info.compress_size, declared=True)
        chunks = []
        got = 0
        try:
            with self._zstd(info) if zstd else self.archive.open(info) as member:
                while chunk := member.read(_CHUNK):
                    got += len(chunk)
                    self._check(name, got, info.compress_size, declared=False)
                    chunks.append(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise CasesError(f"{self.path}: member {name!r} is damaged ({exc})") from None
        if zstd and zlib.crc32(b"".join(chunks)) != info.CRC:
            raise CasesError(f"{self.path}: member {name!r} is damaged (its CRC-32 differs)")
        self.count += 1
        self.packed += info.compress_size
        self.inflated += got
        self.sources.spend(got, f"{self.path}: member {name!r}")
        return b"".join(chunks)

    @contextlib.contextmanager
    def _zstd(self, info: zipfile.ZipInfo) -> Iterator[BinaryIO]:
        """A Zstandard member's inflated bytes as a stream (``zstandard``), read from its
        compressed bytes after the member's local header."""
        try:
            import zstandard
        except ImportError:
            raise CasesError(
                f"{self.path}: member {info.filename!r} is Zstandard-compressed and the "
                "zstandard package is not installed: pip install zstandard"
            ) from None
        handle = self.archive.fp
        if handle is None:
            raise ValueError("the zip is closed")
        handle.seek(info.header_offset)
        header = handle.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile("no local file header where the directory says")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        packed = handle.read(info.compress_size)
        try:
            with zstandard.ZstdDecompressor().stream_reader(packed) as reader:
                yield reader
        except zstandard.ZstdError as exc:
            raise ValueError(str(exc)) from None
