"""Issue 25 through the Client over HTTP: compression keeps every order id and amount
of a long support conversation with an 8k-window model, and items under the
low-confidence floor are reported dropped (reason ``low_confidence``), not packed."""

from __future__ import annotations

import uuid

import pytest
from tests.service.support import SESSION_TIMEOUT_S, RunningServer

from memstrata.client import Client
from memstrata.context import Turn, find_protected
from memstrata.errors import ValidationError
from memstrata.service import wire as m


def _history(turns: int) -> list[Turn]:
    history: list[Turn] = []
    for i in range(turns // 2):
        order, amount = f"ORD-2024-{3000 + i:06d}", f"¥{1500 + 29 * i}.00"
        history.append(
            Turn(
                "user",
                f"Order {order} cost {amount} on 2024-06-{1 + i:02d} and it never came. The "
                "courier says it was delivered but nobody in the building saw it. Help?",
            )
        )
        history.append(
            Turn(
                "assistant",
                f"Sorry. We decided to refund {amount} for {order}; ticket RF{88000 + i} "
                "is open and you will hear from us within two business days.",
            )
        )
    return history


def test_the_client_keeps_the_numbers_and_keeps_noise_out(server: RunningServer) -> None:
    tag = uuid.uuid4().hex[:8]
    user, session = f"u-{tag}", f"p-{tag}"
    with Client(server.url, server.admin_keys["acme"], timeout_s=SESSION_TIMEOUT_S) as client:
        client.start_session(user, "support", session_id=session)
        for text in (
            "I'm allergic to peanuts.",
            "I live in Hangzhou.",
            "My budget is 5000 yuan.",
            "My order ORD-20240311 shipped.",
        ):
            client.remember(user, text, wait=True)
        history = _history(20)
        values = {f.value for t in history for f in find_protected(t.content)}
        turns = [m.TurnIn(role=t.role, content=t.content) for t in history]
        built = client.build_context(
            session, None, "What am I allergic to?", "You help.", model="gpt-4", history=turns
        )
        text = "\n".join(message.content for message in built.messages)
        assert sorted(v for v in values if v not in text) == []
        block = next(msg.content for msg in built.messages if "## Retrieved context" in msg.content)
        assert "peanuts" in block
        assert "Hangzhou" not in block and "ORD-20240311" not in block
        assert {d.reason for d in built.dropped if d.low_confidence} == {"low_confidence"}
        assert sum(s.budget for s in built.sections) <= built.available_tokens == 2048
        with pytest.raises(ValidationError) as bad:
            client.build_context(session, None, "x", "You help.", model="gpt-4", window_tokens=0)
        assert bad.value.field == "window_tokens"
