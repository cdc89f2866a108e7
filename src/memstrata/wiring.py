"""One wiring path: the stack every process builds from one :class:`Settings`.

``ContextEngine.open`` (the library, the CLI, the demo) and the worker processes
(``python -m memstrata.write.worker --handler-factory memstrata.wiring:worker_handler``)
build the L3 index, the long-term store, the memory store, the extractor and the
queue handler with these functions, so a worker honours the same settings as the
engine that enqueued its work.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from memstrata.chat import ChatEndpoint
from memstrata.clock import Clock, SystemClock
from memstrata.config import Settings, settings_from_env
from memstrata.decision.model_judge import ModelJudge
from memstrata.embed.protocol import Embedder
from memstrata.errors import ConfigError, ModelError, ModelUnavailableError
from memstrata.extract.protocol import Extractor
from memstrata.gateway import Sanitizer
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, PayloadSanitizer
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.memory.store import MemoryStore
from memstrata.working.redis_backend import RedisBackend
from memstrata.write.handle import TextSanitizer, WriteHandler

QDRANT_DIR = "qdrant"
"""The embedded index's directory under ``Settings.data_dir``."""


def open_index(settings: Settings) -> VectorIndex:
    """The Qdrant server named by ``settings.qdrant_url``, else the embedded engine
    under ``data_dir`` (one process at a time may hold it)."""
    if settings.qdrant_url:
        from qdrant_client import QdrantClient

        from memstrata.longterm.qdrant_server import QdrantServerIndex

        return QdrantServerIndex(
            QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
        )
    return EdgeIndex(
        Path(settings.data_dir) / QDRANT_DIR, search_threads=settings.longterm.search_threads
    )


def open_longterm(
    settings: Settings,
    index: VectorIndex,
    embedder: Embedder,
    *,
    clock: Clock,
    sanitizer: PayloadSanitizer,
) -> LongTermStore:
    """The L3 facade with the settings' parameters."""
    return LongTermStore(
        index, embedder, Bm25Encoder(), settings.longterm, clock=clock, sanitizer=sanitizer
    )


def open_memory(
    settings: Settings, longterm: LongTermStore, redis_client: object, clock: Clock
) -> MemoryStore:
    """The versioned memory store (slot records on ``redis_client``)."""
    return MemoryStore(longterm, redis_client, clock, settings=settings.memory)


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


def build_handler(
    store: MemoryStore,
    *,
    extractor: Extractor | None = None,
    sanitizer: TextSanitizer | None = None,
) -> WriteHandler:
    """The queue handler writing into ``store`` (its embedder is the store's)."""
    return WriteHandler(store, extractor=extractor, sanitizer=sanitizer)


def worker_handler(
    data_dir: str = "", redis_url: str = "", qdrant_url: str = "", settings: str = ""
) -> WriteHandler:
    """The handler of a worker process (a ``--handler-factory`` target)::

        python -m memstrata.write.worker --redis-url unix:///data/valkey/valkey.sock \\
            --queue memories --consumer w1 \\
            --handler-factory memstrata.wiring:worker_handler \\
            --handler-arg settings=/etc/memstrata.json

    Settings come from ``MEMSTRATA_*`` variables and the JSON file they or
    ``settings`` name (:func:`memstrata.config.load_settings`); the other arguments
    override single fields. Without ``qdrant_url`` the worker opens the embedded index
    under ``data_dir``, which no engine may hold meanwhile. ``redis_url`` defaults to
    the worker's own ``--redis-url`` only through the settings: give it here too.
    """
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
    from memstrata.embed.defaults import default_embedder

    clock = SystemClock()
    sanitizer = Sanitizer(clock=clock)
    longterm = open_longterm(
        config, open_index(config), default_embedder(), clock=clock, sanitizer=sanitizer
    )
    store = open_memory(config, longterm, RedisBackend.from_url(config.redis_url).client, clock)
    return build_handler(store, extractor=build_extractor(config), sanitizer=sanitizer)
