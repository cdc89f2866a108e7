"""Corrections that correct (issue 25, item 1), through the engine as a user drives it:
an explicit correction supersedes even a rarely-changing value ("May 3" / "June 3",
which a near-duplicate test used to swallow) and its episode carries the new fact while
the old episode is marked past; a set-valued fact loses the value the user takes back
("not peanuts", 我不再对花生过敏, 把花生去掉), which stays in history; feedback naming a
fact wrong takes its value out of the current set. English and Chinese."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.write.facts import (
    START,
    USER,
    Factory,
    current_value,
    history_values,
    memory_of,
    remember_each,
)

from memstrata.clock import FakeClock
from memstrata.config import PipelineSettings
from memstrata.errors import ValidationError

BIRTHDAYS = (
    (
        "en",
        ("My birthday is May 3.", "Sorry, I got that wrong: my birthday is June 3."),
        "When is my birthday?",
        "May 3",
        "June 3",
    ),
    (
        "zh",
        ("我的生日是5月3日。", "不对，我记错了，我的生日是6月3日。"),
        "我的生日是哪天？",
        "5月3日",
        "6月3日",
    ),
)


@pytest.mark.parametrize("case", BIRTHDAYS, ids=[c[0] for c in BIRTHDAYS])
def test_an_explicit_correction_supersedes_a_rarely_changing_value(
    engine_opener: Factory, case: tuple[str, tuple[str, ...], str, str, str]
) -> None:
    lang, texts, question, old, new = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"bd-{lang}"
    written = remember_each(engine, clock, texts, tenant)

    assert current_value(engine, tenant, "birthday") == new
    assert history_values(engine, tenant, "birthday") == [old, new]  # the old value is kept
    # The correcting episode carries the new fact, not the old one.
    assert [u.value for u in written[1]] == [new]
    current = engine.retrieve(question, tenant=tenant, user=USER)
    facts = current.current_facts()
    assert [f.text for f in facts if "birthday" in f.text] == [f"user birthday: {new}"]
    # The old episode is marked past: superseded by the current fact.
    new_id = written[1][0].id
    episodes = {item.text: item for item in current.items if item.kind == "episode"}
    assert episodes[texts[0]].superseded_by == new_id
    assert episodes[texts[1]].superseded_by is None


ALLERGIES = (
    (
        "en-not",
        ("I'm allergic to peanuts and shellfish.", "I'm allergic to shellfish, not peanuts."),
        "peanuts",
        "shellfish",
    ),
    (
        "en-no-longer",
        ("I'm allergic to peanuts and shellfish.", "I'm no longer allergic to peanuts."),
        "peanuts",
        "shellfish",
    ),
    ("zh-not", ("我对花生和海鲜过敏。", "我对海鲜过敏，不是花生。"), "花生", "海鲜"),
    ("zh-no-longer", ("我对花生和海鲜过敏。", "我不再对花生过敏了。"), "花生", "海鲜"),
    ("zh-take-off", ("我对花生和海鲜过敏。", "把花生去掉。"), "花生", "海鲜"),
)


@pytest.mark.parametrize("case", ALLERGIES, ids=[c[0] for c in ALLERGIES])
def test_a_set_valued_fact_loses_the_value_taken_back(
    engine_opener: Factory, case: tuple[str, tuple[str, ...], str, str]
) -> None:
    name, texts, removed, kept = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"al-{name}"
    written = remember_each(engine, clock, texts, tenant)

    assert current_value(engine, tenant, "allergies") == kept
    history = history_values(engine, tenant, "allergies")
    assert any(removed in value for value in history[:-1])  # kept in history
    assert [u.value for u in written[1]] == [kept]  # the correcting episode's fact
    result = engine.retrieve("What am I allergic to?", tenant=tenant, user=USER)
    facts = result.current_facts()
    assert [f.text for f in facts if "allergies" in f.text] == [f"user allergies: {kept}"]
    # The episode that took the value back comes first; the old one is marked past.
    episodes = [item for item in result.items if item.kind == "episode"]
    assert episodes[0].text == texts[1]
    old = next(item for item in episodes if item.text == texts[0])
    assert old.superseded_by == written[1][0].id


def test_removing_the_last_value_closes_the_fact_and_an_unknown_one_changes_nothing(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "al-last"
    remember_each(
        engine, clock, ("I'm allergic to cats.", "I'm no longer allergic to dogs."), tenant
    )
    assert current_value(engine, tenant, "allergies") == "cats"  # nothing of that removed
    remember_each(engine, clock, ("Good news: I'm not allergic to cats anymore.",), tenant)
    assert current_value(engine, tenant, "allergies") is None
    assert history_values(engine, tenant, "allergies") == ["cats"]


def test_a_correction_of_a_set_replaces_it_and_an_addition_still_adds(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "al-fix"
    remember_each(
        engine,
        clock,
        (
            "I'm allergic to peanuts.",
            "Sorry, I got that wrong: I'm allergic to tree nuts and sesame.",
            "Actually, I'm also allergic to kiwi.",
        ),
        tenant,
    )
    assert current_value(engine, tenant, "allergies") == "tree nuts; sesame; kiwi"


def test_observed_in_one_batch_the_removal_applies_after_what_came_before(
    engine_opener: Factory,
) -> None:
    # One worker reads both turns in one batch: the entry that removes is written after
    # the one before it. (Two workers may handle the two turns out of order; a removal
    # read before the value it removes was written finds nothing to remove.)
    clock = FakeClock(START)
    engine = engine_opener(clock=clock, pipeline=PipelineSettings(worker_threads=1))
    state = engine.start_session(USER, "chat", tenant="batch", session_id="s1")
    for text in ("我对花生和海鲜过敏。", "我对海鲜过敏，不是花生。"):
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(minutes=1))
    engine.flush()
    assert current_value(engine, "batch", "allergies") == "海鲜"


@pytest.mark.parametrize(
    ("lang", "texts", "question", "wrong_value", "kept"),
    [
        (
            "en",
            ("I'm allergic to peanuts and shellfish.",),
            "what am I allergic to",
            "peanuts",
            "shellfish",
        ),
        ("zh", ("我对花生和海鲜过敏。",), "我对什么过敏？", "花生", "海鲜"),
    ],
)
def test_feedback_naming_a_value_wrong_removes_it_from_the_current_set(
    engine_opener: Factory,
    lang: str,
    texts: tuple[str, ...],
    question: str,
    wrong_value: str,
    kept: str,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"fb-{lang}"
    remember_each(engine, clock, texts, tenant)
    # The decision used the current set ("peanuts; shellfish"); the checked reply
    # stated peanuts, and the user says that fact is wrong.
    wrong = memory_of(engine).active_fact(tenant, USER, "user", "allergies")
    assert wrong is not None and wrong_value in wrong.value
    engine.start_session(USER, question, tenant=tenant, session_id="q1")
    decision = engine.decide("q1", engine.route("q1", "respond", question), question=question)
    reply = f"You are allergic to {wrong_value}." if lang == "en" else f"你对{wrong_value}过敏。"
    engine.check_reply(decision.card_id, reply, tenant=tenant)
    engine.feedback(
        decision.card_id,
        "corrected",
        tenant=tenant,
        correction="That's not right." if lang == "en" else "不对。",
        wrong=[wrong.id or ""],
    )
    engine.flush()

    assert current_value(engine, tenant, "allergies") == kept
    assert wrong_value in history_values(engine, tenant, "allergies")


def test_feedback_naming_a_single_value_wrong_stops_it_being_current(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    written = remember_each(engine, clock, ("My birthday is May 3.",), "fb-one")
    question = "When is my birthday?"
    engine.start_session(USER, question, tenant="fb-one", session_id="q1")
    decision = engine.decide("q1", engine.route("q1", "respond", question), question=question)
    engine.feedback(
        decision.card_id, "rating", tenant="fb-one", rating=1, wrong=[written[0][0].id or ""]
    )
    engine.flush()
    assert current_value(engine, "fb-one", "birthday") is None
    assert history_values(engine, "fb-one", "birthday") == ["May 3"]


def test_feedback_with_a_malformed_wrong_id_is_refused_and_nothing_changes(
    engine_opener: Factory,
) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    remember_each(engine, clock, ("I'm allergic to peanuts and shellfish.",), "fb-bad")
    question = "what am I allergic to"
    engine.start_session(USER, question, tenant="fb-bad", session_id="q1")
    decision = engine.decide("q1", engine.route("q1", "respond", question), question=question)
    with pytest.raises(ValidationError) as raised:
        engine.feedback(
            decision.card_id, "corrected", tenant="fb-bad", correction="No.", wrong=["no such id!"]
        )
    assert raised.value.field is not None and raised.value.field.startswith("wrong")
    engine.flush()
    assert current_value(engine, "fb-bad", "allergies") == "peanuts; shellfish"
