"""Retriever against real stores (qdrant-edge and qdrant-client local mode).

Most tests use a test-double embedder whose vectors they choose (``FixedEmbedder``)
and settings that switch every adjustment off but the one under test (``only``),
so each effect is measured alone: a test can fail only because of its effect.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from qdrant_client import QdrantClient

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.embed.protocol import Embedder
from memstrata.embed.tokens import TokenVectors
from memstrata.errors import ValidationError
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.qdrant_server import QdrantServerIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval import (
    EmbeddingRescorer,
    RetrievalQuery,
    RetrievalResult,
    Retriever,
    resolve,
)
from memstrata.testing.embedders import HashEmbedder
from memstrata.testing.settings import NEUTRAL_RETRIEVAL

DIM = 64
DEFAULT_AXIS = DIM - 1  # unknown texts embed here: orthogonal to every stored vector
NOW = datetime(2023, 8, 20, 15, 0, tzinfo=UTC)


def stamp(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, 12, tzinfo=UTC).timestamp()


# --- test doubles and vectors -------------------------------------------------------------


def basis(axis: int) -> NDArray[np.float32]:
    out = np.zeros(DIM, dtype=np.float32)
    out[axis] = 1.0
    return out


def at_cosine(cosine: float, axis: int) -> NDArray[np.float32]:
    """A unit vector whose cosine to basis(0) is ``cosine``; the rest along ``axis``."""
    out = np.zeros(DIM, dtype=np.float64)
    out[0] = cosine
    out[axis] = np.sqrt(1.0 - cosine * cosine)
    return out.astype(np.float32)


class FixedEmbedder:
    """TEST DOUBLE: each known text has the vector the test gave it; any other text
    embeds along DEFAULT_AXIS. Records what it was asked to embed."""

    name = "test-fixed-embedder"
    dim = DIM

    def __init__(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        self._vectors = dict(vectors)
        self.calls: list[tuple[str, ...]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(tuple(texts))
        rows = [self._vectors.get(text, basis(DEFAULT_AXIS)) for text in texts]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), DIM)


@dataclass
class FakeReranker:
    """TEST DOUBLE reranker: a score per text from a table; records its calls."""

    table: Mapping[str, float]
    calls: list[tuple[str, NDArray[np.float32], list[str], list[float]]] = field(
        default_factory=list
    )

    def scores(
        self,
        query: str,
        query_vector: NDArray[np.float32],
        texts: Sequence[str],
        cosines: Sequence[float],
    ) -> list[float]:
        self.calls.append((query, np.asarray(query_vector), list(texts), list(cosines)))
        return [self.table[text] for text in texts]


# Every adjustment off: the score is the fused dense cosine of the best route.
NEUTRAL = NEUTRAL_RETRIEVAL


def only(**changes: Any) -> RetrievalSettings:
    """NEUTRAL with the adjustments under test switched on."""
    return replace(NEUTRAL, **changes)


class TokenFixedEmbedder(FixedEmbedder):
    """TEST DOUBLE: FixedEmbedder that also hands out token vectors - one token per
    word, each word's own vector - and records which texts it read token by token."""

    def __init__(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        super().__init__(vectors)
        self.token_calls: list[str] = []

    def embed_tokens(self, text: str) -> TokenVectors:
        self.token_calls.append(text)
        offsets, start = [(0, 0)], 0
        for word in text.split():
            start = text.index(word, start)
            offsets.append((start, start + len(word)))
            start += len(word)
        rows = [basis(DEFAULT_AXIS)] + [
            self._vectors.get(text[s:e], basis(DEFAULT_AXIS)) for s, e in offsets[1:]
        ]
        return TokenVectors(text, np.stack(rows).astype(np.float32), tuple(offsets))


@dataclass(frozen=True)
class Spec:
    text: str
    vector: NDArray[np.float32]
    created_at: float = stamp(2023, 8, 1)
    type: str = "fact"
    user: str | None = "u1"
    extra: Mapping[str, Any] = field(default_factory=dict)


def put(
    store: LongTermStore, tenant: str, specs: Sequence[Spec], collection: str = "memories"
) -> list[str]:
    items = [
        NewItem(
            s.text,
            tenant=tenant,
            user=s.user,
            type=s.type,
            source="test",
            created_at=s.created_at,
            extra=dict(s.extra),
        )
        for s in specs
    ]
    return store.add_vectors(collection, items, np.stack([s.vector for s in specs]))


def query(text: str, tenant: str, **options: Any) -> RetrievalQuery:
    return RetrievalQuery(text=text, tenant=tenant, **{"now": NOW, **options})


def order(result: RetrievalResult, ids: Sequence[str]) -> list[int]:
    """The result's items as indices into ``ids`` (the put() order)."""
    return [ids.index(item.id) for item in result.items]


Q = "where did you travel this summer"  # lowercase, no entity: only the query route
QVEC = {Q: basis(0)}


# --- relevance, routes, determinism (hash embedder, default settings) ---------------------


def test_finds_the_relevant_memory_with_its_routes(
    store: LongTermStore, tenant: str, hash_embedder: HashEmbedder
) -> None:
    store.add(
        "memories",
        [
            NewItem(
                "Anna drinks green tea with honey every morning",
                tenant=tenant,
                created_at=stamp(2023, 8, 1),
            ),
            NewItem(
                "Bob plays chess at the club on Sundays",
                tenant=tenant,
                created_at=stamp(2023, 8, 1),
            ),
            NewItem(
                "The quarterly budget review moved to Thursday",
                tenant=tenant,
                created_at=stamp(2023, 8, 1),
            ),
        ],
    )
    retriever = Retriever(store, hash_embedder, longterm=LongTermSettings(skip_below_cosine=0.0))
    result = retriever.retrieve(
        query("Does Anna drink green tea with honey?", tenant, recent=("we talked about drinks",))
    )
    assert [r.name for r in result.routes] == ["query", "entities", "intent"]
    assert result.items[0].text.startswith("Anna drinks green tea")
    assert len(result.items) == 3
    for item in result.items:
        # each route searches 100 deep, so each found all three, reported in route order
        assert item.routes == ("query", "entities", "intent")
        assert item.payload["tenant"] == tenant
    scores = [item.score for item in result.items]
    assert scores == sorted(scores, reverse=True)


def test_same_query_twice_gives_the_same_result(
    store: LongTermStore, tenant: str, hash_embedder: HashEmbedder
) -> None:
    store.add(
        "memories",
        [
            NewItem(
                f"Note {i}: Anna bought {i} books about tea and chess",
                tenant=tenant,
                created_at=stamp(2023, 7, i + 1),
            )
            for i in range(12)
        ],
    )
    q = query("What books did Anna buy last month?", tenant, k=8, recent=("tea", "chess"))

    def snapshot(result: RetrievalResult) -> list[tuple[Any, ...]]:
        return [(i.id, i.score, i.cosine, i.routes, i.in_time_window) for i in result.items]

    no_floor = LongTermSettings(skip_below_cosine=0.0)
    first = Retriever(store, hash_embedder, longterm=no_floor).retrieve(q)
    second = Retriever(store, hash_embedder, longterm=no_floor).retrieve(q)
    assert snapshot(first) == snapshot(second) and first.items
    assert first.time_window == second.time_window == resolve(q.text, NOW)


def test_k_limits_the_items(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec(f"memory number {i} about travel", at_cosine(0.9 - i * 0.05, i + 1))
            for i in range(6)
        ],
    )
    retriever = Retriever(store, FixedEmbedder(QVEC), only(pool_size=2))
    result = retriever.retrieve(query(Q, tenant, k=4))  # the pool is never below k
    assert order(result, ids) == [0, 1, 2, 3]


