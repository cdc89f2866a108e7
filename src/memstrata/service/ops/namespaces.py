"""Shared namespaces (docs/architecture.md, "Sharing"): create, ask, grant, revoke, write, read."""

from __future__ import annotations

from typing import Any

from memstrata.errors import (
    ConflictError,
    NotFoundError,
)
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import (
    Call,
    Operation,
)


def _create_namespace(call: Call, req: m.CreateNamespaceRequest) -> m.NamespaceOut:
    ns = call.engine.create_namespace(
        req.namespace,
        tenant=call.caller.tenant,
        owner=req.owner or call.caller.agent,
        purpose=req.purpose,
        ttl_s=req.ttl_s,
    )
    return convert.namespace_out(ns)


def _list_namespaces(call: Call, req: m.Empty) -> m.NamespaceList:
    found = call.engine.namespaces(tenant=call.caller.tenant, agent=call.caller.agent)
    return m.NamespaceList(namespaces=[convert.namespace_out(ns) for ns in found])


def _request_access(call: Call, req: m.AccessRequestIn) -> m.AccessRequestOut:
    made = call.engine.request_namespace_access(
        req.namespace,
        tenant=call.caller.tenant,
        agent=call.caller.agent,
        purpose=req.purpose,
        mode=req.mode,
    )
    return convert.access_request_out(made)


def _access_requests(call: Call, req: m.NamespaceRef) -> m.AccessRequestList:
    found = call.engine.namespace_access_requests(
        req.namespace, tenant=call.caller.tenant, by=call.caller.agent
    )
    return m.AccessRequestList(requests=[convert.access_request_out(r) for r in found])


def _grant_access(call: Call, req: m.GrantRequest) -> m.NamespaceOut:
    call.engine.grant_namespace_access(
        req.namespace,
        req.agent,
        tenant=call.caller.tenant,
        mode=req.mode,
        by=call.caller.agent,
        admin=call.caller.role == "admin",
    )
    return convert.namespace_out(
        call.engine.namespace(req.namespace, tenant=call.caller.tenant, agent=req.agent)
    )


def _revoke_access(call: Call, req: m.RevokeAccessRequest) -> m.Empty:
    call.engine.revoke_namespace_access(
        req.namespace,
        req.agent,
        tenant=call.caller.tenant,
        by=call.caller.agent,
        admin=call.caller.role == "admin",
    )
    return m.Empty()


def _put_shared(call: Call, req: m.PutSharedRequest) -> m.SharedItemOut:
    item = call.engine.put_shared(
        req.namespace,
        req.item_id,
        req.value,
        tenant=call.caller.tenant,
        agent=call.caller.agent,
        level=req.level,
    )
    return convert.shared_item_out(item)


def _shared_items(call: Call, req: m.Empty) -> m.SharedItemList:
    items = call.engine.shared_items(
        tenant=call.caller.tenant, agent=call.caller.agent, clearance=call.caller.clearance
    )
    return m.SharedItemList(items=[convert.shared_item_out(i) for i in items])


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "create_namespace",
        "Create a shared namespace (purpose, TTL, owner) in the caller's tenant.",
        m.CreateNamespaceRequest,
        m.NamespaceOut,
        "admin",
        _create_namespace,
        (ConflictError,),
    ),
    Operation(
        "list_namespaces",
        "The shared namespaces the caller's agent may read.",
        m.Empty,
        m.NamespaceList,
        "reader",
        _list_namespaces,
    ),
    Operation(
        "request_access",
        "Ask for access to a shared namespace, stating the purpose (audited).",
        m.AccessRequestIn,
        m.AccessRequestOut,
        "reader",
        _request_access,
    ),
    Operation(
        "access_requests",
        "The pending access requests of a namespace the caller owns.",
        m.NamespaceRef,
        m.AccessRequestList,
        "reader",
        _access_requests,
        (NotFoundError,),
    ),
    Operation(
        "grant_access",
        "Grant an agent read or write access (the owner, or a tenant admin; audited).",
        m.GrantRequest,
        m.NamespaceOut,
        "writer",
        _grant_access,
        (NotFoundError,),
    ),
    Operation(
        "revoke_access",
        "Revoke an agent's access to a namespace (audited).",
        m.RevokeAccessRequest,
        m.Empty,
        "writer",
        _revoke_access,
        (NotFoundError,),
    ),
    Operation(
        "put_shared",
        "Write an item of shared context (write access); it lives the namespace's TTL.",
        m.PutSharedRequest,
        m.SharedItemOut,
        "writer",
        _put_shared,
        (NotFoundError,),
    ),
    Operation(
        "shared_items",
        "The live items of every namespace the caller may read (within its clearance).",
        m.Empty,
        m.SharedItemList,
        "reader",
        _shared_items,
    ),
)
