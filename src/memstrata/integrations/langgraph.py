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

The store is written once against :class:`memstrata.interface.Memory`: a
:class:`memstrata.client.Client` calls a running ``memstrata serve`` (or a service in
this process) as its key's tenant, a :class:`memstrata.engine.ContextEngine` is called
directly as its ``tenant`` keyword's (``default``; ``MemstrataStore(engine,
tenant=...)`` binds another). ``abatch`` runs ``batch`` in a worker thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Iterable, Sequence
from typing import Any, cast

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

from memstrata.errors import ValidationError
from memstrata.interface import Memory, StoreItemView

__all__ = ["MemstrataStore"]


def _item(found: StoreItemView) -> Item:
    return Item(
        value=dict(found.value),
        key=found.key,
        namespace=tuple(found.namespace),
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


def _search_item(found: StoreItemView) -> SearchItem:
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


class _TenantBound:
    """The item-store operations of an engine, bound to one tenant (a client's tenant
    is its key's, so it needs none)."""

    def __init__(self, engine: Any, tenant: str) -> None:
        self._engine = engine
        self._tenant = tenant

    def __getattr__(self, name: str) -> Any:
        return functools.partial(getattr(self._engine, name), tenant=self._tenant)


class MemstrataStore(BaseStore):
    """A LangGraph store whose items live in memstrata (see the module docstring)."""

    def __init__(
        self,
        backend: Memory,
        *,
        tenant: str | None = None,
        index_fields: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(backend, Memory):
            raise TypeError("backend must be a memstrata Memory (a ContextEngine or a Client)")
        self._memory = backend
        if tenant is not None:
            # Only the engine takes a tenant per call; a client's is its key's.
            if "tenant" not in inspect.signature(backend.store_get).parameters:
                raise ValidationError("tenant", "a client acts for its key's tenant")
            self._memory = cast(Memory, _TenantBound(backend, tenant))
        self._fields = list(index_fields) if index_fields else None

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            found = self._memory.store_get(list(op.namespace), op.key)
            return None if found is None else _item(found)
        if isinstance(op, SearchOp):
            return [
                _search_item(item)
                for item in self._memory.store_search(
                    namespace_prefix=list(op.namespace_prefix),
                    query=op.query or None,
                    filter=dict(op.filter) if op.filter else None,
                    limit=op.limit,
                    offset=op.offset,
                )
            ]
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, ListNamespacesOp):
            prefix, suffix = _conditions(op)
            return self._memory.store_list_namespaces(
                prefix=prefix,
                suffix=suffix,
                max_depth=op.max_depth,
                limit=op.limit,
                offset=op.offset,
            )
        raise ValueError(f"unknown operation {type(op).__name__}")

    def _put(self, op: PutOp) -> None:
        ns = list(op.namespace)
        if op.value is None:
            self._memory.store_delete(ns, op.key)
            return
        fields = list(op.index) if op.index else self._fields
        self._memory.store_put(
            ns, op.key, dict(op.value), index=fields, searchable=op.index is not False
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a put is seen by the reads after it)."""
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))
