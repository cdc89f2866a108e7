"""The queue handler on a real store: episodes always kept, facts on them, failures."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from memstrata.errors import ExtractionError
from memstrata.extract.candidates import Candidate, Turn
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.write.entries import QueueEntry
from memstrata.write.handle import WriteHandler
from memstrata.write.payloads import KIND_NOTE, KIND_TURN, KIND_UNIT, note_payload, turn_payload
from memstrata.write.payloads import unit_payload as encode_unit

AT = datetime(2025, 3, 1, 8, 30, tzinfo=UTC)
Env = Any  # tests/conftest.py: Env
StoreFactory = Any  # ... and make_store


def episode(text: str, seq: int, *, tenant: str = "t1", thread: str = "s1#0") -> Episode:
    return Episode(
        id=turn_episode_id(tenant, thread, seq),
        tenant=tenant,
        user="u1",
        text=text,
        role="user",
        observed_at=AT,
        source=f"turn:s1/t{seq}",
        session_id="s1",
        turn_id=f"t{seq}",
        thread=thread,
        seq=seq,
    )


def entry(n: int, kind: str, payload: dict[str, Any], *, deliveries: int = 1) -> QueueEntry:
    return QueueEntry(f"{n}-0", kind, payload, f"h{n}", deliveries)


def points(env: Env, *types: str) -> list[dict[str, Any]]:
    flt = Filter(tenant=env.tenant, types=types or None)
    return [{"id": r.id, **r.payload} for r in env.longterm.iter_records(MEMORIES, flt)]


def unit() -> MemoryUnit:
    return MemoryUnit(
        subject="user",
        attribute="order",
        value="ORD-2025-000123 paid 45 yuan",
        kind="event",
        source=UnitSource(tenant="t1", user="u1"),
        observed_at=AT,
        valid_from=AT,
    )


def test_every_turn_is_an_episode_and_facts_name_it(make_store: StoreFactory) -> None:
    env = make_store()
    handler = WriteHandler(env.store)
    turns = ["I live in Hangzhou.", "ok thanks", "What time is it?"]
    handler([entry(i, KIND_TURN, turn_payload(episode(t, i + 1))) for i, t in enumerate(turns)])
    stored = {p["text"]: p for p in points(env, "episode")}
    assert sorted(stored) == sorted(turns)  # small talk and questions are kept as said
    (fact,) = points(env, "fact")
    city = stored["I live in Hangzhou."]
    assert fact["value"] == "Hangzhou" and list(fact["episodes"]) == [city["id"]]
    assert list(city["facts"]) == [fact["id"]]
    assert stored["ok thanks"]["facts"] == ()
    assert handler.stats().episodes_written == 3 and handler.stats().dropped


def test_a_remembered_text_is_kept_whole_with_its_facts(make_store: StoreFactory) -> None:
    env = make_store()
    handler = WriteHandler(env.store)
    handler([entry(1, KIND_NOTE, note_payload("t1", "u1", "Call me after 6pm, I'm busy.", AT))])
    (note,) = points(env, "episode")
    assert note["text"] == "Call me after 6pm, I'm busy." and note["source"] == "remember"


def test_invalid_entries_are_skipped_without_a_write(
    make_store: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    env = make_store()
    handler = WriteHandler(env.store)
    bad_turn = dict(turn_payload(episode("I live in Hangzhou.", 1)))
    bad_turn["role"] = "narrator"
    handler(
        [
            entry(1, KIND_TURN, bad_turn),
            entry(2, KIND_UNIT, {**encode_unit(unit()), "value": ""}),
            entry(3, "mystery", {}),
            entry(4, KIND_UNIT, encode_unit(unit())),
        ]
    )
    assert [p["value"] for p in points(env)] == ["ORD-2025-000123 paid 45 yuan"]
    assert handler.stats().invalid_entries == 3
    assert "Hangzhou" not in caplog.text


def test_an_extraction_failure_keeps_the_episode(make_store: StoreFactory) -> None:
    class Broken:
        def extract(self, turn: Turn) -> tuple[Candidate, ...]:
            raise ExtractionError("endpoint down")

    env = make_store()
    handler = WriteHandler(env.store, extractor=Broken())
    handler([entry(1, KIND_TURN, turn_payload(episode("I live in Hangzhou.", 1)))])
    assert [p["text"] for p in points(env)] == ["I live in Hangzhou."]
    assert handler.stats().extraction_failures == 1


def test_a_store_failure_is_retried_with_the_same_units(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_store()
    handler = WriteHandler(env.store)
    real = env.longterm.add_points
    calls = {"n": 0}

    def flaky(collection: str, batch: Any) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("store down")
        return real(collection, batch)

    monkeypatch.setattr(env.longterm, "add_points", flaky)
    payload = turn_payload(episode("I live in Hangzhou.", 1))
    with pytest.raises(ConnectionError):
        handler([entry(1, KIND_TURN, payload)])
    # The redelivery is not mistaken for a repeated turn by the worth filter.
    handler([entry(1, KIND_TURN, payload, deliveries=2)])
    assert [p["value"] for p in points(env, "fact")] == ["Hangzhou"]
    assert len(points(env, "episode")) == 1
    assert handler.stats().store_failures == 1


def test_copies_in_flight_on_two_threads_are_written_after_each_other(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_store()
    started, release = threading.Event(), threading.Event()
    real = env.longterm.add_points

    def slow(collection: str, batch: Any) -> list[str]:
        started.set()
        release.wait(5)
        return real(collection, batch)

    monkeypatch.setattr(env.longterm, "add_points", slow)
    handler = WriteHandler(env.store)
    payload = turn_payload(episode("I live in Hangzhou.", 1))
    first = threading.Thread(target=handler, args=([entry(1, KIND_TURN, payload)],))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=handler, args=([entry(2, KIND_TURN, payload)],))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waits for the first copy instead of racing it
    release.set()
    first.join(5)
    second.join(5)
    assert [p["value"] for p in points(env, "fact")] == ["Hangzhou"]
    assert len(points(env, "episode")) == 1


def test_a_long_turn_gets_window_keys_in_the_same_batch(make_store: StoreFactory) -> None:
    env = make_store()
    handler = WriteHandler(env.store)
    words = [f"w{i}" for i in range(400)]
    long_text = " ".join(words)
    handler([entry(1, KIND_TURN, turn_payload(episode(long_text, 1)))])
    (stored,) = points(env, "episode")
    windows = points(env, "episode_window")
    assert windows and {w["episode"] for w in windows} == {stored["id"]}
    # Every window reads a part of the turn past what its own vector covers.
    assert all(w["text"] in long_text and w["text"] != long_text for w in windows)
    assert any(w["text"].endswith("w399") for w in windows)
