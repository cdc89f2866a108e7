"""Trace cards say who confirmed or rejected a high-impact call and when, and a tool
route carries its real confidence (issue 25), through the engine and the service."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.decision.test_decide import START, order_engine
from typer.testing import CliRunner

from memstrata import ContextEngine
from memstrata.client import Client
from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.decision import Slot, StepPolicy, ToolSpec
from memstrata.errors import ValidationError
from memstrata.router import IntentSpec, L2Need
from memstrata.service.server import open_service

Factory = Callable[..., ContextEngine]
runner = CliRunner()
REFUND = ToolSpec(
    "refund",
    "Refund an order",
    {"type": "object", "properties": {"order_id": {"type": "string"}}},
    high_impact=True,
    bound={"order_id": "l1.last_entity_id"},
)


def _held_refund(engine: ContextEngine, session_id: str) -> tuple[str, str]:
    """A refund held for confirmation on a new decision: (card id, pending id)."""
    decision = engine.decide(session_id, engine.route(session_id, "order_status"))
    held = engine.call_tool(
        decision.card_id, tenant="acme", tool="refund", params={"order_id": "O-9"}
    )
    assert held.outcome == "pending_confirmation" and held.pending_id is not None
    return decision.card_id, held.pending_id


def test_the_card_records_who_confirmed_or_rejected_and_when(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = order_engine(engine_opener, clock)
    refunds: list[Mapping[str, Any]] = []

    def refund(params: Mapping[str, Any]) -> None:
        clock.advance(timedelta(seconds=10))  # the refund itself takes a while
        refunds.append(params)

    engine.register_tool(REFUND, refund)
    engine.start_session("u1", "refund", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-9"))

    card_id, pending = _held_refund(engine, "s1")
    card = engine.trace_card(card_id, tenant="acme")
    assert (card.confirmation, card.confirmation_by, card.confirmation_at) == (None, "", None)
    clock.advance(timedelta(minutes=3))  # a person takes a while to answer
    done = engine.confirm_tool(pending, tenant="acme", confirmed_by="ops-lead")
    assert done.outcome == "done" and refunds == [{"order_id": "O-9"}]
    card = engine.trace_card(card_id, tenant="acme")
    assert card.confirmation == "confirmed" and card.confirmation_by == "ops-lead"
    # When the answer came, not when the call it ran finished.
    assert card.confirmation_at == (START + timedelta(minutes=3)).timestamp()
    assert card.tool_outcome == "done"
    exported = card.as_dict()
    assert exported["confirmation_at_iso"].startswith("2025-03-01")
    assert exported["confirmation_by"] == "ops-lead"

    # Rejected, without naming anyone: the session's user, whom the agent asked.
    card_id, pending = _held_refund(engine, "s1")
    clock.advance(timedelta(seconds=40))
    assert engine.confirm_tool(pending, tenant="acme", confirmed=False).outcome == "rejected"
    card = engine.trace_card(card_id, tenant="acme")
    assert (card.confirmation, card.confirmation_by) == ("rejected", "u1")
    assert card.confirmation_at == (START + timedelta(minutes=3, seconds=50)).timestamp()
    assert refunds == [{"order_id": "O-9"}]  # a rejected call never runs


@pytest.mark.parametrize("who", ["maria.lopez@example.com", "", "ops lead", 7, "x" * 200], ids=repr)
def test_a_bad_confirmer_is_refused_and_the_call_stays_held(
    engine_opener: Factory, who: Any
) -> None:
    """A confirmer that is no opaque id (an email, blank, not a string, too long) is a
    ValidationError naming ``confirmed_by``; nothing ran and the call is still held."""
    engine = order_engine(engine_opener)
    refunds: list[Mapping[str, Any]] = []
    engine.register_tool(REFUND, refunds.append)
    engine.start_session("u1", "refund", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-9"))
    card_id, pending = _held_refund(engine, "s1")
    with pytest.raises(ValidationError) as bad:
        engine.confirm_tool(pending, tenant="acme", confirmed_by=who)
    assert bad.value.field == "confirmed_by"
    assert refunds == [] and engine.trace_card(card_id, tenant="acme").confirmation is None
    assert engine.confirm_tool(pending, tenant="acme", confirmed_by="agent-7").outcome == "done"
    assert refunds == [{"order_id": "O-9"}]


def test_the_service_records_the_confirming_key(engine_opener: Factory, tmp_path: Path) -> None:
    """Over the service the confirmer is the key that called (its tenant is the
    card's): an identity the caller cannot choose."""
    clock = FakeClock(START)
    engine = engine_opener(data_dir=tmp_path / "data", clock=clock)
    running = open_service(Settings(data_dir=tmp_path / "data"), engine=engine, clock=clock)
    try:
        admin = running.keys.create("acme", "setup", "admin").key
        console = running.keys.create("acme", "ops-console", "writer")
        with Client(service=running.service, key=admin) as setup:
            setup.register_tool(
                name="device_refund",
                description="Refund a device",
                parameters={"type": "object", "properties": {"device_id": {"type": "string"}}},
                high_impact=True,
                risk="high",
            )
            setup.start_session("u1", "refund my device", session_id="s1")
            setup.update_session("s1", entity_id="device-7")
            decision = setup.decide("s1", step_intent="call_api", question="refund it")
            held = setup.call_tool(
                decision.card_id, tool="device_refund", params={"device_id": "device-7"}
            )
            assert held.outcome == "pending_confirmation" and held.pending_id
        clock.advance(timedelta(seconds=75))
        with Client(service=running.service, key=console.key) as operator:
            assert operator.confirm_tool(held.pending_id).outcome == "approved"  # a remote tool
            (card,) = operator.trace_cards(session_id="s1")
        assert card.confirmation == "confirmed"
        assert card.confirmation_by == f"key-{console.info.key_id}.ops-console"
        assert card.confirmation_at == START + timedelta(seconds=75)
    finally:
        running.close()


# -- the tool route's confidence ---------------------------------------------------------

SHIP_INTENT = IntentSpec(
    "ship_order",
    l1=("session_id", "user_id", "current_step", "last_entity_id"),
    l2=(L2Need("preference", "pickup_point", label="pickup_preference"),),
    examples=("ship my order to my pickup point", "把我的订单寄到自提点"),
)
SHIP_TOOL = ToolSpec(
    "ship",
    "Ship an order",
    {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "pickup": {"type": "string"}},
        "required": ["order_id", "pickup"],
    },
)
SHIP_POLICY = StepPolicy(
    "ship_order",
    risk="medium",
    evidence=("shipment",),
    slots=(
        Slot("order_id", ("l1.last_entity_id",), "Which order?"),
        Slot("pickup", ("l2.pickup_preference.value",), "Where to?"),
    ),
    tool="ship",
    tool_params={"order_id": "order_id", "pickup": "pickup"},
)


