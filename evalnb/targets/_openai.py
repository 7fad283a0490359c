"""An OpenAI-compatible chat endpoint over httpx, on aiohttp's connection pool by default."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import json
import math
import os
import random
import re
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from evalnb._exceptions import ArgumentError, TargetError
from evalnb._secrets import public_url, redact, redact_json, register
from evalnb._types import Completion, Request, ToolCall

if TYPE_CHECKING:
    import aiohttp
    import yarl

__all__ = ["TRANSPORTS", "OpenAIChat"]

#: The transports :class:`OpenAIChat` can build its client on.
TRANSPORTS = ("aiohttp", "httpx")

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_MAX_RETRY_AFTER = 60.0
# No cap on connections: max_in_flight and the runner's concurrency bound them.
_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=512)
#: The largest response body read (decoded), by default: more is an incomplete sample.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class _TooLarge(Exception):
    """A response body over the target's ``max_response_bytes``."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """A response read whole, from either HTTP library: all the target looks at."""

    status: int
    reason: str
    headers: Mapping[str, str]  # case-insensitive (httpx.Headers, aiohttp's CIMultiDict)
    body: bytes

    @property
    def text(self) -> str:
        """The body decoded as httpx decodes it: the declared charset, else UTF-8."""
        charset = _CHARSET.search(self.headers.get("content-type", ""))
        if charset:
            with contextlib.suppress(LookupError):
                return self.body.decode(charset.group(1), errors="replace")
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.text)


_CHARSET = re.compile(r"""charset=["']?([\w.:-]+)""", re.IGNORECASE)


def _read_whole(headers: Mapping[str, str], cap: int) -> bool:
    """Whether the body can be read at once: its announced length is what reading gives
    (no content coding) and at most ``cap``; ``_TooLarge`` when the length is over it."""
    length = headers.get("content-length", "")
    if not length.isdigit():
        return False
    if int(length) > cap:
        raise _TooLarge(f"{int(length):,} bytes announced")
    return headers.get("content-encoding", "identity") == "identity"


async def _capped(chunks: AsyncIterator[bytes], cap: int) -> bytes:
    """The decoded body, at most ``cap`` bytes of it (else ``_TooLarge``)."""
    read, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise _TooLarge(f"over {cap:,} bytes read")
        read.append(chunk)
    return b"".join(read)


async def _read_httpx(response: httpx.Response, cap: int) -> _Reply:
    """An httpx response read whole, at most ``cap`` bytes of it."""
    if _read_whole(response.headers, cap):
        # HTTP/1.1 framing reads no byte beyond the announced length.
        body = await response.aread()
    else:
        body = await _capped(response.aiter_bytes(), cap)
    return _Reply(response.status_code, response.reason_phrase, response.headers, body)


async def _read_aiohttp(response: aiohttp.ClientResponse, cap: int) -> _Reply:
    """An aiohttp response read whole (decoded by aiohttp), at most ``cap`` bytes of it."""
    if _read_whole(response.headers, cap):
        body = await response.read()
    else:
        body = await _capped(response.content.iter_any(), cap)
    return _Reply(response.status, response.reason or "", response.headers, body)


