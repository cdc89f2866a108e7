"""Long-term memory and each step's context: observe, remember, forget, consolidate,
restore, retrieve, route, build_context."""

from __future__ import annotations

from typing import Any

from memstrata.errors import FlushTimeoutError, PermissionDeniedError
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.auth import check_name
from memstrata.service.capability import (
    OPERATOR_TENANT,
    SESSION_ERRORS,
    Call,
    Operation,
)
from memstrata.service.ops.clearance import cleared_retrieval, cleared_written


def _observe(call: Call, req: m.ObserveRequest) -> m.Receipt:
    call.session(req.session_id)
    receipt = call.engine.observe(
        call.engine_session_id(req.session_id), req.role, req.text, speaker=req.speaker
    )
    return convert.receipt_out(receipt)


def _remember(call: Call, req: m.RememberRequest) -> m.Receipt:
    tenant = call.caller.tenant
    receipt = call.engine.remember(req.user_id, req.text, tenant=tenant)
    if not req.wait or not receipt.queued:
        return convert.receipt_out(receipt)
    call.engine.flush()
    written = cleared_written(call.engine.written(receipt, tenant=tenant), call.caller.clearance)
    return convert.receipt_out(receipt, written.episodes, written.facts)


def _forget(call: Call, req: m.ForgetRequest) -> m.ForgetJobOut:
    tenant = call.caller.tenant
    job = call.engine.start_forget(
        req.user_id, ids=req.ids, store_namespace=req.store_namespace, tenant=tenant
    )
    if req.wait:  # a failed forget answers its own error, as it did when it ran here
        job = call.engine.wait_forget(job.id, tenant=tenant, timeout_s=req.timeout_s)
    return convert.forget_job_out(job)


def _forget_status(call: Call, req: m.ForgetStatusRequest) -> m.ForgetJobOut:
    job = call.engine.forget_status(req.job_id, tenant=call.caller.tenant, timeout_s=req.timeout_s)
    return convert.forget_job_out(job)


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
    return convert.retrieval_out(cleared_retrieval(result, call.caller.clearance))


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
        tool_results=[convert.tool_result_in(t) for t in req.tool_results],
        k=req.k,
        agent=call.caller.agent,
        clearance=call.caller.clearance,
        window_tokens=req.window_tokens,
    )
    return convert.built_out(built)


def _flush(call: Call, req: m.FlushRequest) -> m.FlushOut:
    call.engine.flush(req.timeout_s)
    return m.FlushOut(flushed=True)


def _consolidate(call: Call, req: m.ConsolidateRequest) -> m.ConsolidationOut:
    tenant = call.caller.tenant
    operator = tenant == OPERATOR_TENANT
    if req.tenants is not None:
        for index, name in enumerate(req.tenants):
            check_name(f"tenants[{index}]", name)
            if not operator and name != tenant:
                raise PermissionDeniedError(
                    f"tenants[{index}]",
                    f"an admin key of tenant {tenant!r} consolidates its own tenant only; "
                    f"others need an admin key of tenant {OPERATOR_TENANT!r}",
                )
    # None: every tenant the caller may name (the operator's: every known one).
    tenants = req.tenants if req.tenants is not None else (None if operator else [tenant])
    call.engine.flush()
    return convert.consolidation_out(call.engine.consolidate(tenants=tenants), tenant)


def _restore(call: Call, req: m.RestoreRequest) -> m.RestoreOut:
    return m.RestoreOut(restored=list(call.engine.restore(req.ids, tenant=call.caller.tenant)))


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "observe",
        "Record a conversation turn: L1 now, its episode and facts queued.",
        m.ObserveRequest,
        m.Receipt,
        "writer",
        _observe,
        SESSION_ERRORS,
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
        "flush",
        "Wait until everything queued so far (observe, remember, feedback) is in long-term "
        "memory and searchable; 504 when the queue does not drain within timeout_s.",
        m.FlushRequest,
        m.FlushOut,
        "writer",
        _flush,
        (FlushTimeoutError,),
    ),
    Operation(
        "forget",
        "Delete a user's memories, chosen memories, or item-store items under a namespace "
        "prefix, everywhere, in the background: answers the job at once (or when it is "
        "done, with wait); follow it with forget_status.",
        m.ForgetRequest,
        m.ForgetJobOut,
        "admin",
        _forget,
    ),
    Operation(
        "forget_status",
        "A forget job of the caller's tenant: queued, running, done with its report, or "
        "failed with its error; waits up to timeout_s for it to finish.",
        m.ForgetStatusRequest,
        m.ForgetJobOut,
        "admin",
        _forget_status,
        SESSION_ERRORS,
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
        SESSION_ERRORS,
    ),
    Operation(
        "build_context",
        "The step's model call assembled within the token budget.",
        m.BuildContextRequest,
        m.BuiltContextOut,
        "reader",
        _build_context,
        SESSION_ERRORS,
    ),
    Operation(
        "consolidate",
        "Merge duplicates, compress old events, move stale memories to cold storage, "
        "merge hot knowledge: one pass over the tenants named (default: the caller's; "
        "an operator admin key may name any, and by default covers every known tenant).",
        m.ConsolidateRequest,
        m.ConsolidationOut,
        "admin",
        _consolidate,
    ),
    Operation(
        "restore",
        "Bring memories back from cold storage; returns the ids restored.",
        m.RestoreRequest,
        m.RestoreOut,
        "admin",
        _restore,
    ),
)
