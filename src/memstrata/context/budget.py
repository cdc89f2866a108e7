"""Token budgets: the window, the output reserve, and the share of each section.

The usable context is the window minus the output reserve
(``max_tokens`` + a buffer), split into sections — system 5-10 %, memory 30-40 %,
history 20-30 %, current input and tool results 20-25 % (docs/architecture.md,
"Context budget and compression").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from memstrata.errors import ValidationError
from memstrata.validation import check_non_negative_int, check_positive_int

Section = Literal["system", "memory", "history", "current"]
SECTIONS: tuple[Section, ...] = ("system", "memory", "history", "current")

DEFAULT_MAX_OUTPUT_TOKENS = 4096
DEFAULT_BUFFER_TOKENS = 2048
MAX_WINDOW_TOKENS = 100_000_000

# Context windows (tokens) of OpenAI models whose tokenizer ships offline. Exact names
# first, then family prefixes (a dated snapshot such as gpt-4o-2024-08-06 shares its
# family's window). Anything else: pass window_tokens.
KNOWN_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-4-0613": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-3.5-turbo": 16_385,
    "gpt-3.5-turbo-0125": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}
KNOWN_WINDOW_PREFIXES: tuple[tuple[str, int], ...] = (
    ("gpt-4o-", 128_000),
    ("chatgpt-4o-", 128_000),
    ("gpt-4.1-", 1_047_576),
    ("gpt-4-turbo-", 128_000),
    # Other families, counted with the approximate counter (it errs high). Where a
    # family's window grew across releases the smaller is kept: a budget that fits
    # the smaller window fits both. A deployment that knows better passes window_tokens.
    ("claude-", 200_000),
    ("deepseek-", 64_000),
    ("qwen-max", 32_768),
    ("qwen-plus", 131_072),
    ("qwen-turbo", 131_072),
    ("qwen-long", 1_000_000),
    ("qwen2.5-", 32_768),
    ("qwen3-", 32_768),
    ("qwen", 32_768),
    ("llama3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama-4", 131_072),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-", 1_048_576),
)


def _check_share(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(name, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(name, "must be a finite number within [0, 1]")
    return float(value)


@dataclass(frozen=True, slots=True)
class BudgetShares:
    """The fraction of the usable context each section may fill (each in [0, 1], sum <= 1).

    What the shares leave unallocated (1 - sum) is simply not used.
    """

    system: float = 0.10
    memory: float = 0.40
    history: float = 0.25
    current: float = 0.25

    def __post_init__(self) -> None:
        total = 0.0
        for name in SECTIONS:
            total += _check_share(f"shares.{name}", getattr(self, name))
        if total > 1.0 + 1e-9:
            raise ValidationError("shares", f"sum to {total:.4f}; they must sum to <= 1")

    def of(self, section: Section) -> float:
        """The share of ``section``."""
        return float(getattr(self, section))


@dataclass(frozen=True, slots=True)
class ContextBudget:
    """The target model's window, the output reserve, and the section shares."""

    window_tokens: int
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    buffer_tokens: int = DEFAULT_BUFFER_TOKENS
    shares: BudgetShares = field(default_factory=BudgetShares)

    def __post_init__(self) -> None:
        check_positive_int("window_tokens", self.window_tokens, maximum=MAX_WINDOW_TOKENS)
        check_non_negative_int("max_output_tokens", self.max_output_tokens)
        check_non_negative_int("buffer_tokens", self.buffer_tokens)
        if not isinstance(self.shares, BudgetShares):
            raise ValidationError(
                "shares", f"must be a BudgetShares, got {type(self.shares).__name__}"
            )
        if self.available_tokens <= 0:
            raise ValidationError(
                "max_output_tokens",
                f"the output reserve ({self.reserve_tokens} = max_output_tokens + "
                f"buffer_tokens) leaves nothing of the {self.window_tokens}-token window",
            )

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        window_tokens: int | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        buffer_tokens: int = DEFAULT_BUFFER_TOKENS,
        shares: BudgetShares | None = None,
    ) -> ContextBudget:
        """The budget of ``model``: ``window_tokens`` when given, else the known window
        of its family (:func:`known_window`); ValidationError naming ``window_tokens``
        for a model of unknown window."""
        if not isinstance(model, str) or not model.strip():
            raise ValidationError("model", "must be a non-empty string")
        window = window_tokens if window_tokens is not None else known_window(model)
        if window is None:
            raise ValidationError(
                "window_tokens",
                f"is required for {model!r}, whose context window is not known: give the "
                "model's window in tokens",
            )
        return cls(window, max_output_tokens, buffer_tokens, shares or BudgetShares())

    @property
    def reserve_tokens(self) -> int:
        """Tokens kept free for the answer: ``max_output_tokens + buffer_tokens``."""
        return self.max_output_tokens + self.buffer_tokens

    @property
    def available_tokens(self) -> int:
        """What the prompt may use: the window minus the output reserve."""
        return self.window_tokens - self.reserve_tokens

    def section_budget(self, section: Section) -> int:
        """Whole tokens ``section`` may use (rounded down, so sections never sum past)."""
        return math.floor(self.available_tokens * self.shares.of(section) + 1e-9)

    def section_budgets(self) -> dict[Section, int]:
        """Every section's budget, in prompt order."""
        return {name: self.section_budget(name) for name in SECTIONS}


def known_window(model: str) -> int | None:
    """The context window (tokens) of a known model family, or None. A provider prefix
    (``openai/gpt-4o``, ``anthropic/claude-sonnet-4-5``) and letter case are ignored."""
    bare = model.strip().rsplit("/", 1)[-1].lower()
    return KNOWN_WINDOWS.get(bare) or next(
        (size for prefix, size in KNOWN_WINDOW_PREFIXES if bare.startswith(prefix)), None
    )
