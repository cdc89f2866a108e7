"""One wiring path: every component of the stack, built once from one :class:`Settings`.

:func:`build_stack` is where the engine's parts are made: the L2 backend (an embedded
Valkey under the data directory, or the server of ``redis_url``), the L3 index
(qdrant-edge under the data directory, or the Qdrant server of ``qdrant_url``), the
gateway and its audit log, the write pipeline and its worker threads, the reader, the
router, knowledge, sharing, decisions, health, metrics and tracing; then the
capability services over them (:mod:`memstrata.capabilities`). Before it starts
anything it checks that the data directory's disk can hold the embedded store
(:func:`memstrata.disk.check_start`); the disk guard it builds turns writes off while
the disk is short of space, and the embedded Valkey is supervised (started again
from its append-only file when its process dies). ``ContextEngine.open``
(the library, the CLI, the demo, the service, eval and bench) calls it; worker
processes (``python -m memstrata.worker --handler-factory
memstrata.wiring:worker_handler``) build their handler with the same functions, so a
worker honours the same settings as the engine that enqueued its work. No other
module constructs a backend, a client of one, or an index (a test checks).
(docs/architecture.md, "Wiring")
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from memstrata.capabilities import (
    Capabilities,
    Decisions,
    Exchange,
    Knowledge,
    Listing,
    Reader,
    Sessions,
    Sharing,
    Upkeep,
    UpkeepParts,
    Writer,
)
from memstrata.capabilities.upkeep import append_audit
from memstrata.chat import ChatEndpoint
from memstrata.clock import Clock, SystemClock
from memstrata.config import MemorySettings, PipelineSettings, Settings, settings_from_env
from memstrata.decision import CardStore, DecisionLayer, DecisionMetrics, RiskThresholds
from memstrata.decision.model_judge import ModelJudge
from memstrata.disk import DiskGuard, DiskPolicy, check_start
from memstrata.distribution import check_distribution
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.defaults import default_embedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.embed.protocol import Embedder, embed_one
from memstrata.errors import ConfigError, ModelError, ModelUnavailableError
from memstrata.extract.protocol import Extractor
from memstrata.filemodes import private_dir
from memstrata.gateway import FieldPolicy, Sanitizer
from memstrata.gateway.audit import AuditSink, InMemoryAuditLog, JsonlAuditLog, TeeAuditLog
from memstrata.gateway.logging import install_global_log_redaction
from memstrata.health import HealthMonitor, HealthRecorder
from memstrata.knowledge.hot import HotKnowledge
from memstrata.knowledge.ingest import KnowledgeIngestor
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, PayloadSanitizer
from memstrata.longterm.points import COLLECTIONS, MEMORIES
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.memory.store import MemoryStore
from memstrata.metrics import EngineMetrics
from memstrata.retrieval import Retriever
from memstrata.retrieval.fallback import ReadFallback
from memstrata.retrieval.guard import ReadGuard
from memstrata.router import DEFAULT_INTENTS, SEED_INTENTS, ContextRouter, IntentRegistry
from memstrata.router.intents import active_only
from memstrata.router.recognize import ExampleRecognizer, MessageUnderstanding, TextEmbedder
from memstrata.router.recognize_llm import ModelRecognizer
from memstrata.session import SessionRegistry
from memstrata.sharing.items import ItemStore
from memstrata.sharing.namespaces import NamespaceStore
from memstrata.tracing import SpanProcessor, Tracing
from memstrata.working.embedded import EmbeddedValkey
from memstrata.working.memory import WorkingMemory
from memstrata.working.recall import RecallCache
from memstrata.working.redis_backend import RedisBackend
from memstrata.write.consume import QueueWorker
from memstrata.write.handle import TextSanitizer, WriteHandler
from memstrata.write.intake import Intake
from memstrata.write.order import UserOrder
from memstrata.write.queue import WriteQueue
from memstrata.write.submit import OutageWatch, WritePipeline

QDRANT_DIR = "qdrant"
"""The embedded index's directory under ``Settings.data_dir``."""
VALKEY_DIR = "valkey"
"""The embedded Valkey's directory under ``Settings.data_dir``."""
AUDIT_FILE = "audit.jsonl"
"""The audit log under ``Settings.data_dir``: redactions, deletions, namespace access."""