def test_an_empty_tenant_gives_an_empty_result(store: LongTermStore, tenant: str) -> None:
    result = Retriever(store, FixedEmbedder(QVEC)).retrieve(query(Q, tenant))
    assert result.items == () and result.below_threshold == () and not result.l3_skipped


def test_knowledge_collection_and_filters(store: LongTermStore, tenant: str) -> None:
    mem = put(
        store,
        tenant,
        [
            Spec("u1 prefers window seats", at_cosine(0.8, 1), type="preference", user="u1"),
            Spec("u2 prefers aisle seats", at_cosine(0.8, 2), type="preference", user="u2"),
            Spec("u1 flew to Lisbon", at_cosine(0.8, 3), type="event", user="u1"),
        ],
    )
    doc = put(
        store,
        tenant,
        [Spec("Travel policy: economy class", at_cosine(0.8, 4), user=None)],
        "knowledge",
    )
    retriever = Retriever(store, FixedEmbedder(QVEC), NEUTRAL)
    assert {i.id for i in retriever.retrieve(query(Q, tenant, user="u1")).items} == {mem[0], mem[2]}
    assert {i.id for i in retriever.retrieve(query(Q, tenant, types=("preference",))).items} == {
        mem[0],
        mem[1],
    }
    assert [i.id for i in retriever.retrieve(query(Q, tenant, collection="knowledge")).items] == doc


# --- tenant isolation --------------------------------------------------------------------

VOCAB = ["anna", "tea", "chess", "lisbon", "budget", "order", "ORD-7781", "Bob", "summer", "report"]


