"""Price tables: what a token costs, per model, in a TOML file the user supplies.

evalnb bundles no prices (they change, and differ by provider). A price table is a TOML
file, US dollars per million tokens, one table per model name as the server reports it::

    [models."gpt-4o-mini"]
    input = 0.15
    output = 0.60

The runner reads it to keep a cost budget; the analysis to price a stored run.

A model is found by the name the server reported, else by that name without the vendors'
decorations (:func:`price_names`): a dated snapshot (``claude-sonnet-4-5-20250929``,
``gpt-4o-2024-08-06``) is priced as its model, a Bedrock id
(``us.anthropic.claude-sonnet-4-5-20250929-v1:0``) as the vendor's name, Gemini's
``models/gemini-2.5-flash`` as ``gemini-2.5-flash``. A table entry under the full name wins.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from evalnb._exceptions import ArgumentError

__all__ = ["Prices", "load_prices", "price_names", "price_of", "price_table", "sample_cost"]

#: model -> (input, output) dollars per million tokens.
Prices = Mapping[str, tuple[float, float]]

_SIDES = ("input", "output")

#: The decorations taken off a model's name, in turn, to find its price.
_DECORATIONS = (
    re.compile(r"^models/"),  # Gemini's resource name
    re.compile(r"^(us|eu|apac|jp|au|ca|us-gov|global)\."),  # a Bedrock inference profile
    re.compile(r"^(anthropic|amazon|meta|mistral|cohere|ai21|deepseek|openai|qwen|writer)\."),
    re.compile(r"(-v\d+)?:\d+$"),  # a Bedrock model version
    re.compile(r"[-@](\d{8}|\d{4}-\d{2}-\d{2})$"),  # a dated snapshot
)


def load_prices(path: str | os.PathLike[str]) -> dict[str, tuple[float, float]]:
    """The price table in ``path``: model -> (input, output) dollars per million tokens."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ArgumentError(f"{path}: cannot read the price table ({exc.strerror})") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ArgumentError(f"{path}: not valid TOML ({exc})") from None
    models = table.get("models")
    if not isinstance(models, dict) or not models:
        raise ArgumentError(
            f"{path}: must have a [models.\"NAME\"] table per model with 'input' and "
            f"'output' prices per million tokens; got keys {sorted(table)!r}"
        )
    prices = {}
    for model, entry in models.items():
        if not isinstance(entry, dict):
            raise ArgumentError(f"{path}: 'models.{model}' must be a table; got {entry!r}")
        values = []
        for side in _SIDES:
            value = entry.get(side)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ArgumentError(
                    f"{path}: 'models.{model}.{side}' must be a price >= 0 (dollars per "
                    f"million tokens); got {value!r}"
                )
            values.append(float(value))
        unknown = sorted(set(entry) - set(_SIDES))
        if unknown:
            raise ArgumentError(
                f"{path}: 'models.{model}' keys must be 'input' and 'output'; got {unknown!r}"
            )
        prices[str(model)] = (values[0], values[1])
    return prices


def price_table(prices: Prices | str | os.PathLike[str]) -> dict[str, tuple[float, float]]:
    """``prices`` as a table: a path is read with :func:`load_prices`, a mapping checked."""
    if isinstance(prices, str | os.PathLike):
        return load_prices(prices)
    if not isinstance(prices, Mapping):
        raise TypeError(
            f"'prices' must be a price table file or a mapping of model to (input, output) "
            f"dollars per million tokens; got {type(prices).__name__}"
        )
    table = {}
    for model, pair in prices.items():
        try:
            rate_in, rate_out = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ArgumentError(
                f"'prices[{model!r}]' must be (input, output) dollars per million tokens; "
                f"got {pair!r}"
            ) from None
        if not (math.isfinite(rate_in) and math.isfinite(rate_out)) or min(rate_in, rate_out) < 0:
            raise ArgumentError(f"'prices[{model!r}]' must hold two prices >= 0; got {pair!r}")
        table[str(model)] = (rate_in, rate_out)
    return table


def price_names(model: str) -> list[str]:
    """The names ``model`` is looked for under, in order: itself, then with each of the
    vendors' decorations taken off in turn (see the module)."""
    names = [model]
    for decoration in _DECORATIONS:
        shorter = decoration.sub("", names[-1])
        if shorter and shorter != names[-1]:
            names.append(shorter)
    return names


def price_of(prices: Prices, model: str | None) -> tuple[float, float] | None:
    """``(input, output)`` dollars per million tokens of ``model`` (found by
    :func:`price_names`), or ``None`` when the table lacks it."""
    if not isinstance(model, str):
        return None
    return next((prices[n] for n in price_names(model) if n in prices), None)


def sample_cost(
    prices: Prices, model: str | None, prompt_tokens: int | None, completion_tokens: int | None
) -> float | None:
    """Dollars one sample cost, or ``None`` when it cannot be priced (no token counts, or a
    model the table lacks)."""
    rates = price_of(prices, model)
    if rates is None or prompt_tokens is None or completion_tokens is None:
        return None
    rate_in, rate_out = rates
    return (prompt_tokens * rate_in + completion_tokens * rate_out) / 1e6
