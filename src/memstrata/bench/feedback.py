"""``memstrata bench feedback``: what the feedback loop does to retrieval
(docs/architecture.md, "Decisions and feedback").

A scripted user, on the embedded defaults (Valkey + qdrant-edge + MiniLM on CPU):

1. says each of :data:`MEMORIES` in a session of its own (``engine.observe``), then
   ``flush()``;
2. before: for each question of :data:`CONFIRMATIONS`, the rank (1-based, in
   ``engine.retrieve(question, k=10)``; 11 when absent) of the memory that answers it,
   and for each question of :data:`CORRECTIONS`, whether the fact the user is about to
   correct still comes back as a current fact;
3. the product's path, for every question: ``route`` -> ``decide`` -> ``check_reply``
   (a reply built from the memory that answers it) -> ``feedback`` - ``confirmed`` for
   the confirmations (``rounds`` times, as a user asking again on later days), and,
   once, ``corrected`` with the user's correction for the corrections (one naming the
   wrong memory, one relying on the slot versioning) -> ``flush()``;
4. after: the same measurements.

Printed: mean rank and top-1 rate of the confirmed memories before and after, how
many corrected facts still come back as current before and after, and whether each
correction's fact is now the active one, sourced from its feedback event. The clock
is a fixed :class:`~memstrata.clock.FakeClock`, so two runs print the same numbers.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.feedback.events import FEEDBACK_SESSION, FeedbackSteps
from memstrata.memory.units import MemoryUnit
from memstrata.validation import check_positive_int
from memstrata.write.submit import WriteReceipt

TENANT = "bench"
USER = "u1"
K = 10
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A question whose answer is ``memory`` (one of :data:`MEMORIES`); the reply uses
    it and the user confirms."""

    question: str
    memory: str
    reply: str


@dataclass(frozen=True, slots=True)
class Correction:
    """A question answered from ``memory``, which is wrong: the user corrects it.
    ``name_wrong``: the feedback names the reply's facts as wrong (else the
    correction's fact supersedes them by slot)."""

    question: str
    memory: str
    reply: str
    correction: str
    name_wrong: bool


MEMORIES: tuple[str, ...] = (
    "I prefer aisle seats on short flights.",
    "On long flights I prefer a window seat so I can sleep.",
    "I usually drink green tea in the morning.",
    "In the afternoon I drink a black coffee.",
    "My sister Lina lives in Shanghai.",
    "My brother Wei lives in Beijing.",
    "I go running along the West Lake on weekends.",
    "I swim at the gym on Wednesdays.",
    "My favourite restaurant is Sushi Zen on Hubin Road.",
    "We had dinner at Pasta Bar last Friday.",
    "I read science fiction before bed.",
    "I listen to jazz while I work.",
    "I live in Hangzhou.",
    "I'm allergic to peanuts.",
    "My dog is called Rex.",
    "I work at Globex as an engineer.",
    "My budget for the new laptop is 8000 yuan.",
    "My birthday is May 3.",
)
CONFIRMATIONS: tuple[Confirmation, ...] = (
    Confirmation(
        "what do I drink after lunch",
        "In the afternoon I drink a black coffee.",
        "In the afternoon you drink a black coffee.",
    ),
    Confirmation(
        "what music do I like",
        "I listen to jazz while I work.",
        "You listen to jazz while you work.",
    ),
    Confirmation(
        "what books do I like",
        "I read science fiction before bed.",
        "You read science fiction before bed.",
    ),
    Confirmation(
        "which seat should I book for my flight to London",
        "On long flights I prefer a window seat so I can sleep.",
        "On long flights you prefer a window seat so you can sleep.",
    ),
    Confirmation(
        "who lives in Beijing",
        "My brother Wei lives in Beijing.",
        "Your brother Wei lives in Beijing.",
    ),
    Confirmation(
        "what do I do on weekends",
        "I go running along the West Lake on weekends.",
        "You go running along the West Lake on weekends.",
    ),
)
CORRECTIONS: tuple[Correction, ...] = (
    Correction(
        "where do I live",
        "I live in Hangzhou.",
        "You live in Hangzhou.",
        "No, I moved: I live in Chengdu now.",
        name_wrong=False,
    ),
    Correction(
        "what am I allergic to",
        "I'm allergic to peanuts.",
        "You are allergic to peanuts.",
        "That was my brother, not me.",
        name_wrong=True,
    ),
)


