"""Decisions: answer, call a tool or ask, with tools, step policies, trace cards, reply
checks and the feedback report (docs/architecture.md, "Decisions and feedback")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from memstrata.clock import Clock
from memstrata.decision import (
    Decision,
    DecisionLayer,
    DecisionRates,
    ReplyCheck,
    StepPolicy,
    ToolFunction,
    ToolOutcome,
    ToolSpec,
    TraceCard,
    decision_rates,
)
from memstrata.decision.tools import ToolRegistry
from memstrata.errors import ValidationError
from memstrata.feedback.events import feedback_records
from memstrata.feedback.report import FeedbackReport, build_feedback_report, most_ignored
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES
from memstrata.permissions import Level
from memstrata.router import ContextBundle, IntentRegistry
from memstrata.session import SessionState
from memstrata.tracing import Tracing, traced
from memstrata.validation import check_id

SessionOf = Callable[[SessionState | str], SessionState]
RouteOf = Callable[[SessionState, str | None, str | None], ContextBundle]
"""``(session, step_intent, message)`` -> the step's bundle (the reader's route)."""
MetricsSnapshot = Callable[[], dict[str, list[dict[str, Any]]]]


class Decisions:
    """The decision layer's operations for an engine's sessions and intents."""

    def __init__(
        self,
        *,
        layer: DecisionLayer,
        intents: IntentRegistry,
        session_of: SessionOf,
        metrics: MetricsSnapshot,
        redis_client: Any,
        longterm: LongTermStore,
        clock: Clock,
        route: RouteOf | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        # Spans of each traced call (memstrata.tracing reads ``_tracing``).
        self._tracing = tracing
        self._route = route
        self._layer = layer
        self._intents = intents
        self._session_of = session_of
        self._metrics = metrics
        self._redis = redis_client
        self._longterm = longterm
        self._clock = clock

    def _tools(self, tenant: str | None) -> ToolRegistry:
        layer = self._layer
        return layer.tools if tenant is None else layer.scope(check_id("tenant", tenant)).tools

    def register_tool(
        self,
        spec: ToolSpec,
        function: ToolFunction | None = None,
        *,
        tenant: str | None = None,
        replace: bool = False,
    ) -> None:
        """Register a tool for every tenant, or for ``tenant`` only."""
        self._tools(tenant).register(spec, function, replace=replace)

    def tools(self, *, tenant: str | None = None) -> tuple[ToolSpec, ...]:
        """The tools a tenant's decisions may call (the engine's alone without one)."""
        registry = self._tools(tenant)
        return tuple(registry.spec(name) for name in registry.names())

    def register_policy(
        self, policy: StepPolicy, *, tenant: str | None = None, replace: bool = False
    ) -> None:
        """How one intent's steps decide: for every tenant, or for ``tenant`` only."""
        if not isinstance(policy, StepPolicy):
            raise ValidationError("policy", "must be a StepPolicy")
        self._intents.get(policy.intent)  # an unknown intent is refused here
        layer = self._layer
        scope = (
            layer.policies if tenant is None else layer.scope(check_id("tenant", tenant)).policies
        )
        scope.register(policy, replace=replace)

    @traced("engine.decide")
    def decide(
        self,
        session: SessionState | str,
        bundle: ContextBundle | None = None,
        *,
        question: str = "",
        given: Mapping[str, Any] | None = None,
        clearance: Level = "high",
    ) -> Decision:
        """Answer, call a tool, or ask, from a judgment of ``bundle`` (without one,
        the step routed from ``question``, its intent recognized); writes the step's
        trace card. Below ``high`` clearance, L1 facts are not used."""
        state = self._session_of(session)
        if bundle is None:
            if not isinstance(question, str) or not question.strip():
                raise ValidationError(
                    "question", "is required without a bundle: the intent is recognized from it"
                )
            if self._route is None:
                raise ValidationError("bundle", "is required: this engine routes no messages")
            bundle = self._route(state, None, question)
        if not isinstance(bundle, ContextBundle):
            raise ValidationError("bundle", "must be the ContextBundle route() returned")
        intent = self._intents.get(bundle.step_intent)
        return self._layer.decide(
            state, bundle, intent, question=question, given=given, clearance=clearance
        )

    @traced("engine.call_tool", fields=("tenant", "tool"))
    def call_tool(
        self,
        card_id: str,
        *,
        tenant: str = "default",
        tool: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """Run the decision's tool call through the gate, confirmations and fallbacks."""
        return self._layer.call_tool(check_id("tenant", tenant), card_id, tool=tool, params=params)

    def confirm_tool(
        self,
        pending_id: str,
        *,
        tenant: str = "default",
        confirmed: bool = True,
        confirmed_by: str | None = None,
    ) -> ToolOutcome:
        """Confirm (run) or reject a high-impact call held for confirmation; the trace
        card records ``confirmed_by`` (an id; by default the session's user) and when."""
        if not isinstance(confirmed, bool):
            raise ValidationError("confirmed", "must be true or false")
        return self._layer.confirm_tool(
            check_id("tenant", tenant), pending_id, confirmed=confirmed, confirmed_by=confirmed_by
        )

    def report_tool_result(
        self, card_id: str, *, tenant: str = "default", tool: str, ok: bool, error: str = ""
    ) -> ToolOutcome:
        """A remote tool's attempt; the outcome says what the chain does next."""
        if not isinstance(ok, bool):
            raise ValidationError("ok", "must be true or false")
        return self._layer.report_tool_result(
            check_id("tenant", tenant), card_id, tool=tool, ok=ok, error=error
        )

    @traced("engine.check_reply", fields=("tenant",))
    def check_reply(self, card_id: str, reply: str, *, tenant: str = "default") -> ReplyCheck:
        """Check the reply against the memories its decision used; records CER."""
        return self._layer.check_reply(check_id("tenant", tenant), card_id, reply)

    def trace_card(self, card_id: str, *, tenant: str = "default") -> TraceCard:
        """One trace card of ``tenant``."""
        return self._layer.cards.get(check_id("tenant", tenant), card_id)

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
        return self._layer.cards.query(
            check_id("tenant", tenant),
            session_id=session_id,
            since=None if since is None else since.timestamp(),
            until=None if until is None else until.timestamp(),
            limit=limit,
        )

    def decision_rates(self) -> DecisionRates:
        """Tool success, fallback, correction and ask rates and CER, since start."""
        return decision_rates(self._metrics())

    def feedback_report(
        self, *, tenant: str = "default", since: datetime | timedelta | None = None
    ) -> FeedbackReport:
        """What keeps missing the right memory, over the processed feedback events
        since ``since`` (a time, or a window ending now)."""
        check_id("tenant", tenant)
        start = self._start_of(since)
        records = feedback_records(self._redis, tenant)
        chosen = [r for r in records if start is None or r.at >= start]
        ids = most_ignored(chosen, 20)
        texts = {
            r.id: str(r.payload.get("text", ""))
            for r in self._longterm.get(MEMORIES, ids, tenant=tenant)
        }
        return build_feedback_report(tenant, chosen, since=start, texts=texts)

    def _start_of(self, since: datetime | timedelta | None) -> float | None:
        if isinstance(since, timedelta):
            if since <= timedelta(0):
                raise ValidationError("since", "must be a positive window")
            return (self._clock.now() - since).timestamp()
        if isinstance(since, datetime) and since.tzinfo is not None:
            return since.timestamp()
        if since is None:
            return None
        raise ValidationError("since", "must be a timezone-aware datetime or a timedelta")
