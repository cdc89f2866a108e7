"""The builder: sections, admission by score, whole items, dropped reasons, errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memstrata.context import (
    ApproxCounter,
    BudgetShares,
    BuiltContext,
    ContextBudget,
    ContextRequest,
    MemoryItem,
    TiktokenCounter,
    ToolResult,
    Turn,
    build_context,
    counter_for_model,
    from_bundle,
)
from memstrata.context.render import LOW_CONFIDENCE_HEADER, MEMORY_HEADER
from memstrata.errors import ERROR_CODES, BudgetError, ValidationError, error_code
from memstrata.router.bundle import ContextBundle, ContextItem, Provenance

SYSTEM = "You are a careful support agent. Answer from live data first."


def mem(id: str, text: str, relevance: float, layer: Any = "L3", low: bool = False) -> MemoryItem:
    return MemoryItem(id, text, layer, f"pt-{id}", "doc:faq", relevance, 5.0, low)


def roomy(window: int = 20_000) -> ContextBudget:
    return ContextBudget(window, 500, 100)


def check_accounting(result: BuiltContext, counter: TiktokenCounter | ApproxCounter) -> None:
    assert result.total_tokens == counter.count_messages(result.messages())
    assert result.total_tokens == sum(s.used for s in result.sections)
    assert result.total_tokens <= result.available_tokens
    for usage in result.sections:
        assert usage.used <= usage.budget, usage


def test_messages_order_and_exact_accounting(exact: TiktokenCounter) -> None:
    request = ContextRequest(
        system_prompt=SYSTEM,
        current_input="Where is my refund?",
        memory=(mem("kb_0", "Refunds take 5-7 business days.", 0.8),),
        history=(Turn("user", "Hello"), Turn("assistant", "Hi, how can I help?")),
        tool_results=(ToolResult("call_1", "get_order", '{"status": "refunded"}'),),
    )
    result = build_context(request, roomy(), exact)
    messages = result.messages()
    assert [m["role"] for m in messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "system",
        "user",
    ]
    assert messages[0]["content"] == SYSTEM
    assert messages[1]["content"].startswith(MEMORY_HEADER)
    assert messages[-1] == {"role": "user", "content": "Where is my refund?"}
    assert result.counter == exact.name and result.exact
    assert result.dropped == ()
    check_accounting(result, exact)
    json.dumps(result.as_dict(), ensure_ascii=False)  # JSON-ready


def test_memory_block_warns_and_marks_low_confidence(o200k: TiktokenCounter) -> None:
    request = ContextRequest(
        SYSTEM,
        "What is the vibration threshold?",
        memory=(
            mem("sop", "Vibration alarm threshold is 5mm/s.", 0.69, low=True),
            mem("live", "Sensor D123 now reads 4.1mm/s.", 0.5, layer="L2"),
        ),
    )
    block = build_context(request, roomy(), o200k).messages()[1]["content"]
    assert "may be irrelevant" in block
    assert "Live data" in block and "outranks" in block
    assert "[sop] L3 knowledge | LOW CONFIDENCE | source doc:faq | relevance 0.69" in block
    assert "[live] L2 live | source doc:faq" in block
    assert block.index("[live]") < block.index("[sop]")  # live data first
    assert "LOW CONFIDENCE" not in block.split("[live]")[1].split("\n")[0]


def test_items_are_admitted_by_score_and_never_cut(o200k: TiktokenCounter) -> None:
    big = "Refund policy details. " * 60
    items = (
        mem("low", "Opening hours are 9 to 5.", 0.1),
        mem("big", big.strip(), 0.9),  # best score but too large for the section
        mem("mid", "Refunds go back to the original card.", 0.5),
        mem("top", "Order ORD-2024-000123 was refunded on 2024-03-05.", 0.95),
    )
    # memory: 300 (the header and each item's fence lines cost ~170 of it)
    budget = ContextBudget(1200, 0, 0, BudgetShares(0.1, 0.25, 0.3, 0.3))
    result = build_context(ContextRequest(SYSTEM, "Refund?", memory=items), budget, o200k)
    admitted = [a.id for a in result.admitted if a.section == "memory"]
    assert admitted == ["top", "mid", "low"]  # score order; the smaller ones still fit
    (dropped,) = result.dropped
    assert (dropped.id, dropped.reason, dropped.section) == ("big", "over_budget", "memory")
    assert "needs" in dropped.detail and dropped.tokens > 0
    assert dropped.origin.ref == "pt-big" and dropped.origin.relevance == 0.9
    text = "\n".join(m["content"] for m in result.messages())
    for item in items:
        if item.id in admitted:
            assert item.text in text  # whole
    assert "Refund policy details." not in text  # nothing of the dropped item
    check_accounting(result, o200k)


def test_duplicates_are_dropped_with_a_reason(cl100k: TiktokenCounter) -> None:
    items = (
        mem("a", "The user prefers email.", 0.9),
        mem("b", "the user prefers  EMAIL!", 0.8),
        mem("a", "A different text with a repeated id.", 0.7),
    )
    tools = (
        ToolResult("c1", "get_order", "status: shipped"),
        ToolResult("c1", "get_order", "status: shipped again"),
    )
    result = build_context(
        ContextRequest(SYSTEM, "hi", memory=items, tool_results=tools), roomy(), cl100k
    )
    reasons = {(d.id, d.section, d.reason) for d in result.dropped}
    assert reasons == {
        ("b", "memory", "duplicate"),
        ("a", "memory", "duplicate"),
        ("c1", "current", "duplicate"),
    }
    assert [a.id for a in result.admitted] == ["a", "c1"]


def test_tool_results_fill_what_the_input_leaves(o200k: TiktokenCounter) -> None:
    tools = (
        ToolResult("small", "ping", "ok", relevance=0.2),
        ToolResult("large", "dump", "row " * 400, relevance=0.9),
    )
    budget = ContextBudget(1000, 0, 0, BudgetShares(0.1, 0.3, 0.3, 0.3))
    result = build_context(ContextRequest(SYSTEM, "status?", tool_results=tools), budget, o200k)
    assert [a.id for a in result.admitted] == ["small"]
    assert [(d.id, d.reason) for d in result.dropped] == [("large", "over_budget")]
    assert result.context_used() == [
        {
            "id": "small",
            "source": "tool:small",
            "relevance": 0.2,
            "freshness_hours": 0.0,
            "low_confidence": False,
        }
    ]
    check_accounting(result, o200k)


def conversation(n: int) -> tuple[Turn, ...]:
    turns = []
    for i in range(n):
        turns.append(
            Turn(
                "user",
                f"Step {i}: check order ORD-2024-{i:06d} for ¥{i},280.50 on "
                f"2024-03-{i + 1:02d}. Also, the weather is nice today and I like long "
                "chats about nothing in particular, so bear with me while I ramble a bit.",
            )
        )
        turns.append(
            Turn(
                "assistant",
                f"Done with step {i}. Thanks for your patience, I really appreciate it and "
                "I hope the rest of your day goes smoothly. We decided to escalate it.",
            )
        )
    return tuple(turns)


def test_history_is_trimmed_from_the_oldest_and_compressed(o200k: TiktokenCounter) -> None:
    turns = conversation(16)
    budget = ContextBudget(2000, 0, 0, BudgetShares(0.1, 0.2, 0.3, 0.3))  # history: 600
    result = build_context(ContextRequest(SYSTEM, "next?", history=turns), budget, o200k)
    summary = result.summary
    assert summary is not None and summary.summary
    messages = result.messages()
    # The newest turns are there verbatim, in order, right before the input.
    assert messages[-2]["content"] == turns[-1].content
    assert messages[-3]["content"] == turns[-2].content
    compressed = [d for d in result.dropped if d.reason == "compressed"]
    assert compressed and all(d.section == "history" for d in compressed)
    assert [d.id for d in compressed] == list(summary.covers)
    covered = turns[: len(compressed)]  # a prefix: trimmed from the oldest
    for turn in covered:
        for value in ("ORD-2024-", "¥", "2024-03-"):
            if value in turn.content:
                start = turn.content.index(value)
                token = turn.content[start:].split()[0].rstrip(".")
                assert token in summary.content
    assert any(m["content"] == summary.content for m in messages)
    admitted_summary = [a for a in result.admitted if a.summary]
    assert len(admitted_summary) == 1 and admitted_summary[0].covers == summary.covers
    check_accounting(result, o200k)

    # Next step: the stored summary comes back and is kept verbatim, not re-summarized.
    later = (summary, *turns[len(compressed) :], *conversation(24)[32:])
    again = build_context(ContextRequest(SYSTEM, "and now?", history=later), budget, o200k)
    contents = [m["content"] for m in again.messages()]
    assert summary.content in contents
    if again.summary is not None:
        assert summary.id not in again.summary.covers
        assert summary.content not in again.summary.content
    assert summary.id not in {d.id for d in again.dropped}
    check_accounting(again, o200k)


def test_without_compression_old_turns_are_dropped(o200k: TiktokenCounter) -> None:
    budget = ContextBudget(2000, 0, 0, BudgetShares(0.1, 0.2, 0.3, 0.3))
    result = build_context(
        ContextRequest(SYSTEM, "next?", history=conversation(16)),
        budget,
        o200k,
        compress_history=False,
    )
    assert result.summary is None
    dropped = [d for d in result.dropped if d.section == "history"]
    assert dropped and {d.reason for d in dropped} == {"over_budget"}
    check_accounting(result, o200k)


def test_budget_smaller_than_the_system_prompt_is_a_budget_error(
    o200k: TiktokenCounter,
) -> None:
    long_prompt = "Follow every rule in this very long policy. " * 50
    with pytest.raises(BudgetError) as err:
        build_context(ContextRequest(long_prompt, "hi"), ContextBudget(300, 0, 0), o200k)
    assert err.value.field == "system_prompt"
    assert err.value.needed > err.value.budget == 30
    assert isinstance(err.value, ValidationError)
    # The whole window is smaller than the prompt, too.
    with pytest.raises(BudgetError) as err:
        build_context(
            ContextRequest(long_prompt, "hi"),
            ContextBudget(100, 0, 0, BudgetShares(1.0, 0, 0, 0)),
            o200k,
        )
    assert err.value.field == "system_prompt"
    with pytest.raises(BudgetError) as err:
        build_context(ContextRequest(SYSTEM, "why? " * 200), ContextBudget(1000, 0, 0), o200k)
    assert err.value.field == "current_input"


def test_budget_error_is_registered() -> None:
    assert BudgetError in ERROR_CODES
    code = error_code(BudgetError("system_prompt", 10, 5))
    assert (code.http, code.grpc, code.mcp) == (422, "INVALID_ARGUMENT", -32602)
    assert "needs 10 tokens" in str(BudgetError("system_prompt", 10, 5))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"system_prompt": " "}, "system_prompt"),
        ({"current_input": 3}, "current_input"),
        ({"memory": [{"id": "x"}]}, "memory[0]"),
        ({"history": "turns"}, "history"),
        ({"tool_results": [ToolResult("a", "t", "x"), "y"]}, "tool_results[1]"),
        ({"history": [Turn("user", "a", id="t1"), Turn("user", "b", id="t1")]}, "history[1].id"),
    ],
)
def test_request_validation_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    values: dict[str, Any] = {"system_prompt": SYSTEM, "current_input": "hi", **kwargs}
    with pytest.raises(ValidationError) as err:
        ContextRequest(**values)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"id": "bad id"}, "id"),
        ({"text": ""}, "text"),
        ({"layer": "L4"}, "layer"),
        ({"ref": " padded "}, "ref"),
        ({"source": ""}, "source"),
        ({"relevance": float("nan")}, "relevance"),
        ({"relevance": "high"}, "relevance"),
        ({"freshness_hours": -1}, "freshness_hours"),
        ({"low_confidence": "no"}, "low_confidence"),
    ],
)
def test_memory_item_validation_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    values: dict[str, Any] = {
        "id": "m1",
        "text": "t",
        "layer": "L3",
        "ref": "p1",
        "source": "s",
        "relevance": 0.5,
    }
    with pytest.raises(ValidationError) as err:
        MemoryItem(**{**values, **kwargs})
    assert err.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"call_id": "bad id"}, "call_id"),
        ({"name": ""}, "name"),
        ({"content": " "}, "content"),
        ({"relevance": None}, "relevance"),
        ({"freshness_hours": -0.5}, "freshness_hours"),
    ],
)
def test_tool_result_validation_names_the_field(kwargs: dict[str, Any], field: str) -> None:
    values: dict[str, Any] = {"call_id": "c1", "name": "get_order", "content": "ok"}
    with pytest.raises(ValidationError) as err:
        ToolResult(**{**values, **kwargs})
    assert err.value.field == field


def test_builder_validates_its_arguments(o200k: TiktokenCounter) -> None:
    request = ContextRequest(SYSTEM, "hi")
    cases: list[tuple[tuple[Any, Any, Any], dict[str, Any], str]] = [
        (({"system_prompt": SYSTEM}, roomy(), o200k), {}, "request"),
        ((request, 8000, o200k), {}, "budget"),
        ((request, roomy(), "gpt-4o"), {}, "counter"),
        ((request, roomy(), o200k), {"compress_history": "yes"}, "compress_history"),
    ]
    for args, kwargs, field in cases:
        with pytest.raises(ValidationError) as err:
            build_context(*args, **kwargs)
        assert err.value.field == field
    with pytest.raises(ValidationError) as err:
        build_context(request, roomy(), o200k).section("tools")  # type: ignore[arg-type]
    assert err.value.field == "section"


def test_an_approximate_counter_works_for_unknown_models() -> None:
    counter = counter_for_model("claude-3-5-sonnet")
    request = ContextRequest(SYSTEM, "你好", memory=(mem("m", "用户喜欢简洁的回复。", 0.7),))
    result = build_context(request, ContextBudget(16_000), counter)
    assert not result.exact and result.counter == "approx-cjk-v1"
    check_accounting(result, ApproxCounter())


def bundle() -> ContextBundle:
    return ContextBundle(
        session_id="s1",
        step_intent="refund",
        step=3,
        built_at=datetime(2025, 4, 1, tzinfo=UTC),
        items=(
            ContextItem.of(
                "session", {"user_id": "u1"}, Provenance("L1", "session:s1", "session", 1.0, 0.0)
            ),
            ContextItem.of(
                "order",
                {"id": "ORD-2024-000123", "amount": "¥1,280.50"},
                Provenance("L2", "wm:{s1}:api:abc", "api:orders", 1.0, 0.25),
            ),
            ContextItem.of(
                "kb_0",
                {"text": "Refunds take 5-7 days.", "type": "faq", "title": "Refunds"},
                Provenance("L3", "3f2a", "faq.md", 0.7, 48.0, low_confidence=True),
            ),
        ),
    )


def test_from_bundle_keeps_provenance(o200k: TiktokenCounter) -> None:
    items = from_bundle(bundle())
    assert [i.id for i in items] == ["session", "order", "kb_0"]
    assert items[1].text == '{"amount":"¥1,280.50","id":"ORD-2024-000123"}'
    assert items[2].text == "Refunds\nRefunds take 5-7 days."
    assert (items[2].layer, items[2].ref, items[2].source) == ("L3", "3f2a", "faq.md")
    assert items[2].low_confidence and items[2].freshness_hours == 48.0
    result = build_context(ContextRequest(SYSTEM, "refund?", memory=items), roomy(), o200k)
    by_id = {entry["id"]: entry for entry in bundle().context_used()}
    for entry in result.context_used():
        expected = by_id[entry["id"]]
        assert entry["source"] == expected["source"]
        assert entry["relevance"] == expected["relevance"]
        assert entry["low_confidence"] == expected["low_confidence"]
    assert len(result.context_used()) == 3


def test_from_bundle_validates() -> None:
    with pytest.raises(ValidationError) as err:
        from_bundle({"items": []})  # type: ignore[arg-type]
    assert err.value.field == "bundle"
    bad = ContextBundle(
        "s1",
        "x",
        1,
        datetime(2025, 1, 1, tzinfo=UTC),
        (ContextItem.of("bad name", "x", Provenance("L2", "k", "s", float("inf"), None)),),
    )
    with pytest.raises(ValidationError) as err:
        from_bundle(bad)
    assert err.value.field == "bundle.items[0].id"


def test_low_confidence_items_stay_out_next_to_a_confident_memory(o200k: TiktokenCounter) -> None:
    allergy = MemoryItem("allergy", "user allergies: peanuts", "L3", "p1", "m", 0.9, kind="fact")
    noise = (
        mem("city", "user city: Hangzhou", 0.3, low=True),
        mem("budget", "user budget: 5000 yuan", 0.2, low=True),
        mem("pref", "prefers email", 0.1, layer="L2", low=True),
    )
    live = mem("session", '{"user_id": "u1"}', 1.0, layer="L1")
    request = ContextRequest(SYSTEM, "What am I allergic to?", memory=(live, allergy, *noise))
    result = build_context(request, roomy(), o200k)
    block = result.messages()[1]["content"]
    assert "peanuts" in block and LOW_CONFIDENCE_HEADER not in block
    assert {d.id for d in result.dropped if d.reason == "low_confidence"} == {
        "city",
        "budget",
        "pref",
    }
    assert all(d.tokens > 0 and d.origin.low_confidence for d in result.dropped)

    # Nothing confident (live session state says nothing about the question): the weak
    # matches come last, under one marked header.
    weak = build_context(
        ContextRequest(SYSTEM, "What am I allergic to?", memory=(live, *noise)), roomy(), o200k
    )
    block = weak.messages()[1]["content"]
    assert block.count(LOW_CONFIDENCE_HEADER) == 1
    head, tail = block.split(LOW_CONFIDENCE_HEADER)
    assert "[session]" in head and all(f"[{n.id}]" in tail for n in noise)
    assert not weak.dropped
    check_accounting(weak, o200k)


def test_a_confident_past_memory_vouches_for_the_fact_that_replaced_it(
    o200k: TiktokenCounter,
) -> None:
    past = MemoryItem(
        "said", "I live in Hangzhou.", "L3", "e1", "m", 0.5, kind="episode",
        replaced_by="user city: Chengdu",
    )  # fmt: skip
    fact = MemoryItem("city", "user city: Chengdu", "L3", "f1", "m", 0.4, low_confidence=True,
                      kind="fact")  # fmt: skip
    other = mem("budget", "user budget: 5000 yuan", 0.3, low=True)
    result = build_context(
        ContextRequest(SYSTEM, "Where do I live now?", memory=(past, fact, other)), roomy(), o200k
    )
    admitted = {a.id for a in result.admitted}
    assert {"said", "city"} <= admitted and "budget" not in admitted
