"""A model writes the replies when an endpoint is configured: a reply that contradicts
the context is regenerated once; an endpoint that fails hands over to the rule
writer (against a scripted OpenAI-compatible endpoint on loopback)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata import ContextEngine
from memstrata.agents import ChatWriter, StepRecord, SupportAgent, chat_writer_from_env
from memstrata.agents.support import ORDER_ID, SECRET, START, TENANT, USER
from memstrata.agents.writer import ReplyRequest, messages
from memstrata.chat import ChatEndpoint
from memstrata.clock import FakeClock
from memstrata.errors import ConfigError, ModelError, ModelUnavailableError
from memstrata.router import ContextBundle
from memstrata.testing.chat_server import Reply, ScriptedServer, completion

Factory = Callable[..., ContextEngine]


def writer_for(server: ScriptedServer) -> ChatWriter:
    endpoint = ChatEndpoint(
        server.base_url,
        "test-model",
        "sk-test-key-123",
        what="agent reply endpoint",
        error=ModelError,
        unavailable=ModelUnavailableError,
        max_retries=1,
        sleep=lambda s: None,
    )
    return ChatWriter(endpoint)


def order_step(
    engine_opener: Factory, tmp_path: Path, writer: ChatWriter
) -> tuple[ContextEngine, SupportAgent, StepRecord]:
    clock = FakeClock(START)
    engine = engine_opener(data_dir=tmp_path / "data", clock=clock)
    agent = SupportAgent(engine, writer=writer, clock=clock, run_id="w")
    agent.setup()
    engine.start_session(USER, "Where is my order?", tenant=TENANT, session_id="w1")
    engine.update_session("w1", lambda s: s.with_entity(ORDER_ID))
    step = agent.loop.step(
        "w1", "order_status", f"Where is {ORDER_ID}?", title="order", given={"order_id": ORDER_ID}
    )
    return engine, agent, step


def test_a_conflicting_reply_is_regenerated_once(engine_opener: Factory, tmp_path: Path) -> None:
    wrong = "Order O-1042 was delivered on 2025-03-04. Order total 99.0 USD."
    right = "Order O-1042 was delivered on 2025-03-04 by SF Express. Order total 59.0 USD."
    with ScriptedServer([completion(wrong), completion(right)]) as server:
        engine, _agent, step = order_step(engine_opener, tmp_path, writer_for(server))
    assert step.route == "answer" and step.written_by == "model:test-model"
    assert step.regenerated and step.reply == right
    assert step.check is not None and step.check.consistent and step.check.effective
    first, second = (r.body for r in server.received)
    assert first["model"] == "test-model" and first["temperature"] == 0
    assert server.received[0].headers["Authorization"] == "Bearer sk-test-key-123"
    retry = second["messages"]
    assert retry[-2] == {"role": "assistant", "content": wrong}
    assert "total as 99" in retry[-1]["content"] and "59.0" in retry[-1]["content"]
    # The model saw the sanitized L2 item, never the order system's key.
    sent = json.dumps([r.body for r in server.received])
    assert "order_status" in sent and SECRET not in sent and "[REDACTED:api_key]" in sent
    card = engine.trace_card(step.card_id, tenant=TENANT)
    assert card.consistency == "consistent" and card.reply == right


def test_a_failing_endpoint_hands_over_to_the_rule_writer(
    engine_opener: Factory, tmp_path: Path
) -> None:
    with ScriptedServer([Reply(500), Reply(500)]) as server:
        _engine, _agent, step = order_step(engine_opener, tmp_path, writer_for(server))
    assert len(server.received) == 2  # the call and its one retry
    assert step.written_by == "rules (ModelError)"
    assert step.reply.startswith(f"Order {ORDER_ID} (Volta X200 power bank) is delivered")
    assert step.check is not None and step.check.effective


def test_messages_carry_the_items_and_the_conflicts() -> None:
    bundle = ContextBundle("s1", "faq", 1, START, ())
    request = ReplyRequest("faq", "hi?", bundle, (), instructions="Be brief.")
    plain = messages(request)
    assert [m["role"] for m in plain] == ["system", "user"]
    assert plain[0]["content"] == "Be brief."
    assert json.loads(plain[1]["content"])["message"] == "hi?"
    retry = messages(
        ReplyRequest("faq", "hi?", bundle, (), previous="old", conflicts=("says 3, holds 4",))
    )
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "says 3, holds 4" in retry[-1]["content"]


def test_the_writer_comes_from_the_environment() -> None:
    assert chat_writer_from_env({}) is None
    assert chat_writer_from_env({"MEMSTRATA_AGENT_LLM_URL": " "}) is None
    writer = chat_writer_from_env(
        {
            "MEMSTRATA_AGENT_LLM_URL": "http://127.0.0.1:9/v1",
            "MEMSTRATA_AGENT_LLM_MODEL": "qwen2.5-7b",
            "MEMSTRATA_LLM_API_KEY": "sk-abc",
        }
    )
    assert writer is not None and writer.name == "model:qwen2.5-7b"
    assert "sk-abc" not in repr(writer)
    with pytest.raises(ConfigError, match="TIMEOUT"):
        chat_writer_from_env(
            {"MEMSTRATA_AGENT_LLM_URL": "http://x:1", "MEMSTRATA_AGENT_LLM_TIMEOUT_S": "soon"}
        )
