"""ContextEngine.retrieve and ContextEngine.build_context end to end (real engine:
embedded Valkey, qdrant-edge, MiniLM)."""

from __future__ import annotations

import pytest

from memstrata.context import BudgetError, ContextBudget, Turn, counter_for_model
from memstrata.engine import ContextEngine
from memstrata.router import IntentSpec

SYSTEM = "You are a helpful assistant. Use the memories when they answer the question."
QUESTION = "What kind of tea do I like?"


def test_retrieve_then_build_context_with_exact_tokens_and_l3_provenance(
    engine: ContextEngine,
) -> None:
    engine.remember("u1", "My favourite tea is jasmine green tea from Fujian.", tenant="acme")
    engine.remember("u1", "The quarterly report is due on 2025-03-31.", tenant="acme")
    engine.remember("u2", "My favourite tea is Earl Grey with milk.", tenant="acme")
    engine.remember("u1", "My favourite tea is rooibos with honey.", tenant="other")
    engine.flush()

    result = engine.retrieve(QUESTION, tenant="acme", user="u1")
    assert not result.l3_skipped and result.items
    top = result.items[0]
    assert "jasmine" in top.text.lower()
    assert "query" in top.routes
    for item in result.items:
        assert (item.payload["tenant"], item.payload["user"]) == ("acme", "u1")
        assert "rooibos" not in item.text and "Earl Grey" not in item.text

    engine.register_intent(IntentSpec("chat", l1=("session_id", "user_id")))
    state = engine.start_session("u1", "tea talk", tenant="acme", session_id="bc1")
    history = (
        Turn("user", "Hi there, I need a gift idea.", id="h1"),
        Turn("assistant", "Happy to help. Who is the gift for?", id="h2"),
    )
    built = engine.build_context(
        state, "chat", QUESTION, system_prompt=SYSTEM, model="gpt-4o", history=history
    )
    counter = counter_for_model("gpt-4o")
    messages = built.messages()
    assert built.total_tokens == counter.count_messages(messages)
    assert built.total_tokens <= built.available_tokens
    assert built.exact and built.counter == counter.name
    assert messages[0] == {"role": "system", "content": SYSTEM}
    assert messages[-1] == {"role": "user", "content": QUESTION}
    assert any("jasmine" in m["content"].lower() for m in messages[1:-1])
    for usage in built.sections:
        assert usage.used <= usage.budget

    used = built.context_used()
    entry = next(e for e in used if e["source"] == f"L3:{top.id}")  # ref = point id
    assert entry["id"] == f"l3-{top.id}" and entry["relevance"] is not None
    admitted = next(a for a in built.admitted if a.origin.ref == top.id)
    assert admitted.origin.layer == "L3" and admitted.section == "memory"
    assert admitted.origin.freshness_hours is not None and admitted.origin.freshness_hours >= 0
    assert {entry["source"] for entry in used} >= {"L1:session:bc1"}

    # a tight budget: items are dropped whole, the count stays exact and within it
    budget = ContextBudget(window_tokens=700, max_output_tokens=150, buffer_tokens=50)
    long_history = tuple(
        Turn(
            "user" if i % 2 == 0 else "assistant",
            f"Turn {i}: we discussed gift number {i} at length.",
            id=f"t{i}",
        )
        for i in range(40)
    )
    tight = engine.build_context(
        "bc1", "chat", QUESTION, system_prompt=SYSTEM, history=long_history, budget=budget
    )
    assert tight.total_tokens == counter.count_messages(tight.messages())
    assert tight.total_tokens <= budget.available_tokens == 500
    for usage in tight.sections:
        assert usage.used <= usage.budget
    assert tight.dropped  # 40 turns do not fit 125 history tokens


def test_a_system_prompt_over_its_budget_raises_budget_error(engine: ContextEngine) -> None:
    engine.register_intent(IntentSpec("chat", l1=("session_id",)))
    engine.start_session("u1", "hello", session_id="bc2")
    budget = ContextBudget(window_tokens=1000, max_output_tokens=100, buffer_tokens=0)
    system_budget = budget.section_budget("system")  # 10 % of 900
    huge = " ".join(["Always answer in formal English."] * 40)
    assert counter_for_model("gpt-4o").count(huge) > system_budget
    with pytest.raises(BudgetError) as info:
        engine.build_context("bc2", "chat", "hi", system_prompt=huge, budget=budget)
    assert info.value.field == "system_prompt"
    assert info.value.budget == system_budget and info.value.needed > system_budget
    assert "system_prompt" in str(info.value)
