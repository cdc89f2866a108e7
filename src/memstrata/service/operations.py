"""The capability table: every operation of the service, declared once.

Each :class:`Operation` names its request and response models, the role it needs,
the errors it may raise and the function that runs it on the engine. REST routes,
gRPC methods, MCP tools and the client's methods are all generated from
:data:`OPERATIONS`; a test walks the table against each transport.

Tenancy: the tenant is always the caller's key's. Session ids are kept per tenant
(the engine sees ``<tenant>@<session id>``), so one tenant can neither open, read
nor even detect another tenant's session: both get the same ``NotFoundError``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memstrata.clock import Clock
from memstrata.context import ToolResult
from memstrata.engine import ContextEngine
from memstrata.errors import (
    AuthenticationError,
    BackendError,
    ContextMissError,
    MemstrataError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ValidationError,
)
from memstrata.knowledge import Document
from memstrata.namespaces import AccessRequest, Namespace, SharedItem
from memstrata.service import convert
from memstrata.service import models as m
from memstrata.service.auth import Caller, KeyInfo, KeyStore, Role
from memstrata.session import SessionState
from memstrata.store import StoreItem
from memstrata.working.values import SeriesPoint

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)

SESSION_SEPARATOR = "@"
# Every operation can fail these ways before it runs.
COMMON_ERRORS: tuple[type[MemstrataError], ...] = (
    AuthenticationError,
    PermissionDeniedError,
    RateLimitedError,
    ValidationError,
    BackendError,
)


def request_error(exc: PydanticValidationError) -> ValidationError:
    """The first problem pydantic found in a request, naming the field."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "request"
    return ValidationError(field, str(first.get("msg", "is invalid")))


@dataclass(frozen=True, slots=True)
class Call:
    """One request being served: the engine and who is asking."""

    engine: ContextEngine
    caller: Caller
    clock: Clock
    keys: KeyStore | None = None

    def key_store(self) -> KeyStore:
        if self.keys is None:
            raise NotFoundError("this server has no API keys (a local MCP session)")
        return self.keys

    def engine_session_id(self, session_id: str) -> str:
        return f"{self.caller.tenant}{SESSION_SEPARATOR}{session_id}"

    def session(self, session_id: str) -> SessionState:
        """The caller's session; another tenant's is exactly as absent as a missing one."""
        try:
            state = self.engine.session(self.engine_session_id(session_id))
        except NotFoundError:
            state = None
        if state is None or state.tenant != self.caller.tenant:
            raise NotFoundError(f"session {session_id!r} is not open")
        return state


@dataclass(frozen=True, slots=True)
class Operation(Generic[Req, Resp]):
    """One capability: its name, wire models, role, errors and implementation."""

    name: str
    summary: str
    request: type[Req]
    response: type[Resp]
    role: Role
    run: Callable[[Call, Req], Resp]
    errors: tuple[type[MemstrataError], ...] = ()

    @property
    def all_errors(self) -> tuple[type[MemstrataError], ...]:
        return COMMON_ERRORS + tuple(e for e in self.errors if e not in COMMON_ERRORS)

    def invoke(self, call: Call, payload: BaseModel | Mapping[str, Any]) -> Resp:
        """Validate ``payload`` as this operation's request, check the role, run it."""
        call.caller.require(self.role)
        if isinstance(payload, self.request):
            request = payload
        else:
            data = payload.model_dump() if isinstance(payload, BaseModel) else payload
            try:
                request = self.request.model_validate(data)
            except PydanticValidationError as exc:
                raise request_error(exc) from None
        return self.run(call, request)


# -- sessions ---------------------------------------------------------------------------


def _start_session(call: Call, req: m.StartSessionRequest) -> m.Session:
    sid = req.session_id or f"s_{uuid.uuid4().hex}"
    try:
        state = call.engine.start_session(
            req.user_id,
            req.initial_query,
            tenant=call.caller.tenant,
            session_id=call.engine_session_id(sid),
        )
    except ValidationError as exc:
        if exc.field == "session_id":  # the engine's message names its own id
            raise ValidationError("session_id", f"session {sid!r} already exists") from None
        raise
    return convert.session_out(state, sid)


