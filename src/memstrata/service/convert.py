"""Every conversion between the engine's values and the wire models, in one module.

A model derived from a domain type (:mod:`memstrata.service.derive`) is filled by
:func:`to_wire`: each field reads the attribute it derives from (a property
included), and its value is converted by the field's wire type (lists element by
element, nested values to their models, JSON values made JSON-ready). The explicit
shapes and results have their own converters below, and requests become engine
values here too, so the operations only call the engine and convert.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, JsonValue

from memstrata.context import BuiltContext, ToolResult
from memstrata.context import Turn as ContextTurn
from memstrata.context.values import AdmittedItem, DroppedItem
from memstrata.decision import (
    Decision,
    ReplyCheck,
    Slot,
    StepPolicy,
    ToolOutcome,
    ToolSpec,
    TraceCard,
)
from memstrata.engine import ConsolidationResult
from memstrata.feedback.events import FeedbackReceipt
from memstrata.feedback.report import FeedbackReport
from memstrata.frozen import thaw
from memstrata.health import HealthReport, render_html, render_markdown
from memstrata.knowledge import Document
from memstrata.knowledge.ingest import IngestReport
from memstrata.memory.episodes import Episode
from memstrata.memory.units import MemoryUnit
from memstrata.retrieval import RetrievalResult
from memstrata.retrieval.confidence import reason
from memstrata.retrieval.results import RetrievedItem
from memstrata.router import ContextBundle
from memstrata.router.bundle import ContextItem
from memstrata.service import derive
from memstrata.service import wire as m
from memstrata.service.auth import CreatedKey, KeyInfo
from memstrata.service.capability import SESSION_SEPARATOR
from memstrata.session import SessionState
from memstrata.sharing.items import StoreItem
from memstrata.sharing.namespaces import AccessRequest, Namespace, SharedItem
from memstrata.upkeep.forget import ForgetReport
from memstrata.upkeep.jobs import ForgetJob
from memstrata.working.values import SeriesPoint, WorkingItem
from memstrata.write.submit import WriteReceipt

W = TypeVar("W", bound=BaseModel)
_Convert = Callable[[Any], Any]

# Payload fields that are the item itself (text, type) or internal bookkeeping.
_HIDDEN_PAYLOAD = frozenset({"text", "type", "tenant", "facts", "content_hash", "pending"})


def json_value(value: Any) -> Any:
    """``value`` as JSON-ready data: frozen containers thawed, other objects as text."""
    thawed = thaw(value)
    if isinstance(thawed, Mapping):
        return {str(k): json_value(v) for k, v in thawed.items()}
    if isinstance(thawed, list | tuple):
        return [json_value(v) for v in thawed]
    if thawed is None or isinstance(thawed, str | int | float | bool):
        return thawed
    return str(thawed)


# -- derived models ----------------------------------------------------------------------


def to_wire(source: object, model: type[W], /, **given: Any) -> W:
    """``source`` (a domain value, or its ``as_dict()``) as ``model``, the wire model
    derived from its type; the ``given`` fields are taken as they are."""
    data = dict(given)
    for name, attribute, convert in _plan(model):
        if name in given or attribute is None:
            continue
        raw = source[attribute] if isinstance(source, Mapping) else getattr(source, attribute)
        data[name] = convert(raw)
    return model.model_validate(data)


@functools.cache
def _plan(model: type[BaseModel]) -> tuple[tuple[str, str | None, _Convert], ...]:
    """Per field of ``model``: its name, the attribute it reads, its converter."""
    sources = derive.BY_NAME[model.__name__].sources()
    return tuple(
        (name, sources[name], _converter(field.annotation))
        for name, field in model.model_fields.items()
    )


def _converter(annotation: Any) -> _Convert:
    """How a value becomes a field of wire type ``annotation`` (None stays None)."""
    if annotation is JsonValue:
        return json_value
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return _same
        convert = _converter(inner[0])
        return lambda value: None if value is None else convert(value)
    if origin is list:
        item = _converter(args[0])
        return lambda value: [item(v) for v in value]
    if origin is dict:
        return json_value if args[1] is JsonValue else _plain_dict
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return functools.partial(_nested, annotation)
    return _same


def _same(value: Any) -> Any:
    return value


def _plain_dict(value: Any) -> Any:
    return dict(value)


def _nested(model: type[BaseModel], value: Any) -> Any:
    if value is None or isinstance(value, BaseModel):
        return value
    shape = _SHAPES.get(model)
    return shape(value) if shape is not None else to_wire(value, model)


# -- explicit shapes (nested in derived models) -------------------------------------------


def retrieved_out(item: RetrievedItem) -> m.RetrievedOut:
    return m.RetrievedOut(
        id=item.id,
        kind=item.kind,
        text=item.text,
        score=item.score,
        cosine=item.cosine,
        low_confidence=item.low_confidence,
        routes=list(item.routes),
        observed_at=item.observed_at,
        in_time_window=item.in_time_window,
        superseded_by=item.superseded_by,
        facts=[retrieved_out(f) for f in item.facts],
        metadata={k: json_value(v) for k, v in item.payload.items() if k not in _HIDDEN_PAYLOAD},
        cosine_route=item.cosine_route,
        confidence=item.confidence,
        confidence_reason=reason(item),
    )


def bundle_item_out(item: ContextItem) -> m.BundleItemOut:
    p = item.provenance
    return m.BundleItemOut(
        name=item.name,
        content=json_value(item.content),
        layer=p.layer,
        level=p.level,
        ref=p.ref,
        source=p.source,
        relevance=p.relevance,
        freshness_hours=p.freshness_hours,
        low_confidence=p.low_confidence,
    )


def entry_out(item: AdmittedItem | DroppedItem) -> m.ContextEntryOut:
    origin = item.origin
    reason, detail = (item.reason, item.detail) if isinstance(item, DroppedItem) else (None, None)
    return m.ContextEntryOut(
        id=item.id,
        section=item.section,
        tokens=item.tokens,
        layer=origin.layer,
        ref=origin.ref,
        source=origin.source,
        relevance=origin.relevance,
        freshness_hours=origin.freshness_hours,
        low_confidence=origin.low_confidence,
        reason=reason,
        detail=detail,
    )


def turn_out(turn: ContextTurn) -> m.TurnIn:
    return m.TurnIn(
        role=turn.role,
        content=turn.content,
        id=turn.id,
        summary=turn.summary,
        covers=list(turn.covers),
    )


_SHAPES: Mapping[type[BaseModel], _Convert] = {
    m.RetrievedOut: retrieved_out,
    m.BundleItemOut: bundle_item_out,
    m.ContextEntryOut: entry_out,
    m.TurnIn: turn_out,
}


# -- sessions, routing and context -----------------------------------------------------------


def session_out(state: SessionState, session_id: str) -> m.Session:
    """``state`` under the id its caller knows (the service keeps tenants apart)."""
    data = state.as_dict()
    data["session_id"] = session_id
    data.pop("auth_context", None)
    return m.Session.model_validate(data)


def inspect_out(
    report: Mapping[str, Any], state: SessionState | None, session_id: str, engine_id: str
) -> m.InspectOut:
    """``engine.inspect``'s report of a session of the caller (``engine_id`` as the
    engine keeps it), its L2 keys named with the id the caller knows."""
    return m.InspectOut(
        session_id=session_id,
        session=None if state is None else session_out(state, session_id),
        l2=[
            m.WorkingKeyOut.model_validate(
                {**key, "key": str(key["key"]).replace(engine_id, session_id)}
            )
            for key in report["l2"]
        ],
        pending_tasks=list(report["pending_tasks"]),
    )


def bundle_out(bundle: ContextBundle, session_id: str) -> m.Bundle:
    return to_wire(bundle, m.Bundle, session_id=session_id)


def built_out(built: BuiltContext) -> m.BuiltContextOut:
    return to_wire(built, m.BuiltContextOut)


def turn_in(turn: m.TurnIn) -> ContextTurn:
    return ContextTurn(
        role=turn.role,
        content=turn.content,
        id=turn.id,
        summary=turn.summary,
        covers=tuple(turn.covers),
    )


def tool_result_in(result: m.ToolResultIn) -> ToolResult:
    return ToolResult(
        call_id=result.call_id,
        name=result.name,
        content=result.content,
        relevance=result.relevance,
        freshness_hours=result.freshness_hours,
    )


# -- long-term memory ---------------------------------------------------------------------


def episode_out(episode: Episode) -> m.EpisodeOut:
    return to_wire(episode, m.EpisodeOut)


def fact_out(unit: MemoryUnit) -> m.FactOut:
    return to_wire(unit, m.FactOut, id=unit.id or "")


def receipt_out(
    receipt: WriteReceipt, episodes: Sequence[Episode] = (), facts: Sequence[MemoryUnit] = ()
) -> m.Receipt:
    """A write receipt, with the episodes and facts it stored once they are read back."""
    return to_wire(
        receipt,
        m.Receipt,
        episodes=[episode_out(e) for e in episodes],
        facts=[fact_out(u) for u in facts],
    )


def retrieval_out(result: RetrievalResult) -> m.RetrievalOut:
    return to_wire(result, m.RetrievalOut)


def forget_out(report: ForgetReport) -> m.ForgetResult:
    return to_wire(report, m.ForgetResult)


def consolidation_out(result: ConsolidationResult, tenant: str) -> m.ConsolidationOut:
    """``engine.consolidate``'s result as ``tenant`` (the caller's) reads it: each memory
    action with the ids it touched, and each covered tenant's hot-knowledge merge."""
    report = result.memories
    merge = result.hot_knowledge.get(tenant)
    return m.ConsolidationOut(
        tenant=tenant,
        actions=[
            m.ConsolidationAction(action=name, count=count, ids=list(getattr(report, name)))
            for name, count in report.counts.items()
        ],
        hot_merged=merge.merged if merge else 0,
        hot_duplicates=merge.duplicates if merge else 0,
        hot_expired=merge.expired if merge else 0,
        hot_knowledge=[
            m.HotMergeOut(tenant=name, merged=h.merged, duplicates=h.duplicates, expired=h.expired)
            for name, h in sorted(result.hot_knowledge.items())
        ],
    )


