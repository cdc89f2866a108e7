"""LangGraph's ``BaseStore`` on memstrata: ``MemstrataStore(client)`` or
``MemstrataStore(engine)``.

Needs the ``langgraph`` extra (``pip install 'ctxstrata[langgraph]'``); nothing else in
memstrata imports langgraph.

How a LangGraph item maps onto memstrata (:mod:`memstrata.sharing.items`): the namespace
tuple, the key and the value dict are stored as they are, one item per
``(namespace, key)``, in the tenant's long-term store (L3), so items are persistent
across restarts and tenant-isolated. A put of an existing key replaces it, a put of
``None`` deletes it, and ``search(query=...)`` ranks items by memstrata's hybrid
retrieval (dense + BM25), each with its cosine to the query as ``score``. The value
passes memstrata's gateway before it is stored: credentials and PII come back
redacted. Namespace labels and keys are identifiers, stored as given.

Embeddings are memstrata's (the engine's model), not a LangGraph ``index`` config:
``index_fields`` chooses which fields of a value are embedded (default: the whole
value), and ``put(..., index=[...])`` or ``index=False`` chooses per item. TTLs are
not supported (``supports_ttl`` is False, as in ``BaseStore``).

With a :class:`memstrata.client.Client` the store calls a running ``memstrata serve``
(or a service in this process), as the key's tenant; with a
:class:`memstrata.engine.ContextEngine` it calls the engine directly, as ``tenant``.
``abatch`` runs ``batch`` in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from memstrata.client import Client
from memstrata.engine import ContextEngine
from memstrata.service import wire as m
from memstrata.sharing.items import StoreItem

__all__ = ["MemstrataStore"]


def _item(found: StoreItem | m.StoreItemOut) -> Item:
    return Item(
        value=dict(found.value),
        key=found.key,
        namespace=tuple(found.namespace),
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


def _search_item(found: StoreItem | m.StoreItemOut) -> SearchItem:
    return SearchItem(
        namespace=tuple(found.namespace),
        key=found.key,
        value=dict(found.value),
        created_at=found.created_at,
        updated_at=found.updated_at,
        score=found.score,
    )


def _conditions(op: ListNamespacesOp) -> tuple[list[str] | None, list[str] | None]:
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    for condition in op.match_conditions or ():
        path = [str(label) for label in condition.path]
        if condition.match_type == "prefix":
            prefix = path
        elif condition.match_type == "suffix":
            suffix = path
        else:
            raise ValueError(f"unsupported match type {condition.match_type!r}")
    return prefix, suffix


class MemstrataStore(BaseStore):
    """A LangGraph store whose items live in memstrata (see the module docstring)."""

    def __init__(
        self,
        backend: Client | ContextEngine,
        *,
        tenant: str = "default",
        index_fields: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(backend, Client | ContextEngine):
            raise TypeError("backend must be a memstrata Client or ContextEngine")
        self._backend = backend
        self._tenant = tenant
        self._fields = list(index_fields) if index_fields else None

    def _index(self, index: Any) -> list[str] | bool | None:
        if index is False:
            return False
        return list(index) if index else self._fields

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list(op)
        raise ValueError(f"unknown operation {type(op).__name__}")

    def _get(self, op: GetOp) -> Item | None:
        ns, backend = list(op.namespace), self._backend
        if isinstance(backend, Client):
            found = backend.store_get(ns, op.key).item
            return None if found is None else _item(found)
        item = backend.store_get(ns, op.key, tenant=self._tenant)
        return None if item is None else _item(item)

    def _put(self, op: PutOp) -> None:
        ns, backend = list(op.namespace), self._backend
        if op.value is None:
            if isinstance(backend, Client):
                backend.store_delete(ns, op.key)
            else:
                backend.store_delete(ns, op.key, tenant=self._tenant)
            return
        index = self._index(op.index)
        if isinstance(backend, Client):
            fields = index if isinstance(index, list) else None
            backend.store_put(
                ns, op.key, dict(op.value), index=fields, searchable=index is not False
            )
        else:
            backend.store_put(ns, op.key, dict(op.value), tenant=self._tenant, index=index)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        backend = self._backend
        if isinstance(backend, Client):
            found: Sequence[StoreItem | m.StoreItemOut] = backend.store_search(
                namespace_prefix=list(op.namespace_prefix),
                query=op.query or None,
                filter=dict(op.filter) if op.filter else None,
                limit=op.limit,
                offset=op.offset,
            ).items
        else:
            found = backend.store_search(
                list(op.namespace_prefix),
                tenant=self._tenant,
                query=op.query or None,
                filter=op.filter or None,
                limit=op.limit,
                offset=op.offset,
            )
        return [_search_item(item) for item in found]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix, suffix = _conditions(op)
        backend = self._backend
        if isinstance(backend, Client):
            listed = backend.store_list_namespaces(
                prefix=prefix,
                suffix=suffix,
                max_depth=op.max_depth,
                limit=op.limit,
                offset=op.offset,
            )
            return [tuple(n.namespace) for n in listed.namespaces]
        return backend.store_list_namespaces(
            tenant=self._tenant,
            prefix=prefix,
            suffix=suffix,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a put is seen by the reads after it)."""
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))
