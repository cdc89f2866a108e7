"""Tools, the validation gate, confirmations and the fallback chain (seed 003 §4.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.decision import CANNOT_COMPLETE, ToolExecutor, ToolRegistry, ToolSpec, facts_of, gate
from memstrata.errors import NotFoundError, ValidationError
from memstrata.gateway import Sanitizer

DEVICE = {
    "type": "object",
    "properties": {"device_id": {"type": "string"}, "window_h": {"type": "integer", "minimum": 1}},
    "required": ["device_id"],
    "additionalProperties": False,
}
REFUND = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
}
SECRET = "sk-live-0123456789abcdefghijklmnop"


def sanitizer() -> Any:
    return lambda text: Sanitizer().text(text, location="tool:error")


def test_a_spec_with_a_broken_schema_is_refused() -> None:
    with pytest.raises(ValidationError) as bad:
        ToolSpec("read_temp", "x", {"type": "no-such-type"})
    assert bad.value.field == "tool.parameters"


def test_the_gate_checks_schema_facts_and_risk() -> None:
    spec = ToolSpec("read_temp", "temperatures", DEVICE, bound={"device_id": "l1.last_entity_id"})
    facts = facts_of({"last_entity_id": "D123"}, {})
    ok = gate(spec, {"device_id": "D123", "window_h": 24}, facts)
    assert ok.passed and not ok.needs_confirmation
    wrong_type = gate(spec, {"device_id": "D123", "window_h": "a day"}, facts)
    assert not wrong_type.passed and "window_h" in wrong_type.checks[0].detail
    other_device = gate(spec, {"device_id": "D999"}, facts)
    assert not other_device.passed
    assert other_device.checks[1].detail == "device_id is not the session's l1.last_entity_id"
    nothing_held = gate(spec, {"device_id": "D123"}, {})
    assert (
        not nothing_held.passed and "no l1.last_entity_id is held" in nothing_held.checks[1].detail
    )
    refund = ToolSpec("refund", "money back", REFUND, risk="high", high_impact=True)
    verdict = gate(refund, {"order_id": "o1", "amount": 10}, facts)
    assert verdict.passed and verdict.needs_confirmation


def test_a_high_impact_call_runs_only_once_confirmed() -> None:
    ran: list[Mapping[str, Any]] = []
    registry = ToolRegistry()
    registry.register(ToolSpec("refund", "money back", REFUND, high_impact=True), ran.append)
    tools = ToolExecutor(registry, sanitizer())

    held = tools.call("refund", {"order_id": "o1", "amount": 10}, {})
    assert held.outcome == "pending_confirmation" and held.pending_id and not ran
    assert [p.id for p in tools.pending()] == [held.pending_id]
    done = tools.confirm(held.pending_id)
    assert done.outcome == "done" and ran == [{"order_id": "o1", "amount": 10}]
    with pytest.raises(NotFoundError):
        tools.confirm(held.pending_id)  # a confirmation runs the call once

    second = tools.call("refund", {"order_id": "o2", "amount": 5}, {})
    assert second.pending_id is not None
    assert tools.reject(second.pending_id).outcome == "rejected" and len(ran) == 1


def test_retry_then_alternative_then_an_honest_cannot_complete() -> None:
    calls: list[str] = []

    def failing(name: str) -> Any:
        def run(params: Mapping[str, Any]) -> Any:
            calls.append(name)
            raise RuntimeError(f"upstream refused request with api_key={SECRET}")

        return run

    registry = ToolRegistry()
    registry.register(
        ToolSpec("order_status", "primary", REFUND, alternatives=("order_status_cache",)),
        failing("order_status"),
    )
    registry.register(ToolSpec("order_status_cache", "cache", REFUND), failing("cache"))
    tools = ToolExecutor(registry, sanitizer())
    outcome = tools.call("order_status", {"order_id": "o1", "amount": 1}, {})
    assert calls == ["order_status", "order_status", "cache", "cache"]
    assert outcome.outcome == "cannot_complete" and outcome.message == CANNOT_COMPLETE
    assert outcome.fallbacks == ("order_status_cache",)
    assert all(SECRET not in a.error and "REDACTED" in a.error for a in outcome.attempts)

    registry.register(ToolSpec("flaky", "fails once", REFUND), _fails_once())
    recovered = tools.call("flaky", {"order_id": "o1", "amount": 1}, {})
    assert recovered.outcome == "done" and [a.ok for a in recovered.attempts] == [False, True]


def _fails_once() -> Any:
    state = {"n": 0}

    def run(params: Mapping[str, Any]) -> Any:
        state["n"] += 1
        if state["n"] == 1:
            raise TimeoutError("slow")
        return {"status": "shipped"}

    return run


def test_a_blocked_call_never_reaches_the_tool() -> None:
    ran: list[Any] = []
    registry = ToolRegistry()
    registry.register(
        ToolSpec("read_temp", "t", DEVICE, bound={"device_id": "l1.last_entity_id"}), ran.append
    )
    outcome = ToolExecutor(registry, sanitizer()).call(
        "read_temp", {"device_id": "D1"}, facts_of({"last_entity_id": "D3"}, {})
    )
    assert outcome.outcome == "blocked" and not ran and "facts" in outcome.message


# -- 1,000 scripted scenarios: fuzzed tools, parameters, missing data and failures ----------

DEVICES = st.sampled_from(["D1", "D2", "D3"])


@st.composite
def scenario(draw: st.DrawFn) -> dict[str, Any]:
    tools = []
    for i in range(draw(st.integers(1, 4))):
        tools.append(
            {
                "name": f"t{i}",
                "high_impact": draw(st.booleans()),
                "risk": draw(st.sampled_from(["low", "medium", "high"])),
                "bound": draw(st.booleans()),
                "fails": draw(st.integers(0, 3)),
            }
        )
    for i, tool in enumerate(tools):
        tool["alternatives"] = [t["name"] for t in tools[i + 1 :]][: draw(st.integers(0, 2))]
    held = draw(st.none() | DEVICES)
    calls = draw(
        st.lists(
            st.tuples(
                st.sampled_from([t["name"] for t in tools]),
                st.fixed_dictionaries(
                    {"device_id": DEVICES},
                    optional={"window_h": st.integers(-2, 48) | st.text(max_size=3)},
                ),
                st.sampled_from(["confirm", "reject", "ignore"]),
            ),
            min_size=1,
            max_size=5,
        )
    )
    return {"tools": tools, "held": held, "calls": calls}


@settings(
    max_examples=1_000,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenario())
def test_no_high_impact_call_runs_unconfirmed_and_none_contradicts_the_facts(
    case: dict[str, Any],
) -> None:
    facts = facts_of({} if case["held"] is None else {"last_entity_id": case["held"]}, {})
    specs = {}
    runs: list[tuple[str, Mapping[str, Any]]] = []
    confirmed_ids: set[str] = set()
    registry = ToolRegistry()
    for tool in case["tools"]:
        spec = ToolSpec(
            tool["name"],
            "fuzzed",
            DEVICE,
            risk=tool["risk"],
            high_impact=tool["high_impact"],
            alternatives=tuple(tool["alternatives"]),
            bound={"device_id": "l1.last_entity_id"} if tool["bound"] else {},
        )
        specs[spec.name] = spec
        failures = {"left": tool["fails"]}

        def run(
            params: Mapping[str, Any], name: str = spec.name, left: dict[str, int] = failures
        ) -> Any:
            runs.append((name, dict(params)))
            if left["left"] > 0:
                left["left"] -= 1
                raise ConnectionError(f"down, token={SECRET}")
            return {"ok": True}

        registry.register(spec, run)
    tools = ToolExecutor(registry, sanitizer())
    for name, params, decision in case["calls"]:
        before = len(runs)
        outcome = tools.call(name, params, facts)
        if outcome.outcome == "pending_confirmation":
            assert len(runs) == before  # nothing ran while it waits
            assert outcome.pending_id is not None
            if decision == "confirm":
                confirmed_ids.add(outcome.pending_id)
                tools.confirm(outcome.pending_id)
                # The confirmed call ran, and no other high-impact tool in its place.
                for ran_name, _ in runs[before:]:
                    spec = specs[ran_name]
                    assert ran_name == name or not (spec.high_impact or spec.risk == "high")
            elif decision == "reject":
                tools.reject(outcome.pending_id)
                assert len(runs) == before
            continue
        for ran_name, _ in runs[before:]:
            spec = specs[ran_name]
            assert not (spec.high_impact or spec.risk == "high"), "ran unconfirmed"
        assert all(SECRET not in a.error for a in outcome.attempts)
    for ran_name, ran_params in runs:
        spec = specs[ran_name]
        if spec.bound:
            assert ran_params["device_id"] == case["held"], "a call contradicted L1"
        assert gate(spec, ran_params, facts).passed
