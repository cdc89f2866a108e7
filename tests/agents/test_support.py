"""The customer-support reference agent end to end on the real engine (embedded Valkey,
qdrant-edge, MiniLM): the decision taken at each step, refunds held until confirmed,
a preference kept across sessions, a correction superseding a fact, and no secret
anywhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.agents.helpers import valkey_dump

from memstrata import ContextEngine
from memstrata.agents import AgentRun, StepRecord, SupportAgent
from memstrata.agents.support import ORDER_ID, SECRET, START, TENANT, USER
from memstrata.clock import FakeClock
from memstrata.testing.disk import files_holding

Factory = Callable[..., ContextEngine]


def run_support(
    engine_opener: Factory, tmp_path: Path, **options: object
) -> tuple[ContextEngine, SupportAgent, AgentRun]:
    clock = FakeClock(START)
    engine = engine_opener(data_dir=tmp_path / "data", clock=clock)
    agent = SupportAgent(engine, clock=clock, run_id="t", **options)  # type: ignore[arg-type]
    return engine, agent, agent.run()


def by_title(run: AgentRun) -> dict[str, StepRecord]:
    return {step.title: step for step in run.steps}


def test_each_step_takes_the_expected_decision(engine_opener: Factory, tmp_path: Path) -> None:
    engine, _agent, run = run_support(engine_opener, tmp_path)
    steps = by_title(run)
    assert [s.route for s in run.steps] == [
        "answer",  # S1 FAQ
        "answer",  # S1 preferences
        "ask",  # S1 out of scope: L3 skipped, never a guess
        "ask",  # S2 order status without an order id
        "answer",  # S2 the id given: tool, then the answer from its result
        "tool",  # S2 refund: held for confirmation
        "answer",  # S2 confirmed: run, then answered
        "answer",  # S2 city from memory
        "feedback",  # S2 the customer corrects it
        "answer",  # S3 the corrected city
        "answer",  # S3 the preference said in session 1
        "answer",  # S3 a phone number never given: loaded, nothing answers it
    ]

    faq = steps["S1 product question"]
    assert "charges a phone about four times" in faq.reply
    assert faq.cards[-1].knowledge_ids and faq.check is not None and faq.check.effective

    bitcoin = steps["S1 out of scope"]
    assert bitcoin.decision is not None and bitcoin.decision.ask_for == ("details",)
    assert bitcoin.bundle is not None and bitcoin.bundle.l3_skipped

    no_id = steps["S2 order, no id"]
    assert no_id.decision is not None and no_id.decision.ask_for == ("order_id",)
    assert no_id.reply.startswith("Which order do you mean?")
    assert no_id.cards[-1].tool is None

    with_id = steps["S2 order id given"]
    tool, answer = with_id.moves
    assert (tool.decision.route, tool.decision.tool) == ("tool", "order_lookup")
    assert dict(tool.decision.params) == {"order_id": ORDER_ID}
    assert tool.outcome is not None and tool.outcome.outcome == "done"
    assert [a.ok for a in tool.outcome.attempts] == [False, True]  # retried once
    gate = {c["name"]: c["passed"] for c in with_id.cards[0].gate[0]["checks"]}
    assert gate == {"schema": True, "facts": True, "risk": True}
    assert answer.decision.route == "answer" and answer.decision.confidence == 1.0
    assert "SF1403229871" in with_id.reply and "59.0 USD" in with_id.reply
    assert with_id.check is not None and with_id.check.effective

    rates = run.rates
    assert rates.decisions == 12
    assert rates.ask_rate == 2 / 12
    assert rates.tool_success_rate == 1.0 and rates.fallback_rate == 0.0
    assert rates.correction_rate is not None and rates.correction_rate > 0
    assert rates.cer == 7 / 8 and run.cer()["cer"] == 0.875 and run.cer()["steps"] == 8
    assert engine.decision_rates() == rates


def test_a_refund_waits_for_the_confirmation(engine_opener: Factory, tmp_path: Path) -> None:
    engine, agent, run = run_support(engine_opener, tmp_path)
    steps = by_title(run)
    asked = steps["S2 refund asked"]
    (move,) = asked.moves
    assert move.decision.tool == "refund" and move.outcome is not None
    assert move.outcome.outcome == "pending_confirmation" and asked.pending_id
    # The card as it stood before the customer answered: held, never attempted.
    assert asked.cards[0].tool_outcome == "pending_confirmation"
    assert asked.cards[0].attempts == ()
    assert "shall I go ahead?" in asked.reply

    confirmed = steps["S2 refund confirmed"]
    ran, answered = confirmed.moves
    assert ran.outcome is not None and ran.outcome.outcome == "done"
    assert ran.decision.card_id == asked.card_id  # the held call's own card
    assert answered.decision.route == "answer"
    assert "Refund R-5531 of 59.0 USD" in confirmed.reply
    assert agent.orders.refunds == [ORDER_ID]  # once
    assert engine.trace_card(asked.card_id, tenant=TENANT).tool_outcome == "done"


def test_a_declined_refund_never_runs(engine_opener: Factory, tmp_path: Path) -> None:
    engine, agent, run = run_support(engine_opener, tmp_path, confirm_refund=False)
    declined = by_title(run)["S2 refund declined"]
    (move,) = declined.moves
    assert move.outcome is not None and move.outcome.outcome == "rejected"
    assert declined.reply == "Understood: nothing was changed."
    assert agent.orders.refunds == []
    card = engine.trace_card(declined.card_id, tenant=TENANT)
    assert card.tool_outcome == "rejected" and card.attempts == ()


def test_preference_and_correction_carry_across_sessions(
    engine_opener: Factory, tmp_path: Path
) -> None:
    engine, _agent, run = run_support(engine_opener, tmp_path)
    steps = by_title(run)
    assert run.extras["preferences"] == {"contact_channel": "email", "language": "English"}

    # Said in session 1, used in session 3 (and by the refund in session 2).
    told = steps["S3 preference from session 1"]
    assert told.session_id.endswith("-s3")
    assert told.reply == "We'll tell you by email, in English, as soon as it ships."
    assert any("contact_channel" in key for key in told.cards[-1].l2_keys)
    assert "We'll confirm it by email, in English." in steps["S2 refund confirmed"].reply

    before = steps["S2 city from memory"]
    assert "Hangzhou" in before.reply
    corrected = steps["S2 customer corrects the city"]
    assert corrected.feedback == ("corrected",)
    after = steps["S3 city after the correction"]
    assert "Shenzhen" in after.reply and "Hangzhou" not in after.reply
    assert after.check is not None and after.check.consistent and after.check.effective

    current = [h.payload["text"] for h in engine.search(USER, "user city", tenant=TENANT, k=10)]
    assert "user city: Shenzhen" in current and "user city: Hangzhou" not in current
    history = engine.search(USER, "user city", tenant=TENANT, k=10, include_history=True)
    old = [h for h in history if h.payload["text"] == "user city: Hangzhou"]
    assert old and all(h.payload.get("type") == "history" for h in old)


def test_a_leaked_key_reaches_no_reply_card_or_store(
    engine_opener: Factory, tmp_path: Path
) -> None:
    engine, _agent, run = run_support(engine_opener, tmp_path)
    with_id = by_title(run)["S2 order id given"]
    tool = with_id.moves[0].outcome
    assert tool is not None and SECRET in json.dumps(tool.result)  # the raw answer had it
    assert "[REDACTED:api_key]" in tool.attempts[0].error
    for step in run.steps:
        assert SECRET not in step.reply
        assert SECRET not in json.dumps(step.as_dict(), default=str)
    cards = [
        card.as_dict()
        for number in (1, 2, 3)
        for card in engine.trace_cards(tenant=TENANT, session_id=f"support-t-s{number}")
    ]
    assert len(cards) == 12
    assert SECRET not in json.dumps(cards, default=str)
    dump = valkey_dump(engine)
    assert "order_lookup" in dump and "[REDACTED:api_key]" in dump  # what was kept
    assert SECRET not in dump
    engine.close()  # the AOF and the index on disk too
    assert files_holding(tmp_path / "data", SECRET) == []