def _get_session(call: Call, req: m.SessionRef) -> m.Session:
    return convert.session_out(call.session(req.session_id), req.session_id)


def _apply_update(
    req: m.UpdateSessionRequest, now: datetime
) -> Callable[[SessionState], SessionState]:
    def change(state: SessionState) -> SessionState:
        if req.advance is not None:
            state = state.advance(req.advance)
        if req.entity_id is not None:
            state = state.with_entity(req.entity_id)
        for name, target in (req.pointers or {}).items():
            state = state.with_pointer(name, target)
        if req.api_result is not None:
            state = state.with_api_result(req.api_result.status, req.api_result.data)
        if req.action is not None:
            state = state.record_action(req.action.action_id, req.action.payload, now)
        return state

    return change


def _update_session(call: Call, req: m.UpdateSessionRequest) -> m.Session:
    call.session(req.session_id)
    state = call.engine.update_session(
        call.engine_session_id(req.session_id), _apply_update(req, call.clock.now())
    )
    return convert.session_out(state, req.session_id)


def _end_session(call: Call, req: m.SessionRef) -> m.Session:
    call.session(req.session_id)
    state = call.engine.end_session(call.engine_session_id(req.session_id))
    return convert.session_out(state, req.session_id)


# -- long-term writes ---------------------------------------------------------------------


def _observe(call: Call, req: m.ObserveRequest) -> m.Receipt:
    call.session(req.session_id)
    receipt = call.engine.observe(
        call.engine_session_id(req.session_id), req.role, req.text, speaker=req.speaker
    )
    return m.Receipt(
        queued=receipt.queued, episode_ids=list(receipt.episode_ids), error=receipt.error
    )


def _remember(call: Call, req: m.RememberRequest) -> m.Receipt:
    tenant = call.caller.tenant
    receipt = call.engine.remember(req.user_id, req.text, tenant=tenant)
    out = m.Receipt(
        queued=receipt.queued, episode_ids=list(receipt.episode_ids), error=receipt.error
    )
    if not req.wait or not receipt.queued:
        return out
    call.engine.flush()
    written = call.engine.written(receipt, tenant=tenant)
    return out.model_copy(
        update={
            "episodes": [convert.episode_out(e) for e in written.episodes],
            "facts": [convert.fact_out(u) for u in written.facts],
        }
    )


def _forget(call: Call, req: m.ForgetRequest) -> m.ForgetResult:
    if (req.user_id is None) == (req.ids is None):
        raise ValidationError("user_id", "give either user_id or ids, not both and not neither")
    tenant = call.caller.tenant
    report = (
        call.engine.forget(req.user_id, tenant=tenant)
        if req.user_id is not None
        else call.engine.forget_memories(req.ids or (), tenant=tenant)
    )
    return m.ForgetResult(
        points_deleted=report.points_deleted,
        keys_deleted=report.keys_deleted,
        queue_entries_deleted=report.queue_entries_deleted,
        sessions_ended=report.sessions_ended,
    )


# -- retrieval, routing, context ----------------------------------------------------------


def _retrieve(call: Call, req: m.RetrieveRequest) -> m.RetrievalOut:
    result = call.engine.retrieve(
        req.query,
        tenant=call.caller.tenant,
        user=req.user_id,
        k=req.k,
        collection=req.collection,
        include_history=req.include_history,
        as_of=req.as_of,
    )
    return convert.retrieval_out(result)


def _route(call: Call, req: m.RouteRequest) -> m.Bundle:
    state = call.session(req.session_id)
    bundle = call.engine.route(
        state,
        req.step_intent,
        req.query,
        agent=call.caller.agent,
        clearance=call.caller.clearance,
    )
    return convert.bundle_out(bundle, req.session_id)


