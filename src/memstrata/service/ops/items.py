"""The item store behind LangGraph's BaseStore."""

from __future__ import annotations

from typing import Any

from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import (
    Call,
    Operation,
)
from memstrata.service.ops.clearance import ITEM_STORE_LEVEL, require


def _store_put(call: Call, req: m.StorePutRequest) -> m.StoreItemOut:
    index: list[str] | bool | None = False if not req.searchable else (req.index or None)
    item = call.engine.store_put(
        req.namespace, req.key, req.value, tenant=call.caller.tenant, index=index
    )
    return convert.store_item_out(item)


def _store_get(call: Call, req: m.StoreItemRef) -> m.StoreGetResult:
    require(call, ITEM_STORE_LEVEL, "the item store")
    item = call.engine.store_get(req.namespace, req.key, tenant=call.caller.tenant)
    return m.StoreGetResult(item=None if item is None else convert.store_item_out(item))


def _store_delete(call: Call, req: m.StoreItemRef) -> m.StoreDeleteResult:
    deleted = call.engine.store_delete(req.namespace, req.key, tenant=call.caller.tenant)
    return m.StoreDeleteResult(deleted=deleted)


def _store_search(call: Call, req: m.StoreSearchRequest) -> m.StoreItemList:
    require(call, ITEM_STORE_LEVEL, "the item store")
    items = call.engine.store_search(
        req.namespace_prefix,
        tenant=call.caller.tenant,
        query=req.query,
        filter=req.filter,
        limit=req.limit,
        offset=req.offset,
    )
    return m.StoreItemList(items=[convert.store_item_out(i) for i in items])


def _store_list_namespaces(call: Call, req: m.StoreListNamespacesRequest) -> m.StoreNamespaceList:
    require(call, ITEM_STORE_LEVEL, "the item store")
    found = call.engine.store_list_namespaces(
        tenant=call.caller.tenant,
        prefix=req.prefix,
        suffix=req.suffix,
        max_depth=req.max_depth,
        limit=req.limit,
        offset=req.offset,
    )
    return convert.store_namespaces_out(found)


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "store_put",
        "Store a JSON object under (namespace, key) of the item store (after the gateway).",
        m.StorePutRequest,
        m.StoreItemOut,
        "writer",
        _store_put,
    ),
    Operation(
        "store_get",
        "The item at (namespace, key) of the item store, if any.",
        m.StoreItemRef,
        m.StoreGetResult,
        "reader",
        _store_get,
    ),
    Operation(
        "store_delete",
        "Delete the item at (namespace, key) of the item store.",
        m.StoreItemRef,
        m.StoreDeleteResult,
        "writer",
        _store_delete,
    ),
    Operation(
        "store_search",
        "Items under a namespace prefix, filtered, ranked by hybrid search with a query.",
        m.StoreSearchRequest,
        m.StoreItemList,
        "reader",
        _store_search,
    ),
    Operation(
        "store_list_namespaces",
        "The namespaces of the item store (prefix, suffix, max depth).",
        m.StoreListNamespacesRequest,
        m.StoreNamespaceList,
        "reader",
        _store_list_namespaces,
    ),
)
