"""The pure filter builders: the tenant condition is always there, and first."""

from __future__ import annotations

import uuid

import pytest
from qdrant_client import models as qm

from memstrata.errors import ValidationError
from memstrata.longterm.edge_requests import edge_filter
from memstrata.longterm.points import Filter
from memstrata.longterm.qdrant_server import client_filter

FULL = Filter(
    tenant="acme",
    user="bob",
    types=("fact", "event"),
    created_after=10.0,
    created_before=20.0,
    extras=(("lang", "en"), ("active", 1)),
)


def test_client_filter_full() -> None:
    assert client_filter(FULL) == qm.Filter(
        must=[
            qm.FieldCondition(key="tenant", match=qm.MatchValue(value="acme")),
            qm.FieldCondition(key="user", match=qm.MatchValue(value="bob")),
            qm.FieldCondition(key="type", match=qm.MatchAny(any=["fact", "event"])),
            qm.FieldCondition(key="created_at", range=qm.Range(gt=10.0, lt=20.0)),
            qm.FieldCondition(key="lang", match=qm.MatchValue(value="en")),
            qm.FieldCondition(key="active", match=qm.MatchValue(value=1)),
        ]
    )


def test_client_filter_tenant_only() -> None:
    assert client_filter(Filter(tenant="acme")) == qm.Filter(
        must=[qm.FieldCondition(key="tenant", match=qm.MatchValue(value="acme"))]
    )


def test_edge_filter_full() -> None:
    must = edge_filter(FULL).must
    assert must is not None
    keys = [c.key for c in must]  # type: ignore[union-attr]
    assert keys == ["tenant", "user", "type", "created_at", "lang", "active"]
    assert must[0].match.value == "acme"  # type: ignore[union-attr]
    assert must[2].match.value == ["fact", "event"]  # type: ignore[union-attr]
    assert (must[3].range.gt, must[3].range.lt) == (10.0, 20.0)  # type: ignore[union-attr]


def test_edge_filter_tenant_only() -> None:
    must = edge_filter(Filter(tenant="acme")).must
    assert must is not None and len(must) == 1
    assert must[0].key == "tenant" and must[0].match.value == "acme"  # type: ignore[union-attr]


def test_ids_are_an_extra_condition_inside_the_tenant() -> None:
    pid = "0b0c5a86-8f5e-4b0a-9a39-8d7b9f3c2a11"
    built = client_filter(Filter(tenant="acme", ids=(pid.upper(),)))
    assert built.must == [
        qm.FieldCondition(key="tenant", match=qm.MatchValue(value="acme")),
        qm.HasIdCondition(has_id=[pid]),
    ]
    must = edge_filter(Filter(tenant="acme", ids=(pid,))).must
    assert must is not None and must[0].key == "tenant"  # type: ignore[union-attr]
    assert {str(i) for i in must[1].point_ids} == {pid}  # type: ignore[union-attr]


def test_ids_filter_takes_the_engine_id_objects_it_is_given() -> None:
    pid, other = "0b0c5a86-8f5e-4b0a-9a39-8d7b9f3c2a11", "1c0c5a86-8f5e-4b0a-9a39-8d7b9f3c2a11"
    flt = Filter(tenant="acme", ids=(pid, other))
    must = edge_filter(flt, {pid: uuid.UUID(pid)}).must
    assert must is not None
    assert {str(i) for i in must[1].point_ids} == {pid, other}  # type: ignore[union-attr]


def test_filters_without_ids_are_built_once_per_value() -> None:
    first = edge_filter(Filter(tenant="acme", user="u1"))
    assert edge_filter(Filter(tenant="acme", user="u1")) is first
    assert edge_filter(Filter(tenant="acme", user="u2")) is not first
    one = edge_filter(Filter(tenant="acme", extras=(("n", 1),)))
    assert edge_filter(Filter(tenant="acme", extras=(("n", "1"),))) is not one


def test_bool_extras_are_refused_not_silently_unmatched() -> None:
    # qdrant-edge-py 0.9.0 sends MatchValue(True) as the integer 1: no boolean payload
    # would ever match, so the filter is refused on every adapter instead.
    with pytest.raises(ValidationError) as err:
        Filter(tenant="acme", extras=(("active", True),))
    assert err.value.field == "extras" and "booleans" in str(err.value)
