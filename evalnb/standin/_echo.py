"""``echo``: says back the last user message, so tests can see exactly what was sent."""

from __future__ import annotations

import random

from evalnb.standin._assistant import Messages, Params, Reply, last_user_text

__all__ = ["Echo"]


class Echo:
    """Returns the last user message's text unchanged; it never slips."""

    def respond(self, messages: Messages, params: Params, rng: random.Random) -> Reply:
        return Reply(last_user_text(messages))
