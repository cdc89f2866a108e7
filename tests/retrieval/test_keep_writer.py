"""The reader keeps what it served in L2 off its own path (issue 33): one background
writer with a bounded queue, the newest keep of a question replacing one still
waiting; a forget, a fallback read and close write what is queued first, so a forget
never leaves a copy behind."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import orjson

from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.retrieval import Retriever
from memstrata.retrieval.fallback import ReadFallback, entry
from memstrata.retrieval.results import RetrievalQuery, RetrievedItem
from memstrata.testing import WorkingBackendCase
from memstrata.working.recall import RecallCache

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
FACTS = (
    "Maria is allergic to peanuts and shellfish",
    "Maria lives in Chengdu near the river",
    "Maria plays the violin every Sunday",
)
WAIT_S = 10.0  # a bound on a wait that should end at once; never a timing assertion


class GatedRecall(RecallCache):
    """The real L2 recall cache, each write waiting for ``gate`` (an L2 that is slow
    to answer) and counted once it is written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.started = threading.Event()
        self.writes = 0

    def remember(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        entries: Sequence[Mapping[str, Any]],
        at: float,
    ) -> int:
        self.started.set()
        self.gate.wait(WAIT_S)
        held = super().remember(tenant, user, collection, entries, at)
        self.writes += 1
        return held


def _fallback(store: LongTermStore, recall: RecallCache, **options: Any) -> ReadFallback:
    return ReadFallback(recall, store.encode_query, store.document_terms, **options)


def _ask(tenant: str, text: str) -> RetrievalQuery:
    return RetrievalQuery(text=text, tenant=tenant, user="maria", k=3, now=NOW)


def _items(store: LongTermStore, tenant: str, recall: RecallCache) -> tuple[RetrievedItem, ...]:
    reader = Retriever(store, store.embedder, fallback=_fallback(store, recall))
    recall.gate.set()  # type: ignore[attr-defined]
    return reader.retrieve(_ask(tenant, "where does Maria live")).items


def test_a_read_does_not_wait_for_its_keep_and_the_keep_lands(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    fallback = _fallback(store, recall, background=True)
    reader = Retriever(store, store.embedder, fallback=fallback)
    result = reader.retrieve(_ask(tenant, "where does Maria live"))
    # The read came back while L2 still holds its write (the gate is shut).
    assert result.items and recall.writes == 0
    assert recall.started.wait(WAIT_S)
    recall.gate.set()
    fallback.flush()
    assert recall.writes == 1
    kept = recall.recall(tenant, "maria", "memories")
    assert {e["id"] for e in kept} >= {i.id for i in result.items}
    fallback.close()


def test_a_question_read_again_while_its_keep_waits_is_written_once_more(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    items = _items(store, tenant, GatedRecall(working_backend.backend, ttl_s=3600, max_items=64))
    fallback = _fallback(store, recall, background=True)
    at = NOW.timestamp()
    fallback.keep(tenant, "maria", "memories", "q1", items, at)
    assert recall.started.wait(WAIT_S)  # the writer holds the first keep
    for step in range(1, 6):  # five newer answers of one question, each replacing the last
        fallback.keep(tenant, "maria", "memories", "q1", items[: 1 + step % 2], at + 100 * step)
    fallback.keep(tenant, "maria", "memories", "q2", items, at)
    recall.gate.set()
    fallback.flush()
    assert recall.writes == 3  # the first, the newest of q1, q2
    fallback.close()


def test_a_full_queue_makes_the_reader_wait_rather_than_drop_a_keep(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    items = _items(store, tenant, GatedRecall(working_backend.backend, ttl_s=3600, max_items=64))
    fallback = _fallback(store, recall, background=True, pending_max=1)
    fallback.keep(tenant, "maria", "memories", "q1", items, 1.0)
    assert recall.started.wait(WAIT_S)
    fallback.keep(tenant, "maria", "memories", "q2", items, 2.0)  # the queue's one place
    third = threading.Thread(
        target=fallback.keep, args=(tenant, "maria", "memories", "q3", items, 3.0)
    )
    third.start()
    third.join(0.2)
    assert third.is_alive()  # waiting for room, not dropped
    recall.gate.set()
    third.join(WAIT_S)
    fallback.flush()
    assert recall.writes == 3
    fallback.close()


def test_a_forget_waits_for_queued_keeps_and_leaves_no_copy(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    fallback = _fallback(store, recall, background=True)
    reader = Retriever(store, store.embedder, fallback=fallback)
    reader.retrieve(_ask(tenant, "where does Maria live"))
    reader.retrieve(_ask(tenant, "what is Maria allergic to"))
    assert recall.started.wait(WAIT_S)
    # The forget (clear_caches) starts while both keeps are still unwritten.
    forget = threading.Thread(target=reader.clear_caches)
    forget.start()
    recall.gate.set()
    forget.join(WAIT_S)
    assert not forget.is_alive()
    assert recall.writes == 2  # both landed, before the drop
    assert recall.recall(tenant, "maria", "memories") == []
    fallback.close()


def test_close_writes_what_is_queued_and_later_keeps_are_dropped(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    fallback = _fallback(store, recall, background=True)
    reader = Retriever(store, store.embedder, fallback=fallback)
    reader.retrieve(_ask(tenant, "where does Maria live"))
    recall.gate.set()
    reader.close()
    assert recall.writes == 1 and recall.recall(tenant, "maria", "memories")
    reader.retrieve(_ask(tenant, "what is Maria allergic to"))
    fallback.flush()
    assert recall.writes == 1
    reader.close()  # idempotent


def test_a_fallback_read_serves_a_keep_still_queued(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    items = _items(store, tenant, GatedRecall(working_backend.backend, ttl_s=3600, max_items=64))
    fallback = _fallback(store, recall, background=True)
    fallback.keep(tenant, "maria", "memories", "q1", items, NOW.timestamp())
    recall.gate.set()
    served = fallback.serve(
        tenant, "maria", "memories", question="where does Maria live", key="q1", types=None, k=3
    )
    assert [i.id for i in served] == [i.id for i in items]
    fallback.close()


def test_an_entry_holds_no_null_and_a_replacement_comes_back(
    store: LongTermStore, tenant: str, working_backend: WorkingBackendCase
) -> None:
    store.add("memories", [NewItem(text, tenant, user="maria") for text in FACTS])
    recall = GatedRecall(working_backend.backend, ttl_s=3600, max_items=64)
    items = _items(store, tenant, GatedRecall(working_backend.backend, ttl_s=3600, max_items=64))
    plain = entry(items[0], "q1")
    assert "superseded_by" not in plain and b"null" not in orjson.dumps(plain)
    replaced = (replace(items[0], superseded_by=items[1].id), *items[1:])
    fallback = _fallback(store, recall, background=True)
    fallback.keep(tenant, "maria", "memories", "q1", replaced, NOW.timestamp())
    recall.gate.set()
    served = fallback.serve(
        tenant, "maria", "memories", question="where does Maria live", key="q1", types=None, k=3
    )
    assert [(i.id, i.superseded_by) for i in served] == [
        (items[0].id, items[1].id),
        *((i.id, None) for i in items[1:]),
    ]
    fallback.close()