Closer = Callable[[], None]
log = logging.getLogger("memstrata")


# --- backends and indexes ------------------------------------------------------------------


def embedded_valkey(settings: Settings) -> EmbeddedValkey:
    """The embedded Valkey of ``settings``' data directory (not started)."""
    return EmbeddedValkey(Path(settings.data_dir) / VALKEY_DIR)


def working_url(settings: Settings) -> str:
    """The URL of the Valkey/Redis the engine of ``settings`` uses."""
    return settings.redis_url or embedded_valkey(settings).url


def redis_backend(url: str, *, socket_timeout_s: float = 5.0) -> RedisBackend:
    """A connection pool to the Valkey/Redis (or Redis Cluster) at ``url``."""
    return RedisBackend.from_url(url, socket_timeout_s=socket_timeout_s)


def open_working_backend(
    settings: Settings, closers: list[Closer]
) -> tuple[RedisBackend, str, EmbeddedValkey | None]:
    """The L2 backend, its URL and the embedded server (None with ``redis_url``): the
    server of ``redis_url``, else the embedded Valkey under the data directory,
    started and supervised here (its stop joins ``closers``)."""
    if settings.redis_url:
        return redis_backend(settings.redis_url), settings.redis_url, None
    server = embedded_valkey(settings).start()
    closers.append(server.stop)
    server.supervise()
    return redis_backend(server.url), server.url, server


def open_working(
    settings: Settings, backend: RedisBackend, clock: Clock, *, sanitizer: Sanitizer | None
) -> WorkingMemory:
    """L2 working memory over ``backend`` (``sanitizer``: the gateway its writes pass)."""
    return WorkingMemory(backend, settings.working, clock, sanitizer=sanitizer)


def open_index(settings: Settings, disk: DiskPolicy | None = None) -> VectorIndex:
    """The Qdrant server named by ``settings.qdrant_url``, else the embedded engine
    under ``data_dir`` (one process at a time may hold it), which checks free space
    against ``disk`` (the default policy when None) before it allocates. Its reads
    are slowed when ``settings.faults`` asks (fault injection, off by default)."""
    if settings.qdrant_url:
        from qdrant_client import QdrantClient

        from memstrata.longterm.qdrant_server import QdrantServerIndex

        # Every request bounded (qdrant-client's own default is 5 s for some calls
        # and none for others); no version check: it is one more request a server
        # that does not answer would hold the start on. A server that does not answer
        # at start leaves the index unready and the engine degraded, not failed
        # (docs/service.md, "When L3 is slow or down").
        client = QdrantClient(
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key,
            timeout=math.ceil(settings.longterm.server_timeout_s),
            check_compatibility=False,
        )
        return _with_faults(settings, QdrantServerIndex(client, where=settings.qdrant_url))
    return _with_faults(
        settings,
        EdgeIndex(
            Path(settings.data_dir) / QDRANT_DIR,
            search_threads=settings.longterm.search_threads,
            disk=disk or DiskPolicy(),
        ),
    )


def _with_faults(settings: Settings, index: VectorIndex) -> VectorIndex:
    """``index``, its reads slowed when ``settings.faults`` asks (benchmarks and drills
    only: :class:`memstrata.config.FaultSettings`)."""
    faults = settings.faults
    if not faults.l3_read_delay_s:
        return index
    from memstrata.testing.injected import SlowReadsIndex  # never loaded otherwise

    log.warning(
        "FAULT INJECTION (settings.faults): every L3 read waits %.3g s%s",
        faults.l3_read_delay_s,
        f" while {faults.l3_delay_switch} exists" if faults.l3_delay_switch else "",
    )
    return SlowReadsIndex(index, faults.l3_read_delay_s, switch=faults.l3_delay_switch)


