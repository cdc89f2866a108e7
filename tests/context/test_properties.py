"""Properties: for any mix of inputs no section passes its budget, the total never passes
window - reserve (counted by the real tokenizer), and nothing is cut or lost silently."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memstrata.context import (
    BudgetShares,
    BuiltContext,
    ContextBudget,
    ContextRequest,
    MemoryItem,
    TiktokenCounter,
    ToolResult,
    Turn,
    build_context,
    compress_turns,
    find_protected,
)
from memstrata.context.compress import turn_ids
from memstrata.context.render import LOW_CONFIDENCE_HEADER, MEMORY_HEADER
from memstrata.context.tokens import REPLY_PRIMING_TOKENS, message_tokens
from memstrata.errors import BudgetError

FRAGMENTS = [
    "the refund was approved",
    "order ORD-2024-000123",
    "¥1,280.50",
    "$3.2M",
    "2024-03-05",
    "2024年3月5日",
    "我们决定下周二发货。",
    "用户喜欢简洁的回复",
    "We decided to escalate.",
    "You must not exceed ¥500.",
    "我对花生过敏。",
    "😀🎉👍🏽",
    "def f(x):\n    return x * 2",
    '{"status": "shipped", "eta": "tomorrow"}',
    "hello world",
    "   ",
    "\n\n",
    "Can you help?",
    "https://example.com/a?b=1",
]
COUNTERS = {name: TiktokenCounter(name) for name in ("o200k_base", "cl100k_base")}

texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=25).map(" ".join),
    st.text(min_size=1, max_size=120),
).filter(lambda text: bool(text.strip()))

short_texts = (
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4)
    .map(" ".join)
    .filter(lambda text: bool(text.strip()))
)

memory_items = st.lists(
    st.tuples(
        texts,
        st.sampled_from(["L1", "L2", "L3"]),
        st.floats(0, 1, allow_nan=False),
        st.booleans(),
        st.one_of(st.none(), st.floats(0, 1000, allow_nan=False)),
    ),
    max_size=10,
).map(
    lambda rows: tuple(
        MemoryItem(f"m{i}", text, layer, f"ref-{i}", "src", relevance, hours, low)  # type: ignore[arg-type]
        for i, (text, layer, relevance, low, hours) in enumerate(rows)
    )
)
histories = st.lists(
    st.tuples(st.sampled_from(["user", "assistant"]), texts, st.booleans()), max_size=14
).map(
    lambda rows: tuple(
        Turn("system", text, summary=True) if is_summary and i == 0 else Turn(role, text)  # type: ignore[arg-type]
        for i, (role, text, is_summary) in enumerate(rows)
    )
)
tools = st.lists(st.tuples(texts, st.floats(0, 1, allow_nan=False)), max_size=4).map(
    lambda rows: tuple(
        ToolResult(f"call_{i}", "tool", text, relevance) for i, (text, relevance) in enumerate(rows)
    )
)
# system, memory, history, current, unallocated
weights = st.tuples(
    st.integers(20, 40),
    st.integers(0, 100),
    st.integers(0, 100),
    st.integers(10, 60),
    st.integers(0, 30),
)


@st.composite
def budgets(draw: Any) -> ContextBudget:
    *parts, slack = draw(weights)
    total = sum(parts) + slack
    assume(total > 0)
    shares = BudgetShares(*[part / total for part in parts])
    # Mostly roomy windows; tiny ones exercise BudgetError.
    available = draw(
        st.one_of(st.integers(1, 300), st.integers(800, 4000), st.integers(1500, 4000))
    )
    max_output = draw(st.integers(0, 300))
    buffer = draw(st.integers(0, 100))
    return ContextBudget(available + max_output + buffer, max_output, buffer, shares)


def check(
    request: ContextRequest, budget: ContextBudget, encoding: str, compress: bool
) -> BuiltContext | None:
    """Build and check every invariant; None when a whole-or-nothing part did not fit."""
    counter = COUNTERS[encoding]
    system, current = request.system_prompt, request.current_input
    budgets_by_section = budget.section_budgets()
    try:
        result = build_context(request, budget, counter, compress_history=compress)
    except BudgetError as err:
        # Only the parts sent whole-or-not-at-all may fail, and only when they do not fit.
        assert err.needed > err.budget
        if err.field == "system_prompt":
            needed = REPLY_PRIMING_TOKENS + message_tokens(counter, "system", system)
            assert needed > budgets_by_section["system"]
        else:
            assert err.field == "current_input"
            assert message_tokens(counter, "user", current) > budgets_by_section["current"]
        return None

    messages = result.messages()
    # Budgets: per section, and in total counted by the real tokenizer.
    limits = {usage.section: usage.budget for usage in result.sections}
    for usage in result.sections:
        assert usage.used <= usage.budget
    assert sum(budgets_by_section.values()) <= budget.available_tokens
    assert sum(limits.values()) <= budget.available_tokens
    if limits != budgets_by_section:
        # Only the history borrows (to keep its never-compress fields); the lenders'
        # budgets become what they use.
        assert compress and limits["history"] > budgets_by_section["history"]
        for name, limit in limits.items():
            if name != "history":
                assert limit == next(u.used for u in result.sections if u.section == name)
    assert result.total_tokens == counter.count_messages(messages)
    assert result.total_tokens == sum(usage.used for usage in result.sections)
    assert result.total_tokens <= budget.window_tokens - budget.reserve_tokens

    # Never an empty context: the system prompt and the input are always there, whole.
    assert messages[0] == {"role": "system", "content": system}
    assert messages[-1] == {"role": "user", "content": current}

    # Every item is accounted for exactly once: admitted whole, or dropped with a reason.
    everything = "\n".join(message["content"] for message in messages)
    admitted = {item.id for item in result.admitted}
    dropped = [item.id for item in result.dropped]
    assert len(dropped) == len(set(dropped))
    for item in request.memory:
        assert (item.id in admitted) != (item.id in dropped)
        if item.id in admitted:
            assert item.text in everything
    for tool in request.tool_results:
        assert (tool.call_id in admitted) != (tool.call_id in dropped)
        if tool.call_id in admitted:
            assert tool.content in everything
    history = request.history
    for turn_id, turn in zip(turn_ids(history), history, strict=True):
        assert (turn_id in admitted) != (turn_id in dropped)
        if turn_id in admitted:
            assert {"role": turn.role, "content": turn.content} in messages
    for gone in result.dropped:
        assert gone.reason in {"over_budget", "duplicate", "compressed", "low_confidence"}

    # Under the low-confidence floor: left out next to a confident stored memory,
    # else packed last under one marked header.
    confident = any(item.layer == "L3" and not item.low_confidence for item in request.memory)
    vouched = {
        item.replaced_by
        for item in request.memory
        if item.replaced_by and item.layer == "L3" and not item.low_confidence
    }
    low = {
        item.id
        for item in request.memory
        if item.low_confidence and not (item.kind == "fact" and item.text in vouched)
    }
    withheld = {item.id for item in result.dropped if item.reason == "low_confidence"}
    assert withheld == (low if confident else set())
    packed_low = [item for item in result.admitted if item.origin.low_confidence]
    block = next((m["content"] for m in messages[1:-1] if MEMORY_HEADER in m["content"]), "")
    assert block.count(LOW_CONFIDENCE_HEADER) == (1 if packed_low else 0)

    # A new summary keeps every protected field of the turns it replaced, verbatim,
    # and never covers an earlier summary.
    if result.summary is not None:
        assert result.summary.content in everything
        by_id = dict(zip(turn_ids(history), history, strict=True))
        for covered in result.summary.covers:
            assert not by_id[covered].summary
            for field in find_protected(by_id[covered].content):
                assert field.value in result.summary.content
    return result


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    system=short_texts,
    current=st.one_of(short_texts, texts),
    memory=memory_items,
    history=histories,
    tool_results=tools,
    budget=budgets(),
    encoding=st.sampled_from(sorted(COUNTERS)),
    compress=st.booleans(),
)
def test_sections_and_total_stay_within_budget(
    system: str,
    current: str,
    memory: tuple[MemoryItem, ...],
    history: tuple[Turn, ...],
    tool_results: tuple[ToolResult, ...],
    budget: ContextBudget,
    encoding: str,
    compress: bool,
) -> None:
    check(
        ContextRequest(system, current, memory, history, tool_results), budget, encoding, compress
    )


long_histories = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant"]),
        st.lists(st.sampled_from(FRAGMENTS), min_size=3, max_size=25)
        .map(" ".join)
        .filter(lambda text: bool(text.strip())),  # all-blank fragments: not a turn
    ),
    min_size=4,
    max_size=24,
).map(lambda rows: tuple(Turn(role, text) for role, text in rows))  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=long_histories,
    history_tokens=st.integers(120, 1500),
    encoding=st.sampled_from(sorted(COUNTERS)),
    data=st.data(),
)
def test_long_histories_compress_within_budget(
    history: tuple[Turn, ...], history_tokens: int, encoding: str, data: st.DataObject
) -> None:
    budget = ContextBudget(history_tokens * 4, 0, 0, BudgetShares(0.25, 0.0, 0.25, 0.25))
    result = check(ContextRequest("Be brief.", "Go on.", history=history), budget, encoding, True)
    assert result is not None
    if result.summary is not None:  # the stored summary comes back next time, untouched
        later = (result.summary, *data.draw(long_histories))
        again = check(ContextRequest("Be brief.", "Go on.", history=later), budget, encoding, True)
        assert again is not None
        if again.summary is not None:
            assert result.summary.id not in again.summary.covers


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.one_of(histories, long_histories),
    memory=memory_items,
    tool_results=tools,
    budget=budgets(),
    encoding=st.sampled_from(sorted(COUNTERS)),
)
def test_never_compress_fields_survive_any_budget_they_fit(
    history: tuple[Turn, ...],
    memory: tuple[MemoryItem, ...],
    tool_results: tuple[ToolResult, ...],
    budget: ContextBudget,
    encoding: str,
) -> None:
    """No id, amount, date or decision of the history is missing from the context while
    the fields alone (every existing summary whole, one compact summary of the other
    turns) fit beside the system prompt and the input."""
    request = ContextRequest("Be brief.", "Go on.", memory, history, tool_results)
    result = check(request, budget, encoding, True)
    if result is None:
        return
    counter = COUNTERS[encoding]
    fields_alone = sum(
        message_tokens(counter, turn.role, turn.content)
        for turn in compress_turns(history, detail="compact")
    )
    room = (
        budget.available_tokens
        - REPLY_PRIMING_TOKENS
        - message_tokens(counter, "system", request.system_prompt)
        - message_tokens(counter, "user", request.current_input)
    )
    assume(fields_alone <= room)
    everything = "\n".join(message["content"] for message in result.messages())
    for turn in history:
        if turn.summary:
            assert turn.content in everything  # kept whole, never summarized again
        for field in find_protected(turn.content):
            assert field.value in everything, field
