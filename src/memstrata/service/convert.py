"""Pure conversions between the engine's values and the service's wire models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memstrata.context import BuiltContext
from memstrata.context import Turn as ContextTurn
from memstrata.context.values import AdmittedItem, DroppedItem, Origin
from memstrata.frozen import thaw
from memstrata.knowledge.ingest import IngestReport
from memstrata.memory.episodes import Episode
from memstrata.memory.units import MemoryUnit
from memstrata.retrieval import RetrievalResult
from memstrata.retrieval.results import RetrievedItem
from memstrata.router import ContextBundle
from memstrata.service import wire as m
from memstrata.session import SessionState
from memstrata.upkeep.forget import ForgetReport

# Payload fields that are the item itself (text, type) or internal bookkeeping.
_HIDDEN_PAYLOAD = frozenset({"text", "type", "tenant", "facts", "content_hash", "pending"})


def session_out(state: SessionState, session_id: str) -> m.Session:
    """``state`` under the id its caller knows (the service keeps tenants apart)."""
    data = state.as_dict()
    data["session_id"] = session_id
    data.pop("auth_context", None)
    return m.Session.model_validate(data)


def _json_ready(value: Any) -> Any:
    thawed = thaw(value)
    if isinstance(thawed, Mapping):
        return {str(k): _json_ready(v) for k, v in thawed.items()}
    if isinstance(thawed, list | tuple):
        return [_json_ready(v) for v in thawed]
    if thawed is None or isinstance(thawed, str | int | float | bool):
        return thawed
    return str(thawed)


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
        metadata={k: _json_ready(v) for k, v in item.payload.items() if k not in _HIDDEN_PAYLOAD},
    )


def retrieval_out(result: RetrievalResult) -> m.RetrievalOut:
    window = result.time_window
    return m.RetrievalOut(
        items=[retrieved_out(i) for i in result.items],
        below_threshold=[retrieved_out(i) for i in result.below_threshold],
        l3_skipped=result.l3_skipped,
        time_window=(
            None
            if window is None
            else m.TimeWindowOut(start=window.start, end=window.end, phrase=window.phrase)
        ),
    )


def bundle_out(bundle: ContextBundle, session_id: str) -> m.Bundle:
    return m.Bundle(
        session_id=session_id,
        step_intent=bundle.step_intent,
        step=bundle.step,
        built_at=bundle.built_at,
        items=[
            m.BundleItemOut(
                name=item.name,
                content=_json_ready(item.content),
                layer=item.provenance.layer,
                level=item.provenance.level,
                ref=item.provenance.ref,
                source=item.provenance.source,
                relevance=item.provenance.relevance,
                freshness_hours=item.provenance.freshness_hours,
                low_confidence=item.provenance.low_confidence,
            )
            for item in bundle.items
        ],
        missing=[m.MissingOut.model_validate(x.as_dict()) for x in bundle.missing],
        l3_skipped=bundle.l3_skipped,
    )


def _entry(item: AdmittedItem | DroppedItem, origin: Origin, **extra: Any) -> m.ContextEntryOut:
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
        **extra,
    )


def turn_out(turn: ContextTurn) -> m.TurnIn:
    return m.TurnIn(
        role=turn.role,
        content=turn.content,
        id=turn.id,
        summary=turn.summary,
        covers=list(turn.covers),
    )


def built_out(built: BuiltContext) -> m.BuiltContextOut:
    return m.BuiltContextOut(
        messages=[m.ChatMessageOut(role=c.role, content=c.content) for c in built.chat],
        admitted=[_entry(a, a.origin) for a in built.admitted],
        dropped=[_entry(d, d.origin, reason=d.reason, detail=d.detail) for d in built.dropped],
        sections=[
            m.SectionOut(section=s.section, budget=s.budget, used=s.used) for s in built.sections
        ],
        total_tokens=built.total_tokens,
        available_tokens=built.available_tokens,
        counter=built.counter,
        exact=built.exact,
        summary=None if built.summary is None else turn_out(built.summary),
    )


def turn_in(turn: m.TurnIn) -> ContextTurn:
    return ContextTurn(
        role=turn.role,
        content=turn.content,
        id=turn.id,
        summary=turn.summary,
        covers=tuple(turn.covers),
    )


def episode_out(episode: Episode) -> m.EpisodeOut:
    return m.EpisodeOut(
        id=episode.id,
        text=episode.text,
        role=episode.role,
        observed_at=episode.observed_at,
        session_id=episode.session_id,
        speaker=episode.speaker,
    )


def fact_out(unit: MemoryUnit) -> m.FactOut:
    return m.FactOut(
        id=unit.id or "",
        kind=unit.kind,
        subject=unit.subject,
        attribute=unit.attribute,
        value=unit.value,
        version=unit.version,
        active=unit.active,
        valid_from=unit.valid_from,
        episodes=list(unit.episodes),
    )


def forget_out(report: ForgetReport) -> m.ForgetResult:
    return m.ForgetResult(
        points_deleted=report.points_deleted,
        keys_deleted=report.keys_deleted,
        queue_entries_deleted=report.queue_entries_deleted,
        sessions_ended=report.sessions_ended,
    )


def ingest_out(report: IngestReport) -> m.IngestReportOut:
    return m.IngestReportOut(
        files_seen=report.files_seen,
        files_added=report.files_added,
        files_updated=report.files_updated,
        files_skipped=report.files_skipped,
        files_removed=report.files_removed,
        chunks_added=report.chunks_added,
        chunks_deleted=report.chunks_deleted,
        oversized_chunks=report.oversized_chunks,
        errors=[m.FileErrorOut(path=e.path, reason=e.reason) for e in report.errors],
    )


def json_value(value: Any) -> Any:
    return _json_ready(value)
