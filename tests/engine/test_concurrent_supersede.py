"""Two write workers and a move: after ``flush()`` only the newest home is current.

The worker handling the older turn commits its version in the slot record, then writes
the point with the rest of its batch; the other worker may close that version in
between. Whoever writes an active version last checks it against the slot record.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memstrata import ContextEngine
from memstrata.clock import FakeClock
from memstrata.config import PipelineSettings

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
USERS = 20


def test_an_older_home_is_never_current_after_flush(engine_opener: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_opener(clock=clock, pipeline=PipelineSettings(worker_threads=2))
    # One user at a time, flushed each time: the two turns go to the two workers.
    for n in range(USERS):
        session = f"s{n}"
        engine.start_session(f"u{n}", "chat", tenant="acme", session_id=session)
        for text in ("I live in Hangzhou.", "Actually I moved to Chengdu last month."):
            engine.observe(session, "user", text)
            clock.advance(timedelta(minutes=1))
        engine.flush()
        bundle = engine.route(session, "respond", "where do I live")
        facts = [
            item.as_dict()["content"]["text"]
            for item in bundle.items
            if item.as_dict()["layer"] == "L3" and item.as_dict()["content"].get("type") == "fact"
        ]
        assert facts == ["user city: Chengdu"], (n, facts)