@pytest.fixture(scope="module")
def tenants(store: LongTermStore) -> dict[str, dict[str, set[str]]]:
    """Four tenants with the same vocabulary (so every query matches all of them);
    ``{tenant: {user: ids}}``."""
    rng = np.random.default_rng(7)
    owned: dict[str, dict[str, set[str]]] = {}
    for t in ("iso-a", "iso-b", "iso-c", "iso-d"):
        items = [
            NewItem(
                " ".join(rng.choice(VOCAB, size=5)),
                tenant=t,
                user=f"u{i % 2}",
                created_at=stamp(2023, 8, 1 + i),
            )
            for i in range(8)
        ]
        ids = store.add("memories", items)
        owned[t] = {"u0": set(ids[0::2]), "u1": set(ids[1::2])}
    return owned


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tenant_name=st.sampled_from(["iso-a", "iso-b", "iso-c", "iso-d"]),
    words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6),
    k=st.integers(min_value=1, max_value=40),
    user=st.sampled_from([None, "u0", "u1"]),
    recent=st.lists(st.sampled_from(VOCAB), max_size=3),
)
def test_never_returns_another_tenants_item(
    store: LongTermStore,
    tenants: dict[str, dict[str, set[str]]],
    tenant_name: str,
    words: list[str],
    k: int,
    user: str | None,
    recent: list[str],
) -> None:
    retriever = Retriever(
        store, HashEmbedder(DIM), longterm=LongTermSettings(skip_below_cosine=0.0)
    )
    result = retriever.retrieve(
        query(" ".join(words), tenant_name, k=k, user=user, recent=tuple(recent))
    )
    allowed = tenants[tenant_name][user] if user else set().union(*tenants[tenant_name].values())
    returned = [*result.items, *result.below_threshold]
    assert returned, "every tenant holds matching items"
    assert len(returned) <= k
    for item in returned:
        assert item.id in allowed
        assert item.payload["tenant"] == tenant_name
        assert user is None or item.payload["user"] == user


# --- time window --------------------------------------------------------------------------

LAST_MONTH = "what did you do last month"  # July 2023 for NOW


def test_time_window_boosts_the_item_observed_inside_it(store: LongTermStore, tenant: str) -> None:
    same = at_cosine(0.6, 1)
    ids = put(
        store,
        tenant,
        [
            Spec("went hiking in the hills with friends", same, created_at=stamp(2023, 8, 19)),
            Spec("went hiking in the hills with friends", same, created_at=stamp(2023, 7, 10)),
        ],
    )
    embedder = FixedEmbedder({LAST_MONTH: basis(0)})
    result = Retriever(store, embedder, only(time_boost=0.6)).retrieve(query(LAST_MONTH, tenant))
    assert result.time_window is not None and result.time_window.phrase == "last month"
    assert order(result, ids) == [1, 0]
    inside, outside = result.items
    assert (inside.in_time_window, outside.in_time_window) == (True, False)
    assert inside.score == pytest.approx(1.6 * outside.score, rel=1e-5)
    assert inside.observed_at == datetime.fromtimestamp(stamp(2023, 7, 10), tz=UTC)

    # with the default settings too (the newer item only wins a little on decay)
    default = Retriever(store, embedder, replace(RetrievalSettings(), sparse_weight=0.0))
    assert order(default.retrieve(query(LAST_MONTH, tenant)), ids) == [1, 0]

    # without a date to resolve against, there is no window and no boost
    undated = Retriever(store, embedder, only(time_boost=0.6)).retrieve(
        query(LAST_MONTH, tenant, now=None)
    )
    assert undated.time_window is None
    assert {i.in_time_window for i in undated.items} == {None}
    assert undated.items[0].score == pytest.approx(undated.items[1].score, rel=1e-5)


def test_time_window_slack_and_filter(store: LongTermStore, tenant: str) -> None:
    # window July 2023 = [07-01, 08-01); slack 3 days: 08-03 counts, 08-06 does not
    ids = put(
        store,
        tenant,
        [
            Spec("inside the month", at_cosine(0.5, 1), created_at=stamp(2023, 7, 15)),
            Spec("just after, within the slack", at_cosine(0.5, 2), created_at=stamp(2023, 8, 3)),
            Spec("outside the window", at_cosine(0.5, 3), created_at=stamp(2023, 8, 6)),
            Spec("long before", at_cosine(0.5, 4), created_at=stamp(2023, 3, 1)),
        ],
    )
    embedder = FixedEmbedder({LAST_MONTH: basis(0)})
    boosted = Retriever(store, embedder, only(time_boost=0.6)).retrieve(query(LAST_MONTH, tenant))
    flags = {ids.index(i.id): i.in_time_window for i in boosted.items}
    assert flags == {0: True, 1: True, 2: False, 3: False}
    assert set(order(boosted, ids)[:2]) == {0, 1}

    filtered = Retriever(store, embedder, only(time_filter=True)).retrieve(
        query(LAST_MONTH, tenant)
    )
    assert sorted(order(filtered, ids)) == [0, 1]
    assert all(i.in_time_window for i in filtered.items)


# --- conversational context ------------------------------------------------------------------


