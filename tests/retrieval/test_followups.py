"""A later turn that corrects or changes what an earlier one said (retrieval/followups.py),
through the engine: no fact versions it (the registry knows no such attribute), yet
retrieve serves it as confident and marks the statement it replaced as the past, the
context block shows the old statement as PAST (and a fact read from it as DISPUTED),
and ``decide`` answers from the correction. An unrelated later turn with a change word
replaces nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.retrieval.followups import ROUTE, changes, corrects, names_someone_else

Factory = Callable[..., ContextEngine]
START = datetime(2025, 5, 1, 9, tzinfo=UTC)
USER = "u1"

CASES = (
    # (name, stated, later, days between, question, new value, old value)
    (
        "en-meant",
        "My dentist appointment is on the 12th.",
        "Oops, I meant the 14th.",
        0.01,
        "When is my dentist appointment?",
        "14th",
        "12th",
    ),
    (
        "zh-wrong",
        "我的车位号是B区305。",
        "不对，我说错了，是B区307。",
        0.01,
        "我的车位号是多少？",
        "B区307",
        "B区305",
    ),
    (
        "en-moved",
        "Our book club meets at the Elm Street library.",
        "The book club moved to the cafe on Fifth now.",
        12,
        "Where does our book club meet?",
        "Fifth",
        "Elm Street",
    ),
    (
        "zh-changed",
        "我们组的周会在周三下午。",
        "周会现在改到周四上午了。",
        9,
        "我们组的周会是什么时候？",
        "周四",
        "周三",
    ),
)


def _said(
    engine: ContextEngine, clock: FakeClock, tenant: str, turns: list[str], gap: float
) -> str:
    session = f"s-{tenant}"
    engine.start_session(USER, "chat", tenant=tenant, session_id=session)
    for text in turns:
        engine.observe(session, "user", text)
        engine.flush()
        clock.advance(timedelta(days=gap))
    clock.advance(timedelta(days=1))
    return session


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_later_correction_is_current_and_the_statement_it_replaced_is_past(
    engine_opener: Factory, case: tuple[str, str, str, float, str, str, str]
) -> None:
    name, stated, later, gap, question, new, old = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"followup-{name}"
    session = _said(engine, clock, tenant, [stated, later], gap)

    found = engine.retrieve(question, tenant=tenant, user=USER)
    by_text = {item.text: item for item in found.items}
    assert later in by_text and stated in by_text
    follow, past = by_text[later], by_text[stated]
    assert not follow.low_confidence and ROUTE in follow.routes
    assert past.superseded_by == follow.id
    assert found.items.index(follow) < found.items.index(past)

    built = engine.build_context(session, "respond", question, system_prompt="You help.")
    block = next(m["content"] for m in built.messages() if "## Retrieved context" in m["content"])
    for piece in block.split("\n\n"):
        label = piece.splitlines()[0]
        if old in piece and new not in piece and " L3 " in label:
            assert "PAST" in label or "DISPUTED" in label, piece
    current = [
        p
        for p in block.split("\n\n")
        if new in p and " L3 " in p.splitlines()[0] and "LOW CONFIDENCE" not in p
    ]
    assert current

    decision = engine.decide(session, question=question)
    assert decision.route != "ask", decision.reasons


def test_an_unrelated_later_change_replaces_nothing(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "followup-unrelated"
    stated = "My gym locker is number 42."
    _said(engine, clock, tenant, [stated, "I switched to decaf coffee now."], 10)
    found = engine.retrieve("What's my gym locker number?", tenant=tenant, user=USER)
    locker = next(item for item in found.items if item.text == stated)
    assert locker.superseded_by is None and not locker.low_confidence
    assert all(ROUTE not in item.routes for item in found.items)


def test_a_question_about_other_people_is_left_as_ranked(engine_opener: Factory) -> None:
    # Conversations between people (LoCoMo's): "Caroline started painting" is news, not
    # a correction of what she said before, and must not push the evidence down.
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "followup-others"
    stated = "Caroline's book club meets at the Elm Street library."
    _said(engine, clock, tenant, [stated, "The book club moved to the cafe on Fifth now."], 12)
    found = engine.retrieve("Where does Caroline's book club meet?", tenant=tenant, user=USER)
    assert all(ROUTE not in item.routes for item in found.items)
    assert all(item.superseded_by is None for item in found.items if item.text == stated)


@pytest.mark.parametrize(
    ("question", "others"),
    [
        ("What did Caroline research?", True),
        ("When did Melanie paint a sunrise?", True),
        ("When's the standup?", False),
        ("How many people is the dinner for?", False),
        ("Where does my sister Anna live?", False),  # the user's own, by name
        ("我们组的周会是什么时候？", False),
    ],
)
def test_which_questions_name_someone_else(question: str, others: bool) -> None:
    assert names_someone_else(question) is others


@pytest.mark.parametrize(
    ("text", "correction", "change"),
    [
        ("Sorry, I meant 10,000.", True, False),
        ("Wait, make that the 19th.", True, False),
        ("不对，是6月3号。", True, False),
        ("On second thought, let's say 40 guests.", True, False),
        ("想了想还是定在周五吧。", True, False),
        ("Oops，我说错了，是3月15号。", True, False),
        ("Airline changed it, I'm on MU5139 now.", False, True),
        ("出差推迟了，改到下下周二。", False, True),
        ("I bought new running shoes.", False, True),
        ("The weather was lovely.", False, False),
        ("今天吃了火锅。", False, False),
    ],
)
def test_cues(text: str, correction: bool, change: bool) -> None:
    assert corrects(text) is correction
    assert changes(text) is change


def test_a_bare_correction_corrects_only_what_came_just_before(engine_opener: Factory) -> None:
    """ "Sorry, I meant the 9th." right after a date corrects it; the same words
    after something else was said in between do not reach back past it."""
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    stated = "The plumber comes on the 4th."
    _said(
        engine,
        clock,
        "followup-between",
        [stated, "I watched a documentary about whales.", "Sorry, I meant the 9th."],
        0.5,
    )
    found = engine.retrieve("When does the plumber come?", tenant="followup-between", user=USER)
    plumber = next(item for item in found.items if item.text == stated)
    assert plumber.superseded_by is None