def _build_context(call: Call, req: m.BuildContextRequest) -> m.BuiltContextOut:
    state = call.session(req.session_id)
    built = call.engine.build_context(
        state,
        req.step_intent,
        req.user_input,
        system_prompt=req.system_prompt,
        model=req.model,
        history=[convert.turn_in(t) for t in req.history],
        tool_results=[
            ToolResult(
                call_id=t.call_id,
                name=t.name,
                content=t.content,
                relevance=t.relevance,
                freshness_hours=t.freshness_hours,
            )
            for t in req.tool_results
        ],
        k=req.k,
        agent=call.caller.agent,
        clearance=call.caller.clearance,
    )
    return convert.built_out(built)


# -- working memory -----------------------------------------------------------------------


def _item_out(item: Any) -> m.WorkingItemOut:
    return m.WorkingItemOut(
        key=item.key,
        value=convert.json_value(item.value),
        ttl_remaining_s=item.ttl_remaining_s,
        stored_at=item.stored_at,
    )


def _working(call: Call, session_id: str) -> Any:
    call.session(session_id)
    return call.engine.working(call.engine_session_id(session_id))


def _put_api_response(call: Call, req: m.PutApiResponseRequest) -> m.WorkingItemOut:
    wm = _working(call, req.session_id)
    return _item_out(wm.put_api_response(req.endpoint, req.params, req.value, ttl_s=req.ttl_s))


def _get_api_response(call: Call, req: m.GetApiResponseRequest) -> m.WorkingItemOut:
    return _item_out(_working(call, req.session_id).get_api_response(req.endpoint, req.params))


def _put_step_result(call: Call, req: m.PutStepResultRequest) -> m.WorkingItemOut:
    return _item_out(_working(call, req.session_id).put_step_result(req.step_id, req.fields))


def _get_step_result(call: Call, req: m.GetStepResultRequest) -> m.WorkingItemOut:
    wm = _working(call, req.session_id)
    return _item_out(wm.get_step_result(req.step_id, req.reader_step))


def _append_series(call: Call, req: m.AppendSeriesRequest) -> m.AppendSeriesResult:
    wm = _working(call, req.session_id)
    points = [SeriesPoint(p.timestamp, p.value) for p in req.points]
    return m.AppendSeriesResult(kept=wm.append_series(req.metric, points, window=req.window))


def _read_series(call: Call, req: m.ReadSeriesRequest) -> m.SeriesOut:
    points = _working(call, req.session_id).read_series(req.metric, req.start, req.end)
    return m.SeriesOut(
        points=[
            m.SeriesPointIn(timestamp=p.timestamp, value=convert.json_value(p.value))
            for p in points
        ]
    )


def _add_pending(call: Call, req: m.PendingRequest) -> m.PendingOut:
    wm = _working(call, req.session_id)
    added = wm.add_pending(*req.task_ids)
    return m.PendingOut(pending=sorted(wm.pending()), changed=added)


def _complete_pending(call: Call, req: m.PendingRequest) -> m.PendingOut:
    wm = _working(call, req.session_id)
    done = sum(1 for task in req.task_ids if wm.complete_pending(task))
    return m.PendingOut(pending=sorted(wm.pending()), changed=done)


# -- knowledge and inspect -----------------------------------------------------------------


def _ingest_documents(call: Call, req: m.IngestDocumentsRequest) -> m.IngestReportOut:
    documents = [Document(name=d.name, text=d.text, format=d.format) for d in req.documents]
    for index, doc in enumerate(req.documents):
        if ".." in PurePosixPath(doc.name).parts:
            raise ValidationError(f"documents[{index}].name", "must not contain '..'")
    report = call.engine.ingest_documents(documents, tenant=call.caller.tenant, level=req.level)
    return convert.ingest_out(report)


def _confirm_knowledge(call: Call, req: m.ConfirmKnowledgeRequest) -> m.IdOut:
    return m.IdOut(
        id=call.engine.confirm_knowledge(
            req.query, req.response, tenant=call.caller.tenant, source=req.source
        )
    )


