"""route, build_context and decide from the message alone (seed 003 §1.2): the intent
recognized in Chinese and English, the fallback to respond, the card's record of it,
an explicit intent winning, and the typed errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memstrata import ContextEngine
from memstrata.agents.support import INTENTS
from memstrata.errors import UnknownIntentError, ValidationError


@pytest.fixture
def engine(engine_opener: Callable[..., ContextEngine]) -> ContextEngine:
    opened = engine_opener()
    for spec in INTENTS:
        opened.register_intent(spec)
    opened.start_session("u1", "help", tenant="t", session_id="s1")
    return opened


def test_route_recognizes_the_intent_in_chinese_and_english(engine: ContextEngine) -> None:
    chinese = engine.route("s1", query="我下的单现在到哪儿了？")
    english = engine.route("s1", None, "Has my parcel left the warehouse yet?")
    for bundle in (chinese, english):
        assert bundle.step_intent == "order_status"
        assert bundle.recognized is not None and not bundle.recognized.fell_back
        assert bundle.recognized.confidence >= bundle.recognized.threshold
    assert chinese.recognized is not None and chinese.recognized.language == "zh"


def test_an_out_of_scope_message_falls_back_to_respond(engine: ContextEngine) -> None:
    bundle = engine.route("s1", query="火星上的天气怎么样？")
    assert bundle.step_intent == "respond"


def test_build_context_recognizes_from_the_input(engine: ContextEngine) -> None:
    built = engine.build_context("s1", None, "这个坏了，钱能退给我吗？", system_prompt="You help.")
    assert built.recognized is not None and built.recognized.intent == "refund"
    explicit = engine.build_context("s1", "respond", "这个坏了", system_prompt="You help.")
    assert explicit.recognized is None


def test_decide_from_the_question_records_the_recognition_on_the_card(
    engine: ContextEngine,
) -> None:
    decision = engine.decide("s1", question="Please refund order O-1042, I paid $299 yesterday")
    card = engine.trace_card(decision.card_id, tenant="t")
    assert card.intent == decision.intent == "refund"
    assert card.detected_intent == "refund" and card.intent_fell_back is False
    assert card.intent_confidence is not None and card.intent_confidence >= 0.4
    kinds = {(e["text"], e["kind"]) for e in card.entities}
    assert {("O-1042", "id"), ("299", "amount")} <= kinds
    assert any(e["kind"] == "date" for e in card.entities)


def test_an_explicit_intent_wins_and_an_unknown_one_still_raises(engine: ContextEngine) -> None:
    bundle = engine.route("s1", "respond", "Has my parcel left the warehouse yet?")
    assert bundle.step_intent == "respond" and bundle.recognized is None
    with pytest.raises(UnknownIntentError):
        engine.route("s1", "no_such_intent", "where is my order")
    with pytest.raises(UnknownIntentError):
        engine.build_context("s1", "no_such_intent", "hi", system_prompt="p")


def test_neither_intent_nor_message_is_a_typed_error_naming_the_field(
    engine: ContextEngine,
) -> None:
    with pytest.raises(ValidationError) as route:
        engine.route("s1")
    assert route.value.field == "query"
    with pytest.raises(ValidationError) as built:
        engine.build_context("s1", None, "  ", system_prompt="p")
    assert built.value.field == "user_input"
    with pytest.raises(ValidationError) as decided:
        engine.decide("s1")
    assert decided.value.field == "question"
