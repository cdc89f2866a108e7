"""Issue 18's acceptance set through the engine's real path: across at least 1,000
generated scenarios (fuzzed tools, parameters, missing data and tool failures), no
high-impact call runs unconfirmed and no call carries parameters that contradict L1/L2.

The scenarios and the model they are checked against are in ``scenario_support``.
The tests after the big one pin each bug the scenarios found, minimally.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from tests.decision.scenario_support import Harness, Scenario, scenario_secrets, scenarios

from memstrata import ContextEngine
from memstrata.clock import FakeClock
from memstrata.decision import Slot, StepPolicy, ToolExecutor, ToolRegistry, ToolSpec, gate
from memstrata.errors import ValidationError
from memstrata.gateway import Sanitizer
from memstrata.router import IntentSpec, L2Need

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
SCENARIOS = 1_000
SECRET = "sk_live_0123456789abcdefghijklmn"
EMAIL = "li.wei@corp.example"


def test_generated_scenarios_through_the_engine(engine_opener: Factory) -> None:
    """Each scenario is checked as it runs (``Harness``): (1) a high-impact or high-risk
    tool runs only in the chain of its own ``confirm_tool(confirmed=True)``; (2) every
    run got exactly the params it was called with, and they hold to the schema and
    agree with the L1/L2 facts they are bound to (the harness's own record of the
    session, not the engine's facts); (3) a blocked call runs nothing; (5) the runs,
    the outcome and the trace card follow the fallback chain (retry once, then the
    alternatives, then CANNOT_COMPLETE); (6) with no evidence and key information
    missing, the step asks. At the end (4): no key or email planted in a tool error
    or a call's params is in any trace card or any Valkey key."""
    engine = engine_opener(clock=FakeClock(START))
    harness = Harness(engine)

    @settings(
        max_examples=SCENARIOS,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios())
    def run(scenario: Scenario) -> None:
        harness.run(scenario)

    started = time.perf_counter()
    run()
    harness.check_storage()
    stats = harness.stats
    decisions = {route: stats[f"route_{route}"] for route in ("answer", "tool", "ask")}
    counts: dict[str, float] = {
        "scenarios": stats["scenarios"],
        "decisions": sum(decisions.values()),
        "asked_for_missing_info": stats["asked_for_missing"],
        "asked_after_gate_refused": stats["asked_after_gate_refused"],
        "calls": stats["calls"],
        "runs": stats["runs"],
        "runs_with_bound_params_checked": stats["bound_runs_checked"],
        "high_impact_runs_all_confirmed": stats["risky_runs_confirmed"],
        "blocked": stats["blocked"],
        "blocked_by_schema": stats["blocked_by_schema"],
        "blocked_by_facts": stats["blocked_by_facts"],
        "pending": stats["pending"],
        "confirmed": stats["confirmed"],
        "rejected": stats["rejected"],
        "ignored": stats["ignored"],
        "intruder_confirms_refused": stats["intruder_refused"],
        "second_confirms_refused": stats["second_confirm_refused"],
        "remote_approvals": stats["approved"],
        "done": stats["done"],
        "fallbacks": stats["fallbacks"],
        "cannot_complete": stats["cannot_complete"],
        "local_failures": stats["local_failures"],
        "secrets_planted": stats["secrets_checked"],
        "cards_scanned": stats["cards_scanned"],
        "valkey_keys_scanned": stats["valkey_keys_scanned"],
        "seconds": round(time.perf_counter() - started, 1),
    }
    print("\nissue 18 scenarios:", json.dumps({**counts, "by_route": decisions}, indent=1))
    assert counts["scenarios"] >= SCENARIOS
    # Every path the acceptance names was taken, many times over.
    for name in (
        "asked_for_missing_info",
        "runs",
        "high_impact_runs_all_confirmed",
        "blocked_by_schema",
        "blocked_by_facts",
        "pending",
        "confirmed",
        "rejected",
        "ignored",
        "intruder_confirms_refused",
        "second_confirms_refused",
        "remote_approvals",
        "done",
        "fallbacks",
        "cannot_complete",
    ):
        assert counts[name] >= 10, (name, counts)
    assert all(n >= 50 for n in decisions.values()), decisions


# -- the bugs the scenarios found, each pinned minimally -----------------------------------

LIMIT_BOUND = ToolSpec(
    "set_limit",
    "a limit the account holds",
    {"type": "object", "properties": {"limit": {}}},
    bound={"limit": "l2.acct.limit"},
)


def test_the_gate_tells_a_boolean_from_a_number() -> None:
    """``True == 1`` in Python: an untyped bound parameter passed the facts check with
    a boolean where the session holds the number 1 (fixed in tools.gate)."""
    facts = {"l2.acct.limit": 1, "l2.acct.off": 0, "l2.acct.ids": [1, 2]}
    assert not gate(LIMIT_BOUND, {"limit": True}, facts).passed
    assert not gate(LIMIT_BOUND, {"limit": False}, {"l2.acct.limit": 0}).passed
    assert gate(LIMIT_BOUND, {"limit": 1}, facts).passed
    assert gate(LIMIT_BOUND, {"limit": 1.0}, facts).passed  # one JSON number
    ids = ToolSpec("ids", "x", {"type": "object"}, bound={"ids": "l2.acct.ids"})
    assert not gate(ids, {"ids": [True, 2]}, facts).passed
    assert gate(ids, {"ids": (1, 2)}, facts).passed


def test_the_gate_never_echoes_the_params_it_refuses(engine_opener: Factory) -> None:
    """A schema failure's detail quoted the offending value, and the detail is kept on
    the trace card unsanitized: a key or an email sent as a parameter reached Valkey
    (fixed in tools.gate: the detail names the parameter and the rule, not the value)."""
    spec = ToolSpec(
        "read",
        "x",
        {
            "type": "object",
            "properties": {"device": {"type": "string", "pattern": "^D[0-9]+$"}},
            "additionalProperties": False,
        },
    )
    verdict = gate(spec, {"device": f"{EMAIL} {SECRET}", SECRET: 1}, {})
    detail = json.dumps(verdict.as_dict())
    assert not verdict.passed and "device" in detail and "pattern" in detail
    assert SECRET not in detail and EMAIL not in detail

    engine = engine_opener(clock=FakeClock(START))
    engine.register_tool(spec, lambda p: "ran")
    engine.start_session("u1", "q", tenant="acme", session_id="s1")
    decision = engine.decide("s1", engine.route("s1", "respond"))
    outcome = engine.call_tool(
        decision.card_id, tenant="acme", tool="read", params={"device": f"{EMAIL} {SECRET}"}
    )
    assert outcome.outcome == "blocked" and SECRET not in outcome.message
    card = json.dumps(engine.trace_card(decision.card_id, tenant="acme").as_dict())
    assert SECRET not in card and EMAIL not in card


def test_a_tool_that_rewrites_its_params_cannot_change_its_retry() -> None:
    """The function was handed the gated dict itself: one that "normalized" it in place
    and failed had its retry run with params the gate never saw (fixed in
    ToolExecutor: each attempt gets its own copy)."""
    seen: list[dict[str, Any]] = []

    def normalize_then_fail(params: Mapping[str, Any]) -> Any:
        seen.append(dict(params))
        params["device"] = "D9"  # type: ignore[index]
        raise ConnectionError("down")

    registry = ToolRegistry()
    registry.register(
        ToolSpec(
            "read",
            "x",
            {"type": "object", "properties": {"device": {"type": "string"}}},
            bound={"device": "l1.last_entity_id"},
        ),
        normalize_then_fail,
    )
    tools = ToolExecutor(registry, lambda text: text)
    params = {"device": "D1"}
    outcome = tools.call("read", params, {"l1.last_entity_id": "D1"})
    assert outcome.outcome == "cannot_complete"
    assert seen == [{"device": "D1"}, {"device": "D1"}] and params == {"device": "D1"}


# -- calls in progress keep their own parameters; refused calls ask for their slots ------

DEVICE_LIMIT = {
    "type": "object",
    "properties": {"device": {"type": "string"}, "limit": {"type": "integer"}},
}


def _acct_engine(factory: Factory) -> ContextEngine:
    engine = factory(clock=FakeClock(START))
    engine.register_intent(
        IntentSpec(
            "acct",
            l1=("session_id", "last_entity_id"),
            l2=(L2Need("api", "acct_api", {"id": "$last_entity_id"}, label="acct"),),
        )
    )
    engine.start_session("u1", "q", tenant="acme", session_id="s1")
    engine.update_session("s1", lambda s: s.with_entity("D1"))
    engine.working("s1").put_api_response("acct_api", {"id": "D1"}, {"limit": 5})
    return engine


def test_a_resumed_chain_keeps_the_calls_own_params(engine_opener: Factory) -> None:
    """A confirmed remote refund fails twice; its fallback must be gated (and run) with
    the refund's own params. A later call on the same card replaced the card's params,
    and the fallback was approved on those: with the refund's limit (7, where the
    session holds 5) it would have been blocked."""
    engine = _acct_engine(engine_opener)
    ran: list[Mapping[str, Any]] = []
    engine.register_tool(
        ToolSpec("refund", "x", DEVICE_LIMIT, high_impact=True, alternatives=("credit",))
    )
    engine.register_tool(
        ToolSpec("credit", "x", DEVICE_LIMIT, bound={"limit": "l2.acct.limit"}), ran.append
    )
    engine.register_tool(ToolSpec("lookup", "x", DEVICE_LIMIT), lambda p: "ok")
    card = engine.decide("s1", engine.route("s1", "acct")).card_id
    held = engine.call_tool(card, tenant="acme", tool="refund", params={"limit": 7})
    assert held.pending_id is not None
    engine.call_tool(card, tenant="acme", tool="lookup", params={"limit": 5})
    assert engine.confirm_tool(held.pending_id, tenant="acme").outcome == "approved"
    engine.report_tool_result(card, tenant="acme", tool="refund", ok=False)
    last = engine.report_tool_result(card, tenant="acme", tool="refund", ok=False)
    assert last.outcome == "cannot_complete" and ran == []  # credit with limit 7 is blocked


def test_a_fallback_after_a_remote_failure_gets_the_params_as_called(
    engine_opener: Factory,
) -> None:
    engine = _acct_engine(engine_opener)
    ran: list[Mapping[str, Any]] = []
    note = {"type": "object", "properties": {"note": {"type": "string"}}}
    engine.register_tool(ToolSpec("crm", "x", note, alternatives=("archive",)))
    engine.register_tool(ToolSpec("archive", "x", note), ran.append)
    card = engine.decide("s1", engine.route("s1", "acct")).card_id
    params = {"note": f"reply to {EMAIL}"}
    assert engine.call_tool(card, tenant="acme", tool="crm", params=params).outcome == "approved"
    engine.report_tool_result(card, tenant="acme", tool="crm", ok=False)
    done = engine.report_tool_result(card, tenant="acme", tool="crm", ok=False)
    assert done.outcome == "done" and ran == [params]  # not the card's masked copy


def test_a_confirmed_calls_card_shows_its_own_params(engine_opener: Factory) -> None:
    engine = _acct_engine(engine_opener)
    engine.register_tool(ToolSpec("refund", "x", DEVICE_LIMIT, high_impact=True), lambda p: "ok")
    engine.register_tool(ToolSpec("lookup", "x", DEVICE_LIMIT), lambda p: "ok")
    card = engine.decide("s1", engine.route("s1", "acct")).card_id
    held = engine.call_tool(card, tenant="acme", tool="refund", params={"limit": 7})
    assert held.pending_id is not None
    engine.call_tool(card, tenant="acme", tool="lookup", params={"limit": 5})
    assert engine.confirm_tool(held.pending_id, tenant="acme").outcome == "done"
    shown = engine.trace_card(card, tenant="acme")
    assert shown.tool == "refund" and dict(shown.params) == {"limit": 7}


def test_a_report_names_the_tool_that_was_approved(engine_opener: Factory) -> None:
    """crm was approved; the caller reports that refund (high-impact, never confirmed)
    ran and succeeded, and the card then shows refund done as crm's fallback."""
    engine = _acct_engine(engine_opener)
    engine.register_tool(ToolSpec("crm", "x", {"type": "object"}))
    engine.register_tool(ToolSpec("refund", "x", {"type": "object"}, high_impact=True))
    card = engine.decide("s1", engine.route("s1", "acct")).card_id
    assert engine.call_tool(card, tenant="acme", tool="crm", params={}).outcome == "approved"
    with pytest.raises(ValidationError):
        engine.report_tool_result(card, tenant="acme", tool="refund", ok=True)


def test_an_ask_after_a_refused_call_says_what_to_ask(engine_opener: Factory) -> None:
    """The user said D2, the session is on D1: the proposed read is refused and the
    step asks again for the device, with the slot's question."""
    engine = _acct_engine(engine_opener)
    engine.register_tool(
        ToolSpec("read", "x", DEVICE_LIMIT, bound={"device": "l1.last_entity_id"}), lambda p: 1
    )
    engine.register_policy(
        StepPolicy(
            "acct",
            evidence=("report_*",),
            slots=(Slot("device", ("given.device", "l1.last_entity_id"), "Which device?"),),
            tool="read",
            tool_params={"device": "device"},
        )
    )
    decision = engine.decide("s1", engine.route("s1", "acct"), given={"device": "D2"})
    assert decision.route == "ask" and decision.ask_for == ("device",)
    assert decision.questions == ("Which device?",)


def test_the_gateway_redacts_what_the_scenarios_plant() -> None:
    """The leak checks look for these exact strings: the gateway must catch them."""
    for secret, email in ((SECRET, EMAIL), scenario_secrets(7)):
        text = Sanitizer().text(f"api_key={secret} for {email}", location="test")
        assert secret not in text and email not in text
