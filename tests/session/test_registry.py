from __future__ import annotations

import asyncio
import threading
from dataclasses import replace

import pytest

from memstrata.clock import FakeClock
from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.session import SessionRegistry, SessionState


def test_start_sanitizes_the_initial_query() -> None:
    seen: list[str] = []

    def sanitize(text: str, location: str) -> str:
        seen.append(location)
        return text.replace("sk-secret", "[REDACTED:api_key]")

    registry = SessionRegistry(FakeClock(), sanitize)
    state = registry.start("u1", "use key sk-secret please", session_id="s1")
    assert state.initial_query == "use key [REDACTED:api_key] please"
    assert seen == ["l1:s1:initial_query"]


def test_duplicate_and_unknown_sessions() -> None:
    registry = SessionRegistry(FakeClock())
    first = registry.start("u1", "hi", session_id="s1")
    moved = registry.update("s1", lambda state: state.advance(2))
    # The same user (and tenant) starting the same id again gets the open session.
    assert registry.start("u1", "hi again", session_id="s1") is moved
    assert moved.current_step == first.current_step + 2 and moved.initial_query == "hi"
    for other in ({"user_id": "u2"}, {"tenant": "t2"}):
        with pytest.raises(ConflictError) as taken:
            registry.start(
                str(other.get("user_id", "u1")),
                "hi",
                session_id="s1",
                tenant=str(other.get("tenant", "default")),
            )
        assert taken.value.field == "session_id"
    assert registry.get("s1") is moved
    with pytest.raises(NotFoundError):
        registry.get("s2")
    registry.end("s1")
    with pytest.raises(NotFoundError):
        registry.get("s1")


def test_update_cannot_switch_identity() -> None:
    registry = SessionRegistry(FakeClock())
    registry.start("u1", "hi", session_id="s1")
    with pytest.raises(ValidationError, match="session_id"):
        registry.update("s1", lambda s: replace(s, session_id="s2"))
    assert registry.get("s1").session_id == "s1"


def _slow_advance(state: SessionState) -> SessionState:
    # Widen the race window: read, yield the GIL, then write.
    threading.Event().wait(0.0001)
    return state.advance().record_action("tick", state.current_step, state.started_at)


def test_concurrent_threads_lose_no_update() -> None:
    registry = SessionRegistry(FakeClock())
    registry.start("u1", "hi", session_id="s1")
    per_thread, threads = 50, 8

    def worker() -> None:
        for _ in range(per_thread):
            registry.update("s1", _slow_advance)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    final = registry.get("s1")
    assert final.current_step == per_thread * threads
    assert len(final.action_trace) == 256  # bounded trace, all updates applied


async def test_concurrent_asyncio_tasks_and_threads_lose_no_update() -> None:
    registry = SessionRegistry(FakeClock())
    registry.start("u1", "hi", session_id="s1")

    async def task(n: int) -> None:
        for _ in range(n):
            registry.update("s1", lambda s: s.advance())
            await asyncio.sleep(0)

    async def in_thread(n: int) -> None:
        await asyncio.to_thread(lambda: [registry.update("s1", _slow_advance) for _ in range(n)])

    await asyncio.gather(*(task(40) for _ in range(10)), *(in_thread(30) for _ in range(4)))
    assert registry.get("s1").current_step == 40 * 10 + 30 * 4


def test_a_naive_read_modify_write_would_lose_updates() -> None:
    """Guards the test above: compare_and_set rejects a stale write."""
    registry = SessionRegistry(FakeClock())
    first = registry.start("u1", "hi", session_id="s1")
    assert registry.compare_and_set(first, first.advance())
    assert not registry.compare_and_set(first, first.advance(5))
    assert registry.get("s1").current_step == 1
