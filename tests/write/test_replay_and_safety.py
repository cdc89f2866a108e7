"""Idempotence of the write path, and the gateway in front of the stream."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, cast

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.longterm.points import Filter
from memstrata.memory.codec import UNIT_TYPES
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.write.payloads import KIND_TURN, turn_payload

SECRETS = {
    "openai": "sk-proj-Zx81KqLmN0pQrStUvWxYz1234567890abcd",
    "github": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "password": "hunter2-Corr3ct-Horse",
    "email": "li.wei@example.com",
    "cn_mobile": "13812345678",
    "cn_id": "11010519491231002X",
    "card": "4111111111111111",
}
MARKER = "Hangzhou"


def memories_of(
    engine: ContextEngine, user: str, types: tuple[str, ...] = UNIT_TYPES
) -> list[dict[str, Any]]:
    flt = Filter(tenant="default", user=user, types=types)
    return [dict(r.payload) for r in engine.parts.longterm.iter_records("memories", flt)]


def test_the_same_turn_enqueued_twice_is_written_once(
    engine: ContextEngine, clock: FakeClock
) -> None:
    turn = Episode(
        id=turn_episode_id("default", "s-replay#0", 1),
        text="I work as a nurse.",
        role="user",
        tenant="default",
        user="u-replay",
        source="turn:s-replay/t1",
        session_id="s-replay",
        turn_id="t1",
        thread="s-replay#0",
        seq=1,
        observed_at=clock.now(),
    )
    queue = engine.parts.pipeline.queue
    # Back to back: the two consumer threads may each take a copy at once.
    queue.enqueue(KIND_TURN, turn_payload(turn))
    queue.enqueue(KIND_TURN, turn_payload(turn))
    engine.flush(30)
    assert [m["value"] for m in memories_of(engine, "u-replay")] == ["nurse"]
    handled = engine.write_stats().handler.entries
    assert handled in (1, 2)
    # Once acknowledged, a replay is acked by the queue without reaching the handler.
    queue.enqueue(KIND_TURN, turn_payload(turn))
    engine.flush(30)
    assert engine.write_stats().handler.entries == handled

    # Past the queue's dedupe window the entry is handled again; the store still
    # finds the point it wrote (ids derive from content and observation time).
    clock.advance(timedelta(days=8))
    queue.enqueue(KIND_TURN, turn_payload(turn))
    engine.flush(30)
    stored = memories_of(engine, "u-replay")
    assert len(stored) == 1 and stored[0]["active"] is True
    assert len(memories_of(engine, "u-replay", ("episode",))) == 1
    assert engine.write_stats().handler.entries == handled + 1


def test_a_repeated_turn_is_dropped_by_the_filter(engine: ContextEngine) -> None:
    engine.start_session("u-rep", "hi", session_id="s-rep")
    for _ in range(3):
        engine.observe("s-rep", "user", "I live in Suzhou.")
    engine.observe("s-rep", "user", "ok thanks!")
    engine.flush(30)
    stats = engine.write_stats().handler
    assert stats.turns_kept == 1
    assert dict(stats.dropped) == {"repeat": 2, "thanks": 1}
    assert [m["value"] for m in memories_of(engine, "u-rep")] == ["Suzhou"]
    # Every turn is kept as said, repeats and small talk included.
    assert len(memories_of(engine, "u-rep", ("episode",))) == 4


def test_secrets_and_pii_never_reach_the_stream_the_store_or_a_log(
    engine: ContextEngine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    engine.start_session("u-sec", "hi", session_id="s-sec")
    texts = [
        f"I live in {MARKER}. My email is {SECRETS['email']} and my phone is "
        f"{SECRETS['cn_mobile']}.",
        f"My api key is {SECRETS['openai']}, the token is {SECRETS['github']}, "
        f"password={SECRETS['password']}.",
        f"我的身份证号是{SECRETS['cn_id']}，我喜欢龙井。My order ORD-2024-000123 was paid with "
        f"card {SECRETS['card']} for 45 yuan.",
    ]
    for text in texts:
        assert engine.observe("s-sec", "user", text).queued
    engine.flush(30)
    logging.getLogger("memstrata.test").warning("observed %s", texts[0])

    client = cast(Any, engine.parts.working_memory.backend).client
    stream = "\n".join(
        f"{entry_id} {fields}"
        for entry_id, fields in client.xrange(engine.parts.pipeline.queue.keys.stream, "-", "+")
    )
    payloads = "\n".join(str(m) for m in memories_of(engine, "u-sec", (*UNIT_TYPES, "episode")))
    l1 = repr(engine.session("s-sec").as_dict())
    for where, blob in {"stream": stream, "store": payloads, "logs": caplog.text}.items():
        assert MARKER in blob, f"the scan of {where} is blind"
        for name, secret in SECRETS.items():
            assert secret not in blob, f"{name} reached the {where}"
    for secret in SECRETS.values():
        assert secret not in l1
    # Extraction still worked on the sanitized text.
    values = {m["attribute"]: m["value"] for m in memories_of(engine, "u-sec")}
    assert values["city"] == MARKER and "龙井" in values["likes"]
