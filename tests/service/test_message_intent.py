"""route, build_context and decide over the wire with the message alone: the intent is
recognized (REST, gRPC, MCP), the card records it, and neither intent nor message is
a typed error naming the field."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from tests.service.support import SESSION_TIMEOUT_S, Caller, CallFailed, RunningServer

from memstrata.client import Client
from memstrata.errors import UnknownIntentError, ValidationError


def test_the_message_alone_is_routed_over_every_transport(
    server: RunningServer, caller_for: Callable[[str | None], Caller], transport: str
) -> None:
    call = caller_for(server.admin_keys["acme"])
    sid = f"mi-{transport}-{uuid.uuid4().hex[:8]}"
    call("start_session", {"user_id": "u-mi", "initial_query": "hi", "session_id": sid})

    bundle = call("route", {"session_id": sid, "query": "把分析结果整理成一份报告"})
    assert bundle["step_intent"] == "generate_report"
    assert bundle["recognized"]["intent"] == "generate_report"
    assert bundle["recognized"]["fell_back"] is False

    built = call(
        "build_context",
        {
            "session_id": sid,
            "user_input": "What is the sensor reading right now?",
            "system_prompt": "You help.",
        },
    )
    assert built["recognized"]["intent"] == "fetch_sensor_data"

    decision = call("decide", {"session_id": sid, "question": "Who wrote Pride and Prejudice?"})
    assert decision["intent"] == decision["bundle"]["step_intent"] == "respond"
    cards = call("trace_cards", {"session_id": sid})["cards"]
    (card,) = [c for c in cards if c["id"] == decision["card_id"]]
    assert card["intent"] == "respond" and card["intent_confidence"] is not None

    with pytest.raises(CallFailed) as caught:
        call("route", {"session_id": sid})
    assert "query" in str(caught.value)


def test_the_client_routes_the_message_alone(server: RunningServer) -> None:
    sid = f"mi-client-{uuid.uuid4().hex[:8]}"
    with Client(server.url, server.admin_keys["globex"], timeout_s=SESSION_TIMEOUT_S) as client:
        client.start_session("u-mi", "hi", session_id=sid)
        bundle = client.route(sid, query="Read the live temperature from the sensor")
        assert bundle.step_intent == "fetch_sensor_data" and bundle.recognized is not None
        built = client.build_context(sid, None, "火星上的天气怎么样？", "You help.")
        assert built.recognized is not None and built.recognized.intent == "respond"
        decision = client.decide(sid, question="帮我把分析结果写成报告")
        assert decision.intent == "generate_report"
        assert client.route(sid, "respond", query="写报告").recognized is None
        with pytest.raises(UnknownIntentError):
            client.route(sid, "no_such_intent", query="hi")
        with pytest.raises(ValidationError) as caught:
            client.decide(sid)
        assert caught.value.field == "query"