def embedded_collections(settings: Settings) -> tuple[Path, ...]:
    """The directories of the embedded collections (none with a Qdrant server)."""
    if settings.qdrant_url:
        return ()
    return tuple(Path(settings.data_dir) / QDRANT_DIR / name for name in COLLECTIONS)


def disk_guard(settings: Settings, policy: DiskPolicy | None = None) -> DiskGuard:
    """The guard over the filesystems the data directory, the embedded Valkey and the
    embedded index write to."""
    data_dir = Path(settings.data_dir)
    paths = [data_dir]
    if not settings.redis_url:
        paths.append(data_dir / VALKEY_DIR)
    if not settings.qdrant_url:
        paths.append(data_dir / QDRANT_DIR)
    return DiskGuard(paths, policy)


def default_multilingual(settings: Settings) -> Embedder | None:
    """The second dense model when ``settings.longterm.multilingual`` asks for it
    (multilingual USE v3 behind an LRU cache of recent texts), else None."""
    if not settings.longterm.multilingual:
        return None
    return CachedEmbedder(MultilingualEmbedder())


def open_longterm(
    settings: Settings,
    index: VectorIndex,
    embedder: Embedder,
    *,
    clock: Clock,
    sanitizer: PayloadSanitizer | None = None,
    multilingual: Embedder | None = None,
) -> LongTermStore:
    """The L3 facade with the settings' parameters; ``multilingual``: the second dense
    model (default: :func:`default_multilingual`; none when the settings turn it off)."""
    if multilingual is None or not settings.longterm.multilingual:
        multilingual = default_multilingual(settings)
    return LongTermStore(
        index,
        embedder,
        Bm25Encoder(),
        settings.longterm,
        clock=clock,
        sanitizer=sanitizer,
        multilingual=multilingual,
    )


def open_guard(settings: Settings, index: VectorIndex | None = None) -> ReadGuard:
    """The deadlines and circuit breakers of one engine's reads (L3's, the
    embedder's), with the settings' parameters; L3's deadlines apply only when
    ``index`` is remote (a server), or unknown."""
    return ReadGuard(settings.longterm, l3_remote=index is None or index.remote)


def open_recall(settings: Settings, backend: RedisBackend) -> RecallCache:
    """The cached reads in L2 the reader answers from while L3 is unavailable."""
    return RecallCache(
        backend,
        ttl_s=settings.longterm.fallback_ttl_s,
        max_items=settings.longterm.fallback_items,
    )


def open_reader(
    settings: Settings,
    longterm: LongTermStore,
    *,
    guard: ReadGuard | None = None,
    recall: RecallCache | None = None,
) -> Retriever:
    """The reader: the one L3 ranker, with the settings' retrieval parameters, its
    reads under ``guard`` (deadlines and breakers), answered from ``recall`` when
    L3 cannot be read."""
    fallback = (
        None
        if recall is None
        else ReadFallback(recall, longterm.encode_query, longterm.document_terms, background=True)
    )
    return Retriever(
        longterm,
        longterm.embedder,
        settings.retrieval,
        settings.longterm,
        guard=guard,
        fallback=fallback,
    )


def open_memory(
    settings: Settings,
    longterm: LongTermStore,
    redis_client: object,
    clock: Clock,
    reader: Retriever | None = None,
) -> MemoryStore:
    """The versioned memory store (slot records on ``redis_client``)."""
    return MemoryStore(longterm, redis_client, clock, settings=settings.memory, reader=reader)


# --- the write path ------------------------------------------------------------------------


def build_extractor(settings: Settings) -> Extractor | None:
    """The LLM extractor when ``settings.extractor`` names an endpoint (its key from
    ``MEMSTRATA_LLM_API_KEY``); None leaves the rule-based default."""
    config = settings.extractor
    if not config.llm_base_url:
        return None
    from memstrata.extract.llm import LLMExtractor

    return LLMExtractor(
        config.llm_base_url,
        config.llm_model,
        os.environ.get("MEMSTRATA_LLM_API_KEY"),
        timeout_s=config.timeout_s,
    )


