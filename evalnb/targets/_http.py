"""What every HTTP target shares: the client on aiohttp's pool, bounded requests in flight,
retries that honour the server's back-off, the response cap, the key read at request time
and redacted, and the exact request and response kept on the sample.

A protocol is a subclass with four small methods: the route a model is reached at
(:meth:`HTTPTarget._route`), the headers that carry the key (:meth:`HTTPTarget._auth`), the
request body (:meth:`HTTPTarget._build`) and the reading of a reply
(:meth:`HTTPTarget._read`).
"""

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
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from evalnb._exceptions import ArgumentError, TargetError
from evalnb._secrets import public_url, redact, redact_json, register
from evalnb._types import Completion, Request

if TYPE_CHECKING:
    import aiohttp
    import yarl

__all__ = ["MAX_RESPONSE_BYTES", "TRANSPORTS", "HTTPTarget"]

#: The transports an HTTP target can build its client on.
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
    """``HTTP status: message``: the vendors' error bodies put the message under ``error``
    (OpenAI, Anthropic, Gemini, Azure) or at the top (Bedrock)."""
    try:
        body = response.json()
        found = body.get("error") if isinstance(body, dict) else None
        message = found.get("message") if isinstance(found, dict) else None
        if message is None and isinstance(body, dict):
            message = body.get("message") or (found if isinstance(found, str) else None)
    except (json.JSONDecodeError, AttributeError):
        message = None
    # Redacted before it is cut: a key split at the cut would get through in part.
    text = redact(str(message or response.text))[:200]
    return f"HTTP {response.status}: {text or response.reason}"


def _checked_url(address: str, base_url: str) -> httpx.URL:
    """``address`` (``base_url`` and a route), refused here when no connection could reach it
    (rather than retried for every sample)."""
    try:
        url = httpx.URL(address)
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


def _check_options(
    api_key_env: str | None,
    timeout: float,
    max_retries: int,
    max_in_flight: int | None,
    max_response_bytes: int,
    transport: str,
) -> None:
    """Refuse options no request could be sent with, naming the parameter."""
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
            f"'max_response_bytes' must be a positive number of bytes; got {max_response_bytes!r}"
        )
    if transport not in TRANSPORTS:
        options = ", ".join(repr(t) for t in TRANSPORTS)
        raise ArgumentError(f"'transport' must be one of {options}; got {transport!r}")


