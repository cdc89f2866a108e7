"""Compression keeps the numbers (seed 003 §3.2): with an 8k-window model and 20 turns of
a support conversation, ``engine.build_context`` keeps every order id, amount and date
of the history, in English and Chinese, even when other sections must give up room."""

from __future__ import annotations

import pytest

from memstrata.context import Turn, find_protected
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError

SYSTEM = "You are a support agent for an online shop. Be precise with order numbers."


def support_history(lang: str, turns: int = 20) -> tuple[Turn, ...]:
    """A long support conversation: each exchange names an order, an amount and a date."""
    history: list[Turn] = []
    for i in range(turns // 2):
        order, amount, ticket = f"ORD-2024-{1000 + i:06d}", 1200 + 37 * i, f"RF{77000 + i}"
        if lang == "en":
            ask = (
                f"Hi, about order {order}: I paid ¥{amount}.50 on 2024-03-{1 + i:02d} and the "
                "parcel still has not arrived. The tracking page keeps saying it is in "
                "transit and nobody answers the phone at the courier. Can you check?"
            )
            reply = (
                f"I am sorry for the trouble. Order {order} was charged ¥{amount}.50 and the "
                f"refund ticket {ticket} is open. We decided to refund it in full if it "
                f"does not arrive by 2024-04-{1 + i:02d}. Is there anything else?"
            )
        else:
            ask = (
                f"你好，我的订单{order}在2024年3月{1 + i}日付了{amount}元，包裹到现在还没到。"
                "物流页面一直显示运输中，快递公司的电话也没人接。能帮我查一下吗？"
            )
            reply = (
                f"非常抱歉给您添麻烦了。订单{order}已扣款{amount}元，退款工单{ticket}已经打开。"
                f"我们决定如果4月{1 + i}日前还没送到就全额退款。还有其他问题吗？"
            )
        history += [
            Turn("user", ask, id=f"{lang}-u{i}"),
            Turn("assistant", reply, id=f"{lang}-a{i}"),
        ]
    return tuple(history)


def kept_values(history: tuple[Turn, ...]) -> set[str]:
    return {
        field.value
        for turn in history
        for field in find_protected(turn.content)
        if field.kind in ("id", "amount", "date")
    }


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_8k_model_keeps_every_id_and_amount_of_20_support_turns(
    engine: ContextEngine, lang: str
) -> None:
    # A few memories fill part of the memory block; the history needs room of its own.
    for text in (
        "I prefer email over phone calls.",
        "My delivery address is 12 Elm Street, Springfield.",
        "我更喜欢用邮件联系。",
    ):
        engine.remember("u1", text, tenant="shop")
    engine.flush()
    state = engine.start_session("u1", "refund", tenant="shop")
    history = support_history(lang)
    values = kept_values(history)
    assert len(values) >= 30  # ten orders, ten amounts, dates and tickets
    question = "Where is my refund?" if lang == "en" else "我的退款到哪了？"
    built = engine.build_context(
        state, None, question, system_prompt=SYSTEM, model="gpt-4", history=history
    )
    assert built.available_tokens == 8192 - 4096 - 2048
    text = "\n".join(message["content"] for message in built.messages())
    missing = sorted(value for value in values if value not in text)
    assert missing == []
    assert built.total_tokens <= built.available_tokens
    for usage in built.sections:
        assert usage.used <= usage.budget
    assert sum(usage.budget for usage in built.sections) <= built.available_tokens


def test_a_bad_history_turn_is_refused_naming_the_field(engine: ContextEngine) -> None:
    state = engine.start_session("u3", "refund", tenant="shop")
    with pytest.raises(ValidationError) as err:
        Turn("customer", "hello")  # type: ignore[arg-type]
    assert err.value.field == "role"
    with pytest.raises(ValidationError) as err:
        engine.build_context(
            state,
            None,
            "Where is my refund?",
            system_prompt=SYSTEM,
            history=support_history("en", 4),
            model="some-local-model",  # unknown window, none given
        )
    assert err.value.field == "window_tokens"
