"""Decisions (seed 003 §4): tools and policies of the caller's tenant, decide, the tool
call with its gate and confirmations, the reply check, and trace cards.

A tool registered through the service is remote: the agent runs it and reports each
attempt (``report_tool_result``); the gate, the confirmations and the fallback chain
are the service's. Tools and policies registered here are the tenant's own.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any

from memstrata.decision import (
    Decision,
    ReplyCheck,
    Slot,
    StepPolicy,
    ToolOutcome,
    ToolSpec,
    TraceCard,
)
from memstrata.errors import (
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnknownIntentError,
)
from memstrata.health import parse_duration, render_html, render_markdown
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import SESSION_ERRORS, SESSION_SEPARATOR, Call, Operation

CARD_ERRORS = (NotFoundError,)


def tool_model(spec: ToolSpec) -> m.ToolSpecModel:
    return m.ToolSpecModel(
        name=spec.name,
        description=spec.description,
        parameters=convert.json_value(dict(spec.parameters)),
        risk=spec.risk,
        high_impact=spec.high_impact,
        alternatives=list(spec.alternatives),
        bound=dict(spec.bound),
    )


def _register_tool(call: Call, req: m.ToolSpecModel) -> m.ToolSpecModel:
    spec = ToolSpec(
        req.name,
        req.description,
        req.parameters,
        risk=req.risk,
        high_impact=req.high_impact,
        alternatives=tuple(req.alternatives),
        bound=req.bound,
    )
    call.engine.register_tool(spec, None, tenant=call.caller.tenant, replace=True)
    return tool_model(spec)


def _list_tools(call: Call, req: m.Empty) -> m.ToolList:
    return m.ToolList(tools=[tool_model(s) for s in call.engine.tools(tenant=call.caller.tenant)])


def _register_policy(call: Call, req: m.StepPolicyModel) -> m.StepPolicyModel:
    policy = StepPolicy(
        req.intent,
        risk=req.risk,
        evidence=tuple(req.evidence),
        slots=tuple(Slot(s.name, tuple(s.sources), s.question or "") for s in req.slots),
        tool=req.tool,
        tool_params=req.tool_params,
    )
    call.engine.register_policy(policy, tenant=call.caller.tenant, replace=True)
    return req


def decision_out(decision: Decision, bundle: m.Bundle) -> m.DecisionOut:
    j = decision.judgment
    return m.DecisionOut(
        route=decision.route,
        intent=decision.intent,
        risk=decision.risk,
        confidence=decision.confidence,
        threshold=decision.threshold,
        tool=decision.tool,
        params=convert.json_value(dict(decision.params)),
        ask_for=list(decision.ask_for),
        questions=list(decision.questions),
        reasons=list(decision.reasons),
        judgment=m.JudgmentOut(
            needs_data=j.needs_data,
            data_kind=j.data_kind,
            enough=j.enough,
            confidence=j.confidence,
            missing=list(j.missing),
            tool=j.tool,
            params=convert.json_value(dict(j.params)),
            reasons=list(j.reasons),
            judged_by=j.judged_by,
        ),
        used=m.UsedContextOut.model_validate(decision.used.as_dict()),
        card_id=decision.card_id,
        bundle=bundle,
    )


def _decide(call: Call, req: m.DecideRequest) -> m.DecisionOut:
    state = call.session(req.session_id)
    bundle = call.engine.route(
        state, req.step_intent, req.query, agent=call.caller.agent, clearance=call.caller.clearance
    )
    decision = call.engine.decide(state, bundle, question=req.question or "", given=req.given)
    return decision_out(decision, convert.bundle_out(bundle, req.session_id))


def outcome_out(outcome: ToolOutcome) -> m.ToolOutcomeOut:
    return m.ToolOutcomeOut(
        outcome=outcome.outcome,
        tool=outcome.tool,
        result=convert.json_value(outcome.result),
        pending_id=outcome.pending_id,
        verdicts=[m.GateVerdictOut.model_validate(v.as_dict()) for v in outcome.verdicts],
        attempts=[m.AttemptOut(tool=a.tool, ok=a.ok, error=a.error) for a in outcome.attempts],
        fallbacks=list(outcome.fallbacks),
        message=outcome.message,
    )


def _call_tool(call: Call, req: m.CallToolRequest) -> m.ToolOutcomeOut:
    outcome = call.engine.call_tool(
        req.card_id, tenant=call.caller.tenant, tool=req.tool, params=req.params
    )
    return outcome_out(outcome)


def _confirm_tool(call: Call, req: m.ConfirmToolRequest) -> m.ToolOutcomeOut:
    outcome = call.engine.confirm_tool(
        req.pending_id, tenant=call.caller.tenant, confirmed=req.confirmed
    )
    return outcome_out(outcome)


def _report_tool_result(call: Call, req: m.ToolResultReportIn) -> m.ToolOutcomeOut:
    outcome = call.engine.report_tool_result(
        req.card_id, tenant=call.caller.tenant, tool=req.tool, ok=req.ok, error=req.error or ""
    )
    return outcome_out(outcome)


def check_out(check: ReplyCheck) -> m.ReplyCheckOut:
    return m.ReplyCheckOut.model_validate(check.as_dict())


def _check_reply(call: Call, req: m.CheckReplyRequest) -> m.ReplyCheckOut:
    return check_out(call.engine.check_reply(req.card_id, req.reply, tenant=call.caller.tenant))


def card_out(card: TraceCard) -> m.TraceCardOut:
    data = card.as_dict()
    data.pop("tenant")
    data.pop("at_iso")
    # The engine keys sessions per tenant; the caller knows its own ids.
    data["session_id"] = card.session_id.partition(SESSION_SEPARATOR)[2] or card.session_id
    data["at"] = datetime.fromtimestamp(card.at, UTC)
    data["params"] = convert.json_value(data["params"])
    return m.TraceCardOut.model_validate(data)


def _trace_cards(call: Call, req: m.TraceCardsRequest) -> m.TraceCardList:
    cards = call.engine.trace_cards(
        tenant=call.caller.tenant,
        session_id=None if req.session_id is None else call.engine_session_id(req.session_id),
        since=req.since,
        until=req.until,
        limit=req.limit,
    )
    return m.TraceCardList(cards=[card_out(c) for c in cards])


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
    data = receipt.as_dict()
    data.pop("entry_ids")  # queue internals
    return m.FeedbackReceiptOut.model_validate(data)


def _feedback_report(call: Call, req: m.FeedbackReportRequest) -> m.FeedbackReportOut:
    report = call.engine.feedback_report(tenant=call.caller.tenant, since=req.since)
    data = report.as_dict()
    data.pop("tenant")
    data.pop("since")
    return m.FeedbackReportOut.model_validate(data)


OPERATOR_TENANT = "default"
"""The tenant whose admin key ``memstrata serve`` writes on its first start."""


def _health_report(call: Call, req: m.HealthReportRequest) -> m.HealthReportOut:
    if call.caller.tenant != OPERATOR_TENANT:
        # It covers every tenant's layers (and their low-confidence queries).
        raise PermissionDeniedError(
            "tenant", f"the health report needs an admin key of tenant {OPERATOR_TENANT!r}"
        )
    with contextlib.suppress(ConflictError):  # a sample already taken at this instant
        call.engine.record_health_sample()
    report = call.engine.health_report(since=parse_duration(req.since))
    return m.HealthReportOut(
        samples=report.samples, markdown=render_markdown(report), html=render_html(report)
    )


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
