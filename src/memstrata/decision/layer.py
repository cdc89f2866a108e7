"""The decision layer as the engine runs it: judgment, decision, gate, tools, reply
check, and one trace card per decision (docs/architecture.md, "Decisions and feedback").

The engine's ``decide``/``call_tool``/``check_reply`` methods delegate here. What a
card's decision was made from (its bundle and facts) is held in process, bounded,
so the tool call and the reply check that follow use exactly those facts; a card
outlives it in Valkey.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memstrata.clock import Clock
from memstrata.decision.cards import CardStore, TraceCard
from memstrata.decision.consistency import ReplyCheck, check_reply, used_in_reply
from memstrata.decision.decide import Decision, decide, questions_for
from memstrata.decision.judgment import (
    Judgment,
    evidence_items,
    facts_held,
    rule_judgment,
)
from memstrata.decision.metrics import DecisionMetrics
from memstrata.decision.model_judge import ModelJudge
from memstrata.decision.policy import PolicyRegistry, RiskThresholds, StepPolicy, default_policy
from memstrata.decision.tools import (
    Attempt,
    GateVerdict,
    ToolExecutor,
    ToolOutcome,
    ToolRegistry,
    gate,
)
from memstrata.errors import ModelError, NotFoundError, ValidationError
from memstrata.feedback.events import (
    FeedbackEvent,
    UsedBy,
    check_feedback,
    check_ids,
    new_event_id,
    outcome_of,
)
from memstrata.permissions import L1_LEVEL, Level, cleared
from memstrata.router.bundle import ContextBundle
from memstrata.router.intents import IntentSpec
from memstrata.session.state import SessionState
from memstrata.validation import MAX_REPLY_CHARS, check_id, check_text

TextSanitizer = Callable[[str, str], str]
"""(text, location) -> the text with credentials and PII replaced."""
ValueSanitizer = Callable[[Any, str], Any]
MAX_HELD_STEPS = 10_000


@dataclass(frozen=True, slots=True)
class HeldStep:
    """What one decision was made from, for the calls that follow it."""

    tenant: str
    session_id: str
    bundle: ContextBundle
    policy: StepPolicy
    facts: Mapping[str, Any]
    decision: Decision


@dataclass(frozen=True, slots=True)
class CallInProgress:
    """A card's tool call whose chain waits on a remote tool: the tool called and its
    parameters as called (never the card's sanitized copy), the attempts so far."""

    tool: str
    params: Mapping[str, Any]
    awaiting: str | None = None
    attempts: tuple[Attempt, ...] = ()


@dataclass(frozen=True, slots=True)
class Scope:
    """One tenant's tools and policies over the engine's, and its pending calls."""

    tools: ToolRegistry
    policies: PolicyRegistry
    executor: ToolExecutor


class DecisionLayer:
    """Decisions, tools and trace cards for one engine.

    ``tools`` and ``policies`` are the engine's, seen by every tenant; a tenant's own
    (:meth:`scope`) are seen by that tenant only and win over the engine's.
    """

    def __init__(
        self,
        *,
        cards: CardStore,
        clock: Clock,
        sanitize_text: TextSanitizer,
        sanitize_value: ValueSanitizer,
        metrics: DecisionMetrics,
        thresholds: RiskThresholds | None = None,
        judge: ModelJudge | None = None,
        loaded_cosine: float = 0.36,
    ) -> None:
        self._cards = cards
        self._clock = clock
        self._text = sanitize_text
        self._value = sanitize_value
        self._metrics = metrics
        self._thresholds = thresholds or RiskThresholds()
        self._judge = judge
        self._loaded_cosine = loaded_cosine
        self.policies = PolicyRegistry()
        self.tools = ToolRegistry()
        self._scopes: dict[str, Scope] = {}
        self._held: OrderedDict[str, HeldStep] = OrderedDict()
        self._pending_cards: OrderedDict[str, str] = OrderedDict()
        self._calls: OrderedDict[str, CallInProgress] = OrderedDict()
        self._sequence = 0
        self._lock = threading.Lock()

    def scope(self, tenant: str) -> Scope:
        """``tenant``'s tools and policies (over the engine's) and its executor."""
        with self._lock:
            found = self._scopes.get(tenant)
            if found is None:
                tools = ToolRegistry(parent=self.tools)
                found = self._scopes[tenant] = Scope(
                    tools,
                    PolicyRegistry(parent=self.policies),
                    ToolExecutor(tools, lambda text: self._text(text, "tool.error")),
                )
            return found

    # -- deciding -------------------------------------------------------------------

    def decide(
        self,
        state: SessionState,
        bundle: ContextBundle,
        intent: IntentSpec,
        *,
        question: str = "",
        given: Mapping[str, Any] | None = None,
        clearance: Level = "high",
    ) -> Decision:
        """Judge the bundle, decide, write the card. A caller below L1's level gets
        no slot or parameter filled from the session's state (it would read it back
        in the decision): those are asked for."""
        _check_optional_text("question", question)
        if bundle.session_id != state.session_id:
            raise ValidationError("bundle", "was routed for another session")
        if given is not None and not isinstance(given, Mapping):
            raise ValidationError("given", "must be an object")
        started = time.perf_counter()
        scope = self.scope(state.tenant)
        policy = scope.policies.get(bundle.step_intent) or default_policy(intent)
        l1 = (
            {k: v for k, v in state.as_dict().items() if k != "auth_context"}
            if cleared(L1_LEVEL, clearance)
            else {}
        )
        facts = facts_held(l1, bundle, given)
        judgment, verdict = self._judgment(scope.tools, bundle, policy, facts)
        decision = decide(
            judgment, policy, self._thresholds, bundle, known_tools=frozenset(scope.tools.names())
        )
        if decision.route == "tool" and verdict is not None and not verdict.passed:
            # Parameters the gate would refuse are never proposed: ask for what feeds
            # them instead.
            ask_for = (
                decision.judgment.missing
                or tuple(dict.fromkeys(policy.tool_params.values()))
                or ("details",)
            )
            decision = replace(
                decision,
                route="ask",
                tool=None,
                params={},
                ask_for=ask_for,
                questions=questions_for(policy, ask_for),
                reasons=(*decision.reasons, "the gate refused the call's parameters"),
            )
        elapsed = time.perf_counter() - started
        at = self._clock.now().timestamp()
        card = TraceCard(
            id=self._card_id(at),
            tenant=state.tenant,
            session_id=state.session_id,
            step=bundle.step,
            intent=bundle.step_intent,
            at=at,
            route=decision.route,
            confidence=round(decision.confidence, 6),
            threshold=decision.threshold,
            judged_by=decision.judgment.judged_by,
            user=state.user_id,
            question=self._text(question, "card.question") if question else "",
            reasons=decision.reasons,
            memory_ids=decision.used.memory_ids,
            episode_ids=decision.used.episode_ids,
            knowledge_ids=decision.used.knowledge_ids,
            l2_keys=decision.used.l2_keys,
            ask_for=decision.ask_for,
            tool=decision.tool,
            params=self._value(dict(decision.params), "card.params"),
            gate=() if verdict is None else (verdict.as_dict(),),
            timing_ms={"decide": round(elapsed * 1000, 3)},
            l3_skip_reason=bundle.l3_skip_reason,
            dense_skip_reason=bundle.dense_skip_reason,
            **self._recognized(bundle),
        )
        # The raw question and parameters go along: what they hold is removed from
        # every field, the entities read out of the question included.
        self._cards.put(card, context=(question, _json_text(decision.params)))
        decision = replace(decision, card_id=card.id)
        self._hold(
            card.id, HeldStep(state.tenant, state.session_id, bundle, policy, facts, decision)
        )
        self._metrics.observe_decision(
            bundle.step_intent, decision.route, decision.judgment.judged_by, elapsed
        )
        return decision

    def _recognized(self, bundle: ContextBundle) -> dict[str, Any]:
        """The card's fields for a step routed from the message alone (entities are
        the user's words: through the gateway like the question)."""
        got = bundle.recognized
        if got is None:
            return {}
        return {
            "detected_intent": got.candidate,
            "intent_confidence": round(got.confidence, 6),
            "intent_fell_back": got.fell_back,
            "entities": tuple(
                {
                    "text": self._text(e.text, "card.entities"),
                    "kind": e.kind,
                    "value": self._text(e.value, "card.entities") if e.value else "",
                }
                for e in got.entities
            ),
        }

    def _card_id(self, at: float) -> str:
        """Sortable by time, then by decision order within this process (cards at one
        time come back in the order they were decided), then random."""
        with self._lock:
            self._sequence += 1
            sequence = self._sequence
        return f"{int(at * 1000):012x}{sequence % 16**6:06x}{uuid.uuid4().hex[:14]}"

    def _judgment(
        self,
        tools: ToolRegistry,
        bundle: ContextBundle,
        policy: StepPolicy,
        facts: Mapping[str, Any],
    ) -> tuple[Judgment, GateVerdict | None]:
        """The model's judgment when one is configured and usable, else the rules';
        with the gate's verdict on the tool call it proposes."""
        available = policy.tool is not None and policy.tool in tools.names()
        rules = rule_judgment(bundle, policy, facts, self._thresholds, tool_available=available)
        if self._judge is not None:
            specs = [tools.spec(name) for name in tools.names()]
            try:
                judged = self._judge.judge(bundle, policy, facts, self._thresholds, specs)
            except ModelError:
                judged = None
            if judged is not None:
                verdict = _verdict(tools, judged, facts)
                if judged.data_kind != "tool" or (verdict is not None and verdict.passed):
                    return judged, verdict
            self._metrics.judge_fallbacks.inc()
            rules = replace(rules, reasons=(*rules.reasons, "the model's judgment was not usable"))
        return rules, _verdict(tools, rules, facts)

    # -- tools ----------------------------------------------------------------------

    def call_tool(
        self,
        tenant: str,
        card_id: str,
        *,
        tool: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """Run the decision's tool call (or ``tool``/``params``) through the gate
        against the facts the decision held; a high-impact call is held for
        confirmation. A remote tool comes back ``approved``: run it, then
        :meth:`report_tool_result`."""
        held = self._step(tenant, card_id)
        name = tool if tool is not None else held.decision.tool
        if name is None:
            raise ValidationError("tool", "the decision calls no tool: name one")
        check_id("tool", name)
        if params is not None and not isinstance(params, Mapping):
            raise ValidationError("params", "must be an object")
        args = dict(held.decision.params if params is None else params)
        outcome = self.scope(tenant).executor.call(name, args, held.facts, owner=tenant)
        if outcome.pending_id is not None:
            with self._lock:
                self._pending_cards[outcome.pending_id] = card_id
                while len(self._pending_cards) > MAX_HELD_STEPS:
                    self._pending_cards.popitem(last=False)  # lapsed in the executor too
        return self._settle(tenant, card_id, outcome, CallInProgress(name, args))

    def confirm_tool(
        self, tenant: str, pending_id: str, *, confirmed: bool, confirmed_by: str | None = None
    ) -> ToolOutcome:
        """Confirm (run) or reject a held high-impact call; the card records who
        (``confirmed_by``, by default the session's user) and when. An identity the
        gateway would change (an email, a key) is refused before anything runs, and
        the call stays held."""
        check_id("pending_id", pending_id)
        if confirmed_by is not None:
            check_id("confirmed_by", confirmed_by)
            if self._text(confirmed_by, "card.confirmation_by") != confirmed_by:
                raise ValidationError(
                    "confirmed_by",
                    "holds a credential or personal data: name the confirmer by an opaque id",
                )
        executor = self.scope(tenant).executor
        held = next((p for p in executor.pending() if p.id == pending_id), None)
        at = self._clock.now().timestamp()  # when the answer came, before the call runs
        if confirmed:
            outcome = executor.confirm(pending_id, owner=tenant)
        else:
            outcome = executor.reject(pending_id, owner=tenant)
        with self._lock:
            card_id = self._pending_cards.pop(pending_id, None)
        if card_id is None or held is None:
            return outcome
        card = self._cards.get(tenant, card_id)
        self._cards.put(
            replace(
                card,
                confirmation="confirmed" if confirmed else "rejected",
                confirmation_by=card.user if confirmed_by is None else confirmed_by,
                confirmation_at=at,
            )
        )
        return self._settle(tenant, card_id, outcome, CallInProgress(held.tool, held.params))

    def report_tool_result(
        self, tenant: str, card_id: str, *, tool: str, ok: bool, error: str = ""
    ) -> ToolOutcome:
        """A remote tool's attempt: what the chain does next (retry, an alternative,
        done or cannot-complete). Only the tool last approved on the card may report;
        ``error`` passes the gateway before it is kept."""
        check_id("tool", tool)
        _check_optional_text("error", error)
        held = self._step(tenant, card_id)
        with self._lock:
            call = self._calls.get(card_id)
        if call is None or call.awaiting != tool:
            raise ValidationError("tool", f"{tool!r} is not the call awaiting a result here")
        executor = self.scope(tenant).executor
        failure = "" if ok else executor.error_text(error or "failed")
        attempts = (*call.attempts, Attempt(tool, ok, failure))
        outcome = executor.resume(call.tool, call.params, held.facts, attempts)
        return self._settle(tenant, card_id, outcome, call)

    def _settle(
        self, tenant: str, card_id: str, outcome: ToolOutcome, call: CallInProgress
    ) -> ToolOutcome:
        """Keep the call when its chain waits on a remote tool (with its own
        parameters, as called), and write the outcome onto the card."""
        with self._lock:
            if outcome.outcome == "approved":
                self._calls[card_id] = replace(
                    call, awaiting=outcome.tool, attempts=outcome.attempts
                )
                while len(self._calls) > MAX_HELD_STEPS:
                    self._calls.popitem(last=False)
            else:
                self._calls.pop(card_id, None)
        return self._record(tenant, card_id, outcome, call.params, first=call.tool)

    def _record(
        self,
        tenant: str,
        card_id: str,
        outcome: ToolOutcome,
        params: Mapping[str, Any],
        *,
        first: str,
    ) -> ToolOutcome:
        """Write the call's outcome onto the card; ``first`` is the tool called (the
        rest of the attempts are its fallbacks)."""
        card = self._cards.get(tenant, card_id)
        gates = {g["tool"]: g for g in card.gate}
        gates.update({v.tool: v.as_dict() for v in outcome.verdicts})
        attempts = tuple({"tool": a.tool, "ok": a.ok, "error": a.error} for a in outcome.attempts)
        self._cards.put(
            replace(
                card,
                tool=first,
                params=self._value(dict(params), "card.params"),
                tool_outcome=outcome.outcome,
                gate=tuple(gates.values()),
                attempts=attempts,
                fallbacks=tuple(dict.fromkeys(a.tool for a in outcome.attempts if a.tool != first)),
            ),
            context=(_json_text(params),),
        )
        if outcome.outcome != "approved":
            self._metrics.observe_tool(outcome)
        return outcome

    # -- the reply ------------------------------------------------------------------

    def check_reply(self, tenant: str, card_id: str, reply: str) -> ReplyCheck:
        """Compare the reply with the memories the decision used; record the verdict
        and the step's CER on the card. A conflict flags the card (regenerate)."""
        check_text("reply", reply, max_chars=MAX_REPLY_CHARS)
        held = self._step(tenant, card_id)
        evidence = evidence_items(held.bundle, held.policy)
        result = check_reply(reply, held.bundle, evidence, threshold=self._loaded_cosine)
        if self._judge is not None:
            try:
                found = self._judge.conflicts(reply, held.bundle.items, card_id)
            except ModelError:
                found = None
            if found is not None:
                result = replace(result, consistent=not found, conflicts=found)
        card = self._cards.get(tenant, card_id)
        flags = card.flags if result.consistent else (*card.flags, "inconsistent_reply")
        self._cards.put(
            replace(
                card,
                reply=self._text(reply, "card.reply"),
                consistency="consistent" if result.consistent else "conflict",
                conflicts=tuple(self._text(c, "card.conflict") for c in result.conflicts),
                context_loaded=result.context_loaded,
                context_used=result.context_used,
                flags=tuple(dict.fromkeys(flags)),
            ),
            context=(reply,),
        )
        self._metrics.observe_check(result.consistent, result.effective)
        return result

    # -- feedback -------------------------------------------------------------------

    def feedback_event(
        self,
        tenant: str,
        card_id: str,
        kind: str,
        *,
        correction: str = "",
        rating: int | None = None,
        used: Sequence[str] | None = None,
        wrong: Sequence[str] | None = None,
    ) -> FeedbackEvent:
        """The feedback event of a decision (:mod:`memstrata.feedback.events`):
        ``correction`` already passed the gateway. ``used`` defaults to what the
        checked reply reflects, else every memory on the card."""
        checked = check_feedback(kind, rating, correction)
        card = self._cards.get(tenant, card_id)
        try:
            held: HeldStep | None = self._step(tenant, card_id)
        except NotFoundError:
            held = None
        retrieved = (*card.memory_ids, *card.episode_ids)
        used_by: UsedBy
        if used is not None:
            used_ids, used_by = check_ids("used", used, retrieved, "a memory or episode"), "caller"
        elif held is not None and card.reply:
            used_ids, used_by = used_in_reply(card.reply, held.bundle.items), "reply"
        else:
            used_ids, used_by = card.memory_ids, "card"
        wrong_ids = () if wrong is None else check_ids("wrong", wrong, card.memory_ids, "a memory")
        if wrong_ids and outcome_of(checked, rating) != "negative":
            raise ValidationError("wrong", "only a correction or a rating of 1-2 names wrong ones")
        if correction and not card.user:
            raise ValidationError("correction", "the decision's user is unknown")
        at = self._clock.now().timestamp()
        event = FeedbackEvent(
            id=new_event_id(at),
            tenant=tenant,
            card_id=card.id,
            session_id=card.session_id,
            kind=checked,
            at=at,
            intent=card.intent,
            route=card.route,
            question=card.question,
            reply=card.reply,
            correction=correction,
            rating=rating,
            user=card.user or None,
            memory_ids=card.memory_ids,
            episode_ids=card.episode_ids,
            used=used_ids,
            used_by=used_by,
            wrong=wrong_ids,
        )
        return _through_gateway(event, self._cards, correction)

    # -- cards ----------------------------------------------------------------------

    @property
    def cards(self) -> CardStore:
        return self._cards

    def held(self, tenant: str, card_id: str) -> HeldStep:
        """What the card's decision was made from (this process only)."""
        return self._step(tenant, card_id)

    def _hold(self, card_id: str, step: HeldStep) -> None:
        with self._lock:
            self._held[card_id] = step
            while len(self._held) > MAX_HELD_STEPS:
                self._held.popitem(last=False)

    def _step(self, tenant: str, card_id: str) -> HeldStep:
        check_id("card_id", card_id)
        with self._lock:
            held = self._held.get(card_id)
        if held is None or held.tenant != tenant:
            raise NotFoundError(f"no decision {card_id!r} is held: decide the step again")
        return held


def _json_text(value: Any) -> str:
    """A JSON-like value as one text the gateway reads (names give values their cue)."""
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


_EVENT_IDS = ("id", "tenant", "card_id", "session_id", "user", "at")


def _through_gateway(event: FeedbackEvent, cards: CardStore, correction: str) -> FeedbackEvent:
    """``event`` with every field through the gateway (its identifiers kept: they are
    keys), the correction as context: the event is queued and kept in the tenant's
    stream as it is returned."""
    payload = event.as_payload()
    kept = {name: payload.pop(name) for name in _EVENT_IDS}
    clean = cards.gateway.sanitize_record(
        payload, location="feedback.event", context=(correction,)
    ).value
    return FeedbackEvent.from_payload({**clean, **kept})


def _check_optional_text(field: str, value: Any) -> None:
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if len(value) > MAX_REPLY_CHARS:
        raise ValidationError(field, f"is {len(value)} chars, the limit is {MAX_REPLY_CHARS}")


def _verdict(
    tools: ToolRegistry, judgment: Judgment, facts: Mapping[str, Any]
) -> GateVerdict | None:
    """The gate's verdict on the call a judgment proposes (None: it proposes none)."""
    if judgment.data_kind != "tool" or judgment.tool is None:
        return None
    try:
        spec = tools.spec(judgment.tool)
    except NotFoundError:
        return None
    return gate(spec, judgment.params, facts)