# -- working memory (L2) and knowledge --------------------------------------------------------


def working_item_out(item: WorkingItem) -> m.WorkingItemOut:
    return to_wire(item, m.WorkingItemOut)


def series_in(points: Sequence[m.SeriesPointIn]) -> list[SeriesPoint]:
    return [SeriesPoint(p.timestamp, p.value) for p in points]


def series_out(points: Sequence[SeriesPoint]) -> m.SeriesOut:
    return m.SeriesOut(
        points=[m.SeriesPointIn(timestamp=p.timestamp, value=json_value(p.value)) for p in points]
    )


def pending_out(pending: Sequence[str], changed: int) -> m.PendingOut:
    return m.PendingOut(pending=sorted(pending), changed=changed)


def documents_in(documents: Sequence[m.DocumentIn]) -> list[Document]:
    return [Document(name=d.name, text=d.text, format=d.format) for d in documents]


def ingest_out(report: IngestReport) -> m.IngestReportOut:
    return to_wire(report, m.IngestReportOut)


# -- shared namespaces, the item store and keys ---------------------------------------------


def namespace_out(namespace: Namespace) -> m.NamespaceOut:
    return to_wire(namespace, m.NamespaceOut)


def access_request_out(request: AccessRequest) -> m.AccessRequestOut:
    return to_wire(request, m.AccessRequestOut)


