"""Budget shares and the window / output reserve arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata.context import SECTIONS, BudgetShares, ContextBudget
from memstrata.errors import ValidationError


def test_default_shares_sit_in_the_recommended_ranges() -> None:
    shares = BudgetShares()
    assert 0.05 <= shares.system <= 0.10
    assert 0.30 <= shares.memory <= 0.40
    assert 0.20 <= shares.history <= 0.30
    assert 0.20 <= shares.current <= 0.25
    assert sum(shares.of(name) for name in SECTIONS) <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"system": -0.01}, "shares.system"),
        ({"memory": 1.5}, "shares.memory"),
        ({"history": float("nan")}, "shares.history"),
        ({"current": float("inf")}, "shares.current"),
        ({"current": "0.2"}, "shares.current"),
        ({"memory": True}, "shares.memory"),
        ({"system": 0.5, "memory": 0.5, "history": 0.1, "current": 0.0}, "shares"),
    ],
)
def test_invalid_shares_name_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        BudgetShares(**kwargs)
    assert err.value.field == field


def test_shares_may_sum_to_exactly_one_or_less() -> None:
    BudgetShares(0.1, 0.2, 0.3, 0.4)
    BudgetShares(0.0, 0.0, 0.0, 0.0)
    BudgetShares(0.1, 0.4, 0.25, 0.25)


def test_available_is_window_minus_reserve() -> None:
    budget = ContextBudget(128_000)
    assert budget.reserve_tokens == 4096 + 2048
    assert budget.available_tokens == 128_000 - 6144
    budgets = budget.section_budgets()
    assert list(budgets) == list(SECTIONS)
    assert budgets["memory"] == int(budget.available_tokens * 0.40)
    assert sum(budgets.values()) <= budget.available_tokens


def test_section_budgets_never_sum_past_available() -> None:
    for window in range(1, 400, 7):
        budget = ContextBudget(window, 0, 0, BudgetShares(0.1, 0.3, 0.3, 0.3))
        assert sum(budget.section_budgets().values()) <= budget.available_tokens


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"window_tokens": 0}, "window_tokens"),
        ({"window_tokens": 1.5}, "window_tokens"),
        ({"window_tokens": 1000, "max_output_tokens": -1}, "max_output_tokens"),
        ({"window_tokens": 1000, "buffer_tokens": -1}, "buffer_tokens"),
        (
            {"window_tokens": 1000, "max_output_tokens": 900, "buffer_tokens": 100},
            "max_output_tokens",
        ),
        ({"window_tokens": 1000, "shares": {"memory": 0.5}}, "shares"),
    ],
)
def test_invalid_budget_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        ContextBudget(**kwargs)
    assert err.value.field == field


def test_for_model() -> None:
    assert ContextBudget.for_model("gpt-4o").window_tokens == 128_000
    assert ContextBudget.for_model("gpt-4o-mini-2024-07-18").window_tokens == 128_000
    assert ContextBudget.for_model("gpt-4.1-mini").window_tokens == 1_047_576
    assert ContextBudget.for_model("gpt-4").window_tokens == 8_192
    assert ContextBudget.for_model("gpt-4-32k").window_tokens == 32_768
    assert ContextBudget.for_model("openai/o1-mini").window_tokens == 128_000
    assert ContextBudget.for_model("gpt-4-turbo-2024-04-09").window_tokens == 128_000
    small = ContextBudget.for_model("gpt-4", max_output_tokens=512, buffer_tokens=0)
    assert small.available_tokens == 8_192 - 512
    with pytest.raises(ValidationError) as err:
        ContextBudget.for_model(" ")
    assert err.value.field == "model"
    for unknown in ("my-local-llama", "gpt-3.5-turbo-instruct"):
        with pytest.raises(ValidationError) as err:
            ContextBudget.for_model(unknown)
        # What is missing is the window, and the message says how to give it.
        assert err.value.field == "window_tokens" and "window" in err.value.reason
        assert ContextBudget.for_model(unknown, window_tokens=32_000).window_tokens == 32_000


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("anthropic/claude-3-5-haiku-20241022", 200_000),
        ("deepseek-chat", 64_000),
        ("deepseek-reasoner", 64_000),
        ("qwen-max", 32_768),
        ("Qwen-Plus", 131_072),
        ("qwen2.5-7b-instruct", 32_768),
        ("llama3", 8_192),
        ("meta-llama/llama-3.1-8b-instruct", 131_072),
        ("gemini-1.5-pro-002", 2_097_152),
        ("gemini-2.5-flash", 1_048_576),
    ],
)
def test_the_common_model_families_have_their_windows(model: str, window: int) -> None:
    assert ContextBudget.for_model(model).window_tokens == window
    # A window given by the caller wins over the known one.
    assert ContextBudget.for_model(model, window_tokens=9_000).window_tokens == 9_000
