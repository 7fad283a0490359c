"""``echo``: says back the last user message, so tests can see exactly what was sent."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from evalnb.standin._assistant import Reply, last_user_text

__all__ = ["Echo"]


class Echo:
    """Returns the last user message's text unchanged; it never slips."""

    def respond(
        self,
        messages: Sequence[Mapping[str, Any]],
        params: Mapping[str, Any],
        rng: random.Random,
    ) -> Reply:
        return Reply(last_user_text(messages))
