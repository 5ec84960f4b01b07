"""A small price table: what a call cost, for the models whose list price we know.

Prices are US dollars per million tokens (input, output), list prices for standard (uncached, non-batch)
use as published by the vendors in 2025. They drift; a model that is missing simply gets ``cost_usd=None``,
which is better than a wrong number. Dated snapshots (``gpt-4.1-mini-2025-04-14``,
``claude-sonnet-4-5-20250929``) and ``-latest`` aliases are priced as their base model.
"""

from __future__ import annotations

import re

PRICES_PER_MTOK: dict[str, dict[str, tuple[float, float]]] = {
    "openai": {
        "gpt-5": (1.25, 10.00),
        "gpt-5-mini": (0.25, 2.00),
        "gpt-5-nano": (0.05, 0.40),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1-nano": (0.10, 0.40),
        "gpt-4o": (2.50, 10.00),
        "gpt-4o-mini": (0.15, 0.60),
        "o3": (2.00, 8.00),
        "o4-mini": (1.10, 4.40),
    },
    "anthropic": {
        "claude-opus-4-5": (5.00, 25.00),
        "claude-opus-4-1": (15.00, 75.00),
        "claude-opus-4-0": (15.00, 75.00),
        "claude-opus-4": (15.00, 75.00),
        "claude-sonnet-4-5": (3.00, 15.00),
        "claude-sonnet-4-0": (3.00, 15.00),
        "claude-sonnet-4": (3.00, 15.00),
        "claude-haiku-4-5": (1.00, 5.00),
        "claude-3-5-haiku": (0.80, 4.00),
    },
}

FREE_PROVIDERS = frozenset({"ollama"})
"""Providers that run on the user's own machine: no per-token charge."""

_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def price_per_mtok(provider: str, model: str) -> tuple[float, float] | None:
    """(input, output) dollars per million tokens for ``model`` on ``provider``, or ``None`` when unknown."""
    if provider in FREE_PROVIDERS:
        return (0.0, 0.0)
    table = PRICES_PER_MTOK.get(provider, {})
    return table.get(model) or table.get(_SNAPSHOT_SUFFIX.sub("", model))


def cost_usd(provider: str, model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The list-price cost of one call, or ``None`` when the model's price is not in the table."""
    price = price_per_mtok(provider, model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