def _inspect(call: Call, req: m.SessionRef) -> m.InspectOut:
    state = call.session(req.session_id)
    report = call.engine.inspect(call.engine_session_id(req.session_id))
    return m.InspectOut(
        session_id=req.session_id,
        session=convert.session_out(state, req.session_id),
        l2=[
            m.WorkingKeyOut(key=k["key"], type=k["type"], ttl_remaining_s=k["ttl_remaining_s"])
            for k in report["l2"]
        ],
        pending_tasks=list(report["pending_tasks"]),
    )


# -- shared namespaces -------------------------------------------------------------------


def _namespace_out(ns: Namespace) -> m.NamespaceOut:
    return m.NamespaceOut(
        namespace=ns.name,
        purpose=ns.purpose,
        ttl_s=ns.ttl_s,
        owner=ns.owner,
        created_at=ns.created_at,
    )


def _request_out(r: AccessRequest) -> m.AccessRequestOut:
    return m.AccessRequestOut(
        namespace=r.namespace, agent=r.agent, purpose=r.purpose, mode=r.mode, at=r.at
    )


def _create_namespace(call: Call, req: m.CreateNamespaceRequest) -> m.NamespaceOut:
    ns = call.engine.create_namespace(
        req.namespace,
        tenant=call.caller.tenant,
        owner=req.owner or call.caller.agent,
        purpose=req.purpose,
        ttl_s=req.ttl_s,
    )
    return _namespace_out(ns)


def _list_namespaces(call: Call, req: m.Empty) -> m.NamespaceList:
    found = call.engine.namespaces(tenant=call.caller.tenant, agent=call.caller.agent)
    return m.NamespaceList(namespaces=[_namespace_out(ns) for ns in found])


def _request_access(call: Call, req: m.AccessRequestIn) -> m.AccessRequestOut:
    made = call.engine.request_namespace_access(
        req.namespace,
        tenant=call.caller.tenant,
        agent=call.caller.agent,
        purpose=req.purpose,
        mode=req.mode,
    )
    return _request_out(made)


def _access_requests(call: Call, req: m.NamespaceRef) -> m.AccessRequestList:
    found = call.engine.namespace_access_requests(
        req.namespace, tenant=call.caller.tenant, by=call.caller.agent
    )
    return m.AccessRequestList(requests=[_request_out(r) for r in found])


