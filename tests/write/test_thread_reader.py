"""The earlier turns of a thread, read back from L3 when the reader does not hold them
(written by another process, or before a restart)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.memory.store import MemoryStore
from memstrata.write.thread import ThreadTurns

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
USER = "u1"


def _store(engine: ContextEngine) -> MemoryStore:
    store = engine.parts.memory
    assert store is not None
    return store


def test_the_thread_is_read_back_from_l3_when_not_held(engine_opener: Factory) -> None:
    """The earlier turns were written by another process (or before a restart): a
    reader holding none of them reads them back from L3, with the facts each names."""
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = "readback"
    engine.start_session(USER, "chat", tenant=tenant, session_id="s-rb")
    receipts = [
        engine.observe("s-rb", role, text)
        for role, text in (("user", "我的生日是5月3号。"), ("assistant", "好的。"))
    ]
    engine.flush()
    said = [engine.written(r, tenant=tenant).episodes[0] for r in receipts]
    assert said[1].thread is not None and said[1].seq is not None
    nxt = replace(said[1], id="next", seq=said[1].seq + 1, text="不对，是6月3号。")
    previous = ThreadTurns(_store(engine)).previous(nxt)
    assert [(p.role, p.text) for p in previous] == [
        ("user", "我的生日是5月3号。"),
        ("assistant", "好的。"),
    ]
    assert [(f.attribute, f.value) for f in previous[0].facts] == [("birthday", "5月3号")]
    # Another user's thread of the same id is not read.
    other = replace(nxt, user="someone-else")
    assert ThreadTurns(_store(engine)).previous(other) == ()
