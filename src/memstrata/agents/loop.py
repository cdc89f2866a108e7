"""One agent step on the engine (docs/architecture.md, "Decisions and feedback"): route ->
decide -> tool / ask / answer
-> reply -> check_reply (regenerate once on a conflict) -> feedback where told.

The loop is the same for every reference agent; an agent brings its intents,
policies, tools, a :class:`~memstrata.agents.writer.ReplyWriter` and, per step, how a
tool's result is kept in working memory. A tool's raw result never leaves the step:
what is kept passes the gateway on its way into L2, and the reply is written from the
L2 item the next route reads back, never from the raw result.

What a step checks: the replies that answer from context (CER and consistency are
about them). An ask is counted by the ask rate, a tool call by the tool-success and
fallback rates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memstrata.agents.writer import Purpose, ReplyRequest, ReplyWriter
from memstrata.decision import (
    CANNOT_COMPLETE,
    Decision,
    ReplyCheck,
    StepPolicy,
    ToolOutcome,
    TraceCard,
)
from memstrata.decision.judgment import evidence_items
from memstrata.engine import ContextEngine
from memstrata.errors import ModelError, ValidationError
from memstrata.router.bundle import ContextBundle
from memstrata.working.memory import SessionWorkingMemory

Store = Callable[[SessionWorkingMemory, Decision, ToolOutcome], None]
"""Keeps a done tool call's result in the session's working memory."""
MAX_TOOL_ROUNDS = 2


def store_api_response(wm: SessionWorkingMemory, decision: Decision, outcome: ToolOutcome) -> None:
    """The default :data:`Store`: the result cached under the decision's tool and
    parameters (what an intent's ``L2Need("api", <tool>, ...)`` reads)."""
    if decision.tool is None:
        return
    wm.put_api_response(decision.tool, dict(decision.params), outcome.result)


@dataclass(frozen=True, slots=True)
class Move:
    """One decision of a step and the tool call it led to, if any."""

    decision: Decision
    outcome: ToolOutcome | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "card_id": self.decision.card_id,
            "route": self.decision.route,
            "intent": self.decision.intent,
            "risk": self.decision.risk,
            "confidence": round(self.decision.confidence, 4),
            "threshold": self.decision.threshold,
            "tool": self.decision.tool,
            "ask_for": list(self.decision.ask_for),
            "reasons": list(self.decision.reasons),
        }
        if self.outcome is not None:
            data["tool_call"] = outcome_dict(self.outcome)
        return data


def outcome_dict(outcome: ToolOutcome) -> dict[str, Any]:
    """A tool outcome without its raw result (which never leaves the step)."""
    return {
        "outcome": outcome.outcome,
        "tool": outcome.tool,
        "pending_id": outcome.pending_id,
        "attempts": [{"tool": a.tool, "ok": a.ok, "error": a.error} for a in outcome.attempts],
        "fallbacks": list(outcome.fallbacks),
        "message": outcome.message,
    }


@dataclass(frozen=True, slots=True)
class StepRecord:
    """What one step did, as the demo prints it."""

    session_id: str
    title: str
    intent: str
    said: str
    """The user's message."""
    moves: tuple[Move, ...] = ()
    reply: str = ""
    written_by: str = ""
    """The writer of an answer (``scripted``, ``model:<name>``); empty for an ask."""
    check: ReplyCheck | None = None
    regenerated: bool = False
    cards: tuple[TraceCard, ...] = ()
    """The moves' trace cards, read back once the step was done."""
    feedback: tuple[str, ...] = ()
    pending_id: str | None = None
    """A high-impact call waiting for the user's confirmation."""
    bundle: ContextBundle | None = field(default=None, compare=False)
    """The bundle the last decision was made from."""

    @property
    def route(self) -> str:
        """The last decision's route (``feedback`` for a step that only sent one)."""
        return self.moves[-1].decision.route if self.moves else "feedback"

    @property
    def card_id(self) -> str:
        return self.moves[-1].decision.card_id if self.moves else ""

    @property
    def decision(self) -> Decision | None:
        return self.moves[-1].decision if self.moves else None

    @property
    def effective(self) -> bool | None:
        return None if self.check is None else self.check.effective

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "title": self.title,
            "intent": self.intent,
            "said": self.said,
            "route": self.route,
            "moves": [move.as_dict() for move in self.moves],
            "reply": self.reply,
            "written_by": self.written_by,
            "check": None if self.check is None else self.check.as_dict(),
            "regenerated": self.regenerated,
            "cards": [card_view(card) for card in self.cards],
            "feedback": list(self.feedback),
            "pending_id": self.pending_id,
        }


