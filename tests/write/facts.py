"""Helpers of the write tests that drive facts the way a user does: remember a text,
flush, read the slot's current value and history."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
USER = "u1"


def memory_of(engine: ContextEngine) -> MemoryStore:
    store = engine.parts.memory
    assert store is not None
    return store


def remember_each(
    engine: ContextEngine, clock: FakeClock, texts: tuple[str, ...], tenant: str
) -> list[list[MemoryUnit]]:
    """Each text remembered and flushed in turn, a day apart; the facts each wrote."""
    written = []
    for text in texts:
        receipt = engine.remember(USER, text, tenant=tenant)
        engine.flush()
        written.append(list(engine.written(receipt, tenant=tenant).facts))
        clock.advance(timedelta(days=1))
    return written


def current_value(engine: ContextEngine, tenant: str, attribute: str) -> str | None:
    active = memory_of(engine).active_fact(tenant, USER, "user", attribute)
    return None if active is None else active.value


def history_values(engine: ContextEngine, tenant: str, attribute: str) -> list[str]:
    return [u.value for u in memory_of(engine).history(tenant, USER, "user", attribute)]
