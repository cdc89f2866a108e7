"""ContextEngine: composes L1, L2, L3, the gateway and the router.

``ContextEngine.open(settings)`` builds the embedded defaults (a Valkey server on a
unix socket and qdrant-edge, both under ``settings.data_dir``) or connects to the
servers named in the settings. Everything is also injectable through the
constructor, which is what tests and services use.

The engine is the API: every capability the CLI, the demo or a service offers is
one of its methods, and the types in their signatures are exported from
``memstrata``. Its parts (stores, router, gateway...) are private; benchmarks,
evaluations and tests that must reach them use :attr:`ContextEngine.parts`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray
from prometheus_client import CollectorRegistry

from memstrata.clock import Clock, SystemClock
from memstrata.config import MemorySettings, PipelineSettings, Settings
from memstrata.context import (
    BuiltContext,
    ContextBudget,
    ContextRequest,
    ToolResult,
    build_context,
    counter_for_model,
    from_bundle,
)
from memstrata.context import Turn as ContextTurn
from memstrata.context.adapt import retrieved_items
from memstrata.decision import (
    CardStore,
    Decision,
    DecisionLayer,
    DecisionMetrics,
    DecisionRates,
    ModelJudge,
    ReplyCheck,
    RiskThresholds,
    StepPolicy,
    ToolFunction,
    ToolOutcome,
    ToolSpec,
    TraceCard,
    decision_rates,
)
from memstrata.embed.defaults import default_embedder
from memstrata.embed.protocol import Embedder
from memstrata.errors import (
    ConfigError,
    MemstrataError,
    NotFoundError,
    UnknownIntentError,
    ValidationError,
)
from memstrata.extract.candidates import ROLES
from memstrata.extract.protocol import Extractor
from memstrata.feedback.events import FeedbackReceipt, feedback_records
from memstrata.feedback.report import FeedbackReport, build_feedback_report, most_ignored
from memstrata.gateway import AuditSink, FieldPolicy, Sanitizer
from memstrata.gateway.audit import AuditEvent, InMemoryAuditLog, JsonlAuditLog, TeeAuditLog
from memstrata.gateway.logging import install_global_log_redaction
from memstrata.health import (
    EngineReadings,
    HealthMonitor,
    HealthRecorder,
    HealthReport,
    HealthSample,
    MemoryHealthLog,
    build_report,
)
from memstrata.health.sampler import L1_MEASURED_SESSIONS, l1_bytes
from memstrata.knowledge.documents import Document
from memstrata.knowledge.hot import HotKnowledge, MergeReport
from memstrata.knowledge.ingest import IngestProgress, IngestReport, KnowledgeIngestor
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, Filter, Hit
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.memory.codec import UNIT_TYPES, from_payload, is_pending
from memstrata.memory.episodes import (
    MAX_SPEAKER_CHARS,
    Episode,
    episode_of_payload,
    turn_episode_id,
)
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit
from memstrata.metrics import EngineMetrics
from memstrata.permissions import Level, check_level, cleared, level_of_payload
from memstrata.retrieval import RetrievalQuery, RetrievalResult, Retriever
from memstrata.retrieval.rerank import Reranker
from memstrata.router import (
    DEFAULT_INTENTS,
    SEED_INTENTS,
    ContextBundle,
    ContextRouter,
    IntentRegistry,
    IntentSpec,
)
from memstrata.session import SessionRegistry, SessionState
from memstrata.sharing.items import ItemStore, StoreItem
from memstrata.sharing.namespaces import (
    AccessRequest,
    Namespace,
    NamespaceStore,
    SharedItem,
    shared_context_items,
)
from memstrata.tracing import SpanProcessor, Tracing, traced
from memstrata.upkeep.consolidate import ConsolidationReport, consolidate, restore
from memstrata.upkeep.forget import (
    ForgetReport,
    deletion_record,
    forget_memories,
    forget_store_items,
    forget_user,
)
from memstrata.validation import check_id, check_positive_int, check_text
from memstrata.wiring import (
    build_extractor,
    build_handler,
    build_judge,
    open_index,
    open_longterm,
    open_memory,
)
from memstrata.working.embedded import EmbeddedValkey
from memstrata.working.memory import SessionWorkingMemory, WorkingMemory
from memstrata.working.redis_backend import RedisBackend
from memstrata.working.values import Preference
from memstrata.write.consume import QueueWorker
from memstrata.write.handle import WriteHandler
from memstrata.write.queue import WriteQueue
from memstrata.write.submit import (
    ACTIVE_MEMORY_TYPES,
    HISTORY_MEMORY_TYPES,
    WritePipeline,
    WriteReceipt,
    WriteStats,
    active_only,
)

log = logging.getLogger("memstrata")
AUDIT_FILE = "audit.jsonl"
"""The audit log under ``Settings.data_dir``: redactions, and deletions."""


@dataclass(frozen=True, slots=True)
class WrittenMemory:
    """What one ``observe`` / ``remember`` stored (see :meth:`ContextEngine.written`)."""

    episodes: tuple[Episode, ...]
    facts: tuple[MemoryUnit, ...]
    """Every version extracted from the episodes, events included, by slot and time."""


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    """What one :meth:`ContextEngine.consolidate` pass did: the memories' report, and
    per tenant what the hot-knowledge merge expired and moved into ``knowledge``."""

    memories: ConsolidationReport
    hot_knowledge: Mapping[str, MergeReport]

    def __post_init__(self) -> None:
        frozen = dict(sorted(self.hot_knowledge.items()))
        object.__setattr__(self, "hot_knowledge", MappingProxyType(frozen))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: counts and ids per memory action, merges per tenant."""
        report = self.memories
        return {
            "memories": dict(report.counts),
            "memory_ids": {name: list(getattr(report, name)) for name in report.counts},
            "hot_knowledge": {
                tenant: {"merged": m.merged, "duplicates": m.duplicates, "expired": m.expired}
                for tenant, m in self.hot_knowledge.items()
            },
        }


@dataclass(frozen=True, slots=True)
class EngineParts:
    """The engine's internals, for benchmarks, evaluations, tests and extensions.

    Not a stable API: these objects, their names and their methods change without
    notice. Application code (and the CLI, the demo and the service) uses the
    engine's methods; something reached only through here is a capability the engine
    does not offer yet. ``memory`` and ``pipeline`` are None for an engine built
    without a memory store or a write pipeline.
    """

    settings: Settings
    clock: Clock
    embedder: Embedder
    sanitizer: Sanitizer
    sessions: SessionRegistry
    working_memory: WorkingMemory
    longterm: LongTermStore
    router: ContextRouter
    retriever: Retriever
    hot_knowledge: HotKnowledge
    knowledge_ingestor: KnowledgeIngestor
    audit: InMemoryAuditLog | None
    memory: MemoryStore | None
    pipeline: WritePipeline | None


MAX_RETRIEVAL_QUERY_CHARS = 4_000


