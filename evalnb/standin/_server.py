"""The stand-in's aiohttp application: OpenAI chat routes (and the vendors' protocols, each
turned into a chat request by :mod:`evalnb.standin._protocols`), seeded draws, injected faults.

Determinism. A reply depends only on the server seed, the model, the canonical JSON of
``messages``, the parameters that change what an assistant says (``temperature``,
``top_p``, ``tools``, ``tool_choice``, ``response_format``), the body's ``seed`` if
any, and a draw number. With a ``seed`` in the body the draw number is 0 (and ``i``
for choice ``i`` when ``n`` > 1), so the same body always gets the same answer.
Without one, the k-th successful identical request gets draw k, so repeats vary yet
a fresh server with the same seed, asked the same things in the same order, answers
the same. Faults do not use up draws. ``max_tokens`` truncates a draw; it does not
pick another one.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import json
import random
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, cast

from aiohttp import web

from evalnb._numbers import is_whole
from evalnb.standin._assistant import Reply, text_of
from evalnb.standin._faults import Fault, parse_fault, parse_faults
from evalnb.standin._protocols import PROTOCOLS, Protocol
from evalnb.standin._registry import assistants

__all__ = [
    "EMBEDDING_DIMENSIONS",
    "EMBEDDING_MODEL",
    "MAX_LOGGED",
    "SERVER_HEADER",
    "embedding",
    "make_app",
]

try:
    _VERSION = importlib.metadata.version("evalnb")
except importlib.metadata.PackageNotFoundError:
    _VERSION = "0"

SERVER_HEADER = f"evalnb-standin/{_VERSION}"

#: How many requests ``GET /_standin/requests`` remembers (the most recent ones).
MAX_LOGGED = 10_000

MAX_CHOICES = 10_000

# The body fields that decide a draw; anything else (max_tokens, n, user...) does not.
_REPLY_PARAMS = (
    "model",
    "messages",
    "seed",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "response_format",
)
_NOT_PARAMS = frozenset(("model", "messages", "standin_fault"))

# A response cut short on purpose: it starts like JSON and stops mid-string.
_MALFORMED = b'{"id": "chatcmpl-standin", "object": "chat.completion", "choices": [{"message": {"c'


class _Refusal(Exception):
    """A request the stand-in answers with an OpenAI-style error instead of a completion."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        type: str = "invalid_request_error",
        code: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.error = {"message": message, "type": type, "param": param, "code": code}

    def response(self, headers: Mapping[str, str] | None = None) -> web.Response:
        return web.Response(
            status=self.status,
            body=json.dumps({"error": self.error}).encode(),
            content_type="application/json",
            headers=headers,
        )


#: The model name ``/v1/embeddings`` answers with when a request names none.
EMBEDDING_MODEL = "embed"

#: Dimensions of the stand-in's embeddings.
EMBEDDING_DIMENSIONS = 256