def _text_mapping(name: str, value: Mapping[str, Any] | None) -> dict[str, str]:
    """``headers=`` or ``query=``: names and values that are text."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    ):
        raise ArgumentError(f"'{name}' must be a mapping of names to text values; got {value!r}")
    return dict(value)


class HTTPTarget:
    """POST a request body for every sample, the way every HTTP protocol of evalnb does.

    Subclasses say where a model is reached and what the body and reply look like; this
    class owns the rest (see the module). ``headers`` are sent with every request (a
    gateway's own headers), ``query`` goes into every URL (``api-version``). A value of
    either that carries a secret is better named by ``api_key_env``: only that one is
    read at request time and redacted everywhere.
    """

    #: ``describe()``'s ``type``.
    kind: ClassVar[str] = "http"
    #: What a reply is, for the error when one cannot be read.
    shape: ClassVar[str] = "a reply"
    #: The vendor's overload statuses: retried, with the server's ``Retry-After``, as a 429.
    overload: ClassVar[frozenset[int]] = frozenset({503})
    #: The header that carries the key, and what goes before the key in it.
    key_header: tuple[str, str] = ("Authorization", "Bearer ")
    #: Whether the model is part of the route (Gemini, Bedrock, Azure) rather than the body.
    model_in_route: ClassVar[bool] = False
    #: Whether a model must be named (a server of one model may do without).
    needs_model: ClassVar[bool] = True

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key_env: str | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
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
        _check_options(
            api_key_env, timeout, max_retries, max_in_flight, max_response_bytes, transport
        )
        if api_key_env is not None and "@" in base_url.split("://", 1)[1].split("/", 1)[0]:
            raise ArgumentError(
                "'base_url' carries a user and password and 'api_key_env' names a key: "
                "the server gets one of them; give only one"
            )
        if self.needs_model and not (isinstance(model, str) and model):
            raise ArgumentError(f"'model' must name the model to reach; got {model!r}")
        if api_key_env is not None:
            register(os.environ[api_key_env])
        self.base_url = base_url.rstrip("/")
        public_url(self.base_url)  # a password in the URL is redacted everywhere
        self.model = model
        self.api_key_env = api_key_env
        self.params = dict(params or {})
        self.headers = _text_mapping("headers", headers)
        self.query = _text_mapping("query", query)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_in_flight = max_in_flight
        self.transport = transport
        self.max_response_bytes = max_response_bytes
        self._urls: dict[str | None, httpx.URL] = {}
        # A user and password in the URL become a Basic header, sent without them in the
        # URL: aiohttp refuses a request that has both.
        self._basic: dict[str, str] = {}
        self._url = self._url_for(model)
        self._client = client
        self._owns_client = client is None
        self._gate: asyncio.Semaphore | None = None
        # Set while this target's own client may be bypassed (see _post).
        self._direct: httpx.AsyncBaseTransport | None = None
        # Set while requests go straight to aiohttp: its session and the timeouts.
        self._aiohttp: tuple[aiohttp.ClientSession, aiohttp.ClientTimeout] | None = None
        self._yarl: dict[httpx.URL, yarl.URL] = {}
        self._sent_headers: dict[str, str] = {"Content-Type": "application/json", **self.headers}
        self._extensions: dict[str, Any] = {}

    # -- what a protocol says ----------------------------------------------------------

    def _route(self, model: str | None) -> str:
        """The path under ``base_url`` that ``model`` is asked at."""
        raise NotImplementedError

    def _build(
        self, messages: list[dict[str, Any]], model: str | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        """The request body: the chat ``messages`` and the merged ``params`` (without
        ``model`` when the model is in the route) in the protocol's form."""
        raise NotImplementedError

    def _read(self, data: Any, model: str | None) -> dict[str, Any]:
        """A parsed reply's answer and evidence (:class:`Completion` fields); a reply of
        another shape raises ``KeyError``, ``TypeError``... and is a ``malformed`` sample."""
        raise NotImplementedError

    def _auth(self) -> dict[str, str]:
        """The headers that carry the key, read now (it may have changed since)."""
        if self.api_key_env is None:
            return self._basic
        key = os.environ.get(self.api_key_env, "")
        register(key)
        name, prefix = self.key_header
        return {name: f"{prefix}{key}"}

    def _signed(self, url: httpx.URL, headers: dict[str, str], content: bytes) -> dict[str, str]:
        """The headers of one request to ``url``; a protocol that signs requests adds its
        signature here (Bedrock)."""
        return headers

    # -- the request -------------------------------------------------------------------

    def _url_for(self, model: str | None) -> httpx.URL:
        url = self._urls.get(model)
        if url is None:
            url = _checked_url(self.base_url + self._route(model), self.base_url)
            if self.query:
                url = url.copy_merge_params(self.query)
            if url.userinfo:
                user = f"{url.username}:{url.password}".encode()
                token = base64.b64encode(user).decode("ascii")
                self._basic = {"Authorization": f"Basic {token}"}
                register(token)
                url = url.copy_with(username=None, password=None)
            self._urls[model] = url
        return url

    def _prepare(self, request: Request) -> tuple[str | None, httpx.URL, dict[str, Any]]:
        """The model, URL and body of ``request``: the target's params, then the variant's
        (whose ``model`` replaces the target's)."""
        params = {**self.params, **request.params}
        model = params.pop("model", self.model)
        messages = [dict(m) for m in request.messages]
        return model, self._url_for(model), self._build(messages, model, params)

    def _body(self, request: Request) -> dict[str, Any]:
        """The body posted for ``request`` (with the route, when it holds the model: the
        development cache keys entries by it)."""
        _, url, body = self._prepare(request)
        return {"route": url.path, **body} if self.model_in_route else body

    # -- the client --------------------------------------------------------------------

    async def __aenter__(self) -> HTTPTarget:
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
            self._sent_headers = {
                **client.headers,
                "Content-Type": "application/json",
                **self.headers,
            }
            self._extensions = {"timeout": client.timeout.as_dict()}
            # With a proxy named in the environment the client routes through it; otherwise
            # the client adds nothing to its transport that this target needs.
            if urllib.request.getproxies():
                return client
            if session is None:
                self._direct = transport
                return client
            import aiohttp

            # The timeouts: what httpx-aiohttp makes of the client's (the pool's is None).
            timeouts = aiohttp.ClientTimeout(
                total=None, sock_connect=self.timeout, sock_read=self.timeout
            )
            self._aiohttp = (session, timeouts)
        return self._client

    def _in_flight(self) -> Any:
        """Bound requests in flight; waiting here is not part of the request's timeout."""
        if self.max_in_flight is None:
            return contextlib.nullcontext()
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.max_in_flight)
        return self._gate

    def _redact(self, text: str) -> str:
        return redact(text)

    def _delay(self, attempt: int, response: _Reply | None) -> float:
        if response is not None and (response.status == 429 or response.status in self.overload):
            asked = _retry_after(response)
            if asked is not None:
                return float(asked)
        ceiling: float = min(self.max_backoff, self.backoff * 2**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def _yarl_url(self, url: httpx.URL) -> yarl.URL:
        found = self._yarl.get(url)
        if found is None:
            import yarl

            found = self._yarl[url] = yarl.URL(str(url), encoded=True)
        return found

    async def _post(self, client: httpx.AsyncClient, url: httpx.URL, content: bytes) -> _Reply:
        """POST ``content`` to ``url`` and read the whole response."""
        cap = self.max_response_bytes
        headers = self._signed(url, {**self._sent_headers, **self._auth()}, content)
        # AsyncClient.send costs about as much CPU again as the aiohttp transport under it
        # (auth flow, redirects, cookies, hooks: none of which this client has), and the
        # transport's conversion between httpx's objects and aiohttp's as much again, which a
        # fast local server shows (BENCHMARKS.md, runner (b)). The request is the one
        # client.post would build: the client's headers and timeouts.
        if self._aiohttp is not None:
            session, timeouts = self._aiohttp
            async with session.post(
                self._yarl_url(url),
                data=content,
                headers=headers,
                allow_redirects=False,
                timeout=timeouts,
            ) as got:
                return await _read_aiohttp(got, cap)
        transport = self._direct
        if transport is None:
            async with client.stream("POST", url, content=content, headers=headers) as sent:
                return await _read_httpx(sent, cap)
        request = httpx.Request(
            "POST", url, content=content, headers=headers, extensions=self._extensions
        )
        response = await transport.handle_async_request(request)
        try:
            return await _read_httpx(response, cap)
        finally:
            await response.aclose()

    async def complete(self, request: Request) -> Completion:
        client = self._ensure_client()
        model, url, body = self._prepare(request)
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
                        response = await self._post(client, url, content)
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
                    return self._parse(response, sent, retries, model)
                failure = _error_text(response)
                if response.status not in _RETRY_STATUS | self.overload:
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

    def _parse(self, response: _Reply, sent: str, retries: int, model: str | None) -> Completion:
        raw = self._redact(response.text)
        try:
            fields = self._read(json.loads(raw), model)
        except (json.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError) as exc:
            partial = Completion(text="", request=sent, response=raw, retries=retries)
            raise TargetError(
                f"response is not {self.shape} ({type(exc).__name__}: {exc})",
                status="malformed",
                partial=partial,
            ) from None
        return Completion(**fields, request=sent, response=raw, retries=retries)

    # -- the manifest ------------------------------------------------------------------

    def _models_url(self) -> httpx.URL | None:
        """Where the server lists its models (``None``: the protocol has no such route)."""
        return None

    def _settings(self) -> dict[str, Any]:
        """What ``describe()`` records besides the common settings."""
        return {}

    async def describe(self) -> dict[str, Any]:
        """Target settings and what the server says about itself (its models)."""
        info: dict[str, Any] = {
            "type": self.kind,
            "base_url": public_url(self.base_url),
            "model": self.model,
            **self._settings(),
            "params": self.params,
            "api_key_env": self.api_key_env,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "max_in_flight": self.max_in_flight,
            "max_response_bytes": self.max_response_bytes,
            "transport": self.transport if self._owns_client else "client",
        }
        if self.headers:
            info["headers"] = sorted(self.headers)  # names only: a value may be a secret
        if self.query:
            info["query"] = self.query
        models = self._models_url()
        if models is not None:
            info["server"] = await self._server(models)
        # A server may echo what it was sent, the key too: nothing of it is kept.
        return dict(redact_json(info))

    async def _server(self, url: httpx.URL) -> dict[str, Any]:
        errors: tuple[type[Exception], ...] = (
            *_transport_errors(),
            httpx.HTTPError,
            json.JSONDecodeError,
        )
        try:
            response = await self._ensure_client().get(
                url, headers={**self.headers, **self._auth()}
            )
            return {
                "status": response.status_code,
                "server_header": response.headers.get("server"),
                "models": response.json() if response.status_code == 200 else None,
            }
        except errors as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
