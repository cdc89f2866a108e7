"""Seed 003's example end to end through the public engine API: a user's city is
recorded, months later the user moves; later context gets only the new city while
the history "as of" the earlier date still answers with the old one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.router import IntentSpec, L3Need

POLICY = IntentSpec("local_policy", l3=(L3Need("memories", k=5, label="user_memory"),))


@pytest.mark.parametrize(
    ("before", "after", "old", "new", "question"),
    [
        (
            "I live in Hangzhou.",
            "I moved to Chengdu last week.",
            "Hangzhou",
            "Chengdu",
            "Which city does the user live in, for the local policy?",
        ),
        ("我住在杭州。", "我搬到成都了。", "杭州", "成都", "用户住在哪个城市？本地政策"),
    ],
    ids=["english", "chinese"],
)
def test_a_move_supersedes_the_old_city(
    engine: ContextEngine,
    clock: FakeClock,
    before: str,
    after: str,
    old: str,
    new: str,
    question: str,
) -> None:
    start = clock.now()
    engine.register_intent(POLICY)
    engine.start_session("u1", "hello", session_id="s-jan")
    first = engine.observe("s-jan", "user", before)
    assert first.queued and first.turn_id == "t1"
    engine.flush(30)

    clock.advance(timedelta(days=90))
    engine.start_session("u1", "hello again", session_id="s-apr")
    assert engine.observe("s-apr", "user", after).queued
    engine.flush(30)

    # Exact read of the slot, no vector search.
    active = engine.parts.memory.active_fact("default", "u1", "user", "city")
    assert active is not None and active.value == new and active.version == 2

    # A later question: the new city is the current fact; what the user said of the
    # old one is still there, as the past, quoting what replaced it.
    clock.advance(timedelta(days=3))
    engine.start_session("u1", question, session_id="s-later")
    bundle = engine.route("s-later", "local_policy", question)
    l3 = bundle.layer("L3")
    facts = [str(i.content["text"]) for i in l3 if i.content["type"] == "fact"]
    assert facts and all(old not in text and new in text for text in facts)
    for item in l3:
        if old in str(item.content["text"]):
            assert item.content["type"] == "episode" and new in item.content["replaced_by"]
    hits = engine.search("u1", question, k=10)
    assert [h.payload["value"] for h in hits if h.payload.get("attribute") == "city"] == [new]

    # History on request: both versions, the old one closed when the new one began.
    history = engine.parts.memory.history("default", "u1", "user", "city")
    assert [(u.value, u.version, u.active) for u in history] == [(old, 1, False), (new, 2, True)]
    assert history[0].valid_to == history[1].valid_from == start + timedelta(days=90)
    every = engine.search("u1", question, k=10, include_history=True)
    assert {h.payload["value"] for h in every if h.payload.get("attribute") == "city"} == {old, new}

    # "As of" the earlier date the old city answers, through the store and the search.
    january = start + timedelta(days=30)
    then = engine.parts.memory.as_of("default", "u1", "user", "city", january)
    assert then is not None and then.value == old
    past = engine.search("u1", question, k=10, as_of=january)
    assert [h.payload["value"] for h in past if h.payload.get("attribute") == "city"] == [old]


def test_observe_keeps_only_ids_and_hashes_in_l1(engine: ContextEngine) -> None:
    engine.start_session("u2", "hi", session_id="s-l1")
    engine.observe("s-l1", "user", "I prefer green tea over coffee.")
    engine.observe("s-l1", "assistant", "Noted: green tea it is.")
    state = engine.session("s-l1")
    assert [(t.turn_id, t.role) for t in state.history] == [("t1", "user"), ("t2", "assistant")]
    assert state.turns_observed == 2
    assert "green tea" not in repr(state.as_dict())
    engine.flush(30)
    (unit,) = [
        u for u in [engine.parts.memory.active_fact("default", "u2", "user", "prefers")] if u
    ]
    assert unit.value == "green tea" and unit.source.turn_id == "t1"