def test_neighbor_bonus_lifts_the_reply_after_a_matching_turn(
    store: LongTermStore, tenant: str
) -> None:
    ids = put(
        store,
        tenant,
        [
            # the turn that matches the question, then the reply that answers it
            Spec(
                "Lena: where did you travel this summer?",
                at_cosine(0.9, 1),
                extra={"thread": "s1", "seq": 1},
            ),
            Spec(
                "Margaret: two weeks in Lisbon and Porto.",
                at_cosine(0.3, 2),
                extra={"thread": "s1", "seq": 2},
            ),
            # same thread, not adjacent; and adjacent seq in another thread
            Spec(
                "Margaret: the budget review moved again.",
                at_cosine(0.3, 3),
                extra={"thread": "s1", "seq": 5},
            ),
            Spec(
                "Margaret: the plumber comes on Monday.",
                at_cosine(0.3, 4),
                extra={"thread": "s2", "seq": 2},
            ),
            Spec("Margaret: my cat likes the new sofa.", at_cosine(0.3, 5)),  # no thread
        ],
    )
    embedder = FixedEmbedder(QVEC)

    flat = Retriever(store, embedder, NEUTRAL).retrieve(query(Q, tenant))
    assert {ids.index(i.id): round(i.score, 4) for i in flat.items} == {
        0: 0.9,
        1: 0.3,
        2: 0.3,
        3: 0.3,
        4: 0.3,
    }

    near = Retriever(store, embedder, only(neighbor_weight=0.3)).retrieve(query(Q, tenant))
    scores = {ids.index(i.id): i.score for i in near.items}
    assert order(near, ids)[:2] == [0, 1]
    assert scores[1] == pytest.approx(0.3 + 0.3 * 0.9, abs=1e-4)
    assert scores[0] == pytest.approx(0.9 + 0.3 * 0.3, abs=1e-4)  # its reply helps it too
    for other in (2, 3, 4):
        assert scores[other] == pytest.approx(0.3, abs=1e-4)

    thread = Retriever(store, embedder, only(thread_weight=0.5)).retrieve(query(Q, tenant))
    scores = {ids.index(i.id): i.score for i in thread.items}
    s1 = (0.9 + 0.3 + 0.3) / 3  # mean of the thread's best three
    assert scores[2] == pytest.approx(0.3 + 0.5 * s1, abs=1e-4)
    assert scores[3] == pytest.approx(0.3 + 0.5 * 0.3, abs=1e-4)  # a thread of one
    assert scores[4] == pytest.approx(0.3, abs=1e-4)


# --- informativeness, entity field, importance, type, decay -------------------------------


def test_a_pure_question_ranks_below_an_equal_statement(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec(
                "Did you ever try the new ramen place downtown near the station?", at_cosine(0.6, 1)
            ),
            Spec(
                "I finally tried the new ramen place downtown near the station.", at_cosine(0.6, 2)
            ),
            Spec("Sounds good to me.", at_cosine(0.6, 3)),
            # judged without its "Speaker:" prefix: 7 words, so short
            Spec(
                "Anna: I will bring the cake tomorrow night.",
                at_cosine(0.6, 4),
                extra={"speaker": "Anna"},
            ),
        ],
    )
    cfg = only(question_penalty=0.2, short_penalty=0.1, short_words=8)
    result = Retriever(store, FixedEmbedder(QVEC), cfg).retrieve(query(Q, tenant))
    scores = {ids.index(i.id): i.score for i in result.items}
    assert order(result, ids)[0] == 1
    assert scores[0] == pytest.approx(0.6 * 0.8, rel=1e-4)
    assert scores[1] == pytest.approx(0.6, rel=1e-4)
    assert scores[2] == pytest.approx(0.6 * 0.9, rel=1e-4)
    assert scores[3] == pytest.approx(0.6 * 0.9, rel=1e-4)


def test_flagged_small_talk_is_lowered_unless_the_question_asks_about_it(
    store: LongTermStore, tenant: str
) -> None:
    about = "what did I say when we finished"
    ids = put(
        store,
        tenant,
        [
            Spec("Thanks, that's all for today.", at_cosine(0.6, 1), extra={"small_talk": True}),
            # the same words written before the flag existed: not small talk
            Spec("Thanks, that's all for today!", at_cosine(0.6, 2)),
            Spec("I am allergic to peanuts.", at_cosine(0.5, 3)),
        ],
    )
    retriever = Retriever(
        store, FixedEmbedder({Q: basis(0), about: basis(0)}), only(small_talk_penalty=0.5)
    )
    result = retriever.retrieve(query(Q, tenant))
    scores = {ids.index(i.id): i.score for i in result.items}
    assert order(result, ids) == [1, 2, 0]
    assert scores[0] == pytest.approx(0.6 * 0.5, rel=1e-4)
    assert scores[1] == pytest.approx(0.6, rel=1e-4)
    assert scores[2] == pytest.approx(0.5, rel=1e-4)
    asked = retriever.retrieve(query(about, tenant))
    assert {ids.index(i.id): i.score for i in asked.items}[0] == pytest.approx(0.6, rel=1e-4)


