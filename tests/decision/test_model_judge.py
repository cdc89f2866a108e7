"""A configured model makes the judgment and checks replies; whenever it fails or
proposes what the gate refuses, the rules decide (against a scripted endpoint)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import ContextEngine, Settings
from memstrata.clock import FakeClock
from memstrata.config import DecisionSettings
from memstrata.decision import Slot, StepPolicy, ToolSpec
from memstrata.embed.cache import CachedEmbedder
from memstrata.router import IntentSpec, L2Need
from memstrata.testing.chat_server import Reply, ScriptedServer, completion

START = datetime(2025, 3, 1, 9, tzinfo=UTC)
INTENT = IntentSpec(
    "device_status",
    l1=("session_id", "user_id", "current_step", "last_entity_id"),
    l2=(L2Need("api", "device_api", {"device_id": "$last_entity_id"}, label="device"),),
)
TOOL = ToolSpec(
    "device_api",
    "Read a device",
    {"type": "object", "properties": {"device_id": {"type": "string"}}, "required": ["device_id"]},
    bound={"device_id": "l1.last_entity_id"},
)


def judgment(**fields: Any) -> Reply:
    answer = {
        "needs_data": False,
        "data_kind": None,
        "enough": True,
        "confidence": 0.9,
        "missing": [],
        "tool": None,
        "params": {},
    }
    answer.update(fields)
    return completion(json.dumps(answer))


@pytest.fixture
def judged_engine(
    tmp_path: Path, minilm: CachedEmbedder
) -> Iterator[Callable[..., tuple[ContextEngine, ScriptedServer]]]:
    """An engine whose decisions a scripted model judges: ``judged_engine(reply...)``."""
    opened: list[tuple[ContextEngine, ScriptedServer]] = []

    def open_with(*replies: Reply) -> tuple[ContextEngine, ScriptedServer]:
        server = ScriptedServer(list(replies)).__enter__()
        settings = Settings(
            data_dir=tmp_path / f"d{len(opened)}",
            decision=DecisionSettings(llm_base_url=server.base_url, timeout_s=5),
        )
        engine = ContextEngine.open(settings, clock=FakeClock(START), embedder=minilm)
        engine.register_intent(INTENT)
        engine.register_policy(
            StepPolicy(
                "device_status",
                risk="medium",
                evidence=("device",),
                slots=(Slot("device_id", ("l1.last_entity_id",)),),
                tool="device_api",
                tool_params={"device_id": "device_id"},
            )
        )
        engine.register_tool(TOOL, lambda p: {"device": p["device_id"], "soc": 81})
        engine.start_session("u1", "check the battery", tenant="acme", session_id="s1")
        engine.update_session("s1", lambda s: s.with_entity("D-1"))
        opened.append((engine, server))
        return engine, server

    yield open_with
    for engine, server in opened:
        engine.close()
        server.__exit__(None, None, None)


def test_the_model_judges_with_the_bundle_and_the_tools(judged_engine: Any) -> None:
    engine, server = judged_engine(
        judgment(
            needs_data=True,
            data_kind="tool",
            enough=False,
            confidence=0.2,
            tool="device_api",
            params={"device_id": "D-1"},
        )
    )
    decision = engine.decide("s1", engine.route("s1", "device_status"), question="battery?")
    assert decision.route == "tool" and decision.judgment.judged_by == "model"
    assert dict(decision.params) == {"device_id": "D-1"}
    sent = server.received[0].body
    assert sent["temperature"] == 0
    assert sent["response_format"]["json_schema"]["name"] == "judgment"
    step = json.loads(sent["messages"][1]["content"])
    assert step["intent"] == "device_status" and step["tools"][0]["name"] == "device_api"
    assert step["facts"]["l1.last_entity_id"] == "D-1"
    card = engine.trace_card(decision.card_id, tenant="acme")
    assert card.judged_by == "model"


def test_a_model_answer_under_the_threshold_is_a_question(judged_engine: Any) -> None:
    engine, _ = judged_engine(judgment(enough=True, confidence=0.3))
    decision = engine.decide("s1", engine.route("s1", "device_status"))
    assert decision.route == "ask" and decision.judgment.judged_by == "model"
    assert any("under" in reason for reason in decision.reasons)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, b"boom"),  # then the retry fails too
        completion("not json at all"),
        judgment(confidence="high"),
        judgment(data_kind="tool", tool="device_api", params={"device_id": "D-2"}),
    ],
    ids=["endpoint-fails", "garbage", "out-of-schema", "contradicts-l1"],
)
def test_the_rules_decide_when_the_model_cannot(judged_engine: Any, reply: Reply) -> None:
    engine, _ = judged_engine(reply, reply)
    decision = engine.decide("s1", engine.route("s1", "device_status"))
    assert decision.judgment.judged_by == "rules"
    assert decision.route == "tool" and dict(decision.params) == {"device_id": "D-1"}
    assert engine.metrics_text().count(b"memstrata_judge_fallbacks_total 1.0") == 1


def test_the_model_checks_the_reply(judged_engine: Any) -> None:
    engine, server = judged_engine(
        judgment(
            data_kind="tool",
            needs_data=True,
            enough=False,
            confidence=0.1,
            tool="device_api",
            params={"device_id": "D-1"},
        ),
        completion(json.dumps({"conflicts": ["says 90% where the device reports 81%"]})),
        completion("{}"),
    )
    decision = engine.decide("s1", engine.route("s1", "device_status"))
    check = engine.check_reply(decision.card_id, "The battery is at 90%.", tenant="acme")
    assert not check.consistent and check.regenerate
    assert server.received[1].body["response_format"]["json_schema"]["name"] == "reply_check"
    # An unusable check leaves the rules' verdict.
    again = engine.check_reply(decision.card_id, "The battery is fine.", tenant="acme")
    assert again.consistent