def build_handler(
    store: MemoryStore,
    *,
    extractor: Extractor | None = None,
    sanitizer: TextSanitizer | None = None,
) -> WriteHandler:
    """The queue handler writing into ``store`` (its embedder is the store's)."""
    return WriteHandler(store, extractor=extractor, sanitizer=sanitizer)


def queue_backend(url: str, settings: PipelineSettings) -> RedisBackend:
    """The write queue's own connection pool: the worker's blocking XREADGROUP must not
    hold a connection that L2 calls wait for, and needs a longer socket timeout."""
    return redis_backend(url, socket_timeout_s=queue_timeout_s(settings.block_ms))


def queue_timeout_s(block_ms: int) -> float:
    """A queue connection's socket timeout: longer than its blocking reads."""
    return max(5.0, block_ms / 1000 + 5.0)


def worker_queue(
    url: str, name: str, *, group: str, block_ms: int, maxlen: int | None
) -> WriteQueue:
    """The write queue of a worker process (``python -m memstrata.worker``), on a
    connection whose socket timeout outlasts a blocking XREADGROUP, as the engine's."""
    backend = redis_backend(url, socket_timeout_s=queue_timeout_s(block_ms))
    return WriteQueue(backend.client, name, group=group, maxlen=maxlen)


def open_write_pipeline(
    settings: PipelineSettings,
    redis_url: str,
    clock: Clock,
    handler: WriteHandler,
    closers: list[Closer],
    *,
    disk: DiskGuard | None = None,
    outage: OutageWatch | None = None,
) -> WritePipeline:
    """The write queue, its handler and the engine's worker threads, started. With
    ``disk``, writes are refused and batches wait while it is read-only; with
    ``outage``, batches wait while the handler's backends are unreachable."""
    backend = queue_backend(redis_url, settings)
    closers.insert(0, backend.close)

    def consume_gate() -> bool:
        # Outage first: its probe runs only while paused, the disk's on every batch.
        return (outage is None or outage.open()) and (disk is None or disk.writable())

    queue = WriteQueue(
        backend.client,
        settings.queue_name,
        maxlen=settings.queue_maxlen,
        clock=clock,
        consume_gate=consume_gate if disk is not None or outage is not None else None,
    )
    consume = outage.guarded(handler) if outage is not None else handler
    threads = settings.worker_threads if settings.background_worker else 0
    # One user's entries in order across the threads (memstrata.write.order).
    order = UserOrder()
    # Real time, not the engine clock: reclaiming abandoned entries is about how
    # long a consumer has really been silent.
    workers = [
        QueueWorker(
            queue,
            consume,
            f"engine-{os.getpid()}-{n}",
            batch_size=settings.batch_size,
            block_ms=settings.block_ms,
            claim_idle_ms=settings.claim_idle_ms,
            max_deliveries=settings.max_deliveries,
            order=order,
            warm=handler.warm,
        )
        for n in range(threads)
    ]
    pipeline = WritePipeline(queue, handler, settings, workers=workers, disk=disk)
    pipeline.start()
    closers.insert(0, pipeline.close)
    return pipeline


def outage_probes(
    longterm: LongTermStore, backend: RedisBackend, handler: WriteHandler
) -> dict[str, Callable[[], object]]:
    """What the write handler needs, each asked the cheapest way it answers: the
    consumers stay paused until every one does (:class:`OutageWatch`)."""
    probes = itertools.count()
    embedder = handler.embedder

    def embed() -> object:
        # A new text each time: a cached one would answer while the model is down.
        return embedder.embed([f"memstrata embedder probe {next(probes)}"])

    return {
        "l3": lambda: longterm.index.point_count(MEMORIES),
        "valkey": backend.client.ping,
        "embedder": embed,
    }