def _ship_engine(factory: Factory) -> ContextEngine:
    engine = factory(clock=FakeClock(START))
    engine.register_intent(SHIP_INTENT)
    engine.register_policy(SHIP_POLICY)
    engine.register_tool(SHIP_TOOL, lambda p: {"shipped": True})
    engine.start_session("u1", "ship it", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-17"))
    return engine


def test_a_tool_route_carries_the_confidence_of_its_parameters(engine_opener: Factory) -> None:
    """Every parameter from the session's own state: confidence 1.0 (before: 0.00, the
    evidence a tool call is made to fetch), on the decision and its card."""
    engine = order_engine(engine_opener)
    engine.start_session("u1", "where is my order", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-17"))
    decision = engine.decide("s1", engine.route("s1", "order_status"))
    assert decision.route == "tool" and decision.confidence == 1.0
    assert engine.trace_card(decision.card_id, tenant="acme").confidence == 1.0


def test_a_tool_parameter_from_a_preference_is_as_sure_as_it(engine_opener: Factory) -> None:
    """One parameter from a preference stated with 0.8: the call is as sure as it."""
    shipping = _ship_engine(engine_opener)
    shipping.set_preference("u1", "pickup_point", "locker-12", 0.8, tenant="acme")
    decision = shipping.decide("s1", shipping.route("s1", "ship_order"))
    assert decision.route == "tool"
    assert dict(decision.params) == {"order_id": "O-17", "pickup": "locker-12"}
    assert decision.confidence == pytest.approx(0.8)
    assert shipping.trace_card(decision.card_id, tenant="acme").confidence == pytest.approx(0.8)


@pytest.mark.parametrize(
    "message", ["please ship my order to my pickup point", "请把订单寄到我的自提点"]
)
def test_a_recognized_tool_route_is_as_sure_as_its_intent(
    engine_opener: Factory, message: str
) -> None:
    """Routed from the message alone, in English or Chinese: the tool route's
    confidence is the recognizer's in the intent times its parameters'."""
    engine = _ship_engine(engine_opener)
    engine.set_preference("u1", "pickup_point", "locker-12", 0.9, tenant="acme")
    bundle = engine.route("s1", None, message)
    assert bundle.recognized is not None and not bundle.recognized.fell_back
    assert bundle.step_intent == "ship_order"
    decision = engine.decide("s1", bundle, question=message)
    assert decision.route == "tool"
    assert 0 < decision.confidence < 0.9
    assert decision.confidence == pytest.approx(0.9 * bundle.recognized.confidence)


def test_memstrata_cards_shows_who_confirmed(
    engine_opener: Factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "d"
    engine = order_engine(lambda **kw: engine_opener(data_dir=data, **kw))
    engine.register_tool(REFUND, lambda p: {"refunded": True})
    engine.start_session("u1", "refund", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("O-9"))
    _, pending = _held_refund(engine, "s1")
    engine.confirm_tool(pending, tenant="acme", confirmed_by="ops-lead")
    engine.close()

    from memstrata import cli
    from memstrata.cli import app

    exported = runner.invoke(app, ["cards", "--data-dir", str(data), "--tenant", "acme", "--json"])
    assert exported.exit_code == 0, exported.output
    (card,) = json.loads(exported.stdout)["cards"]
    assert (card["confirmation"], card["confirmation_by"]) == ("confirmed", "ops-lead")
    # the wire's card (one shape in process and over --url): an ISO 8601 time
    assert datetime.fromisoformat(card["confirmation_at"]) == START
    monkeypatch.setattr(cli.out, "width", 400)  # one line per card
    table = runner.invoke(app, ["cards", "--data-dir", str(data), "--tenant", "acme"])
    assert table.exit_code == 0, table.output
    assert "confirmed by ops-lead at" in table.stdout
