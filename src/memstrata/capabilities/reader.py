"""The reader: every read of memory an agent makes (docs/architecture.md, "The reader").

:class:`Reader` searches, retrieves, routes a step and builds its model call. Every
L3 read goes through one :class:`~memstrata.retrieval.Retriever` (the only L3
ranker); ``build_context`` reads the user's memories once and routes the step with
that retrieval.

When L3 is slow or down the reader answers anyway (docs/service.md, "When L3 is slow
or down"): ``retrieve``, ``route`` and ``build_context`` serve what L2 and L1 hold
(the user's cached reads, preferences, the step's L2 items) and say that L3 was
skipped and why; a plain ``search``, which has nothing to fall back on, raises
``BackendUnavailableError``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock
from memstrata.config import Settings
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
from memstrata.context.values import check_turns
from memstrata.embed.protocol import Embedder, embed_one
from memstrata.errors import UnknownIntentError, ValidationError
from memstrata.health import HealthMonitor
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Hit
from memstrata.metrics import EngineMetrics
from memstrata.permissions import Level, check_level, cleared, level_of_payload
from memstrata.retrieval import RetrievalQuery, RetrievalResult, Retriever
from memstrata.retrieval.fallback import CACHED_ROUTE
from memstrata.retrieval.guard import BELOW_THRESHOLD, OUTAGE_REASONS
from memstrata.retrieval.visibility import check_as_of, memory_types
from memstrata.router import ContextBundle, ContextRouter, IntentRegistry, IntentSpec
from memstrata.router.intents import active_only
from memstrata.router.recognize import Recognition
from memstrata.session import SessionState
from memstrata.sharing.namespaces import SharedItem, shared_context_items
from memstrata.tracing import Tracing, traced
from memstrata.validation import check_id, check_positive_int

MAX_RETRIEVAL_QUERY_CHARS = 4_000
SharedItems = Callable[[str, str], tuple[SharedItem, ...]]
"""``(tenant, agent)`` -> the live items of every namespace the agent may read."""
SessionOf = Callable[[SessionState | str], SessionState]


class Reader:
    """search, retrieve, route and build_context over L1, L2 and L3."""

    def __init__(
        self,
        *,
        settings: Settings,
        clock: Clock,
        embedder: Embedder,
        longterm: LongTermStore,
        retriever: Retriever,
        router: ContextRouter,
        session_of: SessionOf,
        shared: SharedItems,
        metrics: EngineMetrics,
        health: HealthMonitor,
        health_tick: Callable[[], None],
        tracing: Tracing | None = None,
    ) -> None:
        # Spans of each traced call (memstrata.tracing reads ``_tracing``).
        self._tracing = tracing
        self._settings = settings
        self._clock = clock
        self._embedder = embedder
        self._longterm = longterm
        self._retriever = retriever
        self._router = router
        self._session_of = session_of
        self._shared = shared
        self._metrics = metrics
        self._health = health
        self._health_tick = health_tick

    @property
    def intents(self) -> IntentRegistry:
        """The registered step intents."""
        return self._router.intents

    def register_intent(self, spec: IntentSpec, *, replace: bool = False) -> None:
        """Register an intent; its unrestricted ``memories`` needs read active units only."""
        self._router.intents.register(active_only(spec), replace=replace)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The dense vector of one query (cached)."""
        return embed_one(self._embedder, text)

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
        """One hybrid search of a user's memories (or the tenant's knowledge), the
        reader's single-route stage (see :meth:`ContextEngine.search`)."""
        check_id("user_id", user_id)
        check_positive_int("k", k, maximum=100)
        if collection != MEMORIES:
            return self._retriever.search(collection, query, tenant=tenant, k=k, explain=explain)
        types = memory_types(include_history=include_history, as_of=check_as_of(as_of))
        return self._retriever.search(
            collection,
            query,
            tenant=tenant,
            user=user_id,
            types=types,
            k=k,
            explain=explain,
            as_of=as_of,
        )

    @traced("engine.retrieve", fields=("tenant", "collection", "k", "include_history"))
    def retrieve(
        self,
        query: str,
        *,
        tenant: str = "default",
        user: str | None = None,
        user_id: str | None = None,
        k: int = 10,
        now: datetime | None = None,
        recent: Sequence[str] = (),
        collection: str = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
    ) -> RetrievalResult:
        """Multi-route retrieval of the tenant's memories or knowledge (see
        :meth:`ContextEngine.retrieve`; ``user_id`` is the interface's name of ``user``)."""
        user = user_id if user_id is not None else user
        types = memory_types(include_history=include_history, as_of=as_of)
        self._health_tick()
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
                types=types if collection == MEMORIES else None,
                as_of=as_of,
            )
        )
        self._metrics.observe_retrieval(
            collection,
            time.perf_counter() - started,
            result,
            self._settings.longterm.low_confidence_cosine,
        )
        # A low-confidence query is one L3 answered poorly, not one it could not answer.
        judged = result.l3_skip_reason is None and result.dense_skip_reason is None
        if result.l3_skip_reason == BELOW_THRESHOLD or (
            judged and result.items and result.items[0].low_confidence
        ):
            self._health.low_confidence_query(query)
        return result

    @traced("engine.route", fields=("step_intent", "clearance"))
    def route(
        self,
        session: SessionState | str,
        step_intent: str | None = None,
        query: str | None = None,
        *,
        agent: str | None = None,
        clearance: Level = "high",
        memories: RetrievalResult | None = None,
        recognized: Recognition | None = None,
    ) -> ContextBundle:
        """The context bundle for the session's current step (see
        :meth:`ContextEngine.route`). ``memories``: a retrieval of the user's memories
        for ``query`` made already, which the intent's ``memories`` needs take their
        items from (``build_context`` reads memories once); ``recognized``: the
        intent recognized from ``query`` already."""
        check_level("clearance", clearance)
        self._health_tick()
        state = self._session_of(session)
        started = time.perf_counter()
        with self._counting_failures(step_intent):
            bundle = self._router.route(
                state, step_intent, query, memories=memories, recognized=recognized
            )
        self._metrics.observe_route(bundle.step_intent, time.perf_counter() - started, bundle)
        if agent is not None:
            shared = shared_context_items(self._shared(state.tenant, agent), self._clock.now())
            bundle = replace(bundle, items=bundle.items + shared)
        return bundle.cleared_for(clearance)

    @contextmanager
    def _counting_failures(self, step_intent: str | None) -> Iterator[None]:
        """A failed route counted under its intent (``unknown`` for an unknown one)."""
        try:
            yield
        except Exception as exc:
            known = isinstance(step_intent, str) and not isinstance(exc, UnknownIntentError)
            self._metrics.route_failed(step_intent if known and step_intent else "unknown")
            raise

    def _resolved(self, step_intent: str | None, user_input: str) -> Recognition | None:
        """Refuses what route would, before anything is read; recognizes the intent
        from ``user_input`` when none is named."""
        with self._counting_failures(step_intent):
            return self._router.resolve(step_intent, user_input, field="user_input")[1]

    @traced("engine.build_context", fields=("step_intent", "model", "k"))
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
        """The step's model call within the token budget of ``model`` (see
        :meth:`ContextEngine.build_context`). The user's memories are retrieved once
        for ``user_input``; the intent's ``memories`` needs take their items from
        that retrieval. Without ``step_intent`` the intent is recognized from
        ``user_input`` (``result.recognized``)."""
        state = self._session_of(session)
        check_level("clearance", clearance)
        recognized = self._resolved(step_intent, user_input)  # refused before any read
        history = check_turns("history", history)
        recent = tuple(t.content for t in history if t.role == "user")[-3:]
        now = self._clock.now()
        # A pasted document as the input: retrieve with its end (the ask is usually last).
        retrieved = self.retrieve(
            user_input[-MAX_RETRIEVAL_QUERY_CHARS:],
            tenant=state.tenant,
            user=state.user_id,
            k=k,
            now=now,
            recent=recent,
        )
        bundle = self.route(
            state,
            step_intent,
            user_input,
            agent=agent,
            clearance=clearance,
            memories=retrieved,
            recognized=recognized,
        )
        memory = list(from_bundle(bundle))
        seen = {item.ref for item in memory}
        # Retrieval scores are unbounded; L1/L2 items (live data) have relevance 1.0 and
        # must be admitted first, so retrieved memories rank within (0, 0.99].
        hits = [h for h in retrieved.items if cleared(level_of_payload(h.payload), clearance)]
        top = max((hit.score for hit in hits), default=0.0) or 1.0
        cached = retrieved.l3_skip_reason in OUTAGE_REASONS
        for hit in hits:
            hit = replace(
                hit,
                facts=tuple(
                    f for f in hit.facts if cleared(level_of_payload(f.payload), clearance)
                ),
            )
            for item in retrieved_items(hit, now, relevance=0.99 * max(0.0, hit.score) / top):
                if cached:  # read from L2's cached reads, as the bundle's items say
                    item = replace(item, source=CACHED_ROUTE)
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
            request,
            budget or ContextBudget.for_model(model, window_tokens=window_tokens),
            counter_for_model(model),
        )
        self._metrics.observe_context(built)
        # What the bundle says of L3 reaches the caller of the built context too.
        return replace(
            built,
            recognized=recognized,
            l3_skipped=bundle.l3_skipped,
            l3_skip_reason=bundle.l3_skip_reason,
            dense_skip_reason=bundle.dense_skip_reason,
        )

    def warm(self) -> list[str]:
        """Load and warm the models reads use (see :meth:`ContextEngine.warm`)."""
        return self._longterm.warm()

    def count_memories(
        self,
        tenant: str = "default",
        *,
        user: str | None = None,
        types: Sequence[str] | None = None,
    ) -> int:
        """How many points the tenant's memories hold (one user's, some types)."""
        if isinstance(types, str):
            raise ValidationError("types", "must be a sequence of types, not one string")
        return self._longterm.count(MEMORIES, tenant=tenant, user=user, types=types)