def shared_item_out(item: SharedItem) -> m.SharedItemOut:
    return to_wire(item, m.SharedItemOut)


def store_item_out(item: StoreItem) -> m.StoreItemOut:
    return to_wire(item, m.StoreItemOut)


def store_namespaces_out(found: Sequence[Sequence[str]]) -> m.StoreNamespaceList:
    return m.StoreNamespaceList(namespaces=[m.StoreNamespaceOut(namespace=list(n)) for n in found])


def key_out(info: KeyInfo) -> m.KeyOut:
    return to_wire(info, m.KeyOut)


def created_key_out(created: CreatedKey) -> m.CreatedKeyOut:
    return to_wire(created, m.CreatedKeyOut)


# -- decisions -------------------------------------------------------------------------------


def tool_spec_in(spec: m.ToolSpecModel) -> ToolSpec:
    return ToolSpec(
        spec.name,
        spec.description,
        spec.parameters,
        risk=spec.risk,
        high_impact=spec.high_impact,
        alternatives=tuple(spec.alternatives),
        bound=spec.bound,
    )


def tool_spec_out(spec: ToolSpec) -> m.ToolSpecModel:
    """A registered tool as its request model (the wire's limits apply to it)."""
    return m.ToolSpecModel(
        name=spec.name,
        description=spec.description,
        parameters=json_value(dict(spec.parameters)),
        risk=spec.risk,
        high_impact=spec.high_impact,
        alternatives=list(spec.alternatives),
        bound=dict(spec.bound),
    )


