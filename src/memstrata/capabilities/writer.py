"""The writer: everything that puts memory on the write path (docs/architecture.md,
"The writer"): observed turns, remembered texts and units, feedback events.

Each call takes the intake (:mod:`memstrata.write.intake`: validated, through the
gateway, episodes) and hands the result to the write pipeline
(:mod:`memstrata.write.submit`), returning at once; ``flush`` waits for the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memstrata.decision import DecisionLayer, DecisionMetrics
from memstrata.errors import ValidationError
from memstrata.feedback.events import FeedbackReceipt
from memstrata.gateway import Sanitizer
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.codec import UNIT_TYPES, from_payload, is_pending
from memstrata.memory.episodes import Episode, episode_of_payload
from memstrata.memory.units import MemoryUnit
from memstrata.tracing import Tracing, traced
from memstrata.validation import check_id
from memstrata.write.entries import DeadLetter
from memstrata.write.intake import Intake
from memstrata.write.submit import WritePipeline, WriteReceipt, WriteStats


@dataclass(frozen=True, slots=True)
class WrittenMemory:
    """What one ``observe`` / ``remember`` stored (see :meth:`Writer.written`)."""

    episodes: tuple[Episode, ...]
    facts: tuple[MemoryUnit, ...]
    """Every version extracted from the episodes, events included, by slot and time."""


class Writer:
    """observe, remember, feedback and flush."""

    def __init__(
        self,
        *,
        intake: Intake,
        pipeline: WritePipeline,
        longterm: LongTermStore,
        decisions: DecisionLayer,
        decision_metrics: DecisionMetrics,
        sanitizer: Sanitizer,
        tracing: Tracing | None = None,
    ) -> None:
        # Spans of each traced call (memstrata.tracing reads ``_tracing``).
        self._tracing = tracing
        self._intake = intake
        self._pipeline = pipeline
        self._longterm = longterm
        self._decisions = decisions
        self._decision_metrics = decision_metrics
        self._sanitizer = sanitizer

    @traced("engine.observe", fields=("session_id", "role"))
    def observe(
        self,
        session_id: str,
        role: str,
        text: str,
        *,
        speaker: str | None = None,
        at: datetime | None = None,
    ) -> WriteReceipt:
        """Record a conversation turn: L1 history now, its episodes queued (``at``: when
        it was said, for an imported conversation; default now)."""
        return self._pipeline.submit_turn(
            self._intake.turn(session_id, role, text, speaker=speaker, at=at)
        )

    @traced("engine.remember", fields=("tenant",))
    def remember(
        self, user_id: str, text_or_unit: str | MemoryUnit, *, tenant: str = "default"
    ) -> WriteReceipt:
        """Queue a direct long-term write of a text (its episodes) or a unit."""
        if isinstance(text_or_unit, MemoryUnit):
            unit = self._intake.unit(user_id, text_or_unit, tenant=tenant)
            return self._pipeline.submit_unit(unit)
        return self._pipeline.submit_note(self._intake.note(user_id, text_or_unit, tenant=tenant))

    def written(self, receipt: WriteReceipt, *, tenant: str) -> WrittenMemory:
        """What a flushed ``observe`` / ``remember`` stored: its episodes, and every
        fact and event extracted from them (each version, active or not)."""
        if not isinstance(receipt, WriteReceipt):
            raise ValidationError("receipt", "must be a WriteReceipt")
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

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait until everything queued so far is in long-term memory."""
        self._pipeline.flush(timeout_s)

    def write_stats(self) -> WriteStats:
        """Counters of the write pipeline (enqueued, failures, filter drops, writes)."""
        return self._pipeline.stats()

    def dead_letters(
        self, *, tenant: str, after: str | None = None, limit: int = 100
    ) -> tuple[DeadLetter, ...]:
        """``tenant``'s entries the queue gave up on, oldest first (after ``after``)."""
        return tuple(self._pipeline.queue.dead_letters_of(tenant, after=after, limit=limit))

    def replay_dead_letter(self, dead_id: str, *, tenant: str) -> str:
        """Put ``tenant``'s dead letter back on the write stream; its new entry id.
        NotFoundError for an id that is not one of ``tenant``'s dead letters."""
        return self._pipeline.queue.replay(tenant, dead_id)

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
        """The user's follow-up to a decision, queued like a write (see
        :meth:`ContextEngine.feedback`); the correction passes the gateway first."""
        check_id("tenant", tenant)
        if not isinstance(correction, str):
            raise ValidationError(
                "correction", f"must be a string, got {type(correction).__name__}"
            )
        clean = (
            self._sanitizer.text(correction, location="feedback:correction", field="correction")
            if correction
            else ""
        )
        event = self._decisions.feedback_event(
            tenant, card_id, kind, correction=clean, rating=rating, used=used, wrong=wrong
        )
        receipt = self._pipeline.submit_feedback(event)
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
