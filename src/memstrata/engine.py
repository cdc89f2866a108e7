"""ContextEngine: the one object most users touch, a thin facade.

``ContextEngine.open(settings)`` builds the stack (:func:`memstrata.wiring.build_stack`:
the embedded defaults, a Valkey server on a unix socket and qdrant-edge under
``settings.data_dir``, or the servers named in the settings) and the capability
services over it (:mod:`memstrata.capabilities`). Every method here delegates to one
of them and adds no behaviour of its own; a test keeps it so.

The engine is the API: every capability the CLI, the demo or a service offers is one
of its methods, and the types in their signatures are exported from ``memstrata``.
Benchmarks, evaluations and tests that must reach below it use :attr:`ContextEngine.parts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from prometheus_client import CollectorRegistry

from memstrata.capabilities import ConsolidationResult, WrittenMemory
from memstrata.clock import Clock
from memstrata.config import MemorySettings, PipelineSettings, Settings
from memstrata.context import BuiltContext, ContextBudget, ToolResult
from memstrata.context import Turn as ContextTurn
from memstrata.decision import (
    Decision,
    DecisionRates,
    ReplyCheck,
    StepPolicy,
    ToolFunction,
    ToolOutcome,
    ToolSpec,
    TraceCard,
)
from memstrata.embed.protocol import Embedder
from memstrata.extract.protocol import Extractor
from memstrata.feedback.events import FeedbackReceipt
from memstrata.feedback.report import FeedbackReport
from memstrata.gateway import FieldPolicy
from memstrata.gateway.audit import AuditEvent
from memstrata.health import HealthReport, HealthSample
from memstrata.knowledge.documents import Document
from memstrata.knowledge.ingest import IngestProgress, IngestReport
from memstrata.longterm.points import Hit
from memstrata.memory.listing import (
    DEFAULT_PAGE_SIZE,
    FactHistory,
    ListKind,
    MemoryPage,
    UserSummary,
)
from memstrata.memory.units import MemoryUnit
from memstrata.permissions import Level
from memstrata.retrieval import RetrievalResult
from memstrata.router import ContextBundle, IntentRegistry, IntentSpec
from memstrata.session import SessionState
from memstrata.sharing.items import StoreItem
from memstrata.sharing.namespaces import AccessRequest, Namespace, SharedItem
from memstrata.tracing import SpanProcessor
from memstrata.upkeep.forget import ForgetReport
from memstrata.upkeep.jobs import ForgetJob
from memstrata.wiring import EngineParts, Stack, build_stack
from memstrata.working.memory import SessionWorkingMemory
from memstrata.working.values import Preference
from memstrata.write.entries import DeadLetter
from memstrata.write.submit import WriteReceipt, WriteStats

__all__ = ["ConsolidationResult", "ContextEngine", "EngineParts", "WrittenMemory"]


class ContextEngine:
    """Sessions (L1), working memory (L2), long-term memory and knowledge (L3),
    routing, context building, decisions, sharing and upkeep, all behind the gateway."""

    def __init__(self, stack: Stack) -> None:
        capabilities = stack.capabilities
        self._stack = stack
        self._sessions = capabilities.sessions
        self._writer = capabilities.writer
        self._reader = capabilities.reader
        self._knowledge = capabilities.knowledge
        self._decisions = capabilities.decisions
        self._sharing = capabilities.sharing
        self._upkeep = capabilities.upkeep
        self._listing = capabilities.listing

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
        return cls(
            build_stack(
                settings,
                clock=clock,
                embedder=embedder,
                policy=policy,
                intents=intents,
                pipeline=pipeline,
                memory=memory,
                extractor=extractor,
                span_processor=span_processor,
            )
        )

    @property
    def settings(self) -> Settings:
        """The settings this engine runs with (an immutable value)."""
        return self._stack.parts.settings

    @property
    def parts(self) -> EngineParts:
        """The stack's components, for benchmarks, evaluations and tests (not a stable
        API; see :class:`EngineParts`)."""
        return self._stack.parts

    def metrics(self) -> dict[str, list[dict[str, Any]]]:
        """The engine's metrics now, JSON-ready: ``{sample: [{"labels", "value"}]}``
        (the samples ``metrics_text`` exposes; see :mod:`memstrata.metrics`)."""
        return self._upkeep.metrics()

    def metrics_text(self) -> bytes:
        """The engine's metrics (and the service's, when one runs over it) in the
        Prometheus text exposition format."""
        return self._upkeep.metrics_text()

    def metrics_registry(self) -> CollectorRegistry:
        """The Prometheus registry of this engine (not the process-global one)."""
        return self._upkeep.metrics_registry()

    def start_session(
        self,
        user_id: str,
        initial_query: str,
        *,
        tenant: str = "default",
        session_id: str | None = None,
    ) -> SessionState:
        """Open a session (its state lives in this process only). An id open for the
        same user and tenant returns that session (a retried start is safe); for
        another, :class:`~memstrata.errors.ConflictError` (field ``session_id``)."""
        return self._sessions.start_session(
            user_id, initial_query, tenant=tenant, session_id=session_id
        )

    def session(self, session_id: str) -> SessionState:
        """The current state of a session open in this process (NotFoundError otherwise)."""
        return self._sessions.session(session_id)

    def update_session(
        self, session_id: str, change: Callable[[SessionState], SessionState]
    ) -> SessionState:
        """Apply a pure change to a session's state without losing concurrent updates."""
        return self._sessions.update_session(session_id, change)

    def end_session(self, session_id: str) -> SessionState:
        """Close a session open in this process and return its last state
        (NotFoundError when it is not open here). Its L2 keys stay until their TTLs
        (``working(session_id).clear()`` drops them now); what it wrote to L3 stays.
        """
        return self._sessions.end_session(session_id)

    def working(self, session_id: str) -> SessionWorkingMemory:
        """The session's working memory (every write passes the gateway)."""
        return self._sessions.working(session_id)

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
        return self._sessions.set_preference(
            user_id, pref_type, value, confidence, updated_at, tenant=tenant
        )

    def get_preference(
        self, user_id: str, pref_type: str, *, tenant: str = "default"
    ) -> Preference:
        """One preference of ``tenant``'s user; ContextMissError when there is none."""
        return self._sessions.get_preference(user_id, pref_type, tenant=tenant)

    def list_preferences(self, user_id: str, *, tenant: str = "default") -> tuple[Preference, ...]:
        """Every preference of ``tenant``'s user, ordered by type."""
        return self._sessions.list_preferences(user_id, tenant=tenant)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The dense vector of one query (cached)."""
        return self._reader.embed_query(text)

    def add_knowledge(
        self, texts: Sequence[str], *, tenant: str = "default", source: str, section: str = ""
    ) -> list[str]:
        """Store knowledge chunks shared by the tenant."""
        return self._knowledge.add_knowledge(texts, tenant=tenant, source=source, section=section)

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
        return self._knowledge.ingest_files(paths, tenant=tenant, progress=progress)

    def ingest_documents(
        self,
        documents: Sequence[Document],
        *,
        tenant: str = "default",
        level: Level = "low",
        prune_missing_under: Sequence[str] = (),
        also_present: Sequence[str] = (),
    ) -> IngestReport:
        """:meth:`ingest_files` for documents given as text (e.g. sent over a network).

        Each :class:`Document` is keyed by (tenant, name) as a file is by its path:
        the same chunking and sanitizing, a changed text replaces the chunks that
        changed, an unchanged one is skipped, and a failing document is reported by
        name in ``errors``. A document is removed only by ``prune_missing_under``. Names must
        be unique within one call (ValidationError naming ``documents[i].name``).
        ``level`` is the permission level their chunks carry (:mod:`memstrata.permissions`).
        ``prune_missing_under`` (names of folders or documents) removes the documents at
        or under them that are neither given nor named in ``also_present``, as a
        re-ingested folder of files drops its deleted files.
        """
        return self._knowledge.ingest_documents(
            documents,
            tenant=tenant,
            level=level,
            prune_missing_under=prune_missing_under,
            also_present=also_present,
        )

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
        return self._knowledge.confirm_knowledge(
            query, response, tenant=tenant, source=source, feedback=feedback
        )

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
        return self._reader.search(
            user_id,
            query,
            tenant=tenant,
            k=k,
            collection=collection,
            include_history=include_history,
            as_of=as_of,
            explain=explain,
        )

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
        return self._writer.observe(session_id, role, text, speaker=speaker)

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
        return self._writer.remember(user_id, text_or_unit, tenant=tenant)

    def written(self, receipt: WriteReceipt, *, tenant: str) -> WrittenMemory:
        """What a flushed ``observe`` / ``remember`` stored: its episodes, and every
        fact and event extracted from them (each version, active or not)."""
        return self._writer.written(receipt, tenant=tenant)

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait until everything queued so far is in long-term memory.

        Raises FlushTimeoutError (a BackendError) when ``timeout_s`` passes first.
        """
        return self._writer.flush(timeout_s)

    def write_stats(self) -> WriteStats:
        """Counters of the write pipeline (enqueued, failures, filter drops, writes)."""
        return self._writer.write_stats()

    def warm(self) -> list[str]:
        """Load and warm every model a read may use now (``serve`` does, before it
        listens), rather than in the first read; what failed, as ``name: error``."""
        return self._reader.warm()

    def dead_letters(
        self, *, tenant: str = "default", after: str | None = None, limit: int = 100
    ) -> tuple[DeadLetter, ...]:
        """Entries of ``tenant`` the write queue gave up on - input that can never be
        stored, never an outage of ours - oldest first, each with its reason; only
        those after the dead id ``after`` (a page's last), at most ``limit``."""
        return self._writer.dead_letters(tenant=tenant, after=after, limit=limit)

    def replay_dead_letter(self, dead_id: str, *, tenant: str = "default") -> str:
        """Put a dead letter of ``tenant`` back on the write stream (its deliveries
        counted from 0) and remove it from the dead letters; returns its new entry id.
        NotFoundError when ``dead_id`` is none of ``tenant``'s dead letters."""
        return self._writer.replay_dead_letter(dead_id, tenant=tenant)

    def count_memories(
        self,
        tenant: str = "default",
        *,
        user: str | None = None,
        types: Sequence[str] | None = None,
    ) -> int:
        """How many points the tenant's memories hold (one user's, some types:
        ``episode``, ``fact``, ``event``, ``history``...), every version included."""
        return self._reader.count_memories(tenant, user=user, types=types)

    def list_memories(
        self,
        user_id: str,
        *,
        kind: ListKind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        page: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        tenant: str = "default",
        clearance: Level = "high",
    ) -> MemoryPage:
        """A page of ``user_id``'s memories without a query, newest first: episodes,
        facts (every version, marked), events and preferences, each with every layer's
        view of it; ``page`` continues from a previous page's ``next_page``."""
        return self._listing.list_memories(
            user_id,
            tenant=tenant,
            kind=kind,
            since=since,
            until=until,
            page=page,
            page_size=page_size,
            clearance=clearance,
        )

    def history(
        self, fact_id: str, *, tenant: str = "default", clearance: Level = "high"
    ) -> FactHistory:
        """Every version of a fact, oldest to newest, with validity and episodes."""
        return self._listing.history(fact_id, tenant=tenant, clearance=clearance)

    def list_users(
        self, *, tenant: str = "default", clearance: Level = "high"
    ) -> tuple[UserSummary, ...]:
        """The users with memory in ``tenant``, with counts and last activity."""
        return self._listing.list_users(tenant=tenant, clearance=clearance)

    def audit_events(self) -> tuple[AuditEvent, ...]:
        """The redactions and maskings the gateway recorded in this process, oldest
        first (kind, location and span, never the value); bounded, the oldest are
        dropped first. The audit file under the data directory keeps them all."""
        return self._upkeep.audit_events()

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
        Runs as a job (:meth:`start_forget`) and returns when it is done; reads of
        every tenant go on meanwhile.
        """
        return self._upkeep.forget(user_id, tenant=tenant)

    def start_forget(
        self,
        user_id: str | None = None,
        *,
        ids: Sequence[str] | None = None,
        store_namespace: Sequence[str] | None = None,
        tenant: str = "default",
    ) -> ForgetJob:
        """Start what :meth:`forget` (``user_id``), :meth:`forget_memories` (``ids``) or
        :meth:`forget_store_namespace` (``store_namespace``) do - give exactly one - as
        a background job, and return it at once, queued. Jobs run one at a time, kept
        in this process only (not across a restart), and each tenant sees only its
        own: follow one with :meth:`forget_status`. Bad input, and a disk without room
        for the rebuild (DiskSpaceError), are refused here before anything is deleted."""
        return self._upkeep.start_forget(
            user_id, ids=ids, store_namespace=store_namespace, tenant=tenant
        )

    def forget_status(
        self, job_id: str, *, tenant: str = "default", timeout_s: float = 0.0
    ) -> ForgetJob:
        """The forget job ``job_id`` of ``tenant`` (its state, its report once done, its
        error if it failed), after waiting up to ``timeout_s`` for it to finish.
        NotFoundError when ``tenant`` started no such job."""
        return self._upkeep.forget_status(job_id, tenant=tenant, timeout_s=timeout_s)

    def wait_forget(
        self, job_id: str, *, tenant: str = "default", timeout_s: float | None = None
    ) -> ForgetJob:
        """:meth:`forget_status` waiting up to ``timeout_s`` (None: until it ends); a
        failed job raises the error it failed with."""
        return self._upkeep.wait_forget(job_id, tenant=tenant, timeout_s=timeout_s)

    def forget_memories(self, ids: Sequence[str], *, tenant: str = "default") -> ForgetReport:
        """Delete chosen memories of ``tenant`` everywhere (disk included): a fact with
        every version of its slot, an event, an episode with the facts extracted
        from it. Ids ``tenant`` does not hold are ignored."""
        return self._upkeep.forget_memories(ids, tenant=tenant)

    def forget_store_namespace(
        self, namespace_prefix: Sequence[str], *, tenant: str = "default"
    ) -> ForgetReport:
        """Delete every item-store item under ``namespace_prefix`` (non-empty) of
        ``tenant`` everywhere, the files on disk included. Store items are keyed by
        namespace, not by user, so :meth:`forget` leaves them: a LangGraph store that
        keeps a user's items under ``("memories", user)`` forgets them with that prefix."""
        return self._upkeep.forget_store_namespace(namespace_prefix, tenant=tenant)

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
        return self._upkeep.consolidate(tenants=tenants, now=now)

    def restore(self, ids: Sequence[str], *, tenant: str = "default") -> tuple[str, ...]:
        """Bring units back from cold storage; returns the ids restored."""
        return self._upkeep.restore(ids, tenant=tenant)

    def create_namespace(
        self, name: str, *, tenant: str = "default", owner: str, purpose: str, ttl_s: float
    ) -> Namespace:
        """A shared namespace of ``tenant``: its purpose, its items' TTL, and ``owner``
        (who reads, writes and grants access). Audited."""
        return self._sharing.create_namespace(
            name, tenant=tenant, owner=owner, purpose=purpose, ttl_s=ttl_s
        )

    def namespace(self, name: str, *, tenant: str = "default", agent: str) -> Namespace:
        """A namespace ``agent`` may read (NotFoundError otherwise, as for no namespace)."""
        return self._sharing.namespace(name, tenant=tenant, agent=agent)

    def namespaces(self, *, tenant: str = "default", agent: str) -> tuple[Namespace, ...]:
        """The namespaces ``agent`` may read."""
        return self._sharing.namespaces(tenant=tenant, agent=agent)

    def request_namespace_access(
        self, name: str, *, tenant: str = "default", agent: str, purpose: str, mode: str = "read"
    ) -> AccessRequest:
        """Ask for access, stating the purpose (audited; the same answer whether or not
        the namespace exists)."""
        return self._sharing.request_namespace_access(
            name, tenant=tenant, agent=agent, purpose=purpose, mode=mode
        )

    def namespace_access_requests(
        self, name: str, *, tenant: str = "default", by: str
    ) -> tuple[AccessRequest, ...]:
        """The pending requests of a namespace ``by`` owns."""
        return self._sharing.namespace_access_requests(name, tenant=tenant, by=by)

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
        return self._sharing.grant_namespace_access(
            name, agent, tenant=tenant, mode=mode, by=by, admin=admin
        )

    def revoke_namespace_access(
        self, name: str, agent: str, *, tenant: str = "default", by: str, admin: bool = False
    ) -> None:
        return self._sharing.revoke_namespace_access(name, agent, tenant=tenant, by=by, admin=admin)

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
        return self._sharing.put_shared(
            name, item_id, value, tenant=tenant, agent=agent, level=level
        )

    def shared_items(
        self, *, tenant: str = "default", agent: str, clearance: Level = "high"
    ) -> tuple[SharedItem, ...]:
        """The live items of every namespace ``agent`` may read, within ``clearance``."""
        return self._sharing.shared_items(tenant=tenant, agent=agent, clearance=clearance)

    def store_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        tenant: str = "default",
        index: Sequence[str] | bool | None = None,
        searchable: bool = True,
    ) -> StoreItem:
        """Store a JSON object under ``(namespace, key)`` (after the gateway), replacing
        the item there; ``index`` names the fields embedded for search (None: the
        whole value; False: not searchable by query). ``searchable=False`` is the
        client's spelling of ``index=False``. Persistent, in L3."""
        return self._sharing.store_put(
            namespace, key, value, tenant=tenant, index=index, searchable=searchable
        )

    def store_get(
        self, namespace: Sequence[str], key: str, *, tenant: str = "default"
    ) -> StoreItem | None:
        """The item at ``(namespace, key)``, or None."""
        return self._sharing.store_get(namespace, key, tenant=tenant)

    def store_delete(self, namespace: Sequence[str], key: str, *, tenant: str = "default") -> bool:
        """Delete the item at ``(namespace, key)``; whether there was one."""
        return self._sharing.store_delete(namespace, key, tenant=tenant)

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
        return self._sharing.store_search(
            namespace_prefix, tenant=tenant, query=query, filter=filter, limit=limit, offset=offset
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
        return self._sharing.store_list_namespaces(
            tenant=tenant,
            prefix=prefix,
            suffix=suffix,
            max_depth=max_depth,
            limit=limit,
            offset=offset,
        )

    def register_intent(self, spec: IntentSpec, *, replace: bool = False) -> None:
        """Register an intent; its unrestricted ``memories`` needs read active units only."""
        return self._reader.register_intent(spec, replace=replace)

    def route(
        self,
        session: SessionState | str,
        step_intent: str | None = None,
        query: str | None = None,
        *,
        agent: str | None = None,
        clearance: Level = "high",
    ) -> ContextBundle:
        """The context bundle for the session's current step.

        Without ``step_intent`` the intent is recognized from ``query`` (the user's
        message, then required) among the registered ones, in Chinese or English;
        under ``Settings.intents.min_confidence`` it falls back to ``respond``.
        ``bundle.recognized`` says which intent, with what confidence, whether it
        fell back, and the entities the message names. With ``agent``, the items of
        every shared namespace the agent may read are merged in (provenance source
        ``namespace:<name>``). Items above ``clearance`` (:mod:`memstrata.permissions`)
        are left out.
        """
        return self._reader.route(session, step_intent, query, agent=agent, clearance=clearance)

    def retrieve(
        self,
        query: str,
        *,
        tenant: str = "default",
        user_id: str | None = None,
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
        turns (the intent route). ``user_id`` limits memories to one user (``user`` is
        its older spelling, kept as an alias).
        """
        return self._reader.retrieve(
            query,
            tenant=tenant,
            user=user,
            user_id=user_id,
            k=k,
            now=now,
            recent=recent,
            collection=collection,
            include_history=include_history,
            as_of=as_of,
        )

    def build_context(
        self,
        session: SessionState | str,
        step_intent: str | None,
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
        window_tokens: int | None = None,
    ) -> BuiltContext:
        """The step's model call, assembled within the token budget of ``model``.

        Memory section: the router's bundle for ``step_intent`` (L1, L2, L3) plus the
        user's long-term memories retrieved for ``user_input`` (multi-route, with
        confidence flags); history and tool results as given. Token counts are exact
        for OpenAI model families (tiktoken files shipped in a package), approximate
        otherwise; ``window_tokens`` is the model's window (needed for a model of
        unknown window: :func:`memstrata.context.budget.known_window`), ``budget``
        overrides the window and the shares. History is the caller's: when older turns
        were compressed, ``result.summary`` (a ``Turn`` with ``summary=True``) replaces
        the turns in ``summary.covers`` in the history passed next time, and is never
        summarized again. ``agent`` and
        ``clearance`` are :meth:`route`'s: shared namespaces merged in, and nothing
        above the clearance in the messages. With ``step_intent`` None the intent is
        recognized from ``user_input`` (see :meth:`route`; ``result.recognized``).
        """
        return self._reader.build_context(
            session,
            step_intent,
            user_input,
            system_prompt=system_prompt,
            model=model,
            history=history,
            tool_results=tool_results,
            budget=budget,
            k=k,
            agent=agent,
            clearance=clearance,
            window_tokens=window_tokens,
        )

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
        return self._decisions.register_tool(spec, function, tenant=tenant, replace=replace)

    def tools(self, *, tenant: str | None = None) -> tuple[ToolSpec, ...]:
        """The tools a tenant's decisions may call (the engine's alone without one)."""
        return self._decisions.tools(tenant=tenant)

    def register_policy(
        self, policy: StepPolicy, *, tenant: str | None = None, replace: bool = False
    ) -> None:
        """How one intent's steps decide (risk, key information, evidence, tool): for
        every tenant, or for ``tenant`` only."""
        return self._decisions.register_policy(policy, tenant=tenant, replace=replace)

    def decide(
        self,
        session: SessionState | str,
        bundle: ContextBundle | None = None,
        *,
        question: str = "",
        given: Mapping[str, Any] | None = None,
        clearance: Level = "high",
    ) -> Decision:
        """Answer, call a tool, or ask, from a judgment of ``bundle``;
        writes the step's trace card (``decision.card_id``). ``given`` holds what the
        caller parsed from this turn (an order id, say), as ``given.<name>`` facts.
        Without ``bundle`` the step is routed from ``question`` alone (its intent
        recognized: :meth:`route`), and the card records the intent recognized, its
        confidence, whether it fell back and the entities. Below ``high`` clearance
        the session's own state (L1) fills no slot and no parameter: it is asked for."""
        return self._decisions.decide(
            session, bundle, question=question, given=given, clearance=clearance
        )

    def call_tool(
        self,
        card_id: str,
        *,
        tenant: str = "default",
        tool: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """Run the decision's tool call through the gate, confirmations and the
        fallback chain (docs/architecture.md, "Decisions and feedback")."""
        return self._decisions.call_tool(card_id, tenant=tenant, tool=tool, params=params)

    def confirm_tool(
        self,
        pending_id: str,
        *,
        tenant: str = "default",
        confirmed: bool = True,
        confirmed_by: str | None = None,
    ) -> ToolOutcome:
        """Confirm (run) or reject a high-impact call held for confirmation. The trace
        card records who did (``confirmed_by``: an opaque id, by default the session's
        user, whom the agent asked) and when."""
        return self._decisions.confirm_tool(
            pending_id, tenant=tenant, confirmed=confirmed, confirmed_by=confirmed_by
        )

    def report_tool_result(
        self, card_id: str, *, tenant: str = "default", tool: str, ok: bool, error: str = ""
    ) -> ToolOutcome:
        """A remote tool's attempt; the outcome says what the chain does next."""
        return self._decisions.report_tool_result(
            card_id, tenant=tenant, tool=tool, ok=ok, error=error
        )

    def check_reply(self, card_id: str, reply: str, *, tenant: str = "default") -> ReplyCheck:
        """Check the reply against the memories its decision used; a conflict flags the
        card and asks for regeneration. Records the step's CER verdict."""
        return self._decisions.check_reply(card_id, reply, tenant=tenant)

    def trace_card(self, card_id: str, *, tenant: str = "default") -> TraceCard:
        """One trace card of ``tenant`` (NotFoundError when it holds none of that id)."""
        return self._decisions.trace_card(card_id, tenant=tenant)

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
        return self._decisions.trace_cards(
            tenant=tenant, session_id=session_id, since=since, until=until, limit=limit
        )

    def decision_rates(self) -> DecisionRates:
        """Tool success, fallback, correction and ask rates and CER, since start."""
        return self._decisions.decision_rates()

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
        """The user's follow-up to a decision: ``confirmed``,
        ``corrected`` (``correction``: what is right), ``abandoned`` or a ``rating``
        from 1 to 5. Queued like a write and applied by the queue's workers
        (``flush()`` waits): the used memories' importance moves up (confirmed,
        4-5) or down (corrected, 1-2, abandoned), those retrieved but ignored by a
        confirmed reply move down a little, the ``wrong`` memories are closed and the
        correction becomes memory sourced from the event (it supersedes the used fact
        of the same subject and attribute). ``used`` defaults to what the checked reply
        reflects (:mod:`memstrata.feedback.events`). The correction passes the
        gateway before it is queued."""
        return self._writer.feedback(
            card_id,
            kind,
            tenant=tenant,
            correction=correction,
            rating=rating,
            used=used,
            wrong=wrong,
        )

    def feedback_report(
        self, *, tenant: str = "default", since: datetime | timedelta | None = None
    ) -> FeedbackReport:
        """Which intents and questions keep missing the right memory (corrected,
        abandoned, rated 1-2) and which memories are retrieved but ignored (with their
        text), over the processed feedback events since ``since`` (a time, or a
        window ending now)."""
        return self._decisions.feedback_report(tenant=tenant, since=since)

    def inspect(self, session_id: str) -> dict[str, Any]:
        """What memstrata holds for a session: L1 (if open here) and its live L2 keys."""
        return self._sessions.inspect(session_id)

    def record_health_sample(self) -> HealthSample:
        """Take a health sample now (engine clock) and record it. The engine also takes
        one by itself at most once a minute, from :meth:`route` and :meth:`retrieve`."""
        return self._upkeep.record_health_sample()

    def health_report(self, *, since: timedelta = timedelta(days=7)) -> HealthReport:
        """The context health report over the last ``since``, from the recorded samples
        (14 days are read, for the week-over-week CER)."""
        return self._upkeep.health_report(since=since)

    def close(self) -> None:
        """Stop what the engine started; idempotent."""
        self._stack.close()

    def __enter__(self) -> ContextEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
