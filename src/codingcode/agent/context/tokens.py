"""Token accounting: the provider's usage figures where it sends them, an estimate where not,
and each model's context window (a table, overridden by the ``contextWindow`` setting)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from codingcode.agent.transcript import Message, Usage

#: Characters per token for the estimate (English and code average about 4; a little lower
#: errs on the safe side, compacting early rather than overflowing).
CHARS_PER_TOKEN = 3.5
#: Used when neither the table nor the settings know the model.
DEFAULT_WINDOW = 128_000

#: Context windows (tokens) by model-name prefix; the longest matching prefix wins.
WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "gemini-": 1_048_576,
    "llama3": 8_192,
    "llama3.1": 128_000,
    "qwen2.5-coder": 32_768,
    "deepseek-": 64_000,
    "mistral": 32_000,
}


def context_window(model: str, override: int | None = None) -> int:
    if override:
        return override
    name = model.rsplit("/", 1)[-1].lower()  # openrouter-style vendor/model
    best = ""
    for prefix in WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return WINDOWS[best] if best else DEFAULT_WINDOW


def estimate_text(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def estimate_message(m: Message) -> int:
    n = estimate_text(m.text) + 4
    for c in m.tool_calls:
        n += estimate_text(c.raw_arguments or json.dumps(c.arguments or {})) + 8
    for r in m.results:
        n += estimate_text(r.content) + 8
    return n


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


#: US dollars per million (input, output) tokens, by model-name prefix, where published
#: prices are known (list prices when this table was written; approximate).
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "o4-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4": (1.00, 5.00),
}


def cost_usd(model: str, usage: Usage) -> float | None:
    """The cost of ``usage`` on ``model`` in US dollars, None where the price is not known."""
    name = model.rsplit("/", 1)[-1].lower()
    best = max((p for p in PRICES if name.startswith(p)), key=len, default=None)
    if best is None:
        return None
    price_in, price_out = PRICES[best]
    return round((usage.input_tokens * price_in + usage.output_tokens * price_out) / 1e6, 6)