@dataclass(frozen=True, slots=True)
class Measurement:
    """Ranks of the confirmed memories (question order), their score over the top
    item's (1.0 at rank 1, 0.0 when absent), and, per correction, whether its wrong
    fact still comes back as current."""

    ranks: tuple[int, ...]
    shares: tuple[float, ...]
    current: tuple[bool, ...]

    @property
    def mean_rank(self) -> float:
        return sum(self.ranks) / len(self.ranks) if self.ranks else 0.0

    @property
    def top1_rate(self) -> float:
        return sum(rank == 1 for rank in self.ranks) / len(self.ranks) if self.ranks else 0.0

    @property
    def still_current(self) -> int:
        return sum(self.current)


@dataclass(frozen=True, slots=True)
class ScriptResult:
    """A run of the script: the measurements, and what the corrections became."""

    before: Measurement
    after: Measurement
    events: int
    corrections_active: tuple[bool, ...]
    """Per correction: its fact (when it has one) is the slot's active version, sourced
    from its feedback event; a correction with no fact counts when the wrong one is
    closed."""
    memory_ids: dict[str, tuple[str, ...]]
    """Per memory text: the ids of its episode and of the units extracted from it."""
    event_ids: tuple[str, ...]


def _rank(engine: ContextEngine, question: str, targets: set[str]) -> tuple[int, float]:
    """The rank of the first item that is or carries one of ``targets``, and its score
    over the top item's."""
    result = engine.retrieve(question, tenant=TENANT, user=USER, k=K)
    for n, item in enumerate(result.items, start=1):
        if item.id in targets or any(fact.id in targets for fact in item.facts):
            top = result.items[0].score
            return n, (item.score / top if top > 0 else 0.0)
    return K + 1, 0.0


def _still_current(engine: ContextEngine, question: str, facts: Sequence[MemoryUnit]) -> bool:
    current = {
        f.id for f in engine.retrieve(question, tenant=TENANT, user=USER, k=K).current_facts()
    }
    return any(unit.id in current for unit in facts)


def measure(
    engine: ContextEngine,
    memory_ids: Mapping[str, tuple[str, ...]],
    facts: Mapping[str, tuple[MemoryUnit, ...]],
) -> Measurement:
    """The ranks of the confirmations' memories and the corrections' current state."""
    found = [_rank(engine, c.question, set(memory_ids[c.memory])) for c in CONFIRMATIONS]
    return Measurement(
        ranks=tuple(rank for rank, _ in found),
        shares=tuple(share for _, share in found),
        current=tuple(_still_current(engine, c.question, facts[c.memory]) for c in CORRECTIONS),
    )


def _step(engine: ContextEngine, sid: str, question: str, reply: str) -> str:
    """route -> decide -> check_reply in a fresh session; the decision's card id."""
    engine.start_session(USER, question, tenant=TENANT, session_id=sid)
    bundle = engine.route(sid, "respond", question)
    decision = engine.decide(sid, bundle, question=question)
    engine.check_reply(decision.card_id, reply, tenant=TENANT)
    return decision.card_id


