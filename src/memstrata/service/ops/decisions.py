"""Decisions (docs/architecture.md, "Decisions and feedback"): tools and policies of
the caller's tenant, decide, the tool call with its gate and confirmations, the reply
check, and trace cards.

A tool registered through the service is remote: the agent runs it and reports each
attempt (``report_tool_result``); the gate, the confirmations and the fallback chain
are the service's. Tools and policies registered here are the tenant's own.
"""

from __future__ import annotations

import contextlib
from typing import Any

from memstrata.errors import (
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnknownIntentError,
)
from memstrata.health import parse_duration
from memstrata.permissions import L2_LEVEL
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import OPERATOR_TENANT, SESSION_ERRORS, Call, Operation
from memstrata.service.ops.clearance import require

CARD_ERRORS = (NotFoundError,)
MAX_ID_CHARS = 128


def _register_tool(call: Call, req: m.ToolSpecModel) -> m.ToolSpecModel:
    spec = convert.tool_spec_in(req)
    call.engine.register_tool(spec, None, tenant=call.caller.tenant, replace=True)
    return convert.tool_spec_out(spec)


def _list_tools(call: Call, req: m.Empty) -> m.ToolList:
    tools = call.engine.tools(tenant=call.caller.tenant)
    return m.ToolList(tools=[convert.tool_spec_out(s) for s in tools])


def _register_policy(call: Call, req: m.StepPolicyModel) -> m.StepPolicyModel:
    call.engine.register_policy(
        convert.step_policy_in(req), tenant=call.caller.tenant, replace=True
    )
    return req


def _decide(call: Call, req: m.DecideRequest) -> m.DecisionOut:
    state = call.session(req.session_id)
    # Without an intent, the message it is recognized from: the query, else the question.
    query = req.query if req.query is not None or req.step_intent else req.question
    bundle = call.engine.route(
        state, req.step_intent, query, agent=call.caller.agent, clearance=call.caller.clearance
    )
    decision = call.engine.decide(
        state,
        bundle,
        question=req.question or "",
        given=req.given,
        clearance=call.caller.clearance,
    )
    return convert.decision_out(decision, convert.bundle_out(bundle, req.session_id))


def _call_tool(call: Call, req: m.CallToolRequest) -> m.ToolOutcomeOut:
    outcome = call.engine.call_tool(
        req.card_id, tenant=call.caller.tenant, tool=req.tool, params=req.params
    )
    return convert.outcome_out(outcome)


def _confirm_tool(call: Call, req: m.ConfirmToolRequest) -> m.ToolOutcomeOut:
    # Who confirmed is the key that called (its tenant is the card's): never a field.
    caller = call.caller
    outcome = call.engine.confirm_tool(
        req.pending_id,
        tenant=caller.tenant,
        confirmed=req.confirmed,
        confirmed_by=f"key-{caller.key_id}.{caller.agent}"[:MAX_ID_CHARS],
    )
    return convert.outcome_out(outcome)


def _report_tool_result(call: Call, req: m.ToolResultReportIn) -> m.ToolOutcomeOut:
    outcome = call.engine.report_tool_result(
        req.card_id, tenant=call.caller.tenant, tool=req.tool, ok=req.ok, error=req.error or ""
    )
    return convert.outcome_out(outcome)


def _check_reply(call: Call, req: m.CheckReplyRequest) -> m.ReplyCheckOut:
    return convert.check_out(
        call.engine.check_reply(req.card_id, req.reply, tenant=call.caller.tenant)
    )


def _trace_cards(call: Call, req: m.TraceCardsRequest) -> m.TraceCardList:
    require(call, L2_LEVEL, "trace cards")
    cards = call.engine.trace_cards(
        tenant=call.caller.tenant,
        session_id=None if req.session_id is None else call.engine_session_id(req.session_id),
        since=req.since,
        until=req.until,
        limit=req.limit,
    )
    return m.TraceCardList(cards=[convert.card_out(c) for c in cards])


