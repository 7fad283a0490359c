"""Secrets kept out of everything evalnb stores: API keys in every form they take in text,
and passwords in URLs.

A target that holds a secret registers it (:func:`register`); the store then redacts every
string it writes, samples, check results and JSON files alike (:func:`redact`). A key may
come back from a server as written, JSON-escaped (``\\/``, ``\\u0041``) or percent-encoded:
each of its characters is matched in any of those forms, so no form gets through.
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "REDACTED",
    "active",
    "public_url",
    "redact",
    "redact_json",
    "register",
    "secret_env_name",
]

REDACTED = "[redacted]"
#: Secrets shorter than this are not redacted: they would match ordinary text everywhere.
MIN_LENGTH = 4
#: Environment variable names that hold secrets by convention.
_SECRET_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|credential)")

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def register(secret: str | None) -> None:
    """Redact ``secret`` from everything stored from now on, in this process."""
    global _pattern
    if not secret or len(secret) < MIN_LENGTH:
        return
    with _lock:
        if secret in _secrets:
            return
        _secrets.add(secret)
        # Longest first: a key that holds another is redacted whole.
        forms = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(_any_form(s) for s in forms))


def active() -> bool:
    """Whether any secret is registered in this process."""
    return _pattern is not None


def redact(text: str) -> str:
    """``text`` with every registered secret replaced, in any form it takes."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def redact_json(value: Any) -> Any:
    """A JSON-ready ``value`` with every string in it redacted (keys too)."""
    if _pattern is None:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(str(k)): redact_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(v) for v in value]
    return value


def public_url(url: str) -> str:
    """``url`` without the password of its user info (``https://me:[redacted]@host/v1``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    register(password)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{REDACTED}@{host}"))


def secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``OPENAI_API_KEY``)."""
    return bool(_SECRET_NAME.search(name))


def _any_form(secret: str) -> str:
    return "".join(_char_forms(c) for c in secret)


def _char_forms(char: str) -> str:
    code = ord(char)
    forms = [re.escape(char)]
    if code < 0x10000:
        forms.append(r"\\u" + _hex(code, 4))
    if code < 0x100:
        forms.append("%" + _hex(code, 2))
    if char in '/"\\':
        forms.append(re.escape("\\" + char))
    return "(?:" + "|".join(forms) + ")"


def _hex(code: int, width: int) -> str:
    """A pattern for ``code`` in hex, each letter digit in either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{code:0{width}x}")
