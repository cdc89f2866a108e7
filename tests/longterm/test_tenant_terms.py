"""Each tenant's own BM25 term space (``tenant_term_ids``): a bijection per tenant,
stable across processes, and two tenants' terms that land on one id stay apart."""

from __future__ import annotations

import subprocess
import sys
import uuid

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.longterm.layout import _tenant_key, tenant_term_ids
from memstrata.longterm.points import Filter, Point, SparseVector
from memstrata.longterm.protocol import VectorIndex

_U32 = 2**32
_M1_INV = pow(0x85EBCA6B, -1, _U32)
_M2_INV = pow(0xC2B2AE35, -1, _U32)


def _unshift(h: int, shift: int) -> int:
    """Inverse of ``h ^= h >> shift`` on 32 bits."""
    result = h
    for _ in range(32 // shift + 1):
        result = h ^ (result >> shift)
    return result


def original_term(stored: int, tenant: str) -> int:
    """The term id ``tenant`` stores as ``stored``: the map inverted step by step."""
    h = _unshift(stored, 16)
    h = (h * _M2_INV) % _U32
    h = _unshift(h, 13)
    h = (h * _M1_INV) % _U32
    h = _unshift(h, 16)
    return h ^ _tenant_key(tenant)


def vector(*indices: int) -> SparseVector:
    return SparseVector(tuple(indices), tuple(1.0 for _ in indices))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, _U32 - 1), min_size=1, max_size=40, unique=True),
    st.text(alphabet="abcdefghij0123456789_-", min_size=1, max_size=12),
)
def test_map_is_invertible_per_tenant(indices: list[int], tenant: str) -> None:
    stored = tenant_term_ids(vector(*indices), tenant)
    assert all(0 <= i < _U32 for i in stored)
    assert len(set(stored)) == len(stored)  # a tenant's terms never merge
    assert [original_term(i, tenant) for i in stored] == indices


def test_tenants_get_their_own_ids_for_one_term() -> None:
    terms = vector(*range(1000, 1200))
    a, b = tenant_term_ids(terms, "acme"), tenant_term_ids(terms, "globex")
    assert sum(x != y for x, y in zip(a, b, strict=True)) == 200


def test_ids_are_pinned_and_stable_across_processes() -> None:
    # Stored indexes hold these ids: a change here must rename SPARSE_VECTOR.
    assert tenant_term_ids(vector(0, 1, 2**32 - 1), "acme") == [
        1269608476,
        3431943750,
        312613882,
    ]
    code = (
        "from memstrata.longterm.layout import tenant_term_ids as m;"
        "from memstrata.longterm.points import SparseVector as S;"
        "print(m(S((7, 123456), (1.0, 1.0)), 'acme'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == str(tenant_term_ids(vector(7, 123456), "acme"))


def _point(tenant: str, sparse: SparseVector, dim: int = 32) -> Point:
    dense = np.ones(dim, dtype=np.float32)
    return Point(str(uuid.uuid4()), dense, sparse, {"tenant": tenant, "text": "x"})


def test_colliding_ids_of_two_tenants_stay_apart(index: VectorIndex) -> None:
    """Tenant B gets terms built to share A's stored ids: A's hits and BM25 scores
    (IDF counted over A's points) are the same before and after B's writes."""
    a_terms = (11, 22)
    index.upsert("memories", [_point("ta", vector(11)), _point("ta", vector(11, 22))])
    index.upsert("memories", [_point("ta", vector(33)) for _ in range(3)])
    query = vector(*a_terms)
    before = index.search_sparse("memories", query, Filter(tenant="ta"), 10, with_payload=False)
    shared = [original_term(i, "tb") for i in tenant_term_ids(query, "ta")]
    assert tenant_term_ids(vector(*shared), "tb") == tenant_term_ids(query, "ta")
    b_points = [_point("tb", vector(*shared)) for _ in range(20)]
    index.upsert("memories", b_points)
    after = index.search_sparse("memories", query, Filter(tenant="ta"), 10, with_payload=False)
    assert [(p.id, round(p.score, 5)) for p in after] == [(p.id, round(p.score, 5)) for p in before]
    assert len(after) == 2
    # B's own query for its terms finds B's points only.
    found = index.search_sparse(
        "memories", vector(*shared), Filter(tenant="tb"), 50, with_payload=False
    )
    assert {p.id for p in found} == {p.id for p in b_points}
