"""Stage 1 of the write path: what was said becomes episodes, after the gateway.

:class:`Intake` is where ``observe`` and ``remember`` start. It validates what the
caller gave (naming the field of any problem), passes every text through the gateway
first, so no secret reaches L1, the queue, L3 or a log, and checks the size before
anything changes. For an observed turn it records the turn in the session's L1 history
and builds one episode per chunk of the turn, placed in the session's thread (its
``seq``) and dated by the engine clock. The episodes then go to
:mod:`~memstrata.write.submit`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memstrata.clock import Clock
from memstrata.config import PipelineSettings
from memstrata.errors import ValidationError
from memstrata.extract.candidates import ROLES
from memstrata.gateway import Sanitizer
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.memory.units import MemoryUnit
from memstrata.session import SessionRegistry
from memstrata.validation import MAX_SPEAKER_CHARS, check_id, check_text
from memstrata.write.submit import split_text

UNIT_LOCATION = "L3:memories"
"""The audit location of a remembered text or unit."""


class Intake:
    """Validated, sanitized episodes of observed turns and remembered texts."""

    def __init__(
        self,
        sessions: SessionRegistry,
        sanitizer: Sanitizer,
        clock: Clock,
        settings: PipelineSettings,
    ) -> None:
        self._sessions = sessions
        self._sanitizer = sanitizer
        self._clock = clock
        self._settings = settings

    def chunks(self, text: str) -> tuple[str, ...]:
        """``text`` checked for size and split into chunks of at most
        ``max_turn_chars``; ValidationError names ``text``."""
        limit = self._settings.max_observe_chars
        if len(text) > limit:
            raise ValidationError("text", f"is {len(text)} chars, the limit is {limit}")
        chunks = split_text(text, self._settings.max_turn_chars)
        if not chunks:
            raise ValidationError("text", "must not be empty")
        return chunks

    def turn(
        self,
        session_id: str,
        role: str,
        text: str,
        *,
        speaker: str | None = None,
        at: datetime | None = None,
    ) -> list[Episode]:
        """The episodes of one observed turn, recorded in the session's L1 history
        (the session must be open in this process: NotFoundError otherwise). ``at``:
        when it was said, for an imported conversation (default: now)."""
        check_id("session_id", session_id)
        if role not in ROLES:
            raise ValidationError("role", f"must be one of {sorted(ROLES)}")
        check_text("text", text, max_chars=self._settings.max_observe_chars)
        where = f"l1:{session_id}:turn"
        if speaker is not None:
            check_text("speaker", speaker, max_chars=MAX_SPEAKER_CHARS)
            speaker = self._sanitizer.text(speaker, location=where, field="speaker")
        clean = self._sanitizer.text(text, location=where, field="text")
        chunks = self.chunks(clean)  # size checks before L1 changes
        if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
            raise ValidationError("at", "must be a timezone-aware datetime")
        now = self._clock.now() if at is None else at
        state = self._sessions.update(
            session_id, lambda s: s.record_turn(role, clean, now, parts=len(chunks))
        )
        turn_id = state.history[-1].turn_id
        first = state.episodes_observed - len(chunks) + 1
        return [
            Episode(
                id=turn_episode_id(state.tenant, state.thread, first + i),
                tenant=state.tenant,
                user=state.user_id,
                text=chunk,
                role=role,
                observed_at=now,
                source=f"turn:{session_id}/{turn_id}",
                session_id=session_id,
                # Each chunk is its own turn to the extractor; its id says which part.
                turn_id=turn_id if len(chunks) == 1 else f"{turn_id}.{i + 1}",
                thread=state.thread,
                seq=first + i,
                speaker=speaker,
            )
            for i, chunk in enumerate(chunks)
        ]

    def note(self, user_id: str, text: str, *, tenant: str) -> list[Episode]:
        """The episodes of a remembered text (one per chunk), dated now."""
        check_id("user_id", user_id)
        check_id("tenant", tenant)
        check_text("text", text, max_chars=self._settings.max_observe_chars)
        clean = self._sanitizer.text(text, location=UNIT_LOCATION, field="text")
        now = self._clock.now()
        return [Episode.remembered(tenant, user_id, chunk, now) for chunk in self.chunks(clean)]

    def unit(self, user_id: str, unit: MemoryUnit, *, tenant: str) -> MemoryUnit:
        """A structured unit of ``tenant``'s user, every text field through the gateway."""
        check_id("user_id", user_id)
        check_id("tenant", tenant)
        if (unit.source.tenant, unit.source.user) != (tenant, user_id):
            raise ValidationError("unit.source", "must name the same tenant and user")
        text = self._sanitizer.text
        return replace(
            unit,
            subject=text(unit.subject, location=UNIT_LOCATION, field="subject"),
            attribute=text(unit.attribute, location=UNIT_LOCATION, field="attribute"),
            value=text(unit.value, location=UNIT_LOCATION, field="value"),
            extras=tuple(
                (label, text(value, location=UNIT_LOCATION, field=label))
                for label, value in unit.extras
            ),
        )