def worker_handler(
    data_dir: str = "", redis_url: str = "", qdrant_url: str = "", settings: str = ""
) -> WriteHandler:
    """The handler of a worker process (a ``--handler-factory`` target)::

        python -m memstrata.worker --redis-url unix:///data/valkey/valkey.sock \\
            --queue memories --consumer w1 \\
            --handler-factory memstrata.wiring:worker_handler \\
            --handler-arg settings=/etc/memstrata.json

    Settings come from ``MEMSTRATA_*`` variables and the JSON file they or
    ``settings`` name (:func:`memstrata.config.load_settings`); the other arguments
    override single fields. Without ``qdrant_url`` the worker opens the embedded index
    under ``data_dir``, which no engine may hold meanwhile. ``redis_url`` defaults to
    the worker's own ``--redis-url`` only through the settings: give it here too.
    Refuses (ConfigError) beside the unrelated ``memstrata`` distribution, as the engine
    does.
    """
    check_distribution()
    env = dict(os.environ)
    if settings:
        env["MEMSTRATA_SETTINGS"] = settings
    config = settings_from_env(env, data_dir=Path(data_dir) if data_dir else None)
    if redis_url:
        config = replace(config, redis_url=redis_url)
    if qdrant_url:
        config = replace(config, qdrant_url=qdrant_url)
    if not config.redis_url:
        raise ConfigError("worker_handler: redis_url is required (argument or settings)")
    clock = SystemClock()
    sanitizer = Sanitizer(clock=clock)
    longterm = open_longterm(
        config, open_index(config), default_embedder(), clock=clock, sanitizer=sanitizer
    )
    reader = open_reader(config, longterm, guard=open_guard(config, longterm.index))
    store = open_memory(config, longterm, redis_backend(config.redis_url).client, clock, reader)
    return build_handler(store, extractor=build_extractor(config), sanitizer=sanitizer)


# --- decisions ---------------------------------------------------------------------------


def build_judge(settings: Settings) -> ModelJudge | None:
    """The model judge when ``settings.decision`` names an endpoint (its key from
    ``MEMSTRATA_LLM_API_KEY``); None leaves the decision to the rules. One retry: a
    decision waits on it, and the rules are always there to fall back on."""
    config = settings.decision
    if not config.llm_base_url:
        return None
    endpoint = ChatEndpoint(
        config.llm_base_url,
        config.llm_model,
        os.environ.get("MEMSTRATA_LLM_API_KEY"),
        what="LLM decision endpoint",
        error=ModelError,
        unavailable=ModelUnavailableError,
        timeout_s=config.timeout_s,
        max_retries=1,
    )
    return ModelJudge(endpoint)


def _decision_layer(
    settings: Settings,
    backend: RedisBackend,
    clock: Clock,
    sanitizer: Sanitizer,
    metrics: DecisionMetrics,
) -> DecisionLayer:
    decided = settings.decision
    return DecisionLayer(
        cards=CardStore(
            backend.client,
            retention_s=decided.card_retention_s,
            max_cards=decided.max_cards,
            sanitizer=sanitizer,
        ),
        clock=clock,
        sanitize_text=lambda text, where: sanitizer.text(text, location=where),
        sanitize_value=lambda value, where: sanitizer.value(value, location=where),
        metrics=metrics,
        thresholds=RiskThresholds(
            decided.threshold_low, decided.threshold_medium, decided.threshold_high
        ),
        judge=build_judge(settings),
        loaded_cosine=settings.longterm.low_confidence_cosine,
    )


def build_understanding(
    settings: Settings, embed: TextEmbedder | None = None
) -> MessageUnderstanding:
    """How a message without a step intent is understood (``settings.intents``): by
    its nearest intent examples in the multilingual space (``embed``, default the
    multilingual USE, loaded on first use), or by the configured chat model with the
    examples as its backup."""
    config = settings.intents
    examples = ExampleRecognizer(
        embed or CachedEmbedder(MultilingualEmbedder()).embed,
        lexical_weight=config.lexical_weight,
        top=config.top_examples,
    )
    model: ModelRecognizer | None = None
    if config.llm_base_url:
        model = ModelRecognizer(
            ChatEndpoint(
                config.llm_base_url,
                config.llm_model,
                os.environ.get("MEMSTRATA_LLM_API_KEY"),
                what="LLM intent endpoint",
                error=ModelError,
                unavailable=ModelUnavailableError,
                timeout_s=config.timeout_s,
                max_retries=1,
            )
        )
    return MessageUnderstanding(
        model or examples,
        min_confidence=config.min_confidence,
        fallback=config.fallback,
        backup=examples if model is not None else None,
    )