def test_entity_matching_the_speaker_field_is_boosted(store: LongTermStore, tenant: str) -> None:
    text = "what did Anna say about the trip"
    possessive_text = "what did Anna's sister say about the trip"
    ids = put(
        store,
        tenant,
        [
            Spec(
                "Bob: we should book the train early", at_cosine(0.5, 1), extra={"speaker": "Bob"}
            ),
            Spec(
                "Anna: we should book the train early", at_cosine(0.5, 2), extra={"speaker": "Anna"}
            ),
            Spec("we should book the train early", at_cosine(0.5, 3)),
        ],
    )
    retriever = Retriever(
        store,
        FixedEmbedder({text: basis(0), possessive_text: basis(0)}),
        only(entity_field_boost=0.2),
    )
    result = retriever.retrieve(query(text, tenant))
    assert [r.name for r in result.routes] == ["query", "entities"]
    scores = {ids.index(i.id): i.score for i in result.items}
    assert order(result, ids)[0] == 1
    assert scores[1] == pytest.approx(1.2 * scores[0], rel=1e-5)
    assert scores[2] == pytest.approx(scores[0], rel=1e-5)

    # a possessive still names the speaker
    possessive = retriever.retrieve(query(possessive_text, tenant))
    assert possessive.items[0].id == ids[1]


def test_a_rewritten_payload_is_scored_anew_by_the_same_retriever(
    store: LongTermStore, tenant: str
) -> None:
    text = "what did Anna say about the ferry"
    point_id = str(uuid.uuid4())

    def write(speaker: str) -> None:
        item = NewItem(
            f"{speaker}: the ferry leaves at nine",
            tenant=tenant,
            id=point_id,
            created_at=stamp(2023, 8, 1),
            extra={"speaker": speaker},
        )
        store.add_vectors("memories", [item], at_cosine(0.5, 1)[None, :])

    write("Bob")
    retriever = Retriever(store, FixedEmbedder({text: basis(0)}), only(entity_field_boost=0.5))
    before = retriever.retrieve(query(text, tenant)).items[0].score
    write("Anna")  # same point, new payload: the speaker now matches the query's entity
    after = retriever.retrieve(query(text, tenant)).items[0]
    assert after.payload["speaker"] == "Anna"
    assert after.score == pytest.approx(1.5 * before, rel=1e-5)


def test_importance_and_type_weights(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec("an important fact about the trip", at_cosine(0.5, 1), extra={"importance": 0.9}),
            Spec("a minor fact about the trip", at_cosine(0.5, 2), extra={"importance": 0.1}),
            Spec("a fact of unknown importance", at_cosine(0.5, 3)),
            Spec("a preference about the trip", at_cosine(0.5, 4), type="preference"),
            Spec("a summary about the trip", at_cosine(0.5, 5), type="summary"),
        ],
    )
    cfg = only(importance_weight=0.2, type_weights=(("preference", 1.1), ("summary", 0.9)))
    result = Retriever(store, FixedEmbedder(QVEC), cfg).retrieve(query(Q, tenant))
    scores = {ids.index(i.id): i.score for i in result.items}
    assert scores[0] == pytest.approx(0.5 * 1.08, rel=1e-4)
    assert scores[1] == pytest.approx(0.5 * 0.92, rel=1e-4)
    assert scores[2] == pytest.approx(0.5, rel=1e-4)
    assert scores[3] == pytest.approx(0.55, rel=1e-4)
    assert scores[4] == pytest.approx(0.45, rel=1e-4)
    assert order(result, ids) == [3, 0, 2, 1, 4]


def test_time_decay_prefers_newer_and_never_boosts_the_future(
    store: LongTermStore, tenant: str
) -> None:
    same = at_cosine(0.5, 1)
    day = 86_400.0
    now_s = NOW.timestamp()
    ids = put(
        store,
        tenant,
        [
            Spec("the same memory", same, created_at=now_s - 30 * day),
            Spec("the same memory", same, created_at=now_s - 1 * day),
            Spec("the same memory", same, created_at=now_s + 10 * day),  # clock skew
        ],
    )
    result = Retriever(
        store, FixedEmbedder(QVEC), only(decay_weight=1.0, decay_per_day=0.96)
    ).retrieve(query(Q, tenant))
    scores = {ids.index(i.id): i.score for i in result.items}
    assert scores[0] == pytest.approx(0.5 * 0.96**30, rel=1e-4)
    assert scores[1] == pytest.approx(0.5 * 0.96, rel=1e-4)
    assert scores[2] == pytest.approx(0.5, rel=1e-4)


# --- confidence ----------------------------------------------------------------------------


