"""Issue 32, item 4, through the engine: facts that admit doubt. A newer episode on the
same topic that says the fact changed without saying to what ("我搬家了。", "I changed
jobs.") marks the older fact disputed: its confidence drops, the context block shows
it with the newer episode and both dates and never as plainly current, the trace card
says so, and ``decide`` asks instead of answering from it. A new value supersedes it
as usual; the same value said again takes the doubt back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.memory.store import MemoryStore
from memstrata.retrieval.confidence import reason

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
USER = "u1"

CASES = (
    # (name, stated, changed, question, attribute, value)
    ("zh-moved", "我住在杭州。", "我搬家了。", "我住在哪里？", "city", "杭州"),
    ("en-jobs", "I work as a teacher.", "I changed jobs.", "What is my job?", "job", "teacher"),
    (
        "en-moved",
        "I live in Hangzhou.",
        "We moved last month.",
        "Where do I live?",
        "city",
        "Hangzhou",
    ),
    ("zh-jobs", "我是一名老师。", "我换工作了。", "我的工作是什么？", "job", "老师"),
)


def _store(engine: ContextEngine) -> MemoryStore:
    store = engine.parts.memory
    assert store is not None
    return store


def _said(engine: ContextEngine, clock: FakeClock, tenant: str, *texts: str) -> str:
    """Each text observed in one session, four days apart; the session id."""
    session = f"s-{tenant}"
    engine.start_session(USER, "chat", tenant=tenant, session_id=session)
    for text in texts:
        engine.observe(session, "user", text)
        engine.flush()
        clock.advance(timedelta(days=4))
    return session


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_change_without_a_value_disputes_the_older_fact(
    engine_opener: Factory, case: tuple[str, str, str, str, str, str]
) -> None:
    name, stated, changed, question, attribute, value = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"dispute-{name}"
    session = _said(engine, clock, tenant, stated, changed)

    fact = _store(engine).active_fact(tenant, USER, "user", attribute)
    assert fact is not None and fact.value == value  # kept: nothing said what replaces it
    assert fact.disputed is not None
    assert fact.disputed.text == changed
    assert fact.disputed.at == START + timedelta(days=4)
    assert fact.source.confidence < fact.disputed.confidence  # its confidence dropped

    # The context block: never "current fact", shown with both dates and the newer words.
    built = engine.build_context(session, "respond", question, system_prompt="You help.")
    block = next(m["content"] for m in built.messages() if "## Retrieved context" in m["content"])
    shown = [item for item in block.split("\n\n") if f"\n{fact.text}\n" in item]
    assert shown  # the fact is in the block, and every time it is shown, marked
    for item in shown:
        line = item.splitlines()[0]
        assert "DISPUTED" in line and "current fact" not in line
        assert "stated 2025-03-01" in line and "2025-03-05" in line and changed in line

    # decide asks rather than answering from it; its card says why.
    bundle = engine.route(session, "respond", question)
    decision = engine.decide(session, bundle, question=question)
    assert decision.route == "ask"
    assert any(r.startswith("disputed:") and changed in r for r in decision.reasons)
    card = engine.trace_card(decision.card_id, tenant=tenant)
    assert any("disputed:" in r and "2025-03-05" in r for r in card.reasons)

    # retrieve reads the same doubt: the fact comes back flagged, its reason says why.
    found = engine.retrieve(question, tenant=tenant, user=USER)
    facts = [f for item in found.items for f in (item, *item.facts) if f.id == fact.id]
    assert facts and all(f.low_confidence for f in facts)
    assert all("disputed" in (reason(f) or "") for f in facts)


def test_a_new_value_supersedes_a_disputed_fact_and_the_same_value_confirms_it(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    store = _store(engine)
    _said(engine, clock, "confirm", "我住在杭州。", "我搬家了。", "我住在杭州。")
    fact = store.active_fact("confirm", USER, "user", "city")
    assert fact is not None and fact.value == "杭州"
    assert fact.disputed is None and fact.source.confidence == pytest.approx(
        store.history("confirm", USER, "user", "city")[0].source.confidence
    )

    _said(engine, clock, "supersede", "I live in Hangzhou.", "We moved.", "I live in Chengdu.")
    now = store.active_fact("supersede", USER, "user", "city")
    assert now is not None and now.value == "Chengdu" and now.disputed is None


@pytest.mark.parametrize(
    "texts",
    [
        ("我住在杭州。", "我还没搬家。"),  # not done
        ("I live in Hangzhou.", "My brother moved."),  # someone else
        ("I live in Hangzhou.", "Should I move?"),  # a question
        ("I live in Hangzhou.", "If we moved, where would we go."),  # a hypothetical
        ("I live in Hangzhou.", "I moved to Chengdu."),  # the rules read the new value
        ("I work as a teacher.", "I left my umbrella at work."),  # no change of job
    ],
)
def test_no_doubt_without_a_change(engine_opener: Factory, texts: tuple[str, str]) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    _said(engine, clock, "nodoubt", *texts)
    for attribute in ("city", "job"):
        fact = _store(engine).active_fact("nodoubt", USER, "user", attribute)
        assert fact is None or fact.disputed is None


def test_that_changed_disputes_the_value_just_stated(engine_opener: Factory) -> None:
    """Read in its thread: "that changed" / 变了 names no topic; it means the value the
    user just stated."""
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    _said(engine, clock, "changed-en", "My budget is 8000 yuan.", "That changed.")
    _said(engine, clock, "changed-zh", "我的预算是8000元。", "这个已经变了。")
    for tenant in ("changed-en", "changed-zh"):
        fact = _store(engine).active_fact(tenant, USER, "user", "budget")
        assert fact is not None and fact.disputed is not None


@pytest.mark.parametrize("question", ["我对什么过敏？", "What am I allergic to?"])
def test_a_question_a_disputed_fact_does_not_bear_on_is_answered(
    engine_opener: Factory, question: str
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    session = _said(engine, clock, "other", "我对花生过敏。", "我住在杭州。", "我搬家了。")
    city = _store(engine).active_fact("other", USER, "user", "city")
    assert city is not None and city.disputed is not None
    bundle = engine.route(session, "respond", question)
    decision = engine.decide(session, bundle, question=question)
    assert decision.route == "answer"
    assert not any(r.startswith("disputed:") for r in decision.reasons)