def embedding(text: str) -> list[float]:
    """The stand-in's embedding of ``text``: words and character trigrams (lower case)
    hashed into :data:`EMBEDDING_DIMENSIONS` signed buckets, scaled to length 1."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    lowered = text.lower()
    words = [w for w in "".join(c if c.isalnum() else " " for c in lowered).split() if w]
    grams = [f"#{w}#"[i : i + 3] for w in words for i in range(len(w))]
    for feature, weight in [*((w, 2.0) for w in words), *((g, 1.0) for g in grams)]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % EMBEDDING_DIMENSIONS
        vector[bucket] += weight if digest[4] & 1 else -weight
    norm = sum(x * x for x in vector) ** 0.5
    return [round(x / norm, 6) for x in vector] if norm else vector


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def _check_int(body: Mapping[str, Any], key: str, low: int, high: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not is_whole(value, low, high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise _Refusal(400, f"'{key}' must be a whole number {bound}; got {value!r}", param=key)
    return cast(int | None, value)


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise _Refusal(
            400,
            f"'messages' must be a non-empty list of message objects; got {messages!r}",
            param="messages",
        )
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _Refusal(
                400,
                f"'messages[{i}]' must be an object with a string 'role'; got {message!r}",
                param=f"messages[{i}]",
            )


def _tool_calls(reply: Reply, digest: bytes) -> list[dict[str, Any]]:
    calls = []
    for i, call in enumerate(reply.tool_calls or ()):
        arguments = (
            call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        )
        call_id = hashlib.sha256(digest + b"call%d" % i).hexdigest()[:24]
        calls.append(
            {
                "id": f"call_{call_id}",
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }
        )
    return calls


class _StandIn:
    """Per-server state: the seed, the faults, draw and attempt counters, the request log."""

    def __init__(self, seed: int, faults: Sequence[Fault]):
        self.seed = seed
        self.faults = tuple(faults)
        self.registry = assistants()
        self.draws: dict[bytes, int] = {}
        self.attempts: dict[tuple[object, str], int] = {}
        self.log: deque[dict[str, Any]] = deque(maxlen=MAX_LOGGED)
        self.prefix = f"evalnb-standin\n{seed}\n".encode()

    # -- routes ------------------------------------------------------------------------

    async def models(self, request: web.Request) -> web.Response:
        data = [self._model(name) for name in self.registry]
        return web.json_response({"object": "list", "data": data})

    async def model(self, request: web.Request) -> web.Response:
        name = request.match_info["model"]
        if name not in self.registry:
            return self._unknown_model(name).response()
        return web.json_response(self._model(name))

    async def requests(self, request: web.Request) -> web.Response:
        return web.json_response(list(self.log))

    async def not_found(self, request: web.Request) -> web.Response:
        return _Refusal(
            404, f"the stand-in has no route {request.method} {request.path}"
        ).response()

    async def embeddings(self, request: web.Request) -> web.Response:
        """``/v1/embeddings``: each input text as a unit vector of hashed words and
        character trigrams, so texts sharing words are close (deterministic, seedless)."""
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _Refusal(400, "the body is not JSON").response()
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return _Refusal(
                400, "'input' must be a string or a non-empty list of strings", param="input"
            ).response()
        model = body.get("model") if isinstance(body.get("model"), str) else EMBEDDING_MODEL
        data = [
            {"object": "embedding", "index": i, "embedding": embedding(text)}
            for i, text in enumerate(texts)
        ]
        tokens = sum(_words(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return web.json_response({"object": "list", "data": data, "model": model, "usage": usage})

    def route(self, protocol: Protocol) -> Any:
        """The handler of one protocol's route."""

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.chat(request, protocol)

        return handle

    async def chat(
        self, request: web.Request, protocol: Protocol = PROTOCOLS["chat"]
    ) -> web.StreamResponse:
        entry: dict[str, Any] = {
            "time": time.time(),
            "protocol": protocol.name,
            "model": None,
            "body_sha256": None,
            "fault": None,
            "status": None,
            # whether a key came, never its value: lets tests see a key was sent
            "authorized": any(
                request.headers.get(name, "").startswith(start) and request.headers.get(name)
                for name, start in protocol.keys
            ),
        }
        self.log.append(entry)
        try:
            response = await self._chat(request, entry, protocol)
        except _Refusal as refusal:
            response = refusal.response()
        entry["status"] = response.status if entry["fault"] != "drop" else None
        return response

    # -- the chat route's steps ------------------------------------------------------

    async def _chat(
        self, request: web.Request, entry: dict[str, Any], protocol: Protocol
    ) -> web.StreamResponse:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge as exc:
            raise _Refusal(413, f"request body too large ({exc.text})") from None
        try:
            body = json.loads(raw)
        except ValueError as exc:
            entry["body_sha256"] = hashlib.sha256(raw).hexdigest()
            raise _Refusal(400, f"request body is not valid JSON ({exc})") from None
        if not isinstance(body, dict):
            raise _Refusal(400, f"request body must be a JSON object; got {type(body).__name__}")
        route = {**request.match_info, **request.query}
        try:
            body = protocol.request(body, route)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise _Refusal(400, f"not a {protocol.name} request ({exc})") from None
        body_sha = hashlib.sha256(_canonical(body)).hexdigest()
        entry["body_sha256"] = body_sha
        model = body.get("model")
        entry["model"] = model if isinstance(model, str) else None
        request_fault = self._validate(body)

        # _validate refused any body whose model is not a served model's name.
        fault = self._fault(request_fault, body["model"], body_sha)
        if fault is not None:
            entry["fault"] = fault.kind
            early = await self._apply(fault, request, protocol)
            if early is not None:
                return early
        completion = self._complete(body, empty=fault is not None and fault.kind == "empty")
        answer = protocol.response(completion)
        return web.Response(body=json.dumps(answer).encode(), content_type="application/json")

    def _validate(self, body: dict[str, Any]) -> Fault | None:
        """Refuse a body the OpenAI API would refuse; return its own fault spec, if any."""
        request_fault = None
        if body.get("standin_fault") is not None:
            try:
                request_fault = parse_fault(
                    body["standin_fault"], where="standin_fault", server_wide=False
                )
            except ValueError as exc:
                raise _Refusal(400, str(exc), param="standin_fault") from None
        if body.get("stream"):
            raise _Refusal(400, "streaming is not supported by the stand-in", param="stream")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _Refusal(400, f"'model' must be a model name; got {model!r}", param="model")
        if model not in self.registry:
            raise self._unknown_model(model)
        _check_messages(body.get("messages"))
        temperature = body.get("temperature")
        if temperature is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not 0 <= temperature <= 2
        ):
            raise _Refusal(
                400,
                f"'temperature' must be a number between 0 and 2; got {temperature!r}",
                param="temperature",
            )
        for key in ("max_completion_tokens", "max_tokens"):
            _check_int(body, key, 1)
        _check_int(body, "n", 1, MAX_CHOICES)
        seed = body.get("seed")
        if seed is not None and not is_whole(seed):
            raise _Refusal(400, f"'seed' must be an integer; got {seed!r}", param="seed")
        return request_fault

    def _complete(self, body: dict[str, Any], *, empty: bool) -> dict[str, Any]:
        """The chat.completion object for a validated body (``empty``: every content is "")."""
        model, messages = body["model"], body["messages"]
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        seeded = body.get("seed") is not None
        identity = hashlib.sha256(
            self.prefix + _canonical({k: body[k] for k in _REPLY_PARAMS if k in body})
        )
        key = identity.digest()
        first = 0 if seeded else self.draws.get(key, 0)
        params = {k: v for k, v in body.items() if k not in _NOT_PARAMS}
        choices = []
        completion_tokens = 0
        for i in range(body.get("n") or 1):
            digest = identity.copy()
            digest.update(b"\n%d" % (first + i))
            draw = digest.digest()
            if empty:
                reply = Reply("")
            else:
                rng = random.Random(int.from_bytes(draw[:8], "big"))
                reply = self._respond(model, messages, params, rng)
            choice, tokens = self._choice(i, reply, limit, draw)
            choices.append(choice)
            completion_tokens += tokens
        if not seeded and not empty:
            self.draws[key] = first + len(choices)

        prompt_tokens = sum(_words(text_of(m)) for m in messages)
        return {
            "id": "chatcmpl-" + identity.hexdigest()[:12] + draw.hex()[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "system_fingerprint": f"standin-seed-{self.seed}",
        }

    def _fault(self, request_fault: Fault | None, model: str, body_sha: str) -> Fault | None:
        """The first fault that hits this attempt: the request's own, then server-wide ones."""
        candidates: list[tuple[object, Fault]] = []
        if request_fault is not None:
            candidates.append(("request", request_fault))
        candidates.extend(
            (i, f) for i, f in enumerate(self.faults) if f.model is None or f.model == model
        )
        for source, fault in candidates:
            if fault.rate < 1.0:
                share = hashlib.sha256(self.prefix + f"fault\n{source}\n{body_sha}".encode())
                if int.from_bytes(share.digest()[:8], "big") / 2**64 >= fault.rate:
                    continue
            if fault.times >= 0:
                seen = self.attempts.get((source, body_sha), 0)
                self.attempts[(source, body_sha)] = seen + 1
                if seen >= fault.times:
                    continue
            return fault
        return None

    async def _apply(
        self, fault: Fault, request: web.Request, protocol: Protocol
    ) -> web.StreamResponse | None:
        """Carry out ``fault``; a response ends the request, ``None`` lets it answer."""
        kind = fault.kind
        if kind in ("latency", "hang"):
            await asyncio.sleep(fault.ms / 1000)
            return None
        if kind == "status_429":
            refusal = _Refusal(
                429,
                "rate limit reached (injected by the stand-in)",
                type="rate_limit_error",
                code="rate_limit_exceeded",
            )
            return refusal.response(headers={"Retry-After": f"{fault.retry_after:g}"})
        if kind == "overloaded":
            refusal = _Refusal(
                protocol.overload, "overloaded (injected by the stand-in)", type="overloaded_error"
            )
            return refusal.response(headers={"Retry-After": f"{fault.retry_after:g}"})
        if kind == "status_500":
            refusal = _Refusal(
                500, "internal server error (injected by the stand-in)", type="server_error"
            )
            return refusal.response()
        if kind == "malformed":
            return web.Response(body=_MALFORMED, content_type="application/json")
        if kind == "drop":
            # Closing the socket before anything is written: aiohttp then fails to send
            # the placeholder response and quietly drops the connection.
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=204)
        return None

    def _respond(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        params: Mapping[str, Any],
        rng: random.Random,
    ) -> Reply:
        try:
            reply = self.registry[model].respond(messages, params, rng)
        except Exception as exc:
            raise _Refusal(
                500, f"assistant {model!r} failed: {exc!r}", type="server_error"
            ) from exc
        if not isinstance(reply, Reply):
            raise _Refusal(
                500,
                f"assistant {model!r} must return a Reply; got {type(reply).__name__}",
                type="server_error",
            )
        return reply

    def _choice(
        self, index: int, reply: Reply, limit: int | None, draw: bytes
    ) -> tuple[dict[str, Any], int]:
        content = reply.content
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = "stop"
        if reply.tool_calls:
            message["tool_calls"] = _tool_calls(reply, draw)
            finish = "tool_calls"
        elif content and limit is not None:
            words = content.split()
            if len(words) > limit:
                message["content"] = content = " ".join(words[:limit])
                finish = "length"
        tokens = _words(content) + sum(
            _words(call["function"]["arguments"]) for call in message.get("tool_calls", ())
        )
        return {"index": index, "message": message, "finish_reason": finish}, tokens

    # -- models ------------------------------------------------------------------------

    def _model(self, name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "evalnb-standin"}

    def _unknown_model(self, name: str) -> _Refusal:
        known = ", ".join(repr(n) for n in self.registry)
        return _Refusal(
            404,
            f"the model {name!r} does not exist; the stand-in serves {known}",
            param="model",
            code="model_not_found",
        )