def _retry_after(response: _Reply) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` as seconds or HTTP date)."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
        if not math.isfinite(seconds):  # "nan", "inf": not a delay
            return None
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _error_text(response: _Reply) -> str:
    try:
        body = response.json()
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
    except (json.JSONDecodeError, AttributeError):
        message = None
    # Redacted before it is cut: a key split at the cut would get through in part.
    text = redact(str(message or response.text))[:200]
    return f"HTTP {response.status}: {text or response.reason}"


def _chat_url(base_url: str) -> httpx.URL:
    """``{base_url}/chat/completions``, refused here when no connection could reach it (rather
    than retried for every sample)."""
    try:
        url = httpx.URL(f"{base_url}/chat/completions")
    except httpx.InvalidURL as exc:
        raise ArgumentError(f"'base_url' is not a valid URL ({exc}); got {base_url!r}") from None
    if not re.fullmatch(r"[\w.-]+|[0-9A-Fa-f:.]+", url.host):
        raise ArgumentError(f"'base_url' must name a host or an IP address; got {base_url!r}")
    if url.port is not None and not 0 < url.port < 65536:
        raise ArgumentError(f"'base_url' has port {url.port}, not 1 to 65535; got {base_url!r}")
    return url


def _aiohttp_session() -> aiohttp.ClientSession:
    """aiohttp's connection pool, with the keep-alive of ``_LIMITS`` and no cap on
    connections (httpx-aiohttp itself would leave aiohttp's 100 for max_connections=None)."""
    # Imported here: aiohttp would add a third of a second to importing the runner.
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=_LIMITS.keepalive_expiry)
    return aiohttp.ClientSession(connector=connector)


def _transport(name: str, session: aiohttp.ClientSession | None) -> httpx.AsyncBaseTransport:
    """httpx's own transport, or httpx-aiohttp's on ``session``."""
    if name == "httpx":
        return httpx.AsyncHTTPTransport(limits=_LIMITS)
    from httpx_aiohttp import AiohttpTransport

    return AiohttpTransport(limits=_LIMITS, client=session)


def _transport_errors() -> tuple[type[Exception], ...]:
    """What a request that got no response raises: httpx's transport errors, and aiohttp's
    own once aiohttp is loaded (httpx-aiohttp lets some through, a malformed status line)."""
    aiohttp = sys.modules.get("aiohttp")
    return (
        (httpx.TransportError,) if aiohttp is None else (httpx.TransportError, aiohttp.ClientError)
    )


def _no_response(exc: Exception, timeout: float) -> tuple[str, str]:
    """The message and sample status of a request that got no response.

    httpx-aiohttp raises every aiohttp connection error, a refused or dropped connection too,
    as ``httpx.ConnectTimeout`` with aiohttp's error as the cause: the cause says what happened.
    """
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None and isinstance(exc.__cause__, aiohttp.ClientError):
        exc = exc.__cause__
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return f"timed out after {timeout:g} s ({type(exc).__name__})", "timeout"
    return f"{type(exc).__name__}: {exc or 'connection failed'}", "error"


class OpenAIChat:
    """POST ``{base_url}/chat/completions`` for every sample.

    ``base_url`` includes the API version (``http://127.0.0.1:8000/v1``). The API key is
    read from the environment variable named by ``api_key_env`` at request time and is
    never written anywhere. ``params`` (temperature, max_tokens, seed, tools,
    response_format, ...) go into every request body; a variant's params override them.

    Transient failures (connection errors, timeouts, dropped connections, 429 and 5xx)
    are retried up to ``max_retries`` times with exponential backoff and jitter; a 429's
    ``Retry-After`` is honoured. The retry count is recorded on the sample.

    ``max_in_flight`` caps this target's concurrent requests below the runner's
    concurrency: 1 for a server that answers one request at a time (llama.cpp). The
    timeout of a request starts when it is sent, never while it waits for its turn.

    The ``httpx.AsyncClient`` underneath runs on ``transport``: ``"aiohttp"`` (httpx-aiohttp's
    ``AiohttpTransport``, the default: several times less CPU per request than httpx's own)
    or ``"httpx"``. On ``"aiohttp"``, with no proxy named in the environment, the chat requests
    go straight to that transport's aiohttp session, with the headers and timeouts the client
    would give them: converting each request and response between httpx's objects and
    aiohttp's cost as much CPU as aiohttp itself. A ``client`` passed in is used as it is, and
    ``transport`` is ignored.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key_env: str | None = None,
        params: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        max_in_flight: int | None = None,
        transport: str = "aiohttp",
        client: httpx.AsyncClient | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ArgumentError(f"'base_url' must be an http(s) URL; got {base_url!r}")
        if api_key_env is not None and api_key_env not in os.environ:
            raise ArgumentError(
                f"'api_key_env' names {api_key_env!r}, but that environment variable is not set"
            )
        if api_key_env is not None and not os.environ[api_key_env].isprintable():
            # A key with a stray "\r" or newline would be refused by the HTTP layer, whose
            # error quotes the header: say so before anything runs, never showing the key.
            raise ArgumentError(
                f"'api_key_env' names {api_key_env!r}, whose value holds a control character "
                "(a line ending copied with the key?); remove it and try again"
            )
        if timeout <= 0:
            raise ArgumentError(f"'timeout' must be > 0 seconds; got {timeout!r}")
        if max_retries < 0:
            raise ArgumentError(f"'max_retries' must be >= 0; got {max_retries!r}")
        if max_in_flight is not None and max_in_flight < 1:
            raise ArgumentError(f"'max_in_flight' must be None or >= 1; got {max_in_flight!r}")
        if not isinstance(max_response_bytes, int) or max_response_bytes < 1:
            raise ArgumentError(
                "'max_response_bytes' must be a positive number of bytes; "
                f"got {max_response_bytes!r}"
            )
        if transport not in TRANSPORTS:
            options = ", ".join(repr(t) for t in TRANSPORTS)
            raise ArgumentError(f"'transport' must be one of {options}; got {transport!r}")
        if api_key_env is not None and "@" in base_url.split("://", 1)[1].split("/", 1)[0]:
            raise ArgumentError(
                "'base_url' carries a user and password and 'api_key_env' names a key: "
                "the server gets one of them; give only one"
            )
        if api_key_env is not None:
            register(os.environ[api_key_env])
        self.base_url = base_url.rstrip("/")
        public_url(self.base_url)  # a password in the URL is redacted everywhere
        self.model = model
        self.api_key_env = api_key_env
        self.params = dict(params or {})
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_in_flight = max_in_flight
        self.transport = transport
        self.max_response_bytes = max_response_bytes
        self._url = _chat_url(self.base_url)
        # A user and password in the URL become a Basic header, sent without them in the
        # URL: aiohttp refuses a request that has both.
        self._basic: dict[str, str] = {}
        if self._url.userinfo:
            user = f"{self._url.username}:{self._url.password}".encode()
            token = base64.b64encode(user).decode("ascii")
            self._basic = {"Authorization": f"Basic {token}"}
            register(token)
            self._url = self._url.copy_with(username=None, password=None)
        self._client = client
        self._owns_client = client is None
        self._gate: asyncio.Semaphore | None = None
        # Set while this target's own client may be bypassed (see _post).
        self._direct: httpx.AsyncBaseTransport | None = None
        # Set while chat requests go straight to aiohttp: its session, the URL, the timeouts.
        self._aiohttp: tuple[aiohttp.ClientSession, yarl.URL, aiohttp.ClientTimeout] | None = None
        self._sent_headers: dict[str, str] = {"Content-Type": "application/json"}
        self._extensions: dict[str, Any] = {}

    async def __aenter__(self) -> OpenAIChat:
        self._ensure_client()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client this target created (a client passed in is left open)."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()  # its transport closes the aiohttp session
            self._client = None
            self._direct = None
            self._aiohttp = None
        self._gate = None

    def _ensure_client(self) -> httpx.AsyncClient:
        if self._client is None:
            session = _aiohttp_session() if self.transport == "aiohttp" else None
            transport = _transport(self.transport, session)
            self._client = client = httpx.AsyncClient(
                transport=transport,
                timeout=httpx.Timeout(self.timeout, pool=None),
                limits=_LIMITS,  # for the transports the client mounts for proxies
            )
            self._sent_headers = {**client.headers, "Content-Type": "application/json"}
            self._extensions = {"timeout": client.timeout.as_dict()}
            # With a proxy named in the environment the client routes through it; otherwise
            # the client adds nothing to its transport that this target needs.
            if urllib.request.getproxies():
                return client
            if session is None:
                self._direct = transport
                return client
            import aiohttp
            import yarl

            # The timeouts: what httpx-aiohttp makes of the client's (the pool's is None).
            timeouts = aiohttp.ClientTimeout(
                total=None, sock_connect=self.timeout, sock_read=self.timeout
            )
            self._aiohttp = (session, yarl.URL(str(self._url)), timeouts)
        return self._client

    def _in_flight(self) -> Any:
        """Bound requests in flight; waiting here is not part of the request's timeout."""
        if self.max_in_flight is None:
            return contextlib.nullcontext()
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.max_in_flight)
        return self._gate

    def _headers(self) -> dict[str, str]:
        if self.api_key_env is None:
            return self._basic
        key = os.environ.get(self.api_key_env, "")
        register(key)  # read now: it may have changed since the target was made
        return {"Authorization": f"Bearer {key}"}

    def _redact(self, text: str) -> str:
        return redact(text)

    def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.model is not None:
            body["model"] = self.model
        body["messages"] = [dict(m) for m in request.messages]
        body.update(self.params)
        body.update(request.params)
        return body

    def _delay(self, attempt: int, response: _Reply | None) -> float:
        if response is not None and response.status == 429:
            asked = _retry_after(response)
            if asked is not None:
                return float(asked)
        ceiling: float = min(self.max_backoff, self.backoff * 2**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    async def _post(self, client: httpx.AsyncClient, content: bytes) -> _Reply:
        """POST ``content`` to the chat route and read the whole response."""
        cap = self.max_response_bytes
        headers = {**self._sent_headers, **self._headers()}
        # AsyncClient.send costs about as much CPU again as the aiohttp transport under it
        # (auth flow, redirects, cookies, hooks: none of which this client has), and the
        # transport's conversion between httpx's objects and aiohttp's as much again, which a
        # fast local server shows (BENCHMARKS.md, runner (b)). The request is the one
        # client.post would build: the client's headers and timeouts.
        if self._aiohttp is not None:
            session, url, timeouts = self._aiohttp
            async with session.post(
                url, data=content, headers=headers, allow_redirects=False, timeout=timeouts
            ) as got:
                return await _read_aiohttp(got, cap)
        transport = self._direct
        if transport is None:
            async with client.stream("POST", self._url, content=content, headers=headers) as sent:
                return await _read_httpx(sent, cap)
        request = httpx.Request(
            "POST", self._url, content=content, headers=headers, extensions=self._extensions
        )
        response = await transport.handle_async_request(request)
        try:
            return await _read_httpx(response, cap)
        finally:
            await response.aclose()

    async def complete(self, request: Request) -> Completion:
        client = self._ensure_client()
        body = self._body(request)
        # Serialised once: the bytes sent are the text recorded on the sample.
        sent = json.dumps(body, ensure_ascii=False)
        content = sent.encode()
        retries = 0
        no_response: tuple[type[Exception], ...] = (*_transport_errors(), TimeoutError)
        while True:
            response: _Reply | None = None
            failure: str
            status = "error"
            try:
                async with self._in_flight():
                    # The whole exchange, not only each wait between bytes: a server that
                    # drips its answer a byte at a time still ends at the timeout.
                    async with asyncio.timeout(self.timeout):
                        response = await self._post(client, content)
            except no_response as exc:
                failure, status = _no_response(exc, self.timeout)
            except _TooLarge as exc:
                # Not retried: the same request would bring the same answer.
                failure = (
                    f"response too large ({exc}; max_response_bytes={self.max_response_bytes:,})"
                )
                break
            else:
                if response.status == 200:
                    return self._parse(response, sent, retries)
                failure = _error_text(response)
                if response.status not in _RETRY_STATUS:
                    break
            if retries >= self.max_retries:
                break
            await asyncio.sleep(self._delay(retries, response))
            retries += 1
        partial = Completion(
            text="",
            request=sent,
            response=None if response is None else self._redact(response.text),
            retries=retries,
        )
        if retries:
            failure = f"{failure} (after {retries} retries)"
        raise TargetError(self._redact(failure), status=status, partial=partial)

    def _parse(self, response: _Reply, sent: str, retries: int) -> Completion:
        raw = self._redact(response.text)
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            message = choice["message"]
            content = message.get("content") or ""
            calls = tuple(
                ToolCall(
                    id=call.get("id"),
                    name=call["function"]["name"],
                    arguments=call["function"].get("arguments") or "",
                )
                for call in message.get("tool_calls") or ()
            )
        except (json.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError) as exc:
            partial = Completion(text="", request=sent, response=raw, retries=retries)
            raise TargetError(
                f"response is not an OpenAI chat completion ({type(exc).__name__}: {exc})",
                status="malformed",
                partial=partial,
            ) from None
        usage = data.get("usage") or {}
        return Completion(
            text=content,
            model=data.get("model"),
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            total_tokens=usage.get("total_tokens"),
            tool_calls=calls,
            request=sent,
            response=raw,
            retries=retries,
        )

    async def describe(self) -> dict[str, Any]:
        """Target settings and what the server says about itself (``/models``)."""
        info: dict[str, Any] = {
            "type": "openai",
            "base_url": public_url(self.base_url),
            "model": self.model,
            "params": self.params,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_in_flight": self.max_in_flight,
            "max_response_bytes": self.max_response_bytes,
            "transport": self.transport if self._owns_client else "client",
        }
        errors: tuple[type[Exception], ...] = (
            *_transport_errors(),
            httpx.HTTPError,
            json.JSONDecodeError,
        )
        try:
            response = await self._ensure_client().get(
                self._url.copy_with(
                    path=self._url.path.removesuffix("/chat/completions") + "/models"
                ),
                headers=self._headers(),
            )
            info["server"] = {
                "status": response.status_code,
                "server_header": response.headers.get("server"),
                "models": response.json() if response.status_code == 200 else None,
            }
        except errors as exc:
            info["server"] = {"error": f"{type(exc).__name__}: {exc}"}
        # A server may echo what it was sent, the key too: nothing of it is kept.
        return dict(redact_json(info))