def intent_registry(intents: IntentRegistry | None) -> IntentRegistry:
    """The engine's intents: the caller's registry (else the seed intents) plus the
    general-purpose ones it does not define; unrestricted ``memories`` needs read
    active units only."""
    specs = (
        [intents.get(name) for name in intents.names()]
        if intents is not None
        else list(SEED_INTENTS)
    )
    specs += [d for d in DEFAULT_INTENTS if d.name not in {s.name for s in specs}]
    return IntentRegistry(active_only(spec) for spec in specs)


# --- the stack -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineParts:
    """Every component of one engine's stack, as :func:`build_stack` made them.

    For benchmarks, evaluations, tests and extensions that measure or reach below the
    engine's methods; not a stable API (these objects and their methods change
    without notice). Application code, the CLI, the demo and the service use the
    engine's methods.
    """

    settings: Settings
    clock: Clock
    embedder: Embedder
    sanitizer: Sanitizer
    audit: InMemoryAuditLog
    audit_file: Path
    sessions: SessionRegistry
    working_memory: WorkingMemory
    working_backend: RedisBackend
    """The L2 server's connection pool (API keys, trace cards and samples live there too)."""
    redis_url: str
    longterm: LongTermStore
    retriever: Retriever
    router: ContextRouter
    hot_knowledge: HotKnowledge
    knowledge_ingestor: KnowledgeIngestor
    memory: MemoryStore
    pipeline: WritePipeline
    namespaces: NamespaceStore
    items: ItemStore
    decisions: DecisionLayer
    decision_metrics: DecisionMetrics
    health: HealthMonitor
    metrics: EngineMetrics
    tracing: Tracing | None
    disk: DiskGuard | None = None
    """Free space on the data directory's disk: writes are refused while it is short."""
    valkey: EmbeddedValkey | None = None
    """The embedded, supervised Valkey (None with ``redis_url``)."""
    outage: OutageWatch | None = None
    """Pauses the write queue's consumers while a backend they write to is down."""


@dataclass
class Stack:
    """A built stack: its parts, the capability services over them, and what closes
    them (in order: the pipeline first, the embedded Valkey and tracing last)."""

    parts: EngineParts
    capabilities: Capabilities
    closers: list[Closer]

    def close(self) -> None:
        """Close every part, each once; a failure is logged and the rest still closed."""
        closers, self.closers = self.closers, []
        for close in closers:
            try:
                close()
            except Exception:  # keep closing the rest; report, never hide
                log.exception("error while closing a backend")