class ContextEngine:
    """The one object most users touch: sessions (L1), working memory (L2), long-term
    memory and knowledge (L3), routing and context building, all behind the gateway."""

    def __init__(
        self,
        *,
        settings: Settings,
        clock: Clock,
        sanitizer: Sanitizer,
        working: WorkingMemory,
        longterm: LongTermStore,
        embedder: Embedder,
        intents: IntentRegistry | None = None,
        audit: InMemoryAuditLog | None = None,
        on_close: Sequence[Callable[[], None]] = (),
        memory: MemoryStore | None = None,
        pipeline: WritePipeline | None = None,
        reranker: Reranker | None = None,
        namespaces: NamespaceStore | None = None,
        metrics: EngineMetrics | None = None,
        tracing: Tracing | None = None,
        judge: ModelJudge | None = None,
    ) -> None:
        self._settings = settings
        self._metrics = metrics if metrics is not None else EngineMetrics()
        self._metrics.watch_layers(
            working_info=working.info,
            write_stats=pipeline.stats if pipeline is not None else None,
        )
        self._namespaces = namespaces
        self._clock = clock
        self._sanitizer = sanitizer
        self._working = working
        self._longterm = longterm
        self._embedder = embedder
        self._audit = audit
        self._on_close = list(on_close)
        # Spans (memstrata.tracing): the given tracing, else the settings'; shut down last.
        self._tracing = tracing or Tracing.from_settings(settings.tracing)
        if self._tracing is not None:
            self._on_close.append(self._tracing.shutdown)
        if pipeline is not None and isinstance(pipeline.handler, WriteHandler):
            pipeline.handler.trace_with(self._tracing)
        self._metrics.watch_l3(point_counts=longterm.point_counts)
        longterm.observe_searches(self._metrics.observe_l3_search)
        self._closed = False
        self._memory = memory
        self._pipeline = pipeline
        self._sessions = SessionRegistry(
            clock, lambda text, where: sanitizer.text(text, location=where)
        )
        # Health samples (seed 000 §5.3): in the working-memory Valkey when there is one.
        self._health = HealthMonitor(
            HealthRecorder(working.backend.client)
            if isinstance(working.backend, RedisBackend)
            else MemoryHealthLog(),
            clock,
            lambda text: sanitizer.text(text, location="health:report"),
        )
        working.watch_reads(self._health.key_read)
        # Decisions and trace cards (seed 003 §4): cards live in the working-memory Valkey.
        self._decision_metrics = DecisionMetrics(self._metrics.registry)
        decided = settings.decision
        self._decisions = (
            DecisionLayer(
                cards=CardStore(
                    working.backend.client,
                    retention_s=decided.card_retention_s,
                    max_cards=decided.max_cards,
                ),
                clock=clock,
                sanitize_text=lambda text, where: sanitizer.text(text, location=where),
                sanitize_value=lambda value, where: sanitizer.value(value, location=where),
                metrics=self._decision_metrics,
                thresholds=RiskThresholds(
                    decided.threshold_low, decided.threshold_medium, decided.threshold_high
                ),
                judge=judge,
                loaded_cosine=settings.longterm.low_confidence_cosine,
            )
            if isinstance(working.backend, RedisBackend)
            else None
        )
        # Reads of the memories collection see active units only unless an intent
        # asks for other types; superseded versions stay out of the agent's context.
        specs = (
            [intents.get(name) for name in intents.names()]
            if intents is not None
            else list(SEED_INTENTS)
        )
        # The general-purpose intents come with every engine unless the caller's
        # registry defines its own of the same name.
        specs += [d for d in DEFAULT_INTENTS if d.name not in {s.name for s in specs}]
        registry = IntentRegistry(active_only(spec) for spec in specs)
        self._router = ContextRouter(
            registry,
            working,
            longterm,
            settings.longterm,
            clock,
            self.embed_query,
        )
        self._retriever = Retriever(
            longterm, embedder, settings.retrieval, settings.longterm, reranker=reranker
        )
        self._hot = HotKnowledge(
            longterm,
            sanitizer,
            clock,
            embedder=embedder,
            sparse_encoder=Bm25Encoder(),
            settings=settings.longterm,
        )
        # The manifest is read and saved whole by each run: one run at a time.
        self._ingestor = KnowledgeIngestor(
            longterm, sanitizer, clock, manifest_dir=Path(settings.data_dir)
        )
        self._ingest_lock = threading.Lock()
        # Tenants that confirmed knowledge in this process: consolidate merges them too.
        self._hot_tenants: set[str] = set()
        self._hot_lock = threading.Lock()
        self._parts = EngineParts(
            settings=settings,
            clock=clock,
            embedder=embedder,
            sanitizer=sanitizer,
            sessions=self._sessions,
            working_memory=working,
            longterm=longterm,
            router=self._router,
            retriever=self._retriever,
            hot_knowledge=self._hot,
            knowledge_ingestor=self._ingestor,
            audit=audit,
            memory=memory,
            pipeline=pipeline,
        )

    # -- construction ---------------------------------------------------------

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        policy: FieldPolicy | None = None,
        intents: IntentRegistry | None = None,
        pipeline: PipelineSettings | None = None,
        memory: MemorySettings | None = None,
        extractor: Extractor | None = None,
        span_processor: SpanProcessor | None = None,
    ) -> ContextEngine:
        """Start (or connect to) every backend named by ``settings``.

        The long-term write pipeline (``settings.pipeline``) runs worker threads by
        default; ``extractor`` replaces the one ``settings.extractor`` names (the
        rule-based extractor unless an LLM endpoint is configured). ``pipeline`` and
        ``memory`` replace those sections of ``settings``; ``span_processor`` (an
        OpenTelemetry ``SimpleSpanProcessor`` or ``BatchSpanProcessor`` around an
        exporter) receives the engine's spans instead of ``settings.tracing``'s
        exporter (:mod:`memstrata.tracing`).
        """
        settings = settings or Settings()
        if pipeline is not None:
            settings = replace(settings, pipeline=pipeline)
        if memory is not None:
            settings = replace(settings, memory=memory)
        clock = clock or SystemClock()
        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        memory_audit = InMemoryAuditLog()
        audit: AuditSink = TeeAuditLog((memory_audit, JsonlAuditLog(data_dir / AUDIT_FILE)))
        sanitizer = Sanitizer(policy, audit, clock)
        if settings.redact_logs:
            install_global_log_redaction(sanitizer)
        closers: list[Callable[[], None]] = []
        try:
            backend, redis_url = _open_working_backend(settings, data_dir, closers)
            working = WorkingMemory(backend, settings.working, clock, sanitizer=sanitizer)
            closers.insert(0, working.close)
            embedder = embedder or default_embedder()
            longterm = open_longterm(
                settings, open_index(settings), embedder, clock=clock, sanitizer=sanitizer
            )
            closers.insert(0, longterm.close)
            memory_store = open_memory(settings, longterm, backend.client, clock)
            audit_file = data_dir / AUDIT_FILE
            namespaces = NamespaceStore(
                backend.client, clock, audit=lambda record: _append_audit(audit_file, record)
            )
            handler = build_handler(memory_store, extractor=extractor or build_extractor(settings))
            ingest = _open_pipeline(settings.pipeline, redis_url, clock, handler, closers)
        except BaseException:
            for close in closers:
                with contextlib.suppress(Exception):
                    close()
            raise
        return cls(
            settings=settings,
            clock=clock,
            sanitizer=sanitizer,
            working=working,
            longterm=longterm,
            embedder=embedder,
            intents=intents,
            audit=memory_audit,
            on_close=closers,
            memory=memory_store,
            pipeline=ingest,
            namespaces=namespaces,
            tracing=None if span_processor is None else Tracing.of(span_processor),
            judge=build_judge(settings),
        )

    # -- settings and parts ---------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The settings this engine runs with (an immutable value)."""
        return self._settings

    def metrics(self) -> dict[str, list[dict[str, Any]]]:
        """The engine's metrics now, JSON-ready: ``{sample: [{"labels", "value"}]}``
        (the samples ``metrics_text`` exposes; see :mod:`memstrata.metrics`)."""
        return self._metrics.snapshot()

    def metrics_text(self) -> bytes:
        """The engine's metrics (and the service's, when one runs over it) in the
        Prometheus text exposition format."""
        return self._metrics.text()

    def metrics_registry(self) -> CollectorRegistry:
        """The Prometheus registry of this engine (not the process-global one)."""
        return self._metrics.registry

    @property
    def parts(self) -> EngineParts:
        """The engine's internals, for benchmarks, evaluations and tests (not a stable
        API; see :class:`EngineParts`)."""
        return self._parts

    def _memory_store(self) -> MemoryStore:
        if self._memory is None:
            raise ConfigError("this engine was built without a memory store")
        return self._memory

    def _write_pipeline(self) -> WritePipeline:
        if self._pipeline is None:
            raise ConfigError("this engine was built without a write pipeline")
        return self._pipeline

    # -- L1 ---------------------------------------------------------------------

    def start_session(
        self,
        user_id: str,
        initial_query: str,
        *,
        tenant: str = "default",
        session_id: str | None = None,
    ) -> SessionState:
        """Open a session (its state lives in this process only)."""
        return self._sessions.start(user_id, initial_query, tenant=tenant, session_id=session_id)

    def session(self, session_id: str) -> SessionState:
        return self._sessions.get(session_id)

    def update_session(
        self, session_id: str, change: Callable[[SessionState], SessionState]
    ) -> SessionState:
        """Apply a pure change to a session's state without losing concurrent updates."""
        return self._sessions.update(session_id, change)

    def end_session(self, session_id: str) -> SessionState:
        """Close a session open in this process and return its last state
        (NotFoundError when it is not open here). Its L2 keys stay until their TTLs
        (``working(session_id).clear()`` drops them now); what it wrote to L3 stays.
        """
        return self._sessions.end(session_id)

    # -- L2 ---------------------------------------------------------------------

    def working(self, session_id: str) -> SessionWorkingMemory:
        """The session's working memory (every write passes the gateway)."""
        return self._working.session(session_id)

    def set_preference(
        self,
        user_id: str,
        pref_type: str,
        value: Any,
        confidence: float,
        updated_at: datetime | None = None,
        *,
        tenant: str = "default",
    ) -> Preference:
        """Store a long-lived preference of ``tenant``'s user (replacing any previous
        one of ``pref_type``); ``value`` passes the gateway, ``confidence`` is in [0, 1]."""
        return self._working.set_preference(
            user_id, pref_type, value, confidence, updated_at, tenant=tenant
        )

    def get_preference(
        self, user_id: str, pref_type: str, *, tenant: str = "default"
    ) -> Preference:
        """One preference of ``tenant``'s user; ContextMissError when there is none."""
        return self._working.get_preference(user_id, pref_type, tenant=tenant)

    def list_preferences(self, user_id: str, *, tenant: str = "default") -> tuple[Preference, ...]:
        """Every preference of ``tenant``'s user, ordered by type."""
        return self._working.list_preferences(user_id, tenant=tenant)

    # -- L3 ---------------------------------------------------------------------

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The dense vector of one query (cached)."""
        vectors = self._embedder.embed([text])
        return np.asarray(vectors[0], dtype=np.float32)

    def add_knowledge(
        self, texts: Sequence[str], *, tenant: str = "default", source: str, section: str = ""
    ) -> list[str]:
        """Store knowledge chunks shared by the tenant."""
        if isinstance(texts, str) or not texts:
            raise ValidationError("texts", "must be a non-empty sequence of strings")
        extra = {"section": section} if section else {}
        return self._longterm.add(
            "knowledge",
            [
                NewItem(text=t, tenant=tenant, type="knowledge", source=source, extra=extra)
                for t in texts
            ],
        )

    def ingest_files(
        self,
        paths: Sequence[Path],
        *,
        tenant: str = "default",
        progress: IngestProgress | None = None,
    ) -> IngestReport:
        """Cold path: Markdown, HTML and text files (folders are walked) chunked along
        their sections into the tenant's ``knowledge``, incrementally.

        The manifest under the data directory remembers each file's hash: a re-run
        skips unchanged files, replaces the chunks that changed and deletes those of
        files gone from a re-ingested folder. A failing file is reported in the
        report's ``errors`` and the others are still ingested. ``progress`` is
        called as ``progress(name, done, total)`` as the files go.
        """
        with self._ingest_lock:
            return self._ingestor.ingest(paths, tenant=tenant, progress=progress)

    def ingest_documents(
        self, documents: Sequence[Document], *, tenant: str = "default", level: Level = "low"
    ) -> IngestReport:
        """:meth:`ingest_files` for documents given as text (e.g. sent over a network).

        Each :class:`Document` is keyed by (tenant, name) as a file is by its path:
        the same chunking and sanitizing, a changed text replaces the chunks that
        changed, an unchanged one is skipped, and a failing document is reported by
        name in ``errors``. A document is never removed by a later call. Names must
        be unique within one call (ValidationError naming ``documents[i].name``).
        ``level`` is the permission level their chunks carry (:mod:`memstrata.permissions`).
        """
        with self._ingest_lock:
            return self._ingestor.ingest_documents(documents, tenant=tenant, level=level)

    def confirm_knowledge(
        self,
        query: str,
        response: str,
        *,
        tenant: str = "default",
        source: str,
        feedback: str = "user_confirmed",
    ) -> str:
        """Hot path: learn an answer the user confirmed; returns its id.

        Both texts pass the gateway; the pair is searchable in ``hot_knowledge`` at
        once, kept 72 h, and merged into ``knowledge`` by :meth:`consolidate`.
        Learning the same pair again restarts its TTL. Only ``user_confirmed``
        feedback is learned (ValidationError naming ``feedback`` otherwise).
        """
        pair_id = self._hot.learn(tenant, query, response, feedback=feedback, source=source)
        with self._hot_lock:
            self._hot_tenants.add(tenant)
        return pair_id

    def search(
        self,
        user_id: str,
        query: str,
        *,
        tenant: str = "default",
        k: int = 5,
        collection: str = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> list[Hit]:
        """One hybrid search of a user's memories (or the tenant's knowledge): the plain
        store search, without the multi-route ranking and the episode links of
        :meth:`retrieve` (which agents use).

        Memories are the episodes and the active units only, unless ``include_history``
        (every version) or ``as_of`` (the versions valid at that instant; it implies the
        history) asks for more. ``explain`` fills each hit's rank in the dense and the
        BM25 route.
        """
        check_id("user_id", user_id)
        check_positive_int("k", k, maximum=100)
        if collection != "memories":
            return self._longterm.search(collection, query, tenant=tenant, k=k, explain=explain)
        if as_of is None:
            types = HISTORY_MEMORY_TYPES if include_history else ACTIVE_MEMORY_TYPES
            return self._longterm.search(
                collection, query, tenant=tenant, user=user_id, types=types, k=k, explain=explain
            )
        if not isinstance(as_of, datetime) or as_of.tzinfo is None:
            raise ValidationError("as_of", "must be a timezone-aware datetime")
        # Validity is an interval, which the engine filter cannot express next to
        # the type condition: over-fetch every version, keep those valid at as_of.
        hits = self._longterm.search(
            collection,
            query,
            tenant=tenant,
            user=user_id,
            types=HISTORY_MEMORY_TYPES,
            k=k * 4,
            explain=explain,
        )
        return [h for h in hits if _valid_at(h.payload, as_of.timestamp())][:k]

    # -- write pipeline -------------------------------------------------------------

    @traced("engine.observe", fields=("session_id", "role"))
    def observe(
        self, session_id: str, role: str, text: str, *, speaker: str | None = None
    ) -> WriteReceipt:
        """Record a conversation turn: L1 history now, the episode and its facts queued.

        The text passes the gateway first, so no secret reaches L1, the stream, L3
        or a log. The turn is stored whole in L3 as an episode of the session's
        thread (its position and the engine clock's time with it), and the
        extractor's facts name it. Returns at once; ``receipt.queued`` is False (and
        the failure is logged and counted) when the queue could not take it - the
        agent's step never fails because of the long-term path. ``speaker`` names who
        spoke when the role alone does not (a display name, sanitized like the text).
        The session must be open in this process (NotFoundError otherwise). Texts
        over ``pipeline.max_turn_chars`` are split into chunks, one episode each;
        over ``pipeline.max_observe_chars`` they are rejected (ValidationError,
        ``text``).
        """
        check_id("session_id", session_id)
        if role not in ROLES:
            raise ValidationError("role", f"must be one of {sorted(ROLES)}")
        pipeline = self._write_pipeline()
        check_text("text", text, max_chars=pipeline.settings.max_observe_chars)
        if speaker is not None:
            check_text("speaker", speaker, max_chars=MAX_SPEAKER_CHARS)
            speaker = self._sanitizer.text(
                speaker, location=f"l1:{session_id}:turn", field="speaker"
            )
        clean = self._sanitizer.text(text, location=f"l1:{session_id}:turn", field="text")
        chunks = pipeline.chunks(clean)  # size checks before L1 changes
        now = self._clock.now()
        state = self._sessions.update(
            session_id, lambda s: s.record_turn(role, clean, now, parts=len(chunks))
        )
        turn_id = state.history[-1].turn_id
        first = state.episodes_observed - len(chunks) + 1
        episodes = [
            Episode(
                id=turn_episode_id(state.tenant, state.thread, first + i),
                tenant=state.tenant,
                user=state.user_id,
                text=chunk,
                role=role,
                observed_at=now,
                source=f"turn:{session_id}/{turn_id}",
                session_id=session_id,
                # Each chunk is its own turn to the extractor; its id says which part.
                turn_id=turn_id if len(chunks) == 1 else f"{turn_id}.{i + 1}",
                thread=state.thread,
                seq=first + i,
                speaker=speaker,
            )
            for i, chunk in enumerate(chunks)
        ]
        return pipeline.submit_turn(episodes)

    @traced("engine.remember", fields=("tenant",))
    def remember(
        self, user_id: str, text_or_unit: str | MemoryUnit, *, tenant: str = "default"
    ) -> WriteReceipt:
        """Queue a direct long-term write (no worth filter); returns without waiting.

        Text is stored whole as an episode and read by the extractor, whose facts
        name it (a text with no recognizable fact is still kept, as its episode); a
        :class:`MemoryUnit` is written as is, after the gateway. ``flush()`` waits
        until it is written, and :meth:`written` then reads back the episode and
        each fact. Like :meth:`observe`, a queue failure is reported in the
        receipt, not raised.
        """
        check_id("user_id", user_id)
        check_id("tenant", tenant)
        pipeline = self._write_pipeline()
        if isinstance(text_or_unit, MemoryUnit):
            unit = text_or_unit
            if (unit.source.tenant, unit.source.user) != (tenant, user_id):
                raise ValidationError("unit.source", "must name the same tenant and user")
            return pipeline.submit_unit(self._sanitized_unit(unit))
        check_text("text", text_or_unit, max_chars=pipeline.settings.max_observe_chars)
        clean = self._sanitizer.text(text_or_unit, location="L3:memories", field="text")
        now = self._clock.now()
        episodes = [
            Episode.remembered(tenant, user_id, chunk, now) for chunk in pipeline.chunks(clean)
        ]
        return pipeline.submit_note(episodes)

    def written(self, receipt: WriteReceipt, *, tenant: str) -> WrittenMemory:
        """What a flushed ``observe`` / ``remember`` stored: its episodes, and every
        fact and event extracted from them (each version, active or not)."""
        if not isinstance(receipt, WriteReceipt):
            raise ValidationError("receipt", "must be an WriteReceipt")
        check_id("tenant", tenant)
        ids = receipt.episode_ids
        if not ids:
            return WrittenMemory((), ())
        episodes = tuple(
            episode_of_payload(r.id, r.payload)
            for r in self._longterm.get(MEMORIES, ids, tenant=tenant)
        )
        flt = Filter(tenant=tenant, types=UNIT_TYPES, extras=(("episodes", tuple(ids)),))
        units = [
            from_payload(r.id, r.payload)
            for r in self._longterm.iter_records(MEMORIES, flt)
            if not is_pending(r.payload)
        ]
        units.sort(key=lambda u: (u.subject, u.attribute, u.valid_from, u.version))
        return WrittenMemory(episodes, tuple(units))

    def _sanitized_unit(self, unit: MemoryUnit) -> MemoryUnit:
        location = "L3:memories"
        return replace(
            unit,
            subject=self._sanitizer.text(unit.subject, location=location, field="subject"),
            attribute=self._sanitizer.text(unit.attribute, location=location, field="attribute"),
            value=self._sanitizer.text(unit.value, location=location, field="value"),
            extras=tuple(
                (label, self._sanitizer.text(value, location=location, field=label))
                for label, value in unit.extras
            ),
        )

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait until everything queued so far is in long-term memory.

        Raises FlushTimeoutError (a BackendError) when ``timeout_s`` passes first.
        """
        self._write_pipeline().flush(timeout_s)

    def write_stats(self) -> WriteStats:
        """Counters of the write pipeline (enqueued, failures, filter drops, writes)."""
        return self._write_pipeline().stats()

    def count_memories(
        self,
        tenant: str = "default",
        *,
        user: str | None = None,
        types: Sequence[str] | None = None,
    ) -> int:
        """How many points the tenant's memories hold (one user's, some types:
        ``episode``, ``fact``, ``event``, ``history``...), every version included."""
        if isinstance(types, str):
            raise ValidationError("types", "must be a sequence of types, not one string")
        return self._longterm.count(MEMORIES, tenant=tenant, user=user, types=types)

    def audit_events(self) -> tuple[AuditEvent, ...]:
        """The redactions and maskings the gateway recorded in this process, oldest
        first (kind, location and span, never the value); bounded, the oldest are
        dropped first. The audit file under the data directory keeps them all."""
        return self._audit.events() if self._audit is not None else ()

    def forget(self, user_id: str, *, tenant: str = "default") -> ForgetReport:
        """Delete everything held of ``user_id`` in ``tenant``, everywhere: episodes,
        facts with their history, cold copies (L3); slot records, preferences,
        write-queue entries and this process's sessions of the user with their
        working memory (L1, L2); then the files on disk - the embedded index is
        rebuilt without them and the Valkey AOF rewritten. The audit log keeps one
        line saying a deletion happened (:func:`memstrata.upkeep.forget.deletion_record`).
        Item-store items are keyed by namespace, not user: see
        :meth:`forget_store_namespace`.

        Waits for the write queue first, so nothing queued for the user lands after.
        """
        check_id("user_id", user_id)
        check_id("tenant", tenant)
        self.flush()
        ended = [
            self._sessions.end(sid)
            for sid in self._sessions.session_ids()
            if (state := self._sessions.get(sid)).user_id == user_id and state.tenant == tenant
        ]
        memory = self._memory_store()
        report = forget_user(
            self._longterm,
            memory.redis,
            tenant,
            user_id,
            memory_prefix=memory.settings.redis_prefix,
            queues=(self._write_pipeline().queue.name,),
            sessions=[state.session_id for state in ended],
        )
        report = replace(report, sessions_ended=len(ended))
        self._forgotten(report, user_id)
        return report

    def forget_memories(self, ids: Sequence[str], *, tenant: str = "default") -> ForgetReport:
        """Delete chosen memories of ``tenant`` everywhere (disk included): a fact with
        every version of its slot, an event, an episode with the facts extracted
        from it. Ids ``tenant`` does not hold are ignored."""
        check_id("tenant", tenant)
        self.flush()
        memory = self._memory_store()
        report = forget_memories(
            self._longterm,
            memory.redis,
            tenant,
            ids,
            memory_prefix=memory.settings.redis_prefix,
        )
        self._forgotten(report, None)
        return report

    def forget_store_namespace(
        self, namespace_prefix: Sequence[str], *, tenant: str = "default"
    ) -> ForgetReport:
        """Delete every item-store item under ``namespace_prefix`` (non-empty) of
        ``tenant`` everywhere, the files on disk included. Store items are keyed by
        namespace, not by user, so :meth:`forget` leaves them: a LangGraph store that
        keeps a user's items under ``("memories", user)`` forgets them with that prefix."""
        check_id("tenant", tenant)
        where = self._items.namespace_filter(tenant, namespace_prefix)
        report = forget_store_items(self._longterm, self._memory_store().redis, tenant, where)
        self._forgotten(report, None)
        return report

    def _forgotten(self, report: ForgetReport, user: str | None) -> None:
        # Caches in this process keep texts too; the next reads rebuild them.
        self._longterm.clear_caches()
        self._retriever.clear_caches()
        self._sanitizer.clear_cache()
        clear = getattr(self._embedder, "clear", None)
        if callable(clear):
            clear()
        record = deletion_record(report, self._clock.now(), user=user)
        _append_audit(Path(self._settings.data_dir) / AUDIT_FILE, record)

    def consolidate(
        self, *, tenants: Sequence[str] | None = None, now: datetime | None = None
    ) -> ConsolidationResult:
        """One consolidation pass (the daily job) over ``tenants``.

        Memories: duplicates merged, old events compressed, stale units moved to
        cold storage (episodes are never consolidated). Hot knowledge: expired items
        deleted, the survivors merged into ``knowledge``. Default tenants: every
        tenant that wrote a memory, ``default``, and those that confirmed knowledge
        in this process. Call :meth:`flush` first to include what is still queued.
        """
        if now is not None and (not isinstance(now, datetime) or now.tzinfo is None):
            raise ValidationError("now", "must be a timezone-aware datetime")
        if isinstance(tenants, str):
            raise ValidationError("tenants", "must be a sequence of tenants, not one string")
        memory = self._memory_store()
        at = now or self._clock.now()
        report = consolidate(memory, at, tenants=tenants)
        if tenants is None:
            with self._hot_lock:
                names = {*memory.slots.tenants(), "default", *self._hot_tenants}
        else:
            names = {check_id("tenants", t) for t in tenants}
        merges = {t: self._hot.merge_into_knowledge(t, now=at) for t in sorted(names)}
        return ConsolidationResult(memories=report, hot_knowledge=merges)

    def restore(self, ids: Sequence[str], *, tenant: str = "default") -> tuple[str, ...]:
        """Bring units back from cold storage; returns the ids restored."""
        if isinstance(ids, str):
            raise ValidationError("ids", "must be a sequence of ids, not one string")
        return restore(self._memory_store(), check_id("tenant", tenant), ids)

    # -- shared namespaces (seed 000 §6.3) -------------------------------------------

    def _namespace_store(self) -> NamespaceStore:
        if self._namespaces is None:
            raise ConfigError("this engine was built without shared namespaces")
        return self._namespaces

    def create_namespace(
        self, name: str, *, tenant: str = "default", owner: str, purpose: str, ttl_s: float
    ) -> Namespace:
        """A shared namespace of ``tenant``: its purpose, its items' TTL, and ``owner``
        (who reads, writes and grants access). Audited."""
        return self._namespace_store().create(
            tenant, name, owner=owner, purpose=purpose, ttl_s=ttl_s
        )

    def namespace(self, name: str, *, tenant: str = "default", agent: str) -> Namespace:
        """A namespace ``agent`` may read (NotFoundError otherwise, as for no namespace)."""
        return self._namespace_store().get(tenant, name, agent)

    def namespaces(self, *, tenant: str = "default", agent: str) -> tuple[Namespace, ...]:
        """The namespaces ``agent`` may read."""
        return self._namespace_store().readable(tenant, agent)

    def request_namespace_access(
        self, name: str, *, tenant: str = "default", agent: str, purpose: str, mode: str = "read"
    ) -> AccessRequest:
        """Ask for access, stating the purpose (audited; the same answer whether or not
        the namespace exists)."""
        return self._namespace_store().request_access(
            tenant, name, agent, purpose=purpose, mode=mode
        )

    def namespace_access_requests(
        self, name: str, *, tenant: str = "default", by: str
    ) -> tuple[AccessRequest, ...]:
        """The pending requests of a namespace ``by`` owns."""
        return self._namespace_store().requests(tenant, name, by)

    def grant_namespace_access(
        self,
        name: str,
        agent: str,
        *,
        tenant: str = "default",
        mode: str = "read",
        by: str,
        admin: bool = False,
    ) -> None:
        """Give ``agent`` read or write access; ``by`` is the owner unless ``admin``."""
        self._namespace_store().grant(tenant, name, agent, mode=mode, by=by, admin=admin)

    def revoke_namespace_access(
        self, name: str, agent: str, *, tenant: str = "default", by: str, admin: bool = False
    ) -> None:
        self._namespace_store().revoke(tenant, name, agent, by=by, admin=admin)

    def put_shared(
        self,
        name: str,
        item_id: str,
        value: Any,
        *,
        tenant: str = "default",
        agent: str,
        level: Level = "medium",
    ) -> SharedItem:
        """Write an item of shared context (after the gateway); it lives the
        namespace's TTL. ``agent`` needs write access."""
        clean = self._sanitizer.value(value, location=f"ns:{tenant}:{name}")
        return self._namespace_store().put(tenant, name, agent, item_id, clean, level=level)

    def shared_items(
        self, *, tenant: str = "default", agent: str, clearance: Level = "high"
    ) -> tuple[SharedItem, ...]:
        """The live items of every namespace ``agent`` may read, within ``clearance``."""
        check_level("clearance", clearance)
        return tuple(i for i in self._shared(tenant, agent) if cleared(i.level, clearance))

    def _shared(self, tenant: str, agent: str) -> tuple[SharedItem, ...]:
        if self._namespaces is None:
            return ()
        return self._namespaces.items(tenant, agent)

    # -- item store (LangGraph's BaseStore; memstrata.sharing.items) ---------------------------

    @functools.cached_property
    def _items(self) -> ItemStore:
        return ItemStore(self._longterm, self._sanitizer, self._clock)

    def store_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        tenant: str = "default",
        index: Sequence[str] | bool | None = None,
    ) -> StoreItem:
        """Store a JSON object under ``(namespace, key)`` (after the gateway), replacing
        the item there; ``index`` names the fields embedded for search (None: the
        whole value; False: not searchable by query). Persistent, in L3."""
        return self._items.put(tenant, namespace, key, value, index=index)

    def store_get(
        self, namespace: Sequence[str], key: str, *, tenant: str = "default"
    ) -> StoreItem | None:
        """The item at ``(namespace, key)``, or None."""
        return self._items.get(tenant, namespace, key)

    def store_delete(self, namespace: Sequence[str], key: str, *, tenant: str = "default") -> bool:
        """Delete the item at ``(namespace, key)``; whether there was one."""
        return self._items.delete(tenant, namespace, key)

    def store_search(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        tenant: str = "default",
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[StoreItem]:
        """Items under a namespace prefix matching ``filter``; with ``query``, ranked by
        hybrid search (``score``: cosine), else the most recently updated first."""
        return self._items.search(
            tenant, namespace_prefix, query=query, filter=filter, limit=limit, offset=offset
        )

    def store_list_namespaces(
        self,
        *,
        tenant: str = "default",
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items (``*`` is a wildcard in prefix and suffix)."""
        return self._items.list_namespaces(
            tenant, prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    # -- routing ----------------------------------------------------------------

    def register_intent(self, spec: IntentSpec, *, replace: bool = False) -> None:
        """Register an intent; its unrestricted ``memories`` needs read active units only."""
        self._router.intents.register(active_only(spec), replace=replace)

    @traced("engine.route", fields=("step_intent", "clearance"))
    def route(
        self,
        session: SessionState | str,
        step_intent: str,
        query: str | None = None,
        *,
        agent: str | None = None,
        clearance: Level = "high",
    ) -> ContextBundle:
        """The context bundle for the session's current step.

        With ``agent``, the items of every shared namespace the agent may read are
        merged in (provenance source ``namespace:<name>``). Items above ``clearance``
        (:mod:`memstrata.permissions`) are left out.
        """
        check_level("clearance", clearance)
        self._health_tick()
        state = self._sessions.get(session) if isinstance(session, str) else session
        started = time.perf_counter()
        try:
            bundle = self._router.route(state, step_intent, query)
        except Exception as exc:
            known = isinstance(step_intent, str) and not isinstance(exc, UnknownIntentError)
            self._metrics.route_failed(step_intent if known else "unknown")
            raise
        self._metrics.observe_route(step_intent, time.perf_counter() - started, bundle)
        if agent is not None:
            shared = shared_context_items(self._shared(state.tenant, agent), self._clock.now())
            bundle = replace(bundle, items=bundle.items + shared)
        return bundle.cleared_for(clearance)

    @traced("engine.retrieve", fields=("tenant", "collection", "k", "include_history"))
    def retrieve(
        self,
        query: str,
        *,
        tenant: str = "default",
        user: str | None = None,
        k: int = 10,
        now: datetime | None = None,
        recent: Sequence[str] = (),
        collection: str = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
    ) -> RetrievalResult:
        """Multi-route retrieval of the tenant's memories or knowledge.

        Memories are the episodes (what was said) and the current facts and events,
        ranked together: an episode carries the current facts extracted from it, and
        one whose content a newer fact replaced is marked ``superseded_by`` it (see
        :mod:`memstrata.retrieval.links`). Superseded fact versions come back only
        with ``include_history`` (``is_history`` set) or ``as_of``, which reads the
        memories as they stood at that instant. ``now`` (default: the engine clock)
        resolves "last week" and ages memories; ``recent`` are the last conversation
        turns (the intent route).
        """
        if not isinstance(include_history, bool):
            raise ValidationError("include_history", "must be a bool")
        self._health_tick()
        types = None
        if collection == MEMORIES:
            types = (
                HISTORY_MEMORY_TYPES
                if include_history or as_of is not None
                else ACTIVE_MEMORY_TYPES
            )
        started = time.perf_counter()
        result = self._retriever.retrieve(
            RetrievalQuery(
                text=query,
                tenant=tenant,
                user=user,
                k=k,
                now=now or self._clock.now(),
                recent=tuple(recent),
                collection=collection,
                types=types,
                as_of=as_of,
            )
        )
        self._metrics.observe_retrieval(
            collection,
            time.perf_counter() - started,
            result,
            self._settings.longterm.low_confidence_cosine,
        )
        if result.l3_skipped or (result.items and result.items[0].low_confidence):
            self._health.low_confidence_query(query)
        return result

    @traced("engine.build_context", fields=("step_intent", "model", "k"))
    def build_context(
        self,
        session: SessionState | str,
        step_intent: str,
        user_input: str,
        *,
        system_prompt: str,
        model: str = "gpt-4o",
        history: Sequence[ContextTurn] = (),
        tool_results: Sequence[ToolResult] = (),
        budget: ContextBudget | None = None,
        k: int = 10,
        agent: str | None = None,
        clearance: Level = "high",
    ) -> BuiltContext:
        """The step's model call, assembled within the token budget of ``model``.

        Memory section: the router's bundle for ``step_intent`` (L1, L2, L3) plus the
        user's long-term memories retrieved for ``user_input`` (multi-route, with
        confidence flags); history and tool results as given. Token counts are exact
        for OpenAI model families (tiktoken files shipped in a package), approximate
        otherwise; ``budget`` overrides the model's default window and shares.
        History is the caller's: when older turns were compressed, ``result.summary``
        (a ``Turn`` with ``summary=True``) replaces the turns in ``summary.covers`` in
        the history passed next time, and is never summarized again. ``agent`` and
        ``clearance`` are :meth:`route`'s: shared namespaces merged in, and nothing
        above the clearance in the messages.
        """
        state = self._sessions.get(session) if isinstance(session, str) else session
        bundle = self.route(state, step_intent, user_input, agent=agent, clearance=clearance)
        recent = tuple(t.content for t in history if t.role == "user")[-3:]
        now = self._clock.now()
        # A pasted document as the input: retrieve with its end (the ask is usually last).
        query = user_input[-MAX_RETRIEVAL_QUERY_CHARS:]
        retrieved = self.retrieve(
            query, tenant=state.tenant, user=state.user_id, k=k, now=now, recent=recent
        )
        memory = list(from_bundle(bundle))
        seen = {item.ref for item in memory}
        # Retrieval scores are unbounded; L1/L2 items (live data) have relevance 1.0 and
        # must be admitted first, so retrieved memories rank within (0, 0.99].
        hits = [h for h in retrieved.items if cleared(level_of_payload(h.payload), clearance)]
        top = max((hit.score for hit in hits), default=0.0) or 1.0
        for hit in hits:
            hit = replace(
                hit,
                facts=tuple(
                    f for f in hit.facts if cleared(level_of_payload(f.payload), clearance)
                ),
            )
            for item in retrieved_items(hit, now, relevance=0.99 * max(0.0, hit.score) / top):
                if item.ref not in seen:
                    seen.add(item.ref)
                    memory.append(item)
        request = ContextRequest(
            system_prompt=system_prompt,
            current_input=user_input,
            memory=tuple(memory),
            history=tuple(history),
            tool_results=tuple(tool_results),
        )
        built = build_context(
            request, budget or ContextBudget.for_model(model), counter_for_model(model)
        )
        self._metrics.observe_context(built)
        return built

    # -- decisions (seed 003 §4) ----------------------------------------------------

    def _decision_layer(self) -> DecisionLayer:
        if self._decisions is None:
            raise ConfigError("decisions need a Valkey/Redis working memory for trace cards")
        return self._decisions

    def register_tool(
        self,
        spec: ToolSpec,
        function: ToolFunction | None = None,
        *,
        tenant: str | None = None,
        replace: bool = False,
    ) -> None:
        """Register a tool the decision layer may call: for every tenant, or for
        ``tenant`` only (its own win over the engine's). Without ``function`` it is a
        remote tool: the caller runs it and reports each attempt
        (:meth:`report_tool_result`)."""
        layer = self._decision_layer()
        registry = layer.tools if tenant is None else layer.scope(check_id("tenant", tenant)).tools
        registry.register(spec, function, replace=replace)

    def tools(self, *, tenant: str | None = None) -> tuple[ToolSpec, ...]:
        """The tools a tenant's decisions may call (the engine's alone without one)."""
        layer = self._decision_layer()
        registry = layer.tools if tenant is None else layer.scope(check_id("tenant", tenant)).tools
        return tuple(registry.spec(name) for name in registry.names())

    def register_policy(
        self, policy: StepPolicy, *, tenant: str | None = None, replace: bool = False
    ) -> None:
        """How one intent's steps decide (risk, key information, evidence, tool): for
        every tenant, or for ``tenant`` only."""
        if not isinstance(policy, StepPolicy):
            raise ValidationError("policy", "must be a StepPolicy")
        self._router.intents.get(policy.intent)  # an unknown intent is refused here
        layer = self._decision_layer()
        scope = (
            layer.policies if tenant is None else layer.scope(check_id("tenant", tenant)).policies
        )
        scope.register(policy, replace=replace)

    @traced("engine.decide")
    def decide(
        self,
        session: SessionState | str,
        bundle: ContextBundle,
        *,
        question: str = "",
        given: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Answer, call a tool, or ask (seed 003 §4.1), from a judgment of ``bundle``;
        writes the step's trace card (``decision.card_id``). ``given`` holds what the
        caller parsed from this turn (an order id, say), as ``given.<name>`` facts."""
        state = self._sessions.get(session) if isinstance(session, str) else session
        if not isinstance(bundle, ContextBundle):
            raise ValidationError("bundle", "must be the ContextBundle route() returned")
        intent = self._router.intents.get(bundle.step_intent)
        return self._decision_layer().decide(state, bundle, intent, question=question, given=given)

    @traced("engine.call_tool", fields=("tenant", "tool"))
    def call_tool(
        self,
        card_id: str,
        *,
        tenant: str = "default",
        tool: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """Run the decision's tool call through the gate, confirmations and the
        fallback chain (seed 003 §4.2)."""
        return self._decision_layer().call_tool(
            check_id("tenant", tenant), card_id, tool=tool, params=params
        )

    def confirm_tool(
        self, pending_id: str, *, tenant: str = "default", confirmed: bool = True
    ) -> ToolOutcome:
        """Confirm (run) or reject a high-impact call held for confirmation."""
        if not isinstance(confirmed, bool):
            raise ValidationError("confirmed", "must be true or false")
        return self._decision_layer().confirm_tool(
            check_id("tenant", tenant), pending_id, confirmed=confirmed
        )

    def report_tool_result(
        self, card_id: str, *, tenant: str = "default", tool: str, ok: bool, error: str = ""
    ) -> ToolOutcome:
        """A remote tool's attempt; the outcome says what the chain does next."""
        if not isinstance(ok, bool):
            raise ValidationError("ok", "must be true or false")
        return self._decision_layer().report_tool_result(
            check_id("tenant", tenant), card_id, tool=tool, ok=ok, error=error
        )

    @traced("engine.check_reply", fields=("tenant",))
    def check_reply(self, card_id: str, reply: str, *, tenant: str = "default") -> ReplyCheck:
        """Check the reply against the memories its decision used; a conflict flags the
        card and asks for regeneration. Records the step's CER verdict."""
        return self._decision_layer().check_reply(check_id("tenant", tenant), card_id, reply)

    def trace_card(self, card_id: str, *, tenant: str = "default") -> TraceCard:
        return self._decision_layer().cards.get(check_id("tenant", tenant), card_id)

    def trace_cards(
        self,
        *,
        tenant: str = "default",
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> tuple[TraceCard, ...]:
        """Trace cards by session and time, oldest first."""
        if session_id is not None:
            check_id("session_id", session_id)
        for name, value in (("since", since), ("until", until)):
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise ValidationError(name, "must be a timezone-aware datetime")
        return self._decision_layer().cards.query(
            check_id("tenant", tenant),
            session_id=session_id,
            since=None if since is None else since.timestamp(),
            until=None if until is None else until.timestamp(),
            limit=limit,
        )

    def decision_rates(self) -> DecisionRates:
        """Tool success, fallback, correction and ask rates and CER, since start."""
        return decision_rates(self._metrics.snapshot())

    def feedback(
        self,
        card_id: str,
        kind: str,
        *,
        tenant: str = "default",
        correction: str = "",
        rating: int | None = None,
        used: Sequence[str] | None = None,
        wrong: Sequence[str] | None = None,
    ) -> FeedbackReceipt:
        """The user's follow-up to a decision (seed 003 §4.3): ``confirmed``,
        ``corrected`` (``correction``: what is right), ``abandoned`` or a ``rating``
        from 1 to 5. Queued like a write and applied by the queue's workers
        (``flush()`` waits): the used memories' importance moves up (confirmed,
        4-5) or down (corrected, 1-2, abandoned), those retrieved but ignored by a
        confirmed reply move down a little, the ``wrong`` memories are closed and the
        correction becomes memory sourced from the event (it supersedes the used fact
        of the same subject and attribute). ``used`` defaults to what the checked reply
        reflects (:mod:`memstrata.feedback.events`). The correction passes the
        gateway before it is queued."""
        check_id("tenant", tenant)
        if not isinstance(correction, str):
            raise ValidationError(
                "correction", f"must be a string, got {type(correction).__name__}"
            )
        pipeline = self._write_pipeline()
        clean = (
            self._sanitizer.text(correction, location="feedback:correction", field="correction")
            if correction
            else ""
        )
        event = self._decision_layer().feedback_event(
            tenant, card_id, kind, correction=clean, rating=rating, used=used, wrong=wrong
        )
        receipt = pipeline.submit_feedback(event)
        self._decision_metrics.observe_feedback(event.kind, event.outcome, len(event.used))
        return FeedbackReceipt(
            event_id=event.id,
            card_id=event.card_id,
            kind=event.kind,
            queued=receipt.queued,
            entry_ids=receipt.entry_ids,
            used=event.used,
            used_by=event.used_by,
            ignored=event.ignored,
            wrong=event.wrong,
            error=receipt.error,
        )

    def feedback_report(
        self, *, tenant: str = "default", since: datetime | timedelta | None = None
    ) -> FeedbackReport:
        """Which intents and questions keep missing the right memory (corrected,
        abandoned, rated 1-2) and which memories are retrieved but ignored (with their
        text), over the processed feedback events since ``since`` (a time, or a
        window ending now)."""
        check_id("tenant", tenant)
        if isinstance(since, timedelta):
            if since <= timedelta(0):
                raise ValidationError("since", "must be a positive window")
            start: float | None = (self._clock.now() - since).timestamp()
        elif isinstance(since, datetime) and since.tzinfo is not None:
            start = since.timestamp()
        elif since is None:
            start = None
        else:
            raise ValidationError("since", "must be a timezone-aware datetime or a timedelta")
        records = feedback_records(self._memory_store().redis, tenant)
        chosen = [r for r in records if start is None or r.at >= start]
        ids = most_ignored(chosen, 20)
        texts = {
            r.id: str(r.payload.get("text", ""))
            for r in self._longterm.get(MEMORIES, ids, tenant=tenant)
        }
        return build_feedback_report(tenant, chosen, since=start, texts=texts)

    def inspect(self, session_id: str) -> dict[str, Any]:
        """What memstrata holds for a session: L1 (if open here) and its live L2 keys."""
        check_id("session_id", session_id)
        try:
            l1: dict[str, Any] | None = self._sessions.get(session_id).as_dict()
        except NotFoundError:
            l1 = None
        wm = self._working.session(session_id)
        return {
            "session_id": session_id,
            "l1": l1,
            "l2": [
                {"key": k.key, "type": k.kind, "ttl_remaining_s": k.ttl_remaining_s}
                for k in wm.keys()  # noqa: SIM118 - a method, not a dict
            ],
            "pending_tasks": sorted(wm.pending()),
        }

    # -- lifecycle ----------------------------------------------------------------

    def close(self) -> None:
        """Stop what the engine started; idempotent."""
        if self._closed:
            return
        self._closed = True
        for close in self._on_close:
            try:
                close()
            except Exception:  # keep closing the rest; report, never hide
                log.exception("error while closing a backend")

    def __enter__(self) -> ContextEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- health report (seed 000 §5.2-§5.3; memstrata.health) ------------------------

    def record_health_sample(self) -> HealthSample:
        """Take a health sample now (engine clock) and record it. The engine also takes
        one by itself at most once a minute, from :meth:`route` and :meth:`retrieve`."""
        return self._health.record(self._clock.now(), self._health_readings())

    def health_report(self, *, since: timedelta = timedelta(days=7)) -> HealthReport:
        """The context health report over the last ``since``, from the recorded samples
        (14 days are read, for the week-over-week CER)."""
        if not isinstance(since, timedelta) or since <= timedelta(0):
            raise ValidationError("since", "must be a positive timedelta")
        now = self._clock.now()
        span = max(since, timedelta(days=14)) + timedelta(hours=1)  # + each baseline
        return build_report(self._health.log.window(now - span, now), now, since)

    def _health_tick(self) -> None:
        """A sample when one is due (a clock read otherwise); never fails the caller."""
        if not self._health.claim_due():
            return
        try:
            self.record_health_sample()
        except MemstrataError:
            log.warning("health sample not recorded", exc_info=True)

    def _health_readings(self) -> EngineReadings:
        ids = self._sessions.session_ids()
        states: list[SessionState] = []
        for sid in ids[:L1_MEASURED_SESSIONS]:
            with contextlib.suppress(NotFoundError):
                states.append(self._sessions.get(sid))
        return EngineReadings(
            sessions=len(ids),
            l1_bytes=l1_bytes(states, len(ids)),
            stale_writes=self._sessions.stale_writes,
            working=self._working.info(),
            points=self._longterm.point_counts(),
            metrics=self.metrics(),
            points_shared=self._longterm.index.shared,
        )


def _open_working_backend(
    settings: Settings, data_dir: Path, closers: list[Callable[[], None]]
) -> tuple[RedisBackend, str]:
    if settings.redis_url:
        return RedisBackend.from_url(settings.redis_url), settings.redis_url
    server = EmbeddedValkey(data_dir / "valkey").start()
    closers.append(server.stop)
    return RedisBackend.from_url(server.url), server.url


def _open_pipeline(
    settings: PipelineSettings,
    redis_url: str,
    clock: Clock,
    handler: WriteHandler,
    closers: list[Callable[[], None]],
) -> WritePipeline:
    # Its own connection pool: the worker's blocking XREADGROUP must not hold a
    # connection that L2 calls wait for, and needs a longer socket timeout.
    queue_backend = RedisBackend.from_url(
        redis_url, socket_timeout_s=max(5.0, settings.block_ms / 1000 + 5.0)
    )
    closers.insert(0, queue_backend.close)
    queue = WriteQueue(
        queue_backend.client, settings.queue_name, maxlen=settings.queue_maxlen, clock=clock
    )
    threads = settings.worker_threads if settings.background_worker else 0
    # Real time, not the engine clock: reclaiming abandoned entries is about how
    # long a consumer has really been silent.
    workers = [
        QueueWorker(
            queue,
            handler,
            f"engine-{os.getpid()}-{n}",
            batch_size=settings.batch_size,
            block_ms=settings.block_ms,
            claim_idle_ms=settings.claim_idle_ms,
            max_deliveries=settings.max_deliveries,
        )
        for n in range(threads)
    ]
    pipeline = WritePipeline(queue, handler, settings, workers=workers)
    pipeline.start()
    closers.insert(0, pipeline.close)
    return pipeline


def _valid_at(payload: Any, at: float) -> bool:
    """Whether a memory payload was valid at epoch ``at`` (``[valid_from, valid_to)``)."""
    start = payload.get("valid_from_ts", payload.get("created_at"))
    end = payload.get("valid_to_ts")
    if start is None or float(start) > at:
        return False
    return end is None or at < float(end)


def _append_audit(path: Path, record: Mapping[str, Any]) -> None:
    """One JSON line in the audit log (appends are atomic for lines this short)."""
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(dict(record), sort_keys=True) + "\n")
