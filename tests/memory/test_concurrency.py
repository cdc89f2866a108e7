"""Many writers, one slot: the optimistic commit lets exactly one win each round."""

from __future__ import annotations

import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.config import MemorySettings
from memstrata.errors import ConflictError
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.store import MemoryStore, WriteOutcome
from memstrata.write.commit import FactBatch

T0 = datetime(2025, 1, 1, tzinfo=UTC)
WRITERS = 100


def _value(i: int) -> str:
    # Three tokens of its own per value: the hash embedder keeps them far apart
    # (a near-duplicate verdict would be correct, but is not what this test is about).
    return f"alpha{i} beta{i} gamma{i}"


def test_hundred_concurrent_writers_one_slot(env: Any, fact: Any) -> None:
    store = env.store
    # Each writer observed its value at a different moment; threads start in a
    # shuffled order, so later observations often commit before earlier ones.
    order = list(range(WRITERS))
    random.Random(7).shuffle(order)
    units = {i: fact("home", _value(i), T0 + timedelta(minutes=i)) for i in order}
    barrier = threading.Barrier(WRITERS)

    def run(i: int) -> WriteOutcome:
        barrier.wait()
        return store.write(units[i])

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        outcomes = dict(zip(order, pool.map(run, order), strict=True))

    actions = Counter(o.action for o in outcomes.values())
    assert set(actions) <= {"inserted", "superseded", "ignored_older"}, actions
    assert actions["inserted"] == 1

    # Versions 1..N, no gaps, no repeats; each write got its own.
    assert sorted(o.version for o in outcomes.values()) == list(range(1, WRITERS + 1))
    history = store.history(env.tenant, "u1", "user", "home")
    assert sorted(u.version for u in history) == list(range(1, WRITERS + 1))
    # Oldest first by validity: the order the values were observed in.
    assert [u.value for u in history] == [_value(i) for i in range(WRITERS)]
    assert {u.id for u in history} == {o.unit_id for o in outcomes.values()}

    # Exactly one active version, and it is the latest observation.
    active = [u for u in history if u.active]
    assert [u.value for u in active] == [_value(WRITERS - 1)]
    assert store.active_fact(env.tenant, "u1", "user", "home").value == _value(WRITERS - 1)
    typed_active = env.longterm.count(MEMORIES, tenant=env.tenant, types=("fact",))
    assert typed_active == 1
    # No point was left half-written.
    pending = list(
        env.longterm.iter_records(MEMORIES, Filter(tenant=env.tenant, types=("pending",)))
    )
    assert pending == []
    # Every closed version ends no earlier than it starts, and as_of is answerable
    # throughout: each minute maps to the value observed then or the latest before.
    for i in (0, 17, 50, WRITERS - 1):
        at = T0 + timedelta(minutes=i, seconds=30)
        assert store.as_of(env.tenant, "u1", "user", "home", at).value == _value(i)


def test_losing_every_round_raises_conflict_and_leaves_nothing(
    env: Any, fact: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(
        env.longterm,
        env.redis,
        env.clock,
        settings=MemorySettings(redis_prefix=env.prefix, max_write_attempts=3),
    )
    store.write(fact("city", "Paris", T0))
    # Another writer commits between every read and swap of this one.
    monkeypatch.setattr(store.slots, "swap", lambda *a, **k: False)
    with pytest.raises(ConflictError):
        store.write(fact("city", "Rome", T0 + timedelta(days=1)))
    assert store.active_fact(env.tenant, "u1", "user", "city").value == "Paris"
    assert env.longterm.count(MEMORIES, tenant=env.tenant) == 1


def test_concurrent_copies_of_one_write_keep_the_winner(env: Any, fact: Any) -> None:
    """Replays derive the same point id; a losing copy must not delete the winner's point."""
    store = env.store
    unit = fact("pet", "a grey cat named Miso", T0)
    copies = 8
    barrier = threading.Barrier(copies)

    def run(_: int) -> WriteOutcome:
        barrier.wait()
        return store.write(unit)

    with ThreadPoolExecutor(max_workers=copies) as pool:
        outcomes = list(pool.map(run, range(copies)))

    assert Counter(o.action for o in outcomes)["inserted"] == 1
    active = store.active_fact(env.tenant, "u1", "user", "pet")
    assert active is not None and active.value == "a grey cat named Miso"
    assert len(store.history(env.tenant, "u1", "user", "pet")) == 1


def test_batches_of_one_slot_committed_concurrently_keep_every_version(env: Any, fact: Any) -> None:
    """The handler's batched commit (several units of a slot per batch, batches on
    concurrent threads, lost swaps finished by the unit-by-unit path): versions 1..N,
    one active version, the history in the order the values were observed."""
    batch_commit = FactBatch(env.store)
    embedder = env.longterm.embedder
    per_batch, batches = 5, 20
    order = list(range(batches))
    random.Random(11).shuffle(order)
    units = {
        b: [
            fact("home", _value(b * per_batch + j), T0 + timedelta(minutes=b * per_batch + j))
            for j in range(per_batch)
        ]
        for b in order
    }
    barrier = threading.Barrier(batches)

    def run(b: int) -> list[WriteOutcome]:
        batch = units[b]
        vectors = list(embedder.embed([u.text for u in batch]))
        barrier.wait()
        staged = batch_commit.stage(batch, vectors)
        env.longterm.add_points(MEMORIES, list(staged.points))
        batch_commit.settle(staged)
        return list(staged.outcomes)

    with ThreadPoolExecutor(max_workers=batches) as pool:
        outcomes = [o for found in pool.map(run, order) for o in found]

    total = batches * per_batch
    assert sorted(o.version for o in outcomes) == list(range(1, total + 1))
    history = env.store.history(env.tenant, "u1", "user", "home")
    assert [u.value for u in history] == [_value(i) for i in range(total)]
    assert [u.value for u in history if u.active] == [_value(total - 1)]
    assert env.longterm.count(MEMORIES, tenant=env.tenant, types=("fact",)) == 1
    pending = list(
        env.longterm.iter_records(MEMORIES, Filter(tenant=env.tenant, types=("pending",)))
    )
    assert pending == []
