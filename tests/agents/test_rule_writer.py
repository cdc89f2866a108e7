"""The rule writer composes a reply from the items the message asks about, in English
and Chinese, and says it has nothing on file when no item answers: the step whose
context lacks the fact asked for is then not effective for CER (the reply check on
the real engine), where a writer that states whatever the context holds earned 1.0."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from memstrata import ContextEngine
from memstrata.agents import RuleWriter, ScriptedWriter, SupportAgent
from memstrata.agents.support import COMPOSERS, START, TENANT, USER
from memstrata.agents.writer import NOTHING_ON_FILE, NOTHING_ON_FILE_ZH, ReplyRequest
from memstrata.clock import FakeClock
from memstrata.router import ContextBundle, ContextItem
from memstrata.router.bundle import Layer, Provenance

Factory = Callable[..., ContextEngine]
AT = datetime(2025, 3, 3, tzinfo=UTC)


def item(name: str, content: object, layer: Layer = "L3", relevance: float = 0.8) -> ContextItem:
    return ContextItem.of(name, content, Provenance(layer, f"ref-{name}", "test", relevance, None))


CITY = item("city_memory_1", {"type": "fact", "text": "user city: Shenzhen"})
CITY_ZH = item("city_memory_1", {"type": "fact", "text": "user city: 深圳"})
CHANNEL = item("contact_preference", {"value": "email", "confidence": 0.9}, "L2", 0.9)


def request(intent: str, question: str, *items: ContextItem) -> ReplyRequest:
    bundle = ContextBundle("s1", intent, 1, AT, tuple(items))
    return ReplyRequest(intent, question, bundle, tuple(items))


def test_the_items_asked_about_are_stated_in_both_languages() -> None:
    writer = RuleWriter(COMPOSERS)
    said = writer.write(request("shipping_city", "Which city will you ship it to?", CITY))
    assert "Shenzhen" in said
    said = writer.write(request("shipping_city", "包裹寄到哪个城市？", CITY_ZH))
    assert "深圳" in said
    told = writer.write(request("contact_preference", "How will you let me know?", CHANNEL))
    assert "email" in told
    # No format for the intent: the values themselves.
    assert "Shenzhen" in RuleWriter().write(request("other", "What is my city?", CITY))


def test_a_message_no_item_answers_gets_no_value() -> None:
    writer = RuleWriter(COMPOSERS)
    asked = "Do you have a phone number for me?"
    # One composer per intent states what the context holds, whatever was asked.
    assert "email" in ScriptedWriter(COMPOSERS).write(request("contact_preference", asked, CHANNEL))
    assert writer.write(request("contact_preference", asked, CHANNEL)) == NOTHING_ON_FILE
    asked_zh = "你们有我的电话号码吗？"
    assert writer.write(request("contact_preference", asked_zh, CHANNEL)) == NOTHING_ON_FILE_ZH
    # Nothing loaded at all: never a value from nowhere.
    assert writer.write(request("shipping_city", "Which city?")) == NOTHING_ON_FILE


def test_a_reply_to_the_agents_own_question_is_about_the_steps_subject() -> None:
    """ "Yes, go ahead." asks for nothing of its own: the held action's items answer."""
    receipt = item("refund_receipt", {"refund_id": "R-1", "amount": 5.0}, "L2", 1.0)
    said = RuleWriter().write(request("refund", "Yes, go ahead.", receipt))
    assert "R-1" in said
    assert "R-1" in RuleWriter().write(request("refund", "好的，继续", receipt))


def test_the_support_demo_counts_a_step_without_the_fact_as_not_effective(
    engine_opener: Factory, tmp_path: Path
) -> None:
    """CER is no longer 1.0 by construction: the phone number the customer never gave
    is answered from loaded preferences that do not hold it."""
    clock = FakeClock(START)
    engine = engine_opener(data_dir=tmp_path / "data", clock=clock)
    run = SupportAgent(engine, clock=clock, run_id="r").run()
    phone = run.steps[-1]
    assert phone.title == "S3 phone number never given" and phone.route == "answer"
    assert phone.reply == NOTHING_ON_FILE and phone.written_by == "rules"
    assert phone.check is not None
    assert phone.check.context_loaded and not phone.check.context_used
    assert not phone.check.effective
    assert run.cer()["cer"] == 0.875 and engine.decision_rates().cer == 0.875
    # The preferences it was decided from are the customer's, and were loaded.
    prefs = {p.pref_type for p in engine.list_preferences(USER, tenant=TENANT)}
    assert "contact_channel" in prefs