def test_low_confidence_exactly_below_the_threshold(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec("close match", at_cosine(0.50, 1)),
            Spec("weak match", at_cosine(0.35, 2)),
            Spec("poor match", at_cosine(0.20, 3)),
        ],
    )
    retriever = Retriever(store, FixedEmbedder(QVEC), NEUTRAL, LongTermSettings())
    result = retriever.retrieve(query(Q, tenant))
    assert not result.l3_skipped and result.below_threshold == ()
    assert order(result, ids) == [0, 1, 2]
    assert [round(i.cosine, 4) for i in result.items] == [0.5, 0.35, 0.2]
    assert [i.low_confidence for i in result.items] == [False, True, True]  # threshold 0.40

    strict = Retriever(
        store,
        FixedEmbedder(QVEC),
        NEUTRAL,
        LongTermSettings(low_confidence_cosine=0.36, skip_below_cosine=0.1),
    ).retrieve(query(Q, tenant))
    assert [i.low_confidence for i in strict.items] == [False, True, True]
    lenient = Retriever(
        store,
        FixedEmbedder(QVEC),
        NEUTRAL,
        LongTermSettings(low_confidence_cosine=0.34, skip_below_cosine=0.1),
    ).retrieve(query(Q, tenant))
    assert [i.low_confidence for i in lenient.items] == [False, False, True]


def test_l3_is_skipped_when_every_item_is_below_the_floor(
    store: LongTermStore, tenant: str
) -> None:
    # Thresholds given, not the (calibrated, movable) defaults: flag < 0.40, skip < 0.30.
    floors = LongTermSettings(low_confidence_cosine=0.40, skip_below_cosine=0.30)
    ids = put(
        store, tenant, [Spec("faint", at_cosine(0.25, 1)), Spec("fainter", at_cosine(0.10, 2))]
    )
    result = Retriever(store, FixedEmbedder(QVEC), NEUTRAL, floors).retrieve(query(Q, tenant))
    assert result.l3_skipped
    assert result.items == ()
    assert [i.id for i in result.below_threshold] == ids
    assert all(i.low_confidence for i in result.below_threshold)

    # one item at or above the floor among the top k: nothing is skipped
    put(store, tenant, [Spec("fair", at_cosine(0.31, 3))])
    kept = Retriever(store, FixedEmbedder(QVEC), NEUTRAL, floors).retrieve(query(Q, tenant))
    assert not kept.l3_skipped and len(kept.items) == 3 and kept.below_threshold == ()

    raised = Retriever(
        store,
        FixedEmbedder(QVEC),
        NEUTRAL,
        LongTermSettings(low_confidence_cosine=0.6, skip_below_cosine=0.55),
    ).retrieve(query(Q, tenant))
    assert raised.l3_skipped and raised.items == () and len(raised.below_threshold) == 3


# --- reranking -----------------------------------------------------------------------------


def test_a_reranker_with_full_weight_decides_the_order(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec("first by cosine", at_cosine(0.8, 1)),
            Spec("second by cosine", at_cosine(0.6, 2)),
            Spec("third by cosine", at_cosine(0.4, 3)),
        ],
    )
    table = {"first by cosine": 0.0, "second by cosine": 5.0, "third by cosine": 9.0}
    fake = FakeReranker(table)
    result = Retriever(store, FixedEmbedder(QVEC), only(rerank_weight=1.0), reranker=fake).retrieve(
        query(Q, tenant)
    )
    assert order(result, ids) == [2, 1, 0]
    assert [round(i.score, 6) for i in result.items] == [1.0, round(5 / 9, 6), 0.0]
    assert [round(i.cosine, 4) for i in result.items] == [0.4, 0.6, 0.8]  # cosine kept
    ((q_text, q_vec, texts, cosines),) = fake.calls
    assert q_text == Q and np.allclose(q_vec, basis(0))
    assert texts == ["first by cosine", "second by cosine", "third by cosine"]
    assert cosines == pytest.approx([0.8, 0.6, 0.4], abs=1e-4)

    off = FakeReranker(table)
    plain = Retriever(store, FixedEmbedder(QVEC), only(rerank_weight=0.0), reranker=off).retrieve(
        query(Q, tenant)
    )
    assert order(plain, ids) == [0, 1, 2] and off.calls == []

    half = Retriever(
        store, FixedEmbedder(QVEC), only(rerank_weight=0.5), reranker=FakeReranker(table)
    ).retrieve(query(Q, tenant))
    assert all(0.0 <= i.score <= 1.0 for i in half.items)


def test_reranker_ties_keep_the_retrieval_order(store: LongTermStore, tenant: str) -> None:
    # ids are random UUIDs: were ties broken by id, this order would be a coin toss
    ids = put(
        store,
        tenant,
        [Spec(f"candidate {i}", at_cosine(0.8 - 0.1 * i, i + 1)) for i in range(5)],
    )
    flat = FakeReranker({f"candidate {i}": 1.0 for i in range(5)})
    result = Retriever(store, FixedEmbedder(QVEC), only(rerank_weight=1.0), reranker=flat).retrieve(
        query(Q, tenant)
    )
    assert order(result, ids) == [0, 1, 2, 3, 4]


