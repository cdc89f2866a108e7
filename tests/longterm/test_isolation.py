"""Cross-tenant isolation as a property: no read path ever returns a foreign item.

Random writes over several tenants and users that share vocabulary (so foreign
items are strong matches), random queries through every route - dense, sparse,
fused (both methods), get, count, delete - on both adapters.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.config import LongTermSettings
from memstrata.embed.protocol import Embedder
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.search import HybridSearch

TENANTS = ["t0", "t1", "t2", "t3", "t4"]
USERS = ["u0", "u1", "u2", None]
WORDS = ["invoice", "cat", "berlin", "zx81q", "meeting", "西湖", "杭州", "budget", "report"]

items_st = st.lists(
    st.builds(
        NewItem,
        text=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
        tenant=st.sampled_from(TENANTS),
        user=st.sampled_from(USERS),
        type=st.sampled_from(["fact", "event"]),
    ),
    min_size=1,
    max_size=25,
)
queries_st = st.lists(
    st.tuples(
        st.sampled_from(TENANTS),
        st.sampled_from(USERS),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    ),
    min_size=1,
    max_size=4,
)


def _owned(item: NewItem, tenant: str, user: str | None) -> bool:
    return item.tenant == tenant and (user is None or item.user == user)


def _check_store(
    store: LongTermStore,
    embedder: Embedder,
    items: list[NewItem],
    queries: list[Any],
    tenants: list[str],
) -> None:
    ids = store.add(MEMORIES, items)
    by_id = dict(zip(ids, items, strict=True))
    index: VectorIndex = store.index
    for tenant, user, text in queries:
        own = {i for i, item in by_id.items() if _owned(item, tenant, user)}
        flt = Filter(tenant=tenant, user=user)
        for fusion in ("rrf", "normalized"):
            hits = HybridSearch(store).search(
                MEMORIES, text, tenant=tenant, user=user, k=50, fusion=fusion
            )
            assert {h.id for h in hits} <= own
            assert all(h.payload["tenant"] == tenant for h in hits)
        # Positive control: a limit above the corpus size returns exactly the own
        # items on the dense route, so an over-eager filter would fail too.
        dense = index.search_dense(MEMORIES, embedder.embed([text])[0], flt, 100)
        assert {p.id for p in dense} == own
        sparse = index.search_sparse(MEMORIES, Bm25Encoder().encode_query(text), flt, 100)
        assert {p.id for p in sparse} <= own
        assert {p.id for p in sparse} == {
            i for i in own if set(text.split()) & set(by_id[i].text.split())
        }
        assert index.count(MEMORIES, flt) == len(own)
        assert {r.id for r in store.get(MEMORIES, list(by_id), tenant=tenant)} == {
            i for i, item in by_id.items() if item.tenant == tenant
        }
    # A delete naming every id only removes the deleting tenant's items.
    victim = queries[0][0]
    store.delete(MEMORIES, list(by_id), tenant=victim)
    for tenant in tenants:
        expected = 0 if tenant == victim else sum(item.tenant == tenant for item in items)
        assert store.count(MEMORIES, tenant=tenant) == expected


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory,
    make_index: Callable[[str, Path], VectorIndex],
    hash_embedder: Embedder,
) -> Iterator[list[LongTermStore]]:
    """One store per adapter, shared by all examples (opening an edge index costs ~0.4 s).

    Examples stay independent because each one namespaces its tenants; the data of
    earlier examples stays behind as extra foreign data for later ones.
    """
    root = tmp_path_factory.mktemp("isolation")
    built = [
        LongTermStore(
            make_index(kind, root / kind), hash_embedder, Bm25Encoder(), LongTermSettings()
        )
        for kind in ("edge", "server")
    ]
    yield built
    for store in built:
        store.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(items=items_st, queries=queries_st)
def test_no_route_returns_a_foreign_tenants_item(
    items: list[NewItem],
    queries: list[Any],
    stores: list[LongTermStore],
    hash_embedder: Embedder,
) -> None:
    ns = uuid.uuid4().hex[:8]
    items = [replace(item, tenant=f"{ns}-{item.tenant}") for item in items]
    queries = [(f"{ns}-{tenant}", user, text) for tenant, user, text in queries]
    for store in stores:
        _check_store(store, hash_embedder, items, queries, [f"{ns}-{t}" for t in TENANTS])