def step_policy_in(policy: m.StepPolicyModel) -> StepPolicy:
    return StepPolicy(
        policy.intent,
        risk=policy.risk,
        evidence=tuple(policy.evidence),
        slots=tuple(Slot(s.name, tuple(s.sources), s.question or "") for s in policy.slots),
        tool=policy.tool,
        tool_params=policy.tool_params,
    )


def decision_out(decision: Decision, bundle: m.Bundle) -> m.DecisionOut:
    return to_wire(decision, m.DecisionOut, bundle=bundle)


def outcome_out(outcome: ToolOutcome) -> m.ToolOutcomeOut:
    return to_wire(outcome, m.ToolOutcomeOut)


def check_out(check: ReplyCheck) -> m.ReplyCheckOut:
    return to_wire(check, m.ReplyCheckOut)


def card_out(card: TraceCard) -> m.TraceCardOut:
    """A trace card under the session id its caller knows, its time a datetime."""
    # The engine keys sessions per tenant; the caller knows its own ids.
    session_id = card.session_id.partition(SESSION_SEPARATOR)[2] or card.session_id
    confirmed_at = card.confirmation_at
    return to_wire(
        card,
        m.TraceCardOut,
        session_id=session_id,
        at=datetime.fromtimestamp(card.at, UTC),
        confirmation_at=None if confirmed_at is None else datetime.fromtimestamp(confirmed_at, UTC),
    )


def feedback_receipt_out(receipt: FeedbackReceipt) -> m.FeedbackReceiptOut:
    return to_wire(receipt, m.FeedbackReceiptOut)


def feedback_report_out(report: FeedbackReport) -> m.FeedbackReportOut:
    # From as_dict(): the rates are rounded there, as the report is read.
    return to_wire(report.as_dict(), m.FeedbackReportOut)


def health_out(report: HealthReport) -> m.HealthReportOut:
    return m.HealthReportOut(
        samples=report.samples,
        markdown=render_markdown(report),
        html=render_html(report),
        flags=[f"{f.name}: {f.value} (bound: {f.rule}, {f.source})" for f in report.flags],
    )


def forget_job_out(job: ForgetJob) -> m.ForgetJobOut:
    return m.ForgetJobOut(
        job_id=job.id,
        kind=job.kind,
        state=job.state,
        submitted_at=job.submitted_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        report=None if job.report is None else forget_out(job.report),
        error_type=job.error_type,
        error=job.error,
    )
