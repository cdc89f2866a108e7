"""ContextEngine: composes L1, L2, L3, the gateway and the router.

``ContextEngine.open(settings)`` builds the embedded defaults (a Valkey server on a
unix socket and qdrant-edge, both under ``settings.data_dir``) or connects to the
servers named in the settings. Everything is also injectable through the
constructor, which is what tests and services use.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock, SystemClock
from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.protocol import Embedder
from memstrata.errors import NotFoundError, ValidationError
from memstrata.gateway import AuditSink, FieldPolicy, Sanitizer
from memstrata.gateway.audit import InMemoryAuditLog, JsonlAuditLog, TeeAuditLog
from memstrata.gateway.logging import install_global_log_redaction
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.models import Hit
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.longterm.store import LongTermStore, NewItem
from memstrata.router import SEED_INTENTS, ContextBundle, ContextRouter, IntentRegistry, IntentSpec
from memstrata.session import SessionRegistry, SessionState
from memstrata.validation import check_id, check_positive_int, check_text
from memstrata.working.backend import KVBackend
from memstrata.working.embedded import EmbeddedValkey
from memstrata.working.memory import SessionWorkingMemory, WorkingMemory
from memstrata.working.redis_backend import RedisBackend

log = logging.getLogger("memstrata")

MEMORY_TYPES: frozenset[str] = frozenset({"fact", "event", "preference", "profile"})


class ContextEngine:
    """The one object most users touch."""

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
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._sanitizer = sanitizer
        self._working = working
        self._longterm = longterm
        self._embedder = embedder
        self._audit = audit
        self._on_close = list(on_close)
        self._closed = False
        self._sessions = SessionRegistry(
            clock, lambda text, where: sanitizer.text(text, location=where)
        )
        self._router = ContextRouter(
            intents if intents is not None else IntentRegistry(SEED_INTENTS),
            working,
            longterm,
            settings.longterm,
            clock,
            self.embed_query,
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
    ) -> ContextEngine:
        """Start (or connect to) every backend named by ``settings``."""
        settings = settings or Settings()
        clock = clock or SystemClock()
        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        memory_audit = InMemoryAuditLog()
        audit: AuditSink = TeeAuditLog((memory_audit, JsonlAuditLog(data_dir / "audit.jsonl")))
        sanitizer = Sanitizer(policy, audit, clock)
        if settings.redact_logs:
            install_global_log_redaction(sanitizer)
        closers: list[Callable[[], None]] = []
        try:
            backend = _open_working_backend(settings, data_dir, closers)
            working = WorkingMemory(backend, settings.working, clock, sanitizer=sanitizer)
            closers.insert(0, working.close)
            index = _open_index(settings, data_dir)
            embedder = embedder or CachedEmbedder(MiniLMEmbedder())
            longterm = LongTermStore(
                index, embedder, Bm25Encoder(), settings.longterm, clock=clock, sanitizer=sanitizer
            )
            closers.insert(0, longterm.close)
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
        )

    # -- parts ------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def sanitizer(self) -> Sanitizer:
        return self._sanitizer

    @property
    def sessions(self) -> SessionRegistry:
        return self._sessions

    @property
    def longterm(self) -> LongTermStore:
        return self._longterm

    @property
    def working_memory(self) -> WorkingMemory:
        return self._working

    @property
    def router(self) -> ContextRouter:
        return self._router

    @property
    def audit(self) -> InMemoryAuditLog | None:
        return self._audit

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

    # -- L2 ---------------------------------------------------------------------

    def working(self, session_id: str) -> SessionWorkingMemory:
        """The session's working memory (every write passes the gateway)."""
        return self._working.session(session_id)

    # -- L3 ---------------------------------------------------------------------

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The dense vector of one query (cached)."""
        vectors = self._embedder.embed([text])
        return np.asarray(vectors[0], dtype=np.float32)

    def remember(
        self,
        user_id: str,
        text: str,
        *,
        tenant: str = "default",
        type: str = "fact",
        source: str = "api",
    ) -> str:
        """Store one memory for ``user_id`` directly in L3; returns its id."""
        check_id("user_id", user_id)
        check_text("text", text)
        if type not in MEMORY_TYPES:
            raise ValidationError("type", f"must be one of {sorted(MEMORY_TYPES)}")
        (point_id,) = self._longterm.add(
            "memories", [NewItem(text=text, tenant=tenant, user=user_id, type=type, source=source)]
        )
        return point_id

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

    def search(
        self,
        user_id: str,
        query: str,
        *,
        tenant: str = "default",
        k: int = 5,
        collection: str = "memories",
    ) -> list[Hit]:
        """Hybrid search of one user's memories (or the tenant's knowledge)."""
        check_id("user_id", user_id)
        check_positive_int("k", k, maximum=100)
        user = user_id if collection == "memories" else None
        return self._longterm.search(collection, query, tenant=tenant, user=user, k=k)

    # -- routing ----------------------------------------------------------------

    def register_intent(self, spec: IntentSpec, *, replace: bool = False) -> None:
        self._router.intents.register(spec, replace=replace)

    def route(
        self, session: SessionState | str, step_intent: str, query: str | None = None
    ) -> ContextBundle:
        """The context bundle for the session's current step."""
        state = self._sessions.get(session) if isinstance(session, str) else session
        return self._router.route(state, step_intent, query)

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


def _open_working_backend(
    settings: Settings, data_dir: Path, closers: list[Callable[[], None]]
) -> KVBackend:
    if settings.redis_url:
        return RedisBackend.from_url(settings.redis_url)
    server = EmbeddedValkey(data_dir / "valkey").start()
    closers.append(server.stop)
    return RedisBackend.from_url(server.url)


def _open_index(settings: Settings, data_dir: Path) -> VectorIndex:
    if settings.qdrant_url:
        from qdrant_client import QdrantClient

        from memstrata.longterm.qdrant_server import QdrantServerIndex

        return QdrantServerIndex(
            QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
        )
    return EdgeIndex(data_dir / "qdrant")
