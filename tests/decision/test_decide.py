"""engine.decide: answer, call a tool or ask, from rules over the bundle, with one trace
card per decision (seed 003 §4.1-§4.2), against the real Valkey and Qdrant engine."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata import ContextEngine
from memstrata.clock import FakeClock
from memstrata.decision import (
    RiskThresholds,
    Slot,
    StepPolicy,
    ToolSpec,
    cards_json,
    decide,
    rule_judgment,
)
from memstrata.errors import ConfigError, NotFoundError, ValidationError
from memstrata.router import IntentSpec, L2Need
from memstrata.router.bundle import ContextBundle, ContextItem, Provenance

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
ORDER_INTENT = IntentSpec(
    "order_status",
    l1=("session_id", "user_id", "current_step", "last_entity_id"),
    l2=(L2Need("api", "order_api", {"order_id": "$last_entity_id"}, label="order_status"),),
)
ORDER_TOOL = ToolSpec(
    "order_api",
    "Look an order up",
    {
        "type": "object",
        "properties": {"order_id": {"type": "string", "pattern": "^O-[0-9]+$"}},
        "required": ["order_id"],
        "additionalProperties": False,
    },
    bound={"order_id": "l1.last_entity_id"},
)
ORDER_POLICY = StepPolicy(
    "order_status",
    risk="medium",
    evidence=("order_status",),
    slots=(Slot("order_id", ("l1.last_entity_id",), "Which order do you mean?"),),
    tool="order_api",
    tool_params={"order_id": "order_id"},
)


def order_engine(factory: Factory, clock: FakeClock | None = None) -> ContextEngine:
    engine = factory(clock=clock or FakeClock(START))
    engine.register_intent(ORDER_INTENT)
    engine.register_policy(ORDER_POLICY)
    engine.register_tool(ORDER_TOOL, lambda p: {"status": "shipped", "eta": "March 5"})
    return engine


def test_ask_then_tool_then_answer(engine_opener: Factory) -> None:
    engine = order_engine(engine_opener)
    state = engine.start_session("u1", "where is my order", tenant="acme", session_id="s1")
    bundle = engine.route(state.session_id, "order_status")
    first = engine.decide(state.session_id, bundle, question="where is my order")
    assert first.route == "ask" and first.ask_for == ("order_id",)
    assert first.questions == ("Which order do you mean?",)

    engine.update_session("s1", lambda s: s.with_entity("O-17"))
    second = engine.decide("s1", engine.route("s1", "order_status"))
    assert second.route == "tool" and second.tool == "order_api"
    assert dict(second.params) == {"order_id": "O-17"}
    outcome = engine.call_tool(second.card_id, tenant="acme")
    assert outcome.outcome == "done" and outcome.result["status"] == "shipped"
    engine.working("s1").put_api_response("order_api", {"order_id": "O-17"}, outcome.result)

    third = engine.decide("s1", engine.route("s1", "order_status"))
    assert third.route == "answer" and third.confidence == 1.0
    check = engine.check_reply(third.card_id, "Order O-17 has shipped.", tenant="acme")
    assert check.consistent and check.context_loaded and check.context_used

    cards = engine.trace_cards(tenant="acme", session_id="s1")
    assert [c.route for c in cards] == ["ask", "tool", "answer"]
    tool_card = cards[1]
    assert tool_card.tool_outcome == "done" and tool_card.params == {"order_id": "O-17"}
    assert [g["tool"] for g in tool_card.gate] == ["order_api"]
    assert all(check["passed"] for check in tool_card.gate[0]["checks"][:2])
    assert cards[2].effective is True and cards[2].l2_keys
    exported = json.loads(cards_json(cards))
    assert [c["id"] for c in exported["cards"]] == [c.id for c in cards]
    rates = engine.decision_rates()
    assert rates.decisions == 3 and rates.tool_success_rate == 1.0 and rates.cer == 1.0


def test_the_risk_level_sets_the_bar() -> None:
    """One L3 item at cosine 0.6: enough for a low-risk answer, not a high-risk one."""
    item = ContextItem.of(
        "l3_knowledge_0",
        {"text": "We ship within two days.", "type": "knowledge"},
        Provenance("L3", "k1", "faq", 0.6, 1.0),
    )
    bundle = ContextBundle("s", "faq", 1, START, (item,))
    thresholds = RiskThresholds()
    for risk, route in (("low", "answer"), ("medium", "answer"), ("high", "ask")):
        policy = StepPolicy("faq", risk=risk)
        judgment = rule_judgment(bundle, policy, {}, thresholds)
        assert decide(judgment, policy, thresholds, bundle).route == route, risk
    empty = ContextBundle("s", "faq", 1, START, ())
    judgment = rule_judgment(empty, StepPolicy("faq"), {}, thresholds)
    assert decide(judgment, StepPolicy("faq"), thresholds, empty).route == "ask"


def test_same_inputs_same_decisions_and_memories(engine_opener: Factory, tmp_path: Any) -> None:
    """A session replayed on a fresh engine decides the same, from the same memories."""

    def replay(name: str) -> list[dict[str, Any]]:
        clock = FakeClock(START)
        engine = order_engine(lambda **kw: engine_opener(data_dir=tmp_path / name, **kw), clock)
        engine.start_session("u1", "trip", tenant="acme", session_id="s1")
        for text in ("I live in Hangzhou.", "My budget is 5000 yuan.", "I moved to Chengdu."):
            engine.observe("s1", "user", text)
            clock.advance(timedelta(minutes=1))
        engine.flush()
        out = []
        for question in ("where do I live", "what is my budget", "where do I live"):
            bundle = engine.route("s1", "respond", question)
            decision = engine.decide("s1", bundle, question=question)
            facts = [dict(d) for d in (decision.as_dict(),)]
            for entry in facts:
                entry.pop("card_id")
            out.append({"decision": facts[0], "items": [i.as_dict() for i in bundle.items]})
            engine.update_session("s1", lambda s: s.advance())
        return out

    first, second = replay("a"), replay("b")
    assert first == second
    used = first[0]["decision"]["used"]
    assert used["memory_ids"] or used["episode_ids"]


def test_a_reply_contradicting_the_memories_is_flagged(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    engine.start_session("u1", "trip", tenant="acme", session_id="s1")
    for text in ("I live in Hangzhou.", "Actually I moved to Chengdu last month."):
        engine.observe("s1", "user", text)
        clock.advance(timedelta(minutes=1))
    engine.flush()
    decision = engine.decide("s1", engine.route("s1", "respond", "where do I live"))
    stale = engine.check_reply(decision.card_id, "You live in Hangzhou.", tenant="acme")
    assert not stale.consistent and stale.regenerate and "Hangzhou" in stale.conflicts[0]
    card = engine.trace_card(decision.card_id, tenant="acme")
    assert card.consistency == "conflict" and "inconsistent_reply" in card.flags
    fine = engine.check_reply(decision.card_id, "You live in Chengdu now.", tenant="acme")
    assert fine.consistent and fine.context_used


def test_numbers_that_disagree_with_l2_are_a_conflict(engine_opener: Factory) -> None:
    engine = order_engine(engine_opener)
    engine.start_session("u1", "order", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-3"))
    engine.working("s1").put_api_response("order_api", {"order_id": "O-3"}, {"total": 120})
    decision = engine.decide("s1", engine.route("s1", "order_status"))
    assert decision.route == "answer"
    wrong = engine.check_reply(decision.card_id, "The total is 150 yuan.", tenant="acme")
    assert not wrong.consistent and "150" in wrong.conflicts[0]
    right = engine.check_reply(decision.card_id, "The total is 120 yuan.", tenant="acme")
    assert right.consistent and right.effective


def test_cards_by_session_and_time_tenants_apart(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = order_engine(engine_opener, clock)
    for tenant, sid in (("acme", "a1"), ("acme", "a2"), ("globex", "g1")):
        engine.start_session("u1", "order", tenant=tenant, session_id=sid)
        engine.decide(sid, engine.route(sid, "order_status"))
        clock.advance(timedelta(hours=1))
    assert len(engine.trace_cards(tenant="acme")) == 2
    assert [c.session_id for c in engine.trace_cards(tenant="acme", session_id="a2")] == ["a2"]
    later = engine.trace_cards(tenant="acme", since=START + timedelta(minutes=30))
    assert [c.session_id for c in later] == ["a2"]
    assert engine.trace_cards(tenant="globex", session_id="a1") == ()
    card = engine.trace_cards(tenant="globex")[0]
    with pytest.raises(NotFoundError):
        engine.trace_card(card.id, tenant="acme")
    with pytest.raises(NotFoundError):
        engine.call_tool(card.id, tenant="acme", tool="order_api")
    with pytest.raises(ValidationError, match="since"):
        engine.trace_cards(tenant="acme", since=datetime(2025, 1, 1))  # naive


def test_high_impact_waits_for_its_confirmation(engine_opener: Factory) -> None:
    engine = order_engine(engine_opener)
    refunds: list[Mapping[str, Any]] = []
    engine.register_tool(
        ToolSpec(
            "refund",
            "Refund an order",
            {"type": "object", "properties": {"order_id": {"type": "string"}}},
            high_impact=True,
            bound={"order_id": "l1.last_entity_id"},
        ),
        refunds.append,
    )
    engine.start_session("u1", "refund", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-9"))
    decision = engine.decide("s1", engine.route("s1", "order_status"))
    held = engine.call_tool(
        decision.card_id, tenant="acme", tool="refund", params={"order_id": "O-9"}
    )
    assert held.outcome == "pending_confirmation" and refunds == []
    assert held.pending_id is not None
    with pytest.raises(NotFoundError):
        engine.confirm_tool(held.pending_id, tenant="globex")
    assert refunds == []
    done = engine.confirm_tool(held.pending_id, tenant="acme")
    assert done.outcome == "done" and refunds == [{"order_id": "O-9"}]
    card = engine.trace_card(decision.card_id, tenant="acme")
    assert card.tool == "refund" and card.tool_outcome == "done"
    other = engine.call_tool(
        decision.card_id, tenant="acme", tool="refund", params={"order_id": "O-1"}
    )
    assert other.outcome == "blocked" and "order_id" in other.message


def test_a_remote_tool_follows_the_fallback_chain(engine_opener: Factory) -> None:
    """A tool with no function runs at the caller, who reports each attempt."""
    engine = order_engine(engine_opener)
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    engine.register_tool(ToolSpec("crm", "CRM lookup", schema, alternatives=("archive",)))
    engine.register_tool(ToolSpec("archive", "Archive lookup", schema))
    engine.start_session("u1", "order", tenant="acme", session_id="s1")
    decision = engine.decide("s1", engine.route("s1", "order_status"))
    step = engine.call_tool(decision.card_id, tenant="acme", tool="crm", params={"order_id": "O-1"})
    assert step.outcome == "approved" and step.tool == "crm"
    secret = "token=sk_live_51Habc123def456ghi789"
    step = engine.report_tool_result(
        decision.card_id, tenant="acme", tool="crm", ok=False, error=f"401 {secret}"
    )
    assert (step.outcome, step.tool) == ("approved", "crm")  # the retry
    step = engine.report_tool_result(decision.card_id, tenant="acme", tool="crm", ok=False)
    assert (step.outcome, step.tool) == ("approved", "archive")  # the alternative
    step = engine.report_tool_result(decision.card_id, tenant="acme", tool="archive", ok=False)
    step = engine.report_tool_result(decision.card_id, tenant="acme", tool="archive", ok=False)
    assert step.outcome == "cannot_complete"
    card = engine.trace_card(decision.card_id, tenant="acme")
    assert card.fallbacks == ("archive",) and len(card.attempts) == 4
    assert "sk_live" not in json.dumps(card.as_dict())
    rates = engine.decision_rates()
    assert rates.tool_success_rate == 0.0 and rates.fallback_rate == 1.0


def test_bad_input_is_refused_by_name(engine_opener: Factory) -> None:
    engine = order_engine(engine_opener)
    engine.start_session("u1", "order", tenant="acme", session_id="s1")
    bundle = engine.route("s1", "order_status")
    with pytest.raises(ValidationError, match="bundle"):
        engine.decide("s1", bundle.as_dict())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="given"):
        engine.decide("s1", bundle, given=["x"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="question"):
        engine.decide("s1", bundle, question=3)  # type: ignore[arg-type]
    other = engine.start_session("u1", "order", tenant="acme", session_id="s2")
    with pytest.raises(ValidationError, match="bundle"):
        engine.decide(other, bundle)
    with pytest.raises(ValidationError, match=r"policy\.tool_params"):
        StepPolicy("order_status", tool_params={"x": "nope"})
    with pytest.raises(ConfigError):
        RiskThresholds(low=0.9, medium=0.5, high=0.7)
    decision = engine.decide("s1", bundle)
    with pytest.raises(ValidationError, match="reply"):
        engine.check_reply(decision.card_id, "", tenant="acme")
    with pytest.raises(NotFoundError):
        engine.check_reply("f" * 32, "hello", tenant="acme")


def test_user_feedback_labels_the_retrieval_hit_rate(engine_opener: Factory) -> None:
    """A confirmed step whose reply used a memory is a hit, a corrected one a miss."""
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    engine.start_session("u1", "trip", tenant="acme", session_id="s1")
    engine.observe("s1", "user", "My budget for the trip is 5000 yuan.")
    engine.flush()
    assert engine.decision_rates().retrieval_hit_rate is None
    first = engine.decide("s1", engine.route("s1", "respond", "what is my budget"))
    engine.check_reply(first.card_id, "Your budget is 5000 yuan.", tenant="acme")
    receipt = engine.feedback(first.card_id, "confirmed", tenant="acme")
    assert receipt.used and receipt.used_by == "reply"
    assert engine.decision_rates().retrieval_hit_rate == 1.0
    second = engine.decide("s1", engine.route("s1", "respond", "what is my budget"))
    engine.feedback(second.card_id, "abandoned", tenant="acme")
    assert engine.decision_rates().retrieval_hit_rate == 0.5
    assert 'memstrata_feedback_retrieval_total{result="miss"} 1.0' in engine.metrics_text().decode()
