"""``extractor``: a JSON extractor whose draws disagree more as temperature rises.

It understands two prompts:

- invoice: ``Extract vendor, total_cents and currency as JSON from: "Acme Tools — total
  $19.50 USD"`` gives ``{"vendor": "Acme Tools", "total_cents": 1950, "currency": "USD"}``
  (the keys named in the prompt, in order; the vendor is the text before the dash, the
  amount is read in cents, the currency is the three-letter code or the symbol's);
- refund policy: ``Return JSON with key status: is a refund allowed? Policy: (none
  provided)`` gives ``{"status": "unknown"}``; a policy that is given answers "allowed",
  or "denied" when it says no refunds.

Any other prompt gets ``{"error": ...}`` and never disagrees.

True rates. A draw is correct with probability ``1 - p`` where ``p = min(0.5, 2 * T / 7)``
and ``T`` is the request's ``temperature`` (1.0 when absent, as in the OpenAI API): p is
0 at T=0, 0.2 at T=0.7 and 0.286 at T=1. A disagreeing draw is one of three kinds, each
with probability ``p / 3``:

- wrong value: ``total_cents`` holds the amount in units (19.5, a unit bug); in the
  refund case ``status`` is "approved" (or the opposite answer when a policy is given);
- prose: ``Here you go: {...}`` around the same object;
- missing key: the last requested key is left out (``{}`` in the refund case).

So at T=0.7 the reply text is exactly the correct JSON 80% of the time, parses
(first ``{`` to last ``}``) to the correct object 86.7% of the time, has every key 93.3%
of the time, and the invoice's ``total_cents`` is 1950 93.3% of the time (19.5 otherwise).
"""

from __future__ import annotations

import json
import random
import re
from decimal import Decimal
from typing import Any

from evalnb.standin._assistant import Messages, Params, Reply, last_user_text

__all__ = ["Extractor", "disagreement_rate"]

_INVOICE = re.compile(
    r"extract\s+(?P<keys>.+?)\s+as\s+json\s+from\s*:?\s*(?P<source>.+)", re.I | re.S
)
_QUOTED = re.compile(r"\s*(?:\"(?P<double>[^\"]*)\"|“(?P<curly>[^”]*)”|'(?P<single>.*)')", re.S)
_KEY_SPLIT = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+")
_DASH = re.compile(r"\s+[-–—]+\s+")
_AMOUNT = re.compile(r"(?P<symbol>[$€£¥])?\s?(?P<number>\d[\d,]*(?:\.\d+)?)")
_CODE = re.compile(r"\b[A-Z]{3}\b")
_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_REFUND_KEY = re.compile(r"\bkeys?\s+[\"'`]?(?P<key>\w+)", re.I)
_POLICY = re.compile(r"\bpolicy\s*:\s*(?P<policy>.*)$", re.I | re.S)
_NO_POLICY = re.compile(
    r"^[\s(\[]*(?:none(?: provided| given)?|n/?a|not provided|missing|empty)?[\s)\].]*$", re.I
)
_NO_REFUNDS = re.compile(r"\bno refunds?\b|non-refundable|not refundable|final sale", re.I)
_PROSE = ("Here you go: {}", "Sure! The extracted data is {}")


def disagreement_rate(temperature: float) -> float:
    """The probability that a draw at ``temperature`` is not the correct JSON text."""
    return min(0.5, 2.0 * temperature / 7.0)


def _invoice(keys_text: str, source: str) -> tuple[dict[str, Any], str | None]:
    """The correct object, and the key a unit bug would corrupt (if one was asked for)."""
    keys = [re.sub(r"\W", "", k) for k in _KEY_SPLIT.split(keys_text.strip())]
    quoted = _QUOTED.match(source)
    if quoted:
        source = next(text for text in quoted.groups() if text is not None)
    parts = _DASH.split(source, maxsplit=1)
    vendor, rest = (parts[0].strip(), parts[1]) if len(parts) == 2 else (None, source)
    amount_match = _AMOUNT.search(rest)
    amount = Decimal(amount_match["number"].replace(",", "")) if amount_match else None
    code_match = _CODE.search(rest)
    if code_match:
        currency: str | None = code_match.group(0)
    else:
        currency = _SYMBOLS.get(amount_match["symbol"] or "") if amount_match else None
    fields: dict[str, Any] = {
        "vendor": vendor,
        "merchant": vendor,
        "currency": currency,
        "total": float(amount) if amount is not None else None,
        "amount": float(amount) if amount is not None else None,
    }
    out: dict[str, Any] = {}
    unit_key = None
    for key in filter(None, keys):
        if key.endswith("_cents"):
            out[key] = int((amount * 100).to_integral_value()) if amount is not None else None
            unit_key = unit_key or key
        else:
            out[key] = fields.get(key)
    return out, unit_key


class Extractor:
    """The JSON extractor; see the module docstring for its true rates."""

    def __repr__(self) -> str:
        return "Extractor()"

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply:
        prompt = last_user_text(messages)
        invoice = _INVOICE.search(prompt)
        policy = _POLICY.search(prompt)
        if invoice:
            correct, unit_key = _invoice(invoice["keys"], invoice["source"])
            wrong: dict[str, Any] | None = None
            if unit_key is not None and correct[unit_key] is not None:
                wrong = {**correct, unit_key: correct[unit_key] / 100}
        elif policy and "refund" in prompt.lower():
            key_match = _REFUND_KEY.search(prompt)
            key = key_match["key"] if key_match else "status"
            text = policy["policy"].strip()
            if _NO_POLICY.match(text):
                truth = "unknown"
            else:
                truth = "denied" if _NO_REFUNDS.search(text) else "allowed"
            correct = {key: truth}
            wrong = {key: {"unknown": "approved", "allowed": "denied"}.get(truth, "allowed")}
        else:
            message = "the stand-in extractor understands invoice and refund-policy prompts"
            return Reply(json.dumps({"error": message}))

        temperature = params.get("temperature")
        p = disagreement_rate(1.0 if temperature is None else float(temperature))
        draw = rng.random()
        if draw >= p:
            return Reply(json.dumps(correct))
        kind = int(draw / p * 3)
        if kind == 0:
            return Reply(json.dumps(wrong if wrong is not None else correct))
        if kind == 1:
            return Reply(rng.choice(_PROSE).format(json.dumps(correct)))
        return Reply(json.dumps(dict(list(correct.items())[:-1])))
