"""Secrets kept out of everything evalnb stores: API keys in every form they take in text,
and passwords in URLs.

A target that holds a secret registers it (:func:`register`); the store then redacts every
string it writes, samples, check results and JSON files alike (:func:`redact`). A key may
come back from a server as written, JSON-escaped (``\\/``, ``\\u0041``) or percent-encoded:
each of its characters is matched in any of those forms, so no form gets through. Matching
ignores case, and the forms evalnb's normalisations make of a secret (case folded, ASCII
punctuation removed, as the ``canonical`` answer and the fuzzy comparisons do) are
registered with it, so a derived text never carries it either.
"""

from __future__ import annotations

import re
import string
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
    "secret_env",
    "secret_env_name",
    "withhold",
]

REDACTED = "[redacted]"
#: Secrets shorter than this are not redacted: they would match ordinary text everywhere.
MIN_LENGTH = 4
#: Environment variable names that hold secrets by convention: ``*API_KEY*``, ``*TOKEN*``,
#: ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, ``*_KEY`` (``OPENAI_KEY``) and ``*KEY_ID*``
#: (``AWS_ACCESS_KEY_ID``), in any case.
_SECRET_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|credential|key_id|(^|_)key$)")
#: A withheld value shorter than this is not redacted: ``TOKENIZERS_PARALLELISM=false`` is
#: withheld by its name, but "false" is everywhere in stored JSON.
MIN_WITHHELD_LENGTH = 8

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
        _secrets.update(f for f in _normalised(secret) if len(f) >= MIN_LENGTH)
        # Longest first: a key that holds another is redacted whole.
        forms = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(_any_form(s) for s in forms), re.IGNORECASE)


def _normalised(secret: str) -> set[str]:
    """The forms answer normalisation makes of ``secret``: case folded, white space
    collapsed, ASCII punctuation removed (``normalise_answer``, ``fuzzy_normalise``)."""
    folded = " ".join(secret.split()).casefold()
    bare = "".join(c for c in secret.lower() if c not in string.punctuation)
    return {folded, " ".join(bare.split()), "".join(bare.split())} - {secret}


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
    """Whether an environment variable's name says it holds a secret (``OPENAI_API_KEY``,
    ``OPENAI_KEY``, ``AWS_ACCESS_KEY_ID``)."""
    return bool(_SECRET_NAME.search(name))


def secret_env(name: str, value: str) -> bool:
    """Whether an environment variable holds a secret: by its name (:func:`secret_env_name`),
    or as a URL that carries user info (``DB_URL=postgres://u:PASSWORD@host/db``)."""
    return secret_env_name(name) or _has_userinfo(value)


def withhold(value: str) -> None:
    """Redact a withheld variable's value from everything stored (and the password of a URL
    in it), so it stays out even when it reaches a sample another way; values shorter than
    :data:`MIN_WITHHELD_LENGTH` are ordinary words and are left alone."""
    if _has_userinfo(value):
        public_url(value)
    if len(value) >= MIN_WITHHELD_LENGTH:
        register(value)


def _has_userinfo(value: str) -> bool:
    if "://" not in value or "@" not in value:
        return False
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return True  # unparsable, but it looks like credentials: withhold it
    return bool(parts.username or parts.password)


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