def _grant_access(call: Call, req: m.GrantRequest) -> m.NamespaceOut:
    call.engine.grant_namespace_access(
        req.namespace,
        req.agent,
        tenant=call.caller.tenant,
        mode=req.mode,
        by=call.caller.agent,
        admin=call.caller.role == "admin",
    )
    return _namespace_out(
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


def _shared_out(item: SharedItem) -> m.SharedItemOut:
    return m.SharedItemOut(
        namespace=item.namespace,
        item_id=item.item_id,
        value=convert.json_value(item.value),
        level=item.level,
        written_by=item.written_by,
        written_at=item.written_at,
        expires_at=item.expires_at,
    )


def _put_shared(call: Call, req: m.PutSharedRequest) -> m.SharedItemOut:
    item = call.engine.put_shared(
        req.namespace,
        req.item_id,
        req.value,
        tenant=call.caller.tenant,
        agent=call.caller.agent,
        level=req.level,
    )
    return _shared_out(item)


def _shared_items(call: Call, req: m.Empty) -> m.SharedItemList:
    items = call.engine.shared_items(
        tenant=call.caller.tenant, agent=call.caller.agent, clearance=call.caller.clearance
    )
    return m.SharedItemList(items=[_shared_out(i) for i in items])


# -- item store (LangGraph's BaseStore) ------------------------------------------------------


def _store_item_out(item: StoreItem) -> m.StoreItemOut:
    return m.StoreItemOut(
        namespace=list(item.namespace),
        key=item.key,
        value=convert.json_value(item.value),
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=item.score,
    )


def _store_put(call: Call, req: m.StorePutRequest) -> m.StoreItemOut:
    index: list[str] | bool | None = False if not req.searchable else (req.index or None)
    item = call.engine.store_put(
        req.namespace, req.key, req.value, tenant=call.caller.tenant, index=index
    )
    return _store_item_out(item)


def _store_get(call: Call, req: m.StoreItemRef) -> m.StoreGetResult:
    item = call.engine.store_get(req.namespace, req.key, tenant=call.caller.tenant)
    return m.StoreGetResult(item=None if item is None else _store_item_out(item))


def _store_delete(call: Call, req: m.StoreItemRef) -> m.StoreDeleteResult:
    deleted = call.engine.store_delete(req.namespace, req.key, tenant=call.caller.tenant)
    return m.StoreDeleteResult(deleted=deleted)


def _store_search(call: Call, req: m.StoreSearchRequest) -> m.StoreItemList:
    items = call.engine.store_search(
        req.namespace_prefix,
        tenant=call.caller.tenant,
        query=req.query,
        filter=req.filter,
        limit=req.limit,
        offset=req.offset,
    )
    return m.StoreItemList(items=[_store_item_out(i) for i in items])


def _store_list_namespaces(call: Call, req: m.StoreListNamespacesRequest) -> m.StoreNamespaceList:
    found = call.engine.store_list_namespaces(
        tenant=call.caller.tenant,
        prefix=req.prefix,
        suffix=req.suffix,
        max_depth=req.max_depth,
        limit=req.limit,
        offset=req.offset,
    )
    return m.StoreNamespaceList(namespaces=[m.StoreNamespaceOut(namespace=list(n)) for n in found])


# -- API keys ---------------------------------------------------------------------------


def _key_out(info: KeyInfo) -> m.KeyOut:
    return m.KeyOut.model_validate(info.as_dict())


def _tenant_key(call: Call, key_id: str) -> KeyInfo:
    try:
        info = call.key_store().get(key_id)
    except NotFoundError:
        info = None
    if info is None or info.tenant != call.caller.tenant:
        raise NotFoundError(f"api key {key_id!r} does not exist")
    return info


def _create_key(call: Call, req: m.CreateKeyRequest) -> m.CreatedKeyOut:
    created = call.key_store().create(
        call.caller.tenant,
        req.agent,
        req.role,
        clearance=req.clearance,
        ttl_s=req.ttl_s,
        rate_per_s=req.rate_per_s,
    )
    return m.CreatedKeyOut(key=created.key, info=_key_out(created.info))


def _revoke_key(call: Call, req: m.KeyRef) -> m.KeyOut:
    _tenant_key(call, req.key_id)
    return _key_out(call.key_store().revoke(req.key_id))


def _list_keys(call: Call, req: m.Empty) -> m.KeyList:
    return m.KeyList(keys=[_key_out(i) for i in call.key_store().all(call.caller.tenant)])


_SESSION_ERRORS = (NotFoundError,)

OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "start_session",
        "Open a session (L1 state lives in the serving process).",
        m.StartSessionRequest,
        m.Session,
        "writer",
        _start_session,
    ),
    Operation(
        "get_session",
        "A session's L1 state.",
        m.SessionRef,
        m.Session,
        "reader",
        _get_session,
        _SESSION_ERRORS,
    ),
    Operation(
        "update_session",
        "Advance a session, point it at an entity, record a result.",
        m.UpdateSessionRequest,
        m.Session,
        "writer",
        _update_session,
        _SESSION_ERRORS,
    ),
    Operation(
        "end_session",
        "Close a session; its L2 keys expire on their TTLs.",
        m.SessionRef,
        m.Session,
        "writer",
        _end_session,
        _SESSION_ERRORS,
    ),
    Operation(
        "observe",
        "Record a conversation turn: L1 now, its episode and facts queued.",
        m.ObserveRequest,
        m.Receipt,
        "writer",
        _observe,
        _SESSION_ERRORS,
    ),
    Operation(
        "remember",
        "Store a text in a user's long-term memory (episode and facts).",
        m.RememberRequest,
        m.Receipt,
        "writer",
        _remember,
    ),
    Operation(
        "forget",
        "Delete a user's memories, or chosen memories, everywhere.",
        m.ForgetRequest,
        m.ForgetResult,
        "admin",
        _forget,
    ),
    Operation(
        "retrieve",
        "Multi-route retrieval of memories or knowledge, with confidence.",
        m.RetrieveRequest,
        m.RetrievalOut,
        "reader",
        _retrieve,
    ),
    Operation(
        "route",
        "ContextRequest(session_id, step_intent) -> ContextBundle.",
        m.RouteRequest,
        m.Bundle,
        "reader",
        _route,
        _SESSION_ERRORS,
    ),
    Operation(
        "build_context",
        "The step's model call assembled within the token budget.",
        m.BuildContextRequest,
        m.BuiltContextOut,
        "reader",
        _build_context,
        _SESSION_ERRORS,
    ),
    Operation(
        "put_api_response",
        "Cache a tool/API response in L2 with a TTL.",
        m.PutApiResponseRequest,
        m.WorkingItemOut,
        "writer",
        _put_api_response,
        _SESSION_ERRORS,
    ),
    Operation(
        "get_api_response",
        "Read a cached tool/API response from L2.",
        m.GetApiResponseRequest,
        m.WorkingItemOut,
        "reader",
        _get_api_response,
        (*_SESSION_ERRORS, ContextMissError),
    ),
    Operation(
        "put_step_result",
        "Store a step's result in L2.",
        m.PutStepResultRequest,
        m.WorkingItemOut,
        "writer",
        _put_step_result,
        _SESSION_ERRORS,
    ),
    Operation(
        "get_step_result",
        "Read a step's result from L2.",
        m.GetStepResultRequest,
        m.WorkingItemOut,
        "reader",
        _get_step_result,
        (*_SESSION_ERRORS, ContextMissError),
    ),
    Operation(
        "append_series",
        "Append points to a sensor/metric window in L2.",
        m.AppendSeriesRequest,
        m.AppendSeriesResult,
        "writer",
        _append_series,
        _SESSION_ERRORS,
    ),
    Operation(
        "read_series",
        "Read a sensor/metric window from L2.",
        m.ReadSeriesRequest,
        m.SeriesOut,
        "reader",
        _read_series,
        _SESSION_ERRORS,
    ),
    Operation(
        "add_pending",
        "Register pending asynchronous tasks.",
        m.PendingRequest,
        m.PendingOut,
        "writer",
        _add_pending,
        _SESSION_ERRORS,
    ),
    Operation(
        "complete_pending",
        "Mark pending tasks done.",
        m.PendingRequest,
        m.PendingOut,
        "writer",
        _complete_pending,
        _SESSION_ERRORS,
    ),
    Operation(
        "ingest_documents",
        "Chunk documents into the tenant's knowledge (by hash).",
        m.IngestDocumentsRequest,
        m.IngestReportOut,
        "writer",
        _ingest_documents,
    ),
    Operation(
        "confirm_knowledge",
        "Learn a confirmed question/answer pair (hot knowledge).",
        m.ConfirmKnowledgeRequest,
        m.IdOut,
        "writer",
        _confirm_knowledge,
    ),
    Operation(
        "inspect",
        "What memstrata holds for a session: L1 and its live L2 keys.",
        m.SessionRef,
        m.InspectOut,
        "reader",
        _inspect,
        _SESSION_ERRORS,
    ),
    Operation(
        "create_namespace",
        "Create a shared namespace (purpose, TTL, owner) in the caller's tenant.",
        m.CreateNamespaceRequest,
        m.NamespaceOut,
        "admin",
        _create_namespace,
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
    Operation(
        "create_key",
        "Create an API key for an agent of the caller's tenant.",
        m.CreateKeyRequest,
        m.CreatedKeyOut,
        "admin",
        _create_key,
    ),
    Operation(
        "revoke_key",
        "Revoke an API key of the caller's tenant at once.",
        m.KeyRef,
        m.KeyOut,
        "admin",
        _revoke_key,
        (NotFoundError,),
    ),
    Operation(
        "list_keys",
        "The API keys of the caller's tenant (never their secrets).",
        m.Empty,
        m.KeyList,
        "admin",
        _list_keys,
    ),
)

BY_NAME: Mapping[str, Operation[Any, Any]] = {op.name: op for op in OPERATIONS}
