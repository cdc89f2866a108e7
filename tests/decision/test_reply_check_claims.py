"""engine.check_reply reads amounts, dates, ids and negations (issue 25, "Why" case 3):
a reply that gives another amount than the one held, or denies a held allergy, is a
conflict, asks for regeneration and never counts toward CER; a reply that agrees
(the same value written another way, a paraphrase) stays consistent. English and
Chinese, against the real Valkey and Qdrant engine."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata import ContextEngine
from memstrata.clock import FakeClock
from memstrata.decision import ReplyCheck
from memstrata.errors import ValidationError

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def remembered(factory: Factory, *said: str) -> ContextEngine:
    clock = FakeClock(START)
    engine = factory(clock=clock)
    engine.start_session("u1", "trip", tenant="acme", session_id="s1")
    for text in said:
        engine.observe("s1", "user", text)
        clock.advance(timedelta(minutes=1))
    engine.flush()
    return engine


def check(engine: ContextEngine, question: str, reply: str) -> tuple[str, ReplyCheck]:
    decision = engine.decide("s1", engine.route("s1", "respond", question))
    return decision.card_id, engine.check_reply(decision.card_id, reply, tenant="acme")


@pytest.mark.parametrize(
    ("said", "question", "wrong", "right"),
    [
        (
            "My budget for the trip is 5000 yuan.",
            "what is my budget",
            "Your budget is 3000 yuan, so the hotel fits.",
            ("Your budget is 5,000 yuan.", "With your budget of ¥5000, the hotel fits."),
        ),
        (
            "我这次旅行的预算是5000元。",
            "我的预算是多少",
            "你的预算是3000元，这家酒店可以。",
            ("你的预算是5,000元。", "你的预算是¥5000，够用了。"),
        ),
    ],
    ids=["en", "zh"],
)
def test_an_amount_with_a_unit_that_disagrees_is_a_conflict_and_not_effective(
    engine_opener: Factory, said: str, question: str, wrong: str, right: tuple[str, ...]
) -> None:
    engine = remembered(engine_opener, said)
    card_id, result = check(engine, question, wrong)
    assert not result.consistent and result.regenerate
    assert "3000" in result.conflicts[0] and "5" in result.conflicts[0]
    assert result.context_used and not result.effective
    card = engine.trace_card(card_id, tenant="acme")
    assert card.consistency == "conflict" and card.effective is False
    assert engine.decision_rates().cer == 0.0
    for reply in right:
        _, fine = check(engine, question, reply)
        assert fine.consistent and fine.effective, (reply, fine.conflicts)
    # Nothing held was lost to the conflicting reply.
    found = engine.retrieve(question, tenant="acme", user="u1")
    texts = " ".join(str(i.payload.get("text", "")) for i in (*found.items, *found.below_threshold))
    assert "5000" in texts


@pytest.mark.parametrize(
    ("said", "question", "wrong", "right"),
    [
        (
            "I'm allergic to peanuts.",
            "do I have any allergies",
            ("You have no allergies, peanuts are fine.", "Peanuts are fine for you, enjoy."),
            ("Since you're allergic to peanuts, I left them out.", "The satay has no peanuts."),
        ),
        (
            "我对花生过敏。",
            "我对什么过敏",
            ("你没有过敏，花生没问题。", "花生对你没问题，放心吃。"),
            ("你对花生过敏，我把花生去掉了。", "这道菜不含花生，你可以放心吃。"),
        ),
    ],
    ids=["en", "zh"],
)
def test_a_denied_allergy_is_a_conflict_and_never_counts_toward_cer(
    engine_opener: Factory,
    said: str,
    question: str,
    wrong: tuple[str, ...],
    right: tuple[str, ...],
) -> None:
    engine = remembered(engine_opener, said)
    for reply in wrong:
        card_id, result = check(engine, question, reply)
        assert not result.consistent and result.regenerate, reply
        assert not result.effective
        assert engine.trace_card(card_id, tenant="acme").effective is False
    assert engine.decision_rates().cer == 0.0
    for reply in right:
        _, fine = check(engine, question, reply)
        assert fine.consistent, (reply, fine.conflicts)


def test_dates_ids_and_places_are_compared_in_both_languages(engine_opener: Factory) -> None:
    engine = remembered(
        engine_opener,
        "My birthday is May 3.",
        "My order number is A1234.",
        "I live in Berlin.",
        "我的航班是2026年5月3日。",
    )
    conflicting = [
        ("when is my birthday", "Your birthday is on June 3."),
        ("what is my order number", "I checked order A1243 for you: it shipped."),
        ("where do I live", "You don't live in Berlin, so the offer doesn't apply."),
        ("where do I live", "Since you live in Munich, the Munich store is closest."),
        ("我的航班是哪天", "你的航班在5月4日。"),
    ]
    for question, reply in conflicting:
        _, result = check(engine, question, reply)
        assert not result.consistent, reply
    agreeing = [
        ("when is my birthday", "Your birthday, 3 May, is a Saturday this year."),
        ("what is my order number", "Order #A1234 ships in 2 days from warehouse 7."),
        ("where do I live", "You're based in Berlin, so the local store is closest."),
        ("我的航班是哪天", "你的航班是2026年5月3日，记得提前两小时到机场。"),
        ("what is my order number", "Your refund of 49.99 dollars for order A1234 is on its way."),
    ]
    for question, reply in agreeing:
        _, result = check(engine, question, reply)
        assert result.consistent, (reply, result.conflicts)


def test_a_regenerated_reply_that_agrees_makes_the_step_effective_again(
    engine_opener: Factory,
) -> None:
    engine = remembered(engine_opener, "My budget for the trip is 5000 yuan.")
    decision = engine.decide("s1", engine.route("s1", "respond", "what is my budget"))
    first = engine.check_reply(decision.card_id, "Your budget is 3000 yuan.", tenant="acme")
    assert first.regenerate
    second = engine.check_reply(decision.card_id, "Your budget is 5000 yuan.", tenant="acme")
    assert second.consistent and second.effective
    card = engine.trace_card(decision.card_id, tenant="acme")
    assert card.consistency == "consistent" and card.effective is True
    with pytest.raises(ValidationError, match="reply"):
        engine.check_reply(decision.card_id, "x" * 100_000, tenant="acme")
    # The refused reply left the card's verdict as it was.
    assert engine.trace_card(decision.card_id, tenant="acme").effective is True
