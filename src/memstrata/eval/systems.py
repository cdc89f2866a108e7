"""The systems under evaluation: one small protocol and three store-backed systems.

Every turn is stored once, in one :class:`~memstrata.longterm.LongTermStore`
(one tenant per conversation or question), by a shared :class:`TurnStore`; the
``bm25``, ``dense`` and ``memstrata`` systems are three ways of searching those
same points. The ``memstrata`` system's retrieval is injected as a plain
callable, so a different retriever is swapped in with one argument.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memstrata.eval.datasets import Turn
from memstrata.extract.smalltalk import small_talk_payload
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES
from memstrata.memory.episodes import window_points
from memstrata.retrieval import RetrievalQuery, Retriever
from memstrata.validation import MAX_TEXT_CHARS

TURN_TYPE = "turn"
INDEX_SYSTEM = "memstrata_index"
# Point ids derive from (tenant, turn id), so indexing the same data again into a
# kept --data-dir replaces the points instead of duplicating them.
_ID_NAMESPACE = uuid.UUID("6f1d2a63-0c5e-4f1b-9a52-5d8e3c7b9a10")


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One retrieved turn: its data set id and the retriever's confidence.

    ``confidence`` is the cosine similarity to the query when the retriever reports
    one (None otherwise); CER's "loaded" compares it with the threshold.
    ``low_confidence`` is the retriever's own flag when it sets one (the product's
    ``RetrievedItem.low_confidence``), None otherwise.
    """

    id: str
    confidence: float | None = None
    low_confidence: bool | None = None


class EvalSystem(Protocol):
    """A retrieval system the harness can index and query.

    The harness calls ``index`` for every tenant, then ``finish_indexing`` once,
    then ``search`` as often as it needs.
    """

    @property
    def name(self) -> str:
        """The key of this system in the report ("memstrata", "bm25", ...)."""
        ...

    def index(self, tenant: str, turns: Sequence[Turn]) -> None:
        """Make ``turns`` searchable for ``tenant``."""
        ...

    def finish_indexing(self) -> None:
        """Called once after the last ``index``, before the first ``search``."""
        ...

    def search(self, tenant: str, query: str, at: datetime, k: int) -> list[Retrieved]:
        """The ``tenant``'s best ``k`` turns for ``query`` asked at ``at``, best first."""
        ...


class HitLike(Protocol):
    """What a retriever returns per item: a payload carrying the turn id (``dia_id``).

    A ``cosine`` attribute, when present, is read as the item's confidence.
    """

    @property
    def payload(self) -> Mapping[str, Any]:
        """The stored payload."""
        ...


SearchFn = Callable[[str, str, datetime, int], Sequence[HitLike]]
"""``(tenant, query, at, k) -> hits``: the memstrata system's retrieval."""


