"""The stand-in model: a seeded OpenAI-compatible server whose true error rates are known.

The demo, the notebooks and the tests run against it, so nothing needs a network or
a key. Besides OpenAI's chat completions it speaks Anthropic's Messages, OpenAI's Responses,
Gemini's generateContent, Bedrock's Converse and Azure OpenAI's deployment routes, answered
by the same assistants.

Models: ``shop-v1`` (slips 30% of the time), ``shop-v2`` (10%), ``shop-v3`` to
``shop-v8`` (35% to 60%, for races), ``extractor``
(JSON that disagrees more as temperature rises), ``quiz`` (reference, multiple-choice and
template questions, wrong 30% of the time, 10% when told to check its work), ``notes``,
``judge`` (pass/fail or graded) and ``echo``.

>>> from evalnb.standin import StandIn
>>> with StandIn(seed=0) as server:                      # doctest: +SKIP
...     httpx.post(server.base_url + "/chat/completions", json={
...         "model": "shop-v1",
...         "messages": [{"role": "user", "content": "Where is my order A-1042?"}],
...     }).json()["choices"][0]["message"]["content"]
'Order A-1042 is with the courier and is due on Thursday.'
"""

from __future__ import annotations

from evalnb.standin._assistant import Assistant, Reply, ToolRequest
from evalnb.standin._faults import FAULT_KINDS, Fault
from evalnb.standin._launch import StandIn, add_arguments, main, serve
from evalnb.standin._registry import assistants, register_assistant
from evalnb.standin._server import make_app

__all__ = [
    "FAULT_KINDS",
    "Assistant",
    "Fault",
    "Reply",
    "StandIn",
    "ToolRequest",
    "add_arguments",
    "assistants",
    "main",
    "make_app",
    "register_assistant",
    "serve",
]
