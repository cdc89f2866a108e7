"""What a read repeats is not paid for again (issue 33): the confidence model's item
terms are tokenized once per text, and a read serving what the same read kept a
moment ago writes nothing new to L2. The answers stay the same."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.retrieval import Retriever, followups
from memstrata.retrieval.fallback import KEEP_REFRESH_S, ReadFallback
from memstrata.retrieval.results import RetrievalQuery, RetrievalResult
from memstrata.testing import WorkingBackendCase
from memstrata.working.recall import RecallCache

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
FACTS = (
    "Maria is allergic to peanuts and shellfish",
    "Maria lives in Chengdu near the river",
    "Maria plays the violin every Sunday",
    "Maria started a pottery class in March",
)


class CountingRecall(RecallCache):
    """The real L2 recall cache, counting its writes."""

    writes = 0

    def remember(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        entries: Sequence[Mapping[str, Any]],
        at: float,
    ) -> int:
        self.writes += 1
        return super().remember(tenant, user, collection, entries, at)


def _reader(store: LongTermStore, recall: RecallCache) -> Retriever:
    fallback = ReadFallback(recall, store.encode_query, store.document_terms)
    return Retriever(store, store.embedder, fallback=fallback)


def _ask(tenant: str, text: str, now: datetime = NOW) -> RetrievalQuery:
    return RetrievalQuery(text=text, tenant=tenant, user="maria", k=3, now=now)


def _served(result: RetrievalResult) -> list[tuple[str, float | None, bool]]:
    return [(i.id, i.confidence, i.low_confidence) for i in result.items + result.below_threshold]


def test_item_terms_are_tokenized_once_and_grade_as_before(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = RecallCache(working_backend.backend, ttl_s=60, max_items=64)
    reader = _reader(store, recall)
    question = _ask(tenant, "what is Maria allergic to")
    first = reader.retrieve(question)
    tokenized = reader._terms.computed
    assert tokenized > 0
    again = reader.retrieve(question)
    assert reader._terms.computed == tokenized  # every item text remembered
    assert _served(again) == _served(first)
    # A reader without the memory (a fresh one) grades the same items the same.
    assert _served(_reader(store, recall).retrieve(question)) == _served(first)
    reader.clear_caches()
    assert not followups._corrections and not followups._whom  # texts forgotten too
    reader.retrieve(question)
    assert reader._terms.computed > tokenized  # forgotten with the other caches


def test_a_repeated_read_keeps_nothing_new_until_its_answer_or_the_minute_changes(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = CountingRecall(working_backend.backend, ttl_s=3600, max_items=64)
    reader = _reader(store, recall)
    question = "what is Maria allergic to"
    reader.retrieve(_ask(tenant, question))
    assert recall.writes == 1
    reader.retrieve(_ask(tenant, question))
    assert recall.writes == 1  # the same entries (scores, payloads), kept just now
    reader.retrieve(_ask(tenant, "where does Maria live"))
    assert recall.writes == 2  # another question
    later = NOW + timedelta(seconds=KEEP_REFRESH_S + 1)
    reader.retrieve(_ask(tenant, question, later))
    assert recall.writes == 3  # a minute on: kept again (their time in L2 refreshed)
    store.add("memories", [NewItem("Maria is also allergic to kiwi", tenant, user="maria")])
    reader.retrieve(_ask(tenant, question, later))
    assert recall.writes == 4  # a different answer is kept at once
    kept = recall.recall(tenant, "maria", "memories")
    assert any("kiwi" in str(e["payload"].get("text")) for e in kept)
    reader.clear_caches()
    reader.retrieve(_ask(tenant, question, later))
    assert recall.writes == 5  # the cleared cache is written again


def test_keeps_of_different_owners_are_apart(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    store.add("memories", [NewItem(text, tenant, user="omar") for text in FACTS])
    recall = CountingRecall(working_backend.backend, ttl_s=3600, max_items=64)
    reader = _reader(store, recall)
    reader.retrieve(_ask(tenant, "what is Maria allergic to"))
    reader.retrieve(
        RetrievalQuery(text="what is Maria allergic to", tenant=tenant, user="omar", k=3, now=NOW)
    )
    assert recall.writes == 2
    assert recall.recall(tenant, "omar", "memories") and recall.recall(tenant, "maria", "memories")


def test_the_same_entries_are_kept_again_once_a_minute_has_passed(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = CountingRecall(working_backend.backend, ttl_s=3600, max_items=64)
    items = _reader(store, recall).retrieve(_ask(tenant, "where does Maria live")).items
    fallback = ReadFallback(recall, store.encode_query, store.document_terms)
    at = NOW.timestamp()
    for moment in (at, at + 1, at + KEEP_REFRESH_S - 1, at + KEEP_REFRESH_S, at - 5):
        fallback.keep(tenant, "maria", "memories", "q1", items, moment)
    # Written at 0, skipped at +1 and +59, written at +60, and at -5 (a clock moved
    # back says nothing about what L2 holds).
    assert recall.writes == 1 + 3


def test_diversity_reads_each_points_vector_once_while_the_point_is_unchanged(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    if not isinstance(store.index, EdgeIndex):
        pytest.skip("the memo follows the embedded adapter's payload cache (same object)")
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    reader = _reader(store, RecallCache(working_backend.backend, ttl_s=60, max_items=64))
    asked: list[list[str]] = []
    read = store.dense_vectors

    def counted(collection: str, ids: Sequence[str], **options: Any) -> Any:
        asked.append(list(ids))
        return read(collection, ids, **options)

    store.dense_vectors = counted  # type: ignore[method-assign]
    try:
        question = _ask(tenant, "what does Maria do on Sundays")
        first = reader.retrieve(question)
        assert asked and len(asked[0]) >= 2
        again = reader.retrieve(question)
        assert len(asked) == 1  # every head vector remembered
        assert _served(again) == _served(first)
        # A new point in the head is read (a rewritten one too: a new payload object).
        store.add("memories", [NewItem("Maria plays the cello on Sundays", tenant, user="maria")])
        reader.retrieve(question)
        assert len(asked) == 2
    finally:
        del store.dense_vectors


def test_a_short_lived_cache_is_kept_again_sooner(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    # Entries living 30 s must not wait a minute to be written again.
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = CountingRecall(working_backend.backend, ttl_s=30, max_items=64)
    items = _reader(store, recall).retrieve(_ask(tenant, "where does Maria live")).items
    fallback = ReadFallback(recall, store.encode_query, store.document_terms)
    for moment in (0.0, 2.0, 3.0):
        fallback.keep(tenant, "maria", "memories", "q", items, moment)
    assert recall.writes == 1 + 2  # the reader's; then at 0 and at 3 (a tenth of 30 s)