class TurnStore:
    """Stores turns in a LongTermStore once per tenant and searches them through the
    reader (``reader``, over the same store)."""

    def __init__(
        self,
        store: LongTermStore,
        reader: Retriever,
        *,
        collection: str = MEMORIES,
        source: str = "eval",
        batch_size: int = 256,
        on_indexed: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.reader = reader
        self.collection = collection
        self._source = source
        self._batch = batch_size
        self._on_indexed = on_indexed
        self._indexed: dict[str, tuple[str, ...]] = {}
        self._dirty = False
        self.truncated = 0
        """Turns longer than the store's text limit, indexed cut to it."""
        self.windows = 0
        """Dense window keys written for long turns (``LongTermSettings.window_words``)."""

    def ensure_indexed(self, tenant: str, turns: Sequence[Turn]) -> None:
        """Index ``turns`` for ``tenant`` unless this tenant was indexed already.

        Every system sharing this store calls it; only the first call writes.
        A second call with different turns is a harness bug and raises.
        """
        ids = tuple(turn.id for turn in turns)
        done = self._indexed.get(tenant)
        if done is not None:
            if done != ids:
                raise ValueError(f"tenant {tenant!r} was already indexed with other turns")
            return
        for start, stop in session_batches(turns, self._batch):
            # One store.add per batch: one embedder call for the whole batch, and
            # whole sessions, so every turn's vector is blended with both neighbors.
            items = [self._item(tenant, turns[i], i) for i in range(start, stop)]
            self.store.add(self.collection, items)
            # Long turns' dense window keys, as the product's episode index writes them.
            windows = window_points(items, self.store.settings, self.store.embedder.embed)
            if windows:
                self.store.add_points(self.collection, windows)
                self.windows += len(windows)
            if self._on_indexed is not None:
                self._on_indexed(stop - start)
        self._indexed[tenant] = ids
        self._dirty = True

    def _item(self, tenant: str, turn: Turn, seq: int) -> NewItem:
        text = turn.text
        if len(text) > MAX_TEXT_CHARS:
            text = text[:MAX_TEXT_CHARS]
            self.truncated += 1
        return NewItem(
            text=text,
            tenant=tenant,
            type=TURN_TYPE,
            source=self._source,
            id=str(uuid.uuid5(_ID_NAMESPACE, f"{tenant}/{turn.id}")),
            created_at=turn.at.timestamp(),
            extra={
                "dia_id": turn.id,
                "speaker": turn.speaker,
                "session": turn.session,
                "session_date": turn.date_text,
                # Conversation position: the retriever reads adjacent turns and the
                # session (thread) as context.
                "thread": str(turn.session),
                "seq": seq,
                # as the product's write path marks it (memstrata.memory.episodes)
                **small_talk_payload(text, turn.speaker),
            },
        )

    def finish_indexing(self) -> None:
        """Merge and index the written segments once (idempotent)."""
        if self._dirty:
            self.store.optimize()
            self._dirty = False

    def search(self, tenant: str, query: str, k: int, mode: str) -> list[HitLike]:
        """The reader's single-route search in ``mode`` ('hybrid', 'dense' or 'sparse')
        over the turns (window keys are memstrata's retrieval's, not a baseline's)."""
        return list(
            self.reader.search(
                self.collection, query, tenant=tenant, k=k, mode=mode, types=(TURN_TYPE,)
            )
        )


def session_batches(turns: Sequence[Turn], size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` slices covering ``turns`` in order, cut only where a session
    ends once a slice holds ``size`` turns or more (so a slice may exceed ``size``
    by the rest of one session)."""
    cuts: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(turns)):
        if i - start >= size and turns[i].session != turns[i - 1].session:
            cuts.append((start, i))
            start = i
    if start < len(turns):
        cuts.append((start, len(turns)))
    return cuts


def retriever_search(turns: TurnStore, retriever: Retriever) -> SearchFn:
    """memstrata's multi-route retrieval (:class:`~memstrata.retrieval.Retriever`)."""

    def search(tenant: str, query: str, at: datetime, k: int) -> Sequence[HitLike]:
        request = RetrievalQuery(
            text=query, tenant=tenant, k=k, now=at, collection=turns.collection
        )
        result = retriever.retrieve(request)
        # Skipped L3 (everything below the floor) still counts its would-be items
        # here: the harness scores retrieval; CER reads the confidence.
        return result.items or result.below_threshold

    return search


def hybrid_search(turns: TurnStore) -> SearchFn:
    """The default memstrata retrieval: the store's hybrid (dense + BM25) search."""

    def search(tenant: str, query: str, at: datetime, k: int) -> Sequence[HitLike]:
        return turns.search(tenant, query, k, "hybrid")

    return search


def retrieved(hits: Sequence[HitLike]) -> list[Retrieved]:
    """Hits as :class:`Retrieved` turns, in order.

    Items without a ``dia_id`` (not a stored turn, e.g. a memory a future retriever
    derived from turns) cannot be scored at turn level and are left out.
    """
    out: list[Retrieved] = []
    for hit in hits:
        turn_id = hit.payload.get("dia_id")
        if not isinstance(turn_id, str):
            continue
        cosine = getattr(hit, "cosine", None)
        out.append(Retrieved(turn_id, None if cosine is None else float(cosine)))
    return out


class StoreSystem:
    """An :class:`EvalSystem` over a shared :class:`TurnStore` and one search callable."""

    def __init__(self, name: str, turns: TurnStore, search: SearchFn) -> None:
        self._name = name
        self._turns = turns
        self._search = search

    @property
    def name(self) -> str:
        """The system's key in the report."""
        return self._name

    def index(self, tenant: str, turns: Sequence[Turn]) -> None:
        """Store the turns (once, whichever system asks first)."""
        self._turns.ensure_indexed(tenant, turns)

    def finish_indexing(self) -> None:
        """Optimize the shared store once."""
        self._turns.finish_indexing()

    def search(self, tenant: str, query: str, at: datetime, k: int) -> list[Retrieved]:
        """Run the search callable and map its hits to turn ids."""
        return retrieved(self._search(tenant, query, at, k))


def store_systems(
    turns: TurnStore,
    *,
    memstrata_search: SearchFn | None = None,
    plain: TurnStore | None = None,
) -> tuple[StoreSystem, ...]:
    """The systems over the stores: ``memstrata_index`` (memstrata's retrieval on turns
    written straight into the index, as a batch), and the ``bm25`` and ``dense``
    baselines. (The ``memstrata`` row, the product's own path through
    ``engine.observe``, is :class:`memstrata.eval.product.EngineSystem`.)

    ``memstrata_search`` replaces the index system's retrieval (default: the
    store's hybrid search); the baselines always search one route alone. With
    ``plain`` (a store indexing each turn's own text alone: no adjacent blending, no
    context terms), the baselines search it - they are BM25 and MiniLM as anyone would
    run them - and ``bm25_context`` / ``dense_context`` search ``turns`` one route
    alone, to show what memstrata's indexing gives by itself.
    """

    def single(store: TurnStore, mode: str) -> SearchFn:
        def search(tenant: str, query: str, at: datetime, k: int) -> Sequence[HitLike]:
            return store.search(tenant, query, k, mode)

        return search

    baseline = turns if plain is None else plain
    systems = [
        StoreSystem(INDEX_SYSTEM, turns, memstrata_search or hybrid_search(turns)),
        StoreSystem("bm25", baseline, single(baseline, "sparse")),
        StoreSystem("dense", baseline, single(baseline, "dense")),
    ]
    if plain is not None:
        systems += [
            StoreSystem("bm25_context", turns, single(turns, "sparse")),
            StoreSystem("dense_context", turns, single(turns, "dense")),
        ]
    return tuple(systems)
