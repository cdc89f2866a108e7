"""The hot path: confirmed pairs only, TTL pushed into the engine, daily merge."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.embed.protocol import Embedder
from memstrata.errors import ValidationError
from memstrata.gateway import Sanitizer
from memstrata.knowledge import DEFAULT_TTL_S, HotKnowledge, MergeReport
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import HOT_KNOWLEDGE, KNOWLEDGE, Filter
from memstrata.retrieval import Retriever
from memstrata.retrieval.search import HybridSearch

Q = "how do I reset the pump controller"
A = "hold the reset button for five seconds"


def test_only_confirmed_pairs_are_learned(
    hot: HotKnowledge, store: LongTermStore, tenant: str
) -> None:
    for feedback in ("ignored", "user_rejected", ""):
        with pytest.raises(ValidationError) as err:
            hot.learn(tenant, Q, A, feedback=feedback, source="session:s1")
        assert err.value.field == "feedback"
    with pytest.raises(ValidationError) as err:
        hot.learn(tenant, "  ", A, source="session:s1")
    assert err.value.field == "query"
    assert store.count(HOT_KNOWLEDGE, tenant=tenant) == 0


def test_learned_pair_is_sanitized_and_carries_its_expiry(
    hot: HotKnowledge, store: LongTermStore, clock: FakeClock, tenant: str
) -> None:
    point_id = hot.learn(
        tenant,
        "which key does the exporter use",
        "it uses AKIAIOSFODNN7EXAMPLE, mail ops@example.com",
        source="session:s1:step4",
    )
    (record,) = store.get(HOT_KNOWLEDGE, [point_id], tenant=tenant)
    payload = record.payload
    assert "AKIAIOSFODNN7EXAMPLE" not in payload["text"] + payload["response"]
    assert "ops@example.com" not in payload["text"]
    assert payload["response"] == "it uses [REDACTED:aws_access_key], mail [REDACTED:email]"
    assert payload["text"] == f"Q: which key does the exporter use\nA: {payload['response']}"
    now = clock.now().timestamp()
    assert payload["created_at"] == now
    assert payload["expires_at"] == now + DEFAULT_TTL_S
    assert (payload["feedback"], payload["source"]) == ("user_confirmed", "session:s1:step4")


def test_search_ignores_expired_items_and_expire_removes_them(
    hot: HotKnowledge, store: LongTermStore, clock: FakeClock, tenant: str
) -> None:
    old = hot.learn(tenant, Q, A, source="s1")
    clock.advance(timedelta(hours=48))
    fresh = hot.learn(tenant, "how do I reset the pump timer", "press timer twice", source="s2")
    assert {h.id for h in hot.search(tenant, "reset the pump", k=5)} == {old, fresh}

    clock.advance(timedelta(hours=24, seconds=1))  # old is now 72 h + 1 s old
    hits = hot.search(tenant, "reset the pump", k=5)
    assert [h.id for h in hits] == [fresh]
    assert hits[0].payload["response"] == "press timer twice"
    # Filtered out, not gone: the expired point is still stored until expire() runs.
    assert store.count(HOT_KNOWLEDGE, tenant=tenant) == 2

    assert hot.expire(tenant) == 1
    assert [r.id for r in store.iter_records(HOT_KNOWLEDGE, Filter(tenant=tenant))] == [fresh]
    assert hot.expire(tenant) == 0


def test_expiry_boundary_is_the_same_for_search_and_expire(
    store: LongTermStore, sanitizer: Sanitizer, embedder: Embedder, clock: FakeClock, tenant: str
) -> None:
    short = HotKnowledge(store, sanitizer, clock, ttl_s=60, reader=Retriever(store, embedder))
    short.learn(tenant, Q, A, source="s1")
    clock.advance(60)  # exactly the TTL: expired for both
    assert short.search(tenant, "reset pump") == []
    assert short.expire(tenant) == 1


def test_relearning_refreshes_instead_of_duplicating(
    hot: HotKnowledge, store: LongTermStore, clock: FakeClock, tenant: str
) -> None:
    first = hot.learn(tenant, Q, A, source="s1")
    clock.advance(timedelta(hours=70))
    assert hot.learn(tenant, Q, A, source="s2") == first
    clock.advance(timedelta(hours=70))  # 140 h after the first learn, 70 h after the second
    assert [h.id for h in hot.search(tenant, "reset pump")] == [first]
    assert store.count(HOT_KNOWLEDGE, tenant=tenant) == 1


def test_search_is_tenant_isolated(hot: HotKnowledge, tenant: str) -> None:
    hot.learn(tenant, Q, A, source="s1")
    assert hot.search(f"{tenant}-other", "reset the pump controller") == []


def test_merge_moves_survivors_and_drops_expired(
    hot: HotKnowledge, store: LongTermStore, clock: FakeClock, tenant: str
) -> None:
    hot.learn(tenant, "what oil does the pump take", "ISO VG 46", source="s0")
    clock.advance(timedelta(hours=73))
    hot.learn(tenant, Q, A, source="s1")
    hot.learn(tenant, "where is the manual", "in the cabinet by the door", source="s2")

    report = hot.merge_into_knowledge(tenant)

    assert report == MergeReport(merged=2, duplicates=0, expired=1)
    assert store.count(HOT_KNOWLEDGE, tenant=tenant) == 0
    merged = {r.payload["query"]: r for r in store.iter_records(KNOWLEDGE, Filter(tenant=tenant))}
    assert set(merged) == {Q, "where is the manual"}
    payload = merged[Q].payload
    assert payload["text"] == f"Q: {Q}\nA: {A}"
    assert (payload["type"], payload["source"], payload["origin"]) == (
        "knowledge",
        "s1",
        "hot_knowledge",
    )
    assert len(payload["content_hash"]) == 64
    # Merged knowledge is searchable through the ordinary knowledge search.
    assert (
        HybridSearch(store)
        .search(KNOWLEDGE, "manual cabinet", tenant=tenant, k=1)[0]
        .payload["source"]
        == "s2"
    )


def test_merge_dedupes_against_knowledge(
    hot: HotKnowledge, store: LongTermStore, clock: FakeClock, tenant: str
) -> None:
    hot.learn(tenant, Q, A, source="s1")
    assert hot.merge_into_knowledge(tenant) == MergeReport(merged=1, duplicates=0, expired=0)
    clock.advance(timedelta(days=1))
    hot.learn(tenant, Q, A, source="s7")  # the same pair, confirmed again
    hot.learn(tenant, "new question", "new answer", source="s8")

    assert hot.merge_into_knowledge(tenant) == MergeReport(merged=1, duplicates=1, expired=0)
    assert store.count(KNOWLEDGE, tenant=tenant) == 2
    assert store.count(HOT_KNOWLEDGE, tenant=tenant) == 0
    assert hot.merge_into_knowledge(tenant) == MergeReport(merged=0, duplicates=0, expired=0)


def test_ttl_is_validated(
    store: LongTermStore, hot: HotKnowledge, sanitizer: Sanitizer, embedder: Embedder
) -> None:
    assert hot.ttl_s == DEFAULT_TTL_S
    for bad in (0, -1.0, float("inf")):
        with pytest.raises(ValidationError) as err:
            HotKnowledge(store, sanitizer, FakeClock(), bad, reader=Retriever(store, embedder))
        assert err.value.field == "ttl_s"