def _feedback(call: Call, req: m.FeedbackRequest) -> m.FeedbackReceiptOut:
    receipt = call.engine.feedback(
        req.card_id,
        req.kind,
        tenant=call.caller.tenant,
        correction=req.correction or "",
        rating=req.rating,
        used=req.used,
        wrong=req.wrong,
    )
    return convert.feedback_receipt_out(receipt)


def _feedback_report(call: Call, req: m.FeedbackReportRequest) -> m.FeedbackReportOut:
    require(call, L2_LEVEL, "the feedback report (the questions asked)")
    report = call.engine.feedback_report(tenant=call.caller.tenant, since=req.since)
    return convert.feedback_report_out(report)


"""The tenant whose admin key ``memstrata serve`` writes on its first start."""


def _health_report(call: Call, req: m.HealthReportRequest) -> m.HealthReportOut:
    if call.caller.tenant != OPERATOR_TENANT:
        # It covers every tenant's layers (and their low-confidence queries).
        raise PermissionDeniedError(
            "tenant", f"the health report needs an admin key of tenant {OPERATOR_TENANT!r}"
        )
    with contextlib.suppress(ConflictError):  # a sample already taken at this instant
        call.engine.record_health_sample()
    return convert.health_out(call.engine.health_report(since=parse_duration(req.since)))


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "register_tool",
        "Declare a tool of your agents (run by them; gated and chained here).",
        m.ToolSpecModel,
        m.ToolSpecModel,
        "admin",
        _register_tool,
    ),
    Operation(
        "list_tools",
        "The tools your decisions may call.",
        m.Empty,
        m.ToolList,
        "reader",
        _list_tools,
    ),
    Operation(
        "register_policy",
        "How an intent's steps decide: risk, evidence, key information, tool.",
        m.StepPolicyModel,
        m.StepPolicyModel,
        "admin",
        _register_policy,
        (UnknownIntentError,),
    ),
    Operation(
        "decide",
        "Route the step and decide: answer, call a tool, or ask (writes a trace card).",
        m.DecideRequest,
        m.DecisionOut,
        "writer",
        _decide,
        (*SESSION_ERRORS, UnknownIntentError),
    ),
    Operation(
        "call_tool",
        "Run a decision's tool call through the gate; high-impact calls wait for a confirmation.",
        m.CallToolRequest,
        m.ToolOutcomeOut,
        "writer",
        _call_tool,
        CARD_ERRORS,
    ),
    Operation(
        "confirm_tool",
        "Confirm (run) or reject a high-impact call held for confirmation.",
        m.ConfirmToolRequest,
        m.ToolOutcomeOut,
        "writer",
        _confirm_tool,
        CARD_ERRORS,
    ),
    Operation(
        "report_tool_result",
        "One attempt of a remote tool; the outcome says what the fallback chain does next.",
        m.ToolResultReportIn,
        m.ToolOutcomeOut,
        "writer",
        _report_tool_result,
        CARD_ERRORS,
    ),
    Operation(
        "check_reply",
        "Check a reply against the memories its decision used (flags conflicts, records CER).",
        m.CheckReplyRequest,
        m.ReplyCheckOut,
        "writer",
        _check_reply,
        CARD_ERRORS,
    ),
    Operation(
        "trace_cards",
        "Trace cards by session and time, oldest first.",
        m.TraceCardsRequest,
        m.TraceCardList,
        "reader",
        _trace_cards,
    ),
    Operation(
        "feedback",
        "The user's follow-up to a decision; applied asynchronously to the memories used.",
        m.FeedbackRequest,
        m.FeedbackReceiptOut,
        "writer",
        _feedback,
        CARD_ERRORS,
    ),
    Operation(
        "feedback_report",
        "Which query types keep missing the right memory; which memories are ignored.",
        m.FeedbackReportRequest,
        m.FeedbackReportOut,
        "reader",
        _feedback_report,
    ),
    Operation(
        "health_report",
        "The context health report over every tenant (operator admin key only).",
        m.HealthReportRequest,
        m.HealthReportOut,
        "admin",
        _health_report,
    ),
)
