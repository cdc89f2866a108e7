"""Listing without a query (issue 35, item 2): a user's memories newest first, a page
at a time, every layer's view of each unit; a fact's history; the tenant's users.
On a real engine: embedded Valkey, qdrant-edge and MiniLM."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.errors import NotFoundError, ValidationError
from memstrata.memory.listing import ListedMemory

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
SAID = (
    "I live in Berlin.",
    "I love hiking on weekends.",
    "I moved to Paris.",
    "My budget for the trip is 5000 yuan.",
)


def _filled(engine_factory: Factory) -> tuple[ContextEngine, FakeClock]:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    state = engine.start_session("u1", "chat", tenant="acme", session_id="s1")
    for text in SAID:
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(days=3))
    engine.remember("someone", "I live in Rome.", tenant="acme")
    engine.remember("u1", "I live in Oslo.", tenant="other")
    engine.flush()
    engine.set_preference("u1", "language", "fr", 0.9, tenant="acme")
    return engine, clock


def _all_pages(engine: ContextEngine, size: int, **options: object) -> list[ListedMemory]:
    items: list[ListedMemory] = []
    page = engine.list_memories("u1", tenant="acme", page_size=size, **options)  # type: ignore[arg-type]
    items.extend(page.items)
    while page.next_page is not None:
        page = engine.list_memories(
            "u1",
            tenant="acme",
            page_size=size,
            page=page.next_page,
            **options,  # type: ignore[arg-type]
        )
        assert page.items, "a next_page marker led to an empty page"
        items.extend(page.items)
    return items


def test_a_users_memories_newest_first_in_pages_with_links_both_ways(
    engine_factory: Factory,
) -> None:
    engine, _ = _filled(engine_factory)
    whole = engine.list_memories("u1", tenant="acme", page_size=200)
    assert whole.next_page is None
    paged = _all_pages(engine, 2)
    assert [i.id for i in paged] == [i.id for i in whole.items]  # no gap, no repeat
    stamps = [(i.at, i.id) for i in paged]
    assert stamps == sorted(stamps, reverse=True)
    episodes = [i for i in paged if i.kind == "episode"]
    assert sorted(e.text for e in episodes) == sorted(SAID)  # only u1's, only acme's
    assert all(i.text != "I live in Rome." and "Oslo" not in i.text for i in paged)
    assert paged[0].kind == "preference" and paged[0].preference is not None

    # An episode names the facts it gave; each fact names the episode it came from.
    moved = next(e for e in episodes if e.text == "I moved to Paris.")
    assert [(f.attribute, f.value) for f in moved.facts] == [("city", "Paris")]
    paris = next(i for i in paged if i.fact is not None and i.fact.value == "Paris")
    assert [e.id for e in paris.episodes] == [moved.id]
    assert paris.status == "current" and paris.slot_current is True
    berlin = next(i for i in paged if i.fact is not None and i.fact.value == "Berlin")
    assert berlin.status == "superseded" and berlin.slot_current is False
    assert berlin.fact is not None and berlin.fact.superseded_by == paris.id
    assert berlin.fact.valid_to is not None


def test_kinds_and_the_time_window_narrow_the_list(engine_factory: Factory) -> None:
    engine, _ = _filled(engine_factory)
    facts = _all_pages(engine, 2, kind="fact")
    assert facts and {i.kind for i in facts} == {"fact"}
    assert {i.fact.value for i in facts if i.fact is not None} >= {"Berlin", "Paris"}
    assert {i.kind for i in _all_pages(engine, 5, kind="episode")} == {"episode"}
    assert [i.kind for i in _all_pages(engine, 5, kind="preference")] == ["preference"]
    window = _all_pages(
        engine, 5, kind="episode", since=START + timedelta(days=3), until=START + timedelta(days=6)
    )
    assert [i.text for i in window] == ["I love hiking on weekends."]  # since is inclusive
    assert engine.list_memories("nobody", tenant="acme").items == ()


def test_history_oldest_to_newest_with_validity_and_episodes(engine_factory: Factory) -> None:
    engine, _ = _filled(engine_factory)
    facts = _all_pages(engine, 50, kind="fact")
    paris = next(i for i in facts if i.fact is not None and i.fact.value == "Paris")
    for asked in (paris.id, next(i.id for i in facts if i.fact and i.fact.value == "Berlin")):
        history = engine.history(asked, tenant="acme")
        assert (history.user, history.attribute) == ("u1", "city")
        values = [v.fact.value for v in history.versions if v.fact is not None]
        assert values == ["Berlin", "Paris"]
        old, new = (v.fact for v in history.versions)
        assert old is not None and new is not None
        assert old.valid_to == new.valid_from and new.valid_to is None
        assert [e.text for e in history.versions[0].episodes] == ["I live in Berlin."]
        assert [e.text for e in history.versions[1].episodes] == ["I moved to Paris."]
    with pytest.raises(NotFoundError):
        engine.history(paris.id, tenant="other")  # another tenant's id is no fact here
    episode = _all_pages(engine, 50, kind="episode")[0]
    with pytest.raises(ValidationError) as refused:
        engine.history(episode.id, tenant="acme")
    assert refused.value.field == "fact_id"


def test_users_of_a_tenant_with_counts_and_last_activity(engine_factory: Factory) -> None:
    engine, _ = _filled(engine_factory)
    users = {u.user: u for u in engine.list_users(tenant="acme")}
    assert set(users) == {"u1", "someone"}
    assert users["u1"].episodes == len(SAID) and users["u1"].facts >= 3
    assert users["u1"].last_active == START + timedelta(days=9)
    assert [u.user for u in engine.list_users(tenant="other")] == ["u1"]


def test_a_lower_clearance_sees_less_and_bad_input_is_named(engine_factory: Factory) -> None:
    engine, _ = _filled(engine_factory)
    assert engine.list_memories("u1", tenant="acme", clearance="medium").items
    assert engine.list_memories("u1", tenant="acme", clearance="low").items == ()
    assert engine.list_users(tenant="acme", clearance="low") == ()
    for options, name in (
        ({"kind": "dream"}, "kind"),
        ({"page": "not-a-marker"}, "page"),
        ({"page_size": 0}, "page_size"),
        ({"since": START, "until": START}, "until"),
        ({"since": datetime(2025, 1, 1)}, "since"),
    ):
        with pytest.raises(ValidationError) as refused:
            engine.list_memories("u1", tenant="acme", **options)  # type: ignore[arg-type]
        assert refused.value.field == name, options
