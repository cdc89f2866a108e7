"""Reads L3 cannot answer, answered from the cached reads in L2 (the reader's fallback).

A real store (qdrant-edge) behind a fault-injecting index double, the hash embedder
behind a fault-injecting embedder double, and the cache in a real L2 backend. Checked
from the user's side (what a read returns, and why) and from the backend's side (how
many reads reached L3 once its breaker opened). Timing only where a bound is the
point: a read against an index that would take 60 s answers within its deadline plus
a generous margin.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.errors import BackendUnavailableError, ValidationError
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval import RetrievalQuery, Retriever
from memstrata.retrieval.fallback import CACHED_ROUTE, ReadFallback
from memstrata.retrieval.guard import (
    CIRCUIT_OPEN,
    EMBEDDER_FAILED,
    L3_TIMEOUT,
    L3_UNAVAILABLE,
    ReadGuard,
)
from memstrata.testing import WorkingBackendCase
from memstrata.testing.embedders import HashEmbedder
from memstrata.testing.faults import FaultyEmbedder, FaultyIndex
from memstrata.testing.indexes import make_index
from memstrata.working import InMemoryBackend
from memstrata.working.keys import recall_key
from memstrata.working.recall import RecallCache

HANG_S = 60.0
DEADLINE_S = 2.0
MARGIN_S = 20.0
NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
FACTS = (
    "Maria is allergic to peanuts and shellfish",
    "Maria lives in Chengdu near the river",
    "Maria plays the violin every Sunday",
)


@dataclass
class Setup:
    store: LongTermStore
    index: FaultyIndex
    embedder: FaultyEmbedder
    cache: RecallCache
    guard: ReadGuard
    retriever: Retriever
    tenant: str


@pytest.fixture(scope="module")
def faulty_store(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LongTermStore, FaultyIndex, FaultyEmbedder]]:
    index = FaultyIndex(make_index("edge", tmp_path_factory.mktemp("faulty")))
    embedder = FaultyEmbedder(HashEmbedder(64))
    store = LongTermStore(index, embedder, Bm25Encoder(), LongTermSettings(), clock=FakeClock(NOW))
    yield store, index, embedder
    store.close()


@pytest.fixture
def setup(faulty_store: tuple[LongTermStore, FaultyIndex, FaultyEmbedder]) -> Iterator[Setup]:
    store, index, embedder = faulty_store
    # Deadlines a healthy read meets on a loaded machine; the faults take 60 s.
    settings = LongTermSettings(
        read_deadline_s=DEADLINE_S,
        search_deadline_s=DEADLINE_S,
        embed_deadline_s=DEADLINE_S,
        breaker_failures=2,
        breaker_cooldown_s=600,
        skip_below_cosine=0.0,
    )
    cache = RecallCache(InMemoryBackend(FakeClock(NOW)), ttl_s=3600, max_items=64)
    guard = ReadGuard(settings)
    retriever = Retriever(
        store,
        embedder,
        longterm=settings,
        guard=guard,
        fallback=ReadFallback(cache, store.encode_query, store.document_terms),
    )
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    try:
        yield Setup(store, index, embedder, cache, guard, retriever, tenant)
    finally:
        index.heal()
        embedder.heal()


def ask(setup: Setup, text: str, *, user: str = "maria", **fields: object) -> RetrievalQuery:
    return RetrievalQuery(text=text, tenant=setup.tenant, user=user, k=3, now=NOW, **fields)  # type: ignore[arg-type]


def test_an_unreachable_l3_is_answered_from_the_users_last_reads(setup: Setup) -> None:
    question = ask(setup, "what is Maria allergic to")
    served = setup.retriever.retrieve(question)
    assert served.items and not served.l3_skipped and served.l3_skip_reason is None
    setup.index.fail()
    again = setup.retriever.retrieve(question)
    assert again.l3_skipped and again.l3_skip_reason == L3_UNAVAILABLE
    # The same question: the same items, with the cosine and flag they had.
    assert [i.id for i in again.items] == [i.id for i in served.items][: len(again.items)]
    assert all(i.routes == (CACHED_ROUTE,) for i in again.items)
    assert again.items[0].cosine == pytest.approx(served.items[0].cosine)
    # Another question sharing words: served, its cosine unknown and flagged.
    other = setup.retriever.retrieve(ask(setup, "does Maria eat peanuts"))
    assert other.l3_skip_reason == L3_UNAVAILABLE
    assert setup.guard.states()["l3"] == "open"  # two failures in a row opened it
    assert "peanuts" in other.items[0].text
    assert other.items[0].cosine == 0.0 and other.items[0].low_confidence
    # Nothing in common with what was read: nothing is served (noise misleads).
    unrelated = setup.retriever.retrieve(ask(setup, "weather forecast tomorrow"))
    assert unrelated.items == () and unrelated.l3_skip_reason == CIRCUIT_OPEN


def test_another_users_reads_are_never_served(setup: Setup) -> None:
    setup.retriever.retrieve(ask(setup, "what is Maria allergic to"))
    setup.index.fail()
    stranger = setup.retriever.retrieve(ask(setup, "what is Maria allergic to", user="bob"))
    assert stranger.l3_skipped and stranger.items == ()


def test_a_slow_l3_times_out_and_once_the_breaker_opens_is_no_longer_called(setup: Setup) -> None:
    setup.retriever.retrieve(ask(setup, "where does Maria live"))
    setup.index.slow(HANG_S)
    reasons = []
    for _ in range(2):
        started = time.monotonic()
        result = setup.retriever.retrieve(ask(setup, "where does Maria live"))
        assert time.monotonic() - started < DEADLINE_S + MARGIN_S
        reasons.append(result.l3_skip_reason)
        assert "Chengdu" in result.items[0].text
    assert reasons == [L3_TIMEOUT, L3_TIMEOUT]
    calls = setup.index.calls
    for _ in range(5):
        assert setup.retriever.retrieve(ask(setup, "where does Maria live")).l3_skip_reason == (
            CIRCUIT_OPEN
        )
    assert setup.index.calls == calls
    assert setup.guard.states()["l3"] == "open"


def test_a_failing_embedder_leaves_bm25_alone_flagged(setup: Setup) -> None:
    setup.embedder.fail()
    result = setup.retriever.retrieve(ask(setup, "violin on Sunday"))
    assert result.dense_skip_reason == EMBEDDER_FAILED and not result.l3_skipped
    assert "violin" in result.items[0].text
    assert all(i.cosine == 0.0 and i.low_confidence for i in result.items)


def test_a_hanging_embedder_is_not_waited_for(setup: Setup) -> None:
    setup.embedder.slow(HANG_S)
    started = time.monotonic()
    result = setup.retriever.retrieve(ask(setup, "violin on Sunday"))
    assert time.monotonic() - started < DEADLINE_S + MARGIN_S
    assert result.dense_skip_reason == "embedder_timeout" and result.items


def test_a_plain_search_has_nothing_to_fall_back_on_and_says_so(setup: Setup) -> None:
    setup.index.fail()
    with pytest.raises(BackendUnavailableError, match=L3_UNAVAILABLE):
        setup.retriever.search("memories", "peanuts", tenant=setup.tenant, user="maria")
    setup.embedder.fail()
    with pytest.raises(ValidationError) as bad:  # bad input stays bad input
        setup.retriever.search("memories", "   ", tenant=setup.tenant)
    assert bad.value.field == "query"


def test_a_read_as_of_a_past_instant_is_never_answered_from_the_cache(setup: Setup) -> None:
    setup.retriever.retrieve(ask(setup, "what is Maria allergic to"))
    setup.index.fail()
    past = setup.retriever.retrieve(
        ask(setup, "what is Maria allergic to", as_of=NOW, types=("fact", "history"))
    )
    assert past.l3_skipped and past.items == ()


def test_clearing_the_caches_drops_the_cached_reads(setup: Setup) -> None:
    setup.retriever.retrieve(ask(setup, "what is Maria allergic to"))
    setup.retriever.clear_caches()  # what a forget does
    setup.index.fail()
    assert setup.retriever.retrieve(ask(setup, "what is Maria allergic to")).items == ()


def test_the_cache_keeps_the_newest_items_per_owner_and_clears_them_all(
    working_backend: WorkingBackendCase,
) -> None:
    cache = RecallCache(working_backend.backend, ttl_s=60, max_items=3)
    tenant, user = f"t-{uuid.uuid4().hex[:8]}", f"u-{uuid.uuid4().hex[:8]}"
    for n in range(5):
        cache.remember(tenant, user, "memories", [{"id": f"p{n}", "n": n}], at=float(n))
    cache.remember(tenant, None, "knowledge", [{"id": "k1"}], at=1.0)
    assert [e["id"] for e in cache.recall(tenant, user, "memories")] == ["p4", "p3", "p2"]
    assert cache.recall(tenant, "someone-else", "memories") == []
    key = recall_key(tenant, user, "memories")
    assert key == f"recall:{{{tenant}:{user}}}:memories"
    assert 0 < working_backend.backend.pttl(key) <= 60_000
    assert cache.clear() >= 2
    assert cache.recall(tenant, user, "memories") == [] == cache.recall(tenant, None, "knowledge")


def test_keys_of_cached_reads_refuse_forged_ids() -> None:
    with pytest.raises(ValidationError) as bad:
        recall_key("acme", "u}:x", "memories")
    assert bad.value.field == "user"


def test_a_cache_that_keeps_nothing_writes_nothing(tmp_path: Path) -> None:
    backend = InMemoryBackend(FakeClock(NOW))
    cache = RecallCache(backend, ttl_s=60, max_items=0)
    assert not cache.enabled
    assert cache.remember("acme", "u1", "memories", [{"id": "p1"}], at=1.0) == 0
    assert cache.recall("acme", "u1", "memories") == []