def test_embedding_rescorer() -> None:
    rescorer = EmbeddingRescorer()
    assert rescorer.scores("q", basis(0), ["a", "b"], [1.0, -1.0]) == [1.0, 0.0]
    assert rescorer.scores("q", basis(0), [], []) == []
    with pytest.raises(ValidationError) as info:
        rescorer.scores("q", basis(0), ["a", "b"], [0.5])
    assert info.value.field == "cosines"


def test_embedding_rescorer_keeps_the_cosine_order(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec("mid", at_cosine(0.5, 1), extra={"importance": 1.0}),
            Spec("high", at_cosine(0.7, 2), extra={"importance": 0.0}),
        ],
    )
    cfg = only(rerank_weight=1.0, importance_weight=1.0)  # importance would flip the order
    result = Retriever(store, FixedEmbedder(QVEC), cfg, reranker=EmbeddingRescorer()).retrieve(
        query(Q, tenant)
    )
    assert order(result, ids) == [1, 0]


# --- routes on each item -------------------------------------------------------------------


def test_each_item_reports_the_routes_that_found_it(store: LongTermStore, tenant: str) -> None:
    text, recent = "alpha bravo charlie", "delta echo foxtrot"
    ids = put(
        store,
        tenant,
        [
            Spec("found by the question", at_cosine(0.95, 1)),
            Spec("found by the conversation", (0.8 * basis(5) + 0.6 * basis(6)).astype(np.float32)),
            Spec("found by neither", basis(7)),
        ],
    )
    embedder = FixedEmbedder({text: basis(0), recent: basis(5)})
    result = Retriever(store, embedder, only(route_depth=1, secondary_route_depth=1)).retrieve(
        query(text, tenant, recent=(recent,))
    )
    assert [r.name for r in result.routes] == ["query", "intent"]
    assert embedder.calls == [(text, recent)]  # every route embedded in one batch
    found = {ids.index(i.id): i.routes for i in result.items}
    assert found == {0: ("query",), 1: ("intent",)}
    scores = {ids.index(i.id): i.score for i in result.items}
    assert scores[1] == pytest.approx(0.4 * 0.8, abs=1e-4)  # intent route weight x cosine


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field_name"),
    [
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": 42}, "text"),
        ({"tenant": "bad tenant"}, "tenant"),
        ({"tenant": ""}, "tenant"),
        ({"user": "a:b"}, "user"),
        ({"k": 0}, "k"),
        ({"k": -1}, "k"),
        ({"k": 201}, "k"),
        ({"k": True}, "k"),
        ({"now": datetime(2023, 8, 20)}, "now"),
        ({"now": "2023-08-20"}, "now"),
        ({"recent": ["a list"]}, "recent"),
        ({"recent": tuple(str(i) for i in range(21))}, "recent"),
        ({"recent": ("ok", 3)}, "recent[1]"),
        ({"collection": "unknown"}, "collection"),
        ({"types": ()}, "types"),
        ({"types": ["fact"]}, "types"),
        ({"types": ("bad type",)}, "types"),
    ],
)
def test_query_validation_names_the_field(options: dict[str, Any], field_name: str) -> None:
    values: dict[str, Any] = {"text": "what now", "tenant": "acme", **options}
    with pytest.raises(ValidationError) as info:
        RetrievalQuery(**values)
    assert info.value.field == field_name


def test_long_recent_turns_do_not_break_retrieval(store: LongTermStore, tenant: str) -> None:
    ids = put(store, tenant, [Spec("a memory", at_cosine(0.9, 1))])
    pasted = "a pasted document line " * 2_000  # 46k chars: over a query's 32k limit
    result = Retriever(store, FixedEmbedder(QVEC), NEUTRAL).retrieve(
        query(Q, tenant, recent=(pasted, "and a short turn"))
    )
    assert [r.name for r in result.routes] == ["query", "intent"]
    assert [i.id for i in result.items] == ids


def test_retrieve_takes_a_retrieval_query(store: LongTermStore) -> None:
    with pytest.raises(TypeError):
        Retriever(store, FixedEmbedder(QVEC)).retrieve("what now")  # type: ignore[arg-type]


def test_query_defaults() -> None:
    q = RetrievalQuery("what now", "acme")
    assert (q.k, q.now, q.recent, q.collection, q.types, q.user) == (
        10,
        None,
        (),
        "memories",
        None,
        None,
    )


# --- the real model --------------------------------------------------------------------------