def build_stack(
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
    disk: DiskPolicy | None = None,
    index: VectorIndex | None = None,
    multilingual: Embedder | None = None,
) -> Stack:
    """Start (or connect to) every backend named by ``settings`` and build the stack
    over them (see :meth:`memstrata.engine.ContextEngine.open` for the arguments;
    ``disk``: the free-space thresholds and probe, :mod:`memstrata.disk`; ``index``:
    an L3 index opened already, in place of the one ``settings`` names: a test wraps
    :func:`open_index`'s in a fault injector, ``memstrata.testing.faults``;
    ``multilingual``: the second dense model in place of the default one, used when
    ``settings.longterm.multilingual`` is on).
    Refuses to start (DiskSpaceError) when the data directory's disk cannot hold the
    embedded store, and (ConfigError) when the unrelated ``memstrata`` distribution is
    installed beside this one (:mod:`memstrata.distribution`); whatever was started is
    stopped again when building fails."""
    check_distribution()
    settings = settings or Settings()
    if pipeline is not None:
        settings = replace(settings, pipeline=pipeline)
    if memory is not None:
        settings = replace(settings, memory=memory)
    clock = clock or SystemClock()
    data_dir = Path(settings.data_dir)
    private_dir(data_dir)  # 0700: what users said is nobody else's (memstrata.filemodes)
    disk_policy = disk or DiskPolicy()
    # Before anything starts: an index opened on a disk too small for it dies of
    # SIGBUS, and would leave its Valkey behind.
    check_start(data_dir, embedded_collections(settings), disk_policy)
    guard = disk_guard(settings, disk_policy)
    audit_file = data_dir / AUDIT_FILE
    memory_audit = InMemoryAuditLog()
    audit: AuditSink = TeeAuditLog((memory_audit, JsonlAuditLog(audit_file)))
    sanitizer = Sanitizer(policy, audit, clock)
    if settings.redact_logs:
        install_global_log_redaction(sanitizer)
    closers: list[Closer] = []
    try:
        backend, redis_url, valkey = open_working_backend(settings, closers)
        working = open_working(settings, backend, clock, sanitizer=sanitizer)
        closers.insert(0, working.close)
        embedder = embedder or default_embedder()
        longterm = open_longterm(
            settings,
            index or open_index(settings, disk_policy),
            embedder,
            clock=clock,
            sanitizer=sanitizer,
            multilingual=multilingual,
        )
        closers.insert(0, longterm.close)
        read_guard = open_guard(settings, longterm.index)
        closers.append(read_guard.close)
        reader = open_reader(
            settings, longterm, guard=read_guard, recall=open_recall(settings, backend)
        )
        # First to close: its queued keeps are written while L2 is still up.
        closers.insert(0, reader.close)
        memory_store = open_memory(settings, longterm, backend.client, clock, reader)
        handler = build_handler(memory_store, extractor=extractor or build_extractor(settings))
        outage = OutageWatch(outage_probes(longterm, backend, handler))
        write_pipeline = open_write_pipeline(
            settings.pipeline, redis_url, clock, handler, closers, disk=guard, outage=outage
        )
    except BaseException:
        for close in closers:
            with contextlib.suppress(Exception):
                close()
        raise
    # Spans (memstrata.tracing): the given processor's, else the settings'; shut down last.
    tracing = (
        Tracing.of(span_processor)
        if span_processor is not None
        else Tracing.from_settings(settings.tracing)
    )
    if tracing is not None:
        closers.append(tracing.shutdown)
    handler.trace_with(tracing)
    metrics = EngineMetrics()
    metrics.watch_layers(working_info=working.info, write_stats=write_pipeline.stats)
    metrics.watch_l3(
        point_counts=longterm.point_counts,
        catchup=lambda: longterm.catchup_state().as_dict(),
    )
    longterm.observe_searches(metrics.observe_l3_search)
    metrics.watch_breakers(
        read_guard.states,
        lambda: {
            "l3": read_guard.l3_breaker.opened,
            "embedder": read_guard.embedder_breaker.opened,
        },
    )
    sessions = SessionRegistry(clock, lambda text, where: sanitizer.text(text, location=where))
    # Health samples: in the working-memory Valkey.
    health = HealthMonitor(
        HealthRecorder(backend.client),
        clock,
        lambda text: sanitizer.text(text, location="health:report"),
    )
    working.watch_reads(health.key_read)
    decision_metrics = DecisionMetrics(metrics.registry)
    parts = EngineParts(
        settings=settings,
        clock=clock,
        embedder=embedder,
        sanitizer=sanitizer,
        audit=memory_audit,
        audit_file=audit_file,
        sessions=sessions,
        working_memory=working,
        working_backend=backend,
        redis_url=redis_url,
        longterm=longterm,
        retriever=reader,
        router=ContextRouter(
            intent_registry(intents),
            working,
            reader,
            clock,
            lambda text: embed_one(embedder, text),
            # The message is embedded by the store's multilingual model and cache when
            # it has one: a Chinese question's retrieval then reads that vector again
            # instead of a second model copy embedding it once more.
            build_understanding(
                settings,
                longterm.multilingual.embed if longterm.multilingual is not None else None,
            ),
        ),
        hot_knowledge=HotKnowledge(longterm, sanitizer, clock, reader=reader),
        knowledge_ingestor=KnowledgeIngestor(longterm, sanitizer, clock, manifest_dir=data_dir),
        memory=memory_store,
        pipeline=write_pipeline,
        namespaces=NamespaceStore(
            backend.client,
            clock,
            audit=lambda record: append_audit(audit_file, record),
            sanitize=lambda text, where: sanitizer.text(text, location=where, field="purpose"),
        ),
        items=ItemStore(longterm, reader, sanitizer, clock),
        decisions=_decision_layer(settings, backend, clock, sanitizer, decision_metrics),
        decision_metrics=decision_metrics,
        health=health,
        metrics=metrics,
        tracing=tracing,
        disk=guard,
        valkey=valkey,
        outage=outage,
    )
    stack = Stack(parts, build_capabilities(parts), closers)
    # First: a running forget job ends (it needs the rest), queued ones never start.
    stack.closers.insert(0, stack.capabilities.upkeep.close)
    # Forgets a previous engine over this Valkey accepted and did not finish.
    stack.capabilities.upkeep.resume_forgets()
    return stack