async def _server_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Server"] = SERVER_HEADER


def make_app(seed: int = 0, faults: Any = None) -> web.Application:
    """The stand-in as an ``aiohttp.web.Application`` (each app has its own state)."""
    if not is_whole(seed):
        raise TypeError(f"'seed' must be an int; got {seed!r}")
    state = _StandIn(seed, parse_faults(faults))
    app = web.Application()
    app.on_response_prepare.append(_server_header)
    app.router.add_post("/v1/chat/completions", state.chat)
    app.router.add_post("/v1/messages", state.route(PROTOCOLS["anthropic"]))
    app.router.add_post("/v1/responses", state.route(PROTOCOLS["responses"]))
    for version in ("v1beta", "v1"):
        app.router.add_post(
            f"/{version}/models/{{model}}:generateContent", state.route(PROTOCOLS["gemini"])
        )
    app.router.add_post("/model/{model}/converse", state.route(PROTOCOLS["bedrock"]))
    app.router.add_post(
        "/openai/deployments/{deployment}/chat/completions", state.route(PROTOCOLS["azure"])
    )
    app.router.add_post("/v1/embeddings", state.embeddings)
    app.router.add_get("/v1/models", state.models)
    app.router.add_get("/v1/models/{model}", state.model)
    app.router.add_get("/_standin/requests", state.requests)
    app.router.add_route("*", "/{path:.*}", state.not_found)
    return app
