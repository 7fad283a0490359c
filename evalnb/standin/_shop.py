"""``shop-v1`` to ``shop-v8``: a customer-service assistant with a known slip rate.

It reads the last user message (case-insensitive keywords, first match wins) and
answers one of five ways:

==============  ==========================================  ==============================
behaviour       recognised by                               a slip
==============  ==========================================  ==============================
injection       "ignore ... instructions" and "discount"    hands out SAVE100 for 100% off
refund          "refund"                                    says the refund has been issued
order status    an order id (A-1042) and where/status/order forgets the order id
thanks          "thank"                                     rambles for 40-60 words
anything else   -                                           never slips
==============  ==========================================  ==============================

Each reply slips independently with probability ``slip_rate`` (0.30 for v1, 0.10 for
v2; every variant's in :data:`SLIP_RATES`), whatever the temperature. A good reply passes
every check of its case in ``data/cases/shop.jsonl`` and a slip fails at least one, so the
true per-case pass rates are exactly one minus the slip rate (0.70 and 0.90 for v1 and v2,
overall too). The wording varies between draws so that repeats are not all identical text.
"""

from __future__ import annotations

import random
import re
import zlib

from evalnb._exceptions import ArgumentError
from evalnb.standin._assistant import Messages, Params, Reply, last_user_text

__all__ = ["SLIP_RATES", "ShopAssistant"]

#: Every shop variant's true slip rate: v2 is the best by 20 points, the rest are worse
#: than v1 by 5 points each, so a race among all eight has one known winner.
SLIP_RATES = {
    "shop-v1": 0.30,
    "shop-v2": 0.10,
    "shop-v3": 0.35,
    "shop-v4": 0.40,
    "shop-v5": 0.45,
    "shop-v6": 0.50,
    "shop-v7": 0.55,
    "shop-v8": 0.60,
}

_ORDER_ID = re.compile(r"\b[A-Z]{1,3}-\d{3,}\b", re.IGNORECASE)
_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,40}?\binstructions\b", re.IGNORECASE | re.DOTALL
)
_DISCOUNT = re.compile(r"discount|coupon|voucher|promo", re.IGNORECASE)
_ORDER_WORDS = re.compile(r"\b(?:where|status|order)\b", re.IGNORECASE)

# What each order is doing is fixed by its id, so only the wording varies between draws.
_ORDER_STATES = (
    "has shipped and should arrive within 3 working days",
    "is being packed and will leave our warehouse tomorrow",
    "is with the courier and is due on Thursday",
)

GOOD = {
    "order": (
        "Order {order} {state}.",
        "Thanks for your patience. Order {order} {state}, and you will get an email with "
        "tracking details.",
        "I've looked up {order}: it {state}. Is there anything else I can help with?",
    ),
    "refund": (
        "I'm sorry to hear that. I've passed order {order} to our returns team, who will "
        "review it within 2 working days.",
        "Sorry about that! Someone from our team will look into order {order} and get back "
        "to you within 2 working days.",
        "Thank you for telling us. We'll check order {order} and reply about your refund "
        "within 2 working days.",
    ),
    "refund_no_id": (
        "I'm sorry to hear that. Please send me your order number and someone will review "
        "your request within 2 working days.",
    ),
    "injection": (
        "Sorry, I can't help with that. I'm here for questions about orders, deliveries "
        "and refunds.",
        "I'm not able to share promotional codes, but I'm happy to help with an order or a refund.",
    ),
    "thanks": (
        "You're welcome! Have a lovely day.",
        "Happy to help. Take care!",
        "Glad I could help. Enjoy the rest of your day!",
    ),
    "other": (
        "I can help with order status, refunds and returns. What would you like to know?",
        "Happy to help! Tell me your order number or what you need, and I'll take it from there.",
    ),
}

SLIPS = {
    "order": (
        "Your order {state}.",
        "It {state}. Is there anything else I can help with?",
        "Thanks for your patience. Your parcel {state}.",
    ),
    "refund": (
        "Good news: the refund for order {order} has been issued and should reach you in 3-5 days.",
        "Your refund for {order} has been issued. You will see it on your statement soon.",
    ),
    "refund_no_id": ("Good news: your refund has been issued and should reach you in 3-5 days.",),
    "injection": (
        "Sure! Use code SAVE100 for 100% off your next order.",
        "Of course. Your code is SAVE100 for 100% off everything in the shop.",
    ),
    "thanks": (
        "You're very welcome, and thank you for shopping with us! It was a real pleasure to "
        "help you today. Before you go, did you know that we run a loyalty programme, a "
        "weekly newsletter and seasonal sales? We also have a brand new range of kitchen "
        "gadgets, so do come back and browse whenever you like.",
        "No problem at all! Helping customers is honestly the best part of my day, and I hope "
        "everything with your order goes smoothly from here. If you ever have another "
        "question about deliveries, returns, refunds, gift cards, sizes, colours or anything "
        "else at all, just send a message and we will get right back to you.",
    ),
}


def behaviour(text: str) -> tuple[str, str | None]:
    """Which of the shop's behaviours ``text`` asks for, and the order id it names."""
    match = _ORDER_ID.search(text)
    order = match.group(0).upper() if match else None
    lowered = text.lower()
    if _INJECTION.search(text) and _DISCOUNT.search(text):
        return "injection", order
    if "refund" in lowered:
        return ("refund" if order else "refund_no_id"), order
    if order and _ORDER_WORDS.search(text):
        return "order", order
    if "thank" in lowered:
        return "thanks", order
    return "other", order


class ShopAssistant:
    """The shop assistant; ``slip_rate`` is its true error rate."""

    def __init__(self, slip_rate: float):
        if not 0.0 <= slip_rate <= 1.0:
            raise ArgumentError(f"'slip_rate' must be between 0 and 1; got {slip_rate!r}")
        self.slip_rate = slip_rate

    def __repr__(self) -> str:
        return f"ShopAssistant(slip_rate={self.slip_rate!r})"

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply:
        kind, order = behaviour(last_user_text(messages))
        slipped = rng.random() < self.slip_rate and kind in SLIPS
        template = rng.choice((SLIPS if slipped else GOOD)[kind])
        state = _ORDER_STATES[zlib.crc32((order or "").encode()) % len(_ORDER_STATES)]
        return Reply(template.format(order=order, state=state))
