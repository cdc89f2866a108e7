"""Compression that keeps the numbers, step by step (seed 003 §3.2): when the history's
never-compress fields do not fit its share, other sections shrink first (unused room,
then the lowest-ranked memories, then tool results), the summary becomes fields-only
lines, and only then are whole turns folded in, their fields kept."""

from __future__ import annotations

import pytest

from memstrata.context import (
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
from memstrata.context.compress import digest_turn, render_summary, turn_ids
from memstrata.errors import ValidationError

SYSTEM = "You are a support agent."


def support_turns(turns: int, lang: str = "en") -> tuple[Turn, ...]:
    history: list[Turn] = []
    for i in range(turns // 2):
        order, amount = f"ORD-2024-{2000 + i:06d}", 900 + 41 * i
        if lang == "en":
            history.append(
                Turn(
                    "user",
                    f"My order {order} for ¥{amount}.00 placed on 2024-05-{1 + i:02d} is late "
                    "again, and the courier keeps telling me a different story every day.",
                )
            )
            history.append(
                Turn(
                    "assistant",
                    f"Sorry about that. We decided to refund ¥{amount}.00 for {order} "
                    "unless it arrives this week. Anything else I can do?",
                )
            )
        else:
            history.append(
                Turn(
                    "user",
                    f"我的订单{order}在2024年5月{1 + i}日付了{amount}元，又晚了，"
                    "快递每天说法都不一样。",
                )
            )
            history.append(
                Turn("assistant", f"抱歉。我们决定如果本周还没到就退还订单{order}的{amount}元。")
            )
    return tuple(history)


def values_of(history: tuple[Turn, ...]) -> set[str]:
    return {field.value for turn in history for field in find_protected(turn.content)}


def memories(count: int) -> tuple[MemoryItem, ...]:
    filler = "The customer prefers short answers and reads them on a phone. " * 4
    return tuple(
        MemoryItem(f"m{i}", f"Memory {i}. {filler}", "L3", f"pt-{i}", "memories", 0.9 - 0.1 * i)
        for i in range(count)
    )


def text_of(result: object) -> str:
    return "\n".join(m["content"] for m in result.messages())  # type: ignore[attr-defined]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_memory_shrinks_lowest_first_then_fields_only_summary(
    o200k: TiktokenCounter, lang: str
) -> None:
    history = support_turns(24, lang)
    request = ContextRequest(
        SYSTEM,
        "Where is my refund?",
        memory=memories(5),
        history=history,
        tool_results=(ToolResult("call_1", "get_order", '{"status": "in transit"}'),),
    )
    budget = ContextBudget(1300, 100, 100)  # 1100 usable: 275 for the history
    old_way = build_context(request, budget, o200k, compress_history=False)
    assert [v for v in values_of(history) if v not in text_of(old_way)]  # it would lose some
    result = build_context(request, budget, o200k)
    text = text_of(result)
    assert sorted(v for v in values_of(history) if v not in text) == []
    # The memory block gave room, lowest-ranked first, and each one says why.
    lent = [d for d in result.dropped if "lent to the history" in d.detail]
    assert lent and all(d.section == "memory" for d in lent)
    kept = {a.id for a in result.admitted if a.section == "memory"}
    assert all(int(d.id[1:]) > max(int(k[1:]) for k in kept) for d in lent) if kept else True
    assert "call_1" in {a.id for a in result.admitted}  # tool results gave nothing
    history_usage = result.section("history")
    assert history_usage.budget > budget.section_budget("history")
    assert history_usage.used <= history_usage.budget
    assert result.total_tokens == o200k.count_messages(result.messages())
    assert sum(s.budget for s in result.sections) <= budget.available_tokens
    assert result.summary is not None and "Key lines:" not in result.summary.content


def test_a_roomy_window_changes_nothing(o200k: TiktokenCounter) -> None:
    history = support_turns(8)
    request = ContextRequest(SYSTEM, "Where is my refund?", memory=memories(2), history=history)
    budget = ContextBudget(20_000, 500, 100)
    result = build_context(request, budget, o200k)
    assert result.summary is None and not result.dropped
    assert {s.section: s.budget for s in result.sections} == budget.section_budgets()


def test_fields_that_cannot_fit_the_window_leave_the_other_sections_alone(
    o200k: TiktokenCounter,
) -> None:
    history = support_turns(40)
    request = ContextRequest(SYSTEM, "Where is my refund?", memory=memories(1), history=history)
    budget = ContextBudget(900, 100, 100)  # 700 usable: less than the fields alone
    result = build_context(request, budget, o200k)
    assert {s.section: s.budget for s in result.sections} == budget.section_budgets()
    assert "m0" in {a.id for a in result.admitted}
    assert any(d.reason == "over_budget" and d.section == "history" for d in result.dropped)


def test_compact_summary_keeps_every_field_in_fewer_tokens(o200k: TiktokenCounter) -> None:
    history = support_turns(10, "en") + support_turns(10, "zh")
    (compact,) = compress_turns(history, detail="compact")
    (fields,) = compress_turns(history, detail="fields")
    for value in values_of(history):
        assert value in compact.content, value
    assert compact.summary and compact.covers == turn_ids(history)
    assert o200k.count(compact.content) < o200k.count(fields.content)
    with pytest.raises(ValidationError) as err:
        compress_turns(history, detail="tiny")  # type: ignore[arg-type]
    assert err.value.field == "detail"
    with pytest.raises(ValidationError) as err:
        render_summary([], "compact")
    assert err.value.field == "turns"
    with pytest.raises(ValidationError) as err:
        digest_turn("s", compact)
    assert err.value.field == "turn"