def test_real_model_paraphrase_and_date_question(minilm: Embedder) -> None:
    # one adapter is enough here (the behaviour tests above run on both); local mode
    # opens in milliseconds, an edge index in seconds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index = QdrantServerIndex(QdrantClient(location=":memory:"))
    store = LongTermStore(index, minilm, Bm25Encoder(), LongTermSettings(), clock=FakeClock())
    try:
        ids = store.add(
            "memories",
            [
                NewItem(
                    "Anna loves drinking green tea every morning.",
                    tenant="t",
                    created_at=stamp(2023, 7, 1),
                ),
                NewItem(
                    "Bob repaired his bicycle over the weekend.",
                    tenant="t",
                    created_at=stamp(2023, 8, 12),
                ),
                NewItem(
                    "Anna went hiking in the Alps with her sister.",
                    tenant="t",
                    created_at=stamp(2023, 8, 10),
                ),
                NewItem(
                    "Anna went hiking near Lake Como with her cousin.",
                    tenant="t",
                    created_at=stamp(2023, 3, 5),
                ),
            ],
        )
        retriever = Retriever(store, minilm)
        drink = retriever.retrieve(query("What beverage does Anna enjoy?", "t", k=3))
        assert drink.items[0].id == ids[0] and not drink.items[0].low_confidence

        hike = retriever.retrieve(query("Where did Anna go hiking last week?", "t", k=3))
        assert hike.time_window is not None and hike.time_window.phrase == "last week"
        assert hike.items[0].id == ids[2] and hike.items[0].in_time_window
        como = next(i for i in hike.items if i.id == ids[3])
        assert como.in_time_window is False
    finally:
        store.close()


def test_secondary_routes_search_their_own_depth(store: LongTermStore, tenant: str) -> None:
    text, recent = "alpha bravo charlie", "delta echo foxtrot"
    put(
        store,
        tenant,
        [Spec(f"near the conversation {i}", at_cosine(0.9 - i / 100, 5)) for i in range(4)],
    )
    embedder = FixedEmbedder({text: basis(0), recent: basis(5)})
    shallow = Retriever(store, embedder, only(route_depth=10, secondary_route_depth=2))
    deep = Retriever(store, embedder, only(route_depth=1, secondary_route_depth=10))
    from_intent = lambda r: [i for i in r.items if "intent" in i.routes]  # noqa: E731
    assert len(from_intent(shallow.retrieve(query(text, tenant, recent=(recent,))))) == 2
    assert len(from_intent(deep.retrieve(query(text, tenant, recent=(recent,))))) == 4


def test_the_entity_route_is_pooled_from_the_querys_own_pass(
    store: LongTermStore, tenant: str
) -> None:
    text = "where did Zorblax hike"
    ids = put(
        store,
        tenant,
        [
            Spec("about the entity", basis(3)),
            Spec("about nothing asked", basis(7)),
            Spec("about the whole question", basis(DEFAULT_AXIS)),
        ],
    )
    embedder = TokenFixedEmbedder({"Zorblax": basis(3)})
    retriever = Retriever(
        store,
        embedder,
        only(route_depth=1, secondary_route_depth=1),
        LongTermSettings(skip_below_cosine=0.0),
    )
    result = retriever.retrieve(query(text, tenant))
    assert [r.name for r in result.routes] == ["query", "entities"]
    assert embedder.token_calls == [text] and embedder.calls == []  # one pass, no second
    found = {ids.index(i.id): i.routes for i in result.items}
    # The query's vector (its four other tokens) finds the question's memory; the
    # entity's own token vector finds the entity's.
    assert found == {0: ("entities",), 2: ("query",)}


def test_the_entity_route_falls_back_to_its_own_embedding(
    store: LongTermStore, tenant: str
) -> None:
    embedder = TokenFixedEmbedder({})
    retriever = Retriever(store, embedder, only(route_depth=1, secondary_route_depth=1))
    # An embedder without token vectors (FixedEmbedder) embeds both texts in one batch.
    plain = FixedEmbedder({})
    Retriever(store, plain, only()).retrieve(query("where did Zorblax hike", tenant))
    assert plain.calls == [("where did Zorblax hike", "Zorblax")]
    # With an intent route too, the query and entities take one pass, the intent another.
    retriever.retrieve(query("where did Zorblax hike", tenant, recent=("we spoke",)))
    assert embedder.token_calls == ["where did Zorblax hike"]
    assert embedder.calls == [("we spoke",)]


def test_a_restatement_gives_way_to_a_different_memory(store: LongTermStore, tenant: str) -> None:
    ids = put(
        store,
        tenant,
        [
            Spec("went to Rome", at_cosine(0.9, 1)),
            Spec("went to Rome, really", at_cosine(0.89, 1)),  # the same thing again
            Spec("went to Oslo", at_cosine(0.85, 2)),
        ],
    )
    embedder = FixedEmbedder(QVEC)
    plain = Retriever(store, embedder, NEUTRAL).retrieve(query(Q, tenant, k=2))
    assert order(plain, ids) == [0, 1]
    diverse = Retriever(store, embedder, only(redundancy_penalty=0.2)).retrieve(
        query(Q, tenant, k=2)
    )
    assert order(diverse, ids) == [0, 2]
    # Scores are the marginal ones, in order; the first keeps its own.
    first, second = diverse.items
    assert first.score == pytest.approx(plain.items[0].score)
    assert second.score == pytest.approx(0.85 * (1 - 0.2 * 0.9 * 0.85), rel=1e-3)