def build_capabilities(parts: EngineParts) -> Capabilities:
    """The capability services over ``parts`` (what :class:`ContextEngine` delegates to)."""
    sessions = Sessions(parts.sessions, parts.working_memory)
    knowledge = Knowledge(parts.longterm, parts.knowledge_ingestor, parts.hot_knowledge)
    sharing = Sharing(parts.namespaces, parts.items, parts.sanitizer)
    writer = Writer(
        intake=Intake(parts.sessions, parts.sanitizer, parts.clock, parts.settings.pipeline),
        pipeline=parts.pipeline,
        longterm=parts.longterm,
        decisions=parts.decisions,
        decision_metrics=parts.decision_metrics,
        sanitizer=parts.sanitizer,
        tracing=parts.tracing,
    )
    upkeep = Upkeep(
        UpkeepParts(
            clock=parts.clock,
            audit_file=parts.audit_file,
            audit=parts.audit,
            sanitizer=parts.sanitizer,
            embedder=parts.embedder,
            sessions=parts.sessions,
            working=parts.working_memory,
            longterm=parts.longterm,
            retriever=parts.retriever,
            memory=parts.memory,
            queue_name=parts.pipeline.queue.name,
            health=parts.health,
            metrics=parts.metrics,
        ),
        flush=writer.flush,
        end_sessions_of=sessions.end_sessions_of,
        items_under=sharing.items_under,
        hot_tenants=knowledge.hot_tenants,
        merge_hot=knowledge.merge_hot,
    )
    reader = Reader(
        settings=parts.settings,
        clock=parts.clock,
        embedder=parts.embedder,
        longterm=parts.longterm,
        retriever=parts.retriever,
        router=parts.router,
        session_of=sessions.state_of,
        shared=sharing.shared,
        metrics=parts.metrics,
        health=parts.health,
        health_tick=upkeep.health_tick,
        tracing=parts.tracing,
    )
    decisions = Decisions(
        layer=parts.decisions,
        intents=parts.router.intents,
        session_of=sessions.state_of,
        metrics=parts.metrics.snapshot,
        redis_client=parts.memory.redis,
        longterm=parts.longterm,
        clock=parts.clock,
        route=reader.route,
        tracing=parts.tracing,
    )
    listing = Listing(parts.longterm, parts.memory, parts.working_memory)
    exchange = Exchange(
        longterm=parts.longterm,
        memory=parts.memory,
        working=parts.working_memory,
        clock=parts.clock,
        settings=parts.settings.longterm,
        users=lambda tenant: sorted(
            {u.user for u in listing.list_users(tenant=tenant)}
            | set(parts.working_memory.preference_users(tenant=tenant))
        ),
        start_session=sessions.start_session,
        end_session=sessions.end_session,
        observe=writer.observe,
    )
    return Capabilities(
        sessions, writer, reader, knowledge, decisions, sharing, upkeep, listing, exchange
    )