def run_script(engine: ContextEngine, clock: FakeClock, *, rounds: int = 2) -> ScriptResult:
    """The scripted user on ``engine`` (module docstring); ``clock`` is the engine's."""
    check_positive_int("rounds", rounds)
    sessions = [f"m{n}" for n in range(len(MEMORIES))]
    receipts: dict[str, WriteReceipt] = {}
    for sid, text in zip(sessions, MEMORIES, strict=True):
        engine.start_session(USER, "chat", tenant=TENANT, session_id=sid)
        receipts[text] = engine.observe(sid, "user", text)
        clock.advance(timedelta(hours=3))
    engine.flush()
    written = {text: engine.written(r, tenant=TENANT) for text, r in receipts.items()}
    memory_ids = {
        text: (*(e.id for e in w.episodes), *(u.id or "" for u in w.facts))
        for text, w in written.items()
    }
    facts = {text: w.facts for text, w in written.items()}
    before = measure(engine, memory_ids, facts)
    events: list[str] = []
    for n in range(rounds):
        clock.advance(timedelta(days=1))
        for i, confirmation in enumerate(CONFIRMATIONS):
            confirmed = _step(engine, f"c{n}-{i}", confirmation.question, confirmation.reply)
            events.append(engine.feedback(confirmed, "confirmed", tenant=TENANT).event_id)
        if n == 0:
            for i, correction in enumerate(CORRECTIONS):
                card_id = _step(engine, f"x{i}", correction.question, correction.reply)
                card = engine.trace_card(card_id, tenant=TENANT)
                wrong = [u.id or "" for u in facts[correction.memory] if u.id in card.memory_ids]
                receipt = engine.feedback(
                    card_id,
                    "corrected",
                    tenant=TENANT,
                    correction=correction.correction,
                    wrong=wrong if correction.name_wrong else None,
                )
                events.append(receipt.event_id)
        engine.flush()
    after = measure(engine, memory_ids, facts)
    return ScriptResult(
        before=before,
        after=after,
        events=len(events),
        corrections_active=tuple(_corrected(engine, facts[c.memory]) for c in CORRECTIONS),
        memory_ids=memory_ids,
        event_ids=tuple(events),
    )


def _corrected(engine: ContextEngine, wrong: Sequence[MemoryUnit]) -> bool:
    """Every wrong fact is closed, and the slot's active version (if any) came from a
    feedback event."""
    store = engine.parts.memory
    assert store is not None
    for unit in wrong:
        if any(u.active for u in store.get(TENANT, [unit.id or ""])):
            return False
        active = store.active_fact(TENANT, USER, unit.subject, unit.attribute)
        if active is not None and active.source.session_id != FEEDBACK_SESSION:
            return False
    return True


def run_feedback_bench(
    data_dir: Path | None = None, *, rounds: int = 2, progress: Console | None = None
) -> dict[str, Any]:
    """Run the script on a fresh engine under ``data_dir`` (default: a temporary
    directory) and report the numbers."""
    check_positive_int("rounds", rounds)
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-feedback-") as scratch:
        root = Path(data_dir) if data_dir is not None else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=root))
        clock = FakeClock(START)
        started = time.perf_counter()
        if progress is not None:
            progress.print(f"feedback bench: {len(MEMORIES)} memories, {rounds} rounds")
        with ContextEngine.open(Settings(data_dir=run_dir), clock=clock) as engine:
            result = run_script(engine, clock, rounds=rounds)
            weight = engine.settings.retrieval.importance_weight
        seconds = time.perf_counter() - started
    steps = FeedbackSteps()
    return {
        "memories": len(MEMORIES),
        "rounds": rounds,
        "feedback_events": result.events,
        "importance_weight": weight,
        "steps": {
            "confirm": steps.confirm,
            "ignored": steps.ignored,
            "correct": steps.correct,
            "abandon": steps.abandon,
        },
        "confirmed": {
            "questions": len(CONFIRMATIONS),
            "mean_rank_before": round(result.before.mean_rank, 4),
            "mean_rank_after": round(result.after.mean_rank, 4),
            "top1_before": round(result.before.top1_rate, 4),
            "top1_after": round(result.after.top1_rate, 4),
            "per_question": [
                {
                    "question": c.question,
                    "rank_before": result.before.ranks[i],
                    "rank_after": result.after.ranks[i],
                    "score_share_before": round(result.before.shares[i], 4),
                    "score_share_after": round(result.after.shares[i], 4),
                }
                for i, c in enumerate(CONFIRMATIONS)
            ],
        },
        "corrected": {
            "facts": len(CORRECTIONS),
            "still_current_before": result.before.still_current,
            "still_current_after": result.after.still_current,
            "correction_active": sum(result.corrections_active),
        },
        "seconds": round(seconds, 2),
    }