def card_view(card: TraceCard) -> dict[str, Any]:
    """What the demo shows of a trace card."""
    return {
        "id": card.id,
        "route": card.route,
        "confidence": card.confidence,
        "threshold": card.threshold,
        "judged_by": card.judged_by,
        "tool": card.tool,
        "params": dict(card.params),
        "tool_outcome": card.tool_outcome,
        "gate": [
            {
                "tool": g.get("tool"),
                "checks": {c["name"]: c["passed"] for c in g.get("checks", ())},
            }
            for g in card.gate
        ],
        "attempts": [dict(a) for a in card.attempts],
        "fallbacks": list(card.fallbacks),
        "timing_ms": dict(card.timing_ms),
        "consistency": card.consistency,
        "conflicts": list(card.conflicts),
        "effective": card.effective,
        "memory_ids": list(card.memory_ids),
        "episode_ids": list(card.episode_ids),
        "knowledge_ids": list(card.knowledge_ids),
        "l2_keys": list(card.l2_keys),
        "flags": list(card.flags),
    }


class AgentLoop:
    """Runs steps of one agent on one engine, for one tenant.

    ``writer`` writes the answers; ``fallback`` (the scripted writer) takes over when
    a model writer fails. ``instructions`` is the agent's system prompt for a model.
    """

    def __init__(
        self,
        engine: ContextEngine,
        *,
        tenant: str,
        policies: Mapping[str, StepPolicy],
        writer: ReplyWriter,
        fallback: ReplyWriter | None = None,
        instructions: str = "",
    ) -> None:
        self._engine = engine
        self._tenant = tenant
        self._policies = dict(policies)
        self._writer = writer
        self._fallback = fallback
        self._instructions = instructions

    @property
    def engine(self) -> ContextEngine:
        return self._engine

    @property
    def tenant(self) -> str:
        return self._tenant

    def step(
        self,
        session_id: str,
        intent: str,
        said: str,
        *,
        title: str,
        query: str | None = None,
        given: Mapping[str, Any] | None = None,
        store: Store = store_api_response,
    ) -> StepRecord:
        """One step: decide, call the tool (and decide again on its result), ask, or
        answer and check the answer."""
        record = StepRecord(session_id, title, intent, said)
        for _ in range(MAX_TOOL_ROUNDS + 1):
            bundle = self._engine.route(session_id, intent, query)
            decision = self._engine.decide(session_id, bundle, question=said, given=given)
            if decision.route == "answer":
                return self._answer(record, decision, bundle)
            if decision.route == "ask":
                reply = " ".join(decision.questions)
                return self._done(replace(record, bundle=bundle), Move(decision), reply)
            outcome = self._engine.call_tool(decision.card_id, tenant=self._tenant)
            move = Move(decision, outcome)
            if outcome.outcome == "pending_confirmation":
                request = self._request(intent, said, bundle, purpose="confirm")
                reply, _ = self._write(request)
                held = replace(record, pending_id=outcome.pending_id, bundle=bundle)
                return self._done(held, move, reply)
            if outcome.outcome != "done":
                return self._done(record, move, _failure_reply(outcome))
            store(self._engine.working(session_id), decision, outcome)
            record = replace(record, moves=(*record.moves, move))
        return self._done(record, None, CANNOT_COMPLETE)

    def confirm(
        self,
        held: StepRecord,
        said: str,
        *,
        confirmed: bool,
        title: str,
        query: str | None = None,
        store: Store = store_api_response,
    ) -> StepRecord:
        """The user's answer to a held high-impact call: confirmed, the call runs and
        the step goes on from its result; rejected, nothing runs."""
        if held.pending_id is None or held.decision is None:
            raise ValidationError("held", "the step holds no call waiting for confirmation")
        outcome = self._engine.confirm_tool(
            held.pending_id, tenant=self._tenant, confirmed=confirmed
        )
        record = StepRecord(held.session_id, title, held.intent, said)
        move = Move(held.decision, outcome)
        if outcome.outcome != "done":
            reply = "Understood: nothing was changed." if not confirmed else _failure_reply(outcome)
            return self._done(record, move, reply)
        store(self._engine.working(held.session_id), held.decision, outcome)
        record = replace(record, moves=(move,))
        bundle = self._engine.route(held.session_id, held.intent, query)
        decision = self._engine.decide(held.session_id, bundle, question=said)
        if decision.route == "answer":
            return self._answer(record, decision, bundle)
        return self._done(record, Move(decision), " ".join(decision.questions) or CANNOT_COMPLETE)

    def feedback(self, record: StepRecord, kind: str, **details: Any) -> StepRecord:
        """Send feedback on the step's last decision (``engine.feedback``)."""
        self._engine.feedback(record.card_id, kind, tenant=self._tenant, **details)
        return replace(record, feedback=(*record.feedback, kind))

    # -- internals -------------------------------------------------------------------

    def _answer(self, record: StepRecord, decision: Decision, bundle: ContextBundle) -> StepRecord:
        request = self._request(record.intent, record.said, bundle)
        reply, written_by = self._write(request)
        check = self._engine.check_reply(decision.card_id, reply, tenant=self._tenant)
        regenerated = False
        if check.regenerate:
            # Once: a second conflict stays flagged on the card for an operator.
            retry = replace(request, previous=reply, conflicts=check.conflicts)
            reply, written_by = self._write(retry)
            check = self._engine.check_reply(decision.card_id, reply, tenant=self._tenant)
            regenerated = True
        answered = replace(
            record,
            written_by=written_by,
            check=check,
            regenerated=regenerated,
            bundle=bundle,
        )
        return self._done(answered, Move(decision), reply)

    def _request(
        self, intent: str, said: str, bundle: ContextBundle, *, purpose: Purpose = "answer"
    ) -> ReplyRequest:
        policy = self._policies.get(intent)
        evidence = evidence_items(bundle, policy) if policy is not None else bundle.items[1:]
        return ReplyRequest(
            intent,
            said,
            bundle,
            tuple(evidence),
            purpose=purpose,
            instructions=self._instructions,
        )

    def _write(self, request: ReplyRequest) -> tuple[str, str]:
        try:
            return self._writer.write(request), self._writer.name
        except ModelError as exc:
            if self._fallback is None:
                raise
            reason = type(exc).__name__
            return self._fallback.write(request), f"{self._fallback.name} ({reason})"

    def _done(self, record: StepRecord, move: Move | None, reply: str) -> StepRecord:
        moves = record.moves if move is None else (*record.moves, move)
        cards = tuple(
            self._engine.trace_card(m.decision.card_id, tenant=self._tenant) for m in moves
        )
        return replace(record, moves=moves, reply=reply, cards=_unique(cards))


def _unique(cards: Sequence[TraceCard]) -> tuple[TraceCard, ...]:
    """The cards once each (a confirmed call's card is its decision's card)."""
    seen: dict[str, TraceCard] = {}
    for card in cards:
        seen[card.id] = card
    return tuple(seen.values())


def _failure_reply(outcome: ToolOutcome) -> str:
    if outcome.outcome == "blocked":
        return "I can't do that for this conversation's order or device."
    if outcome.outcome == "rejected":
        return "Understood: nothing was changed."
    return CANNOT_COMPLETE
