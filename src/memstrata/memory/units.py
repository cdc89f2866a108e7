"""Memory units: atomic, structured, versioned facts and events (docs/architecture.md,
"The writer").

A unit says one thing about one subject: ``(subject, attribute) = value``. Facts are
versioned per ``(user, subject, attribute)`` slot (one active version, the rest history
with ``valid_to`` set); events are append-only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memstrata.errors import ValidationError
from memstrata.extract.candidates import MAX_VALUE_CHARS, UNIT_KINDS, Candidate, Turn, UnitKind
from memstrata.hashing import sha256_hex
from memstrata.validation import check_id, check_text

__all__ = [
    "DISPUTED_FACTOR",
    "MAX_VALUE_CHARS",
    "UNIT_KINDS",
    "Dispute",
    "MemoryUnit",
    "UnitKind",
    "UnitSource",
    "unit_from_candidate",
]
_NAME_MAX = 128
MAX_EPISODES = 16
"""A fact re-asserted in many turns keeps its first and latest episodes only."""
FEEDBACK_KEPT = 32
"""Feedback event ids a memory remembers having applied: far more than one memory
collects while the queue can still redeliver an event."""


DISPUTED_FACTOR = 0.5
"""A disputed fact's confidence: this fraction of what it was."""
MAX_DISPUTE_TEXT = 300
"""The longest quote of the disputing episode a fact keeps."""


def _check_name(field_name: str, value: Any) -> str:
    """Subjects and attributes: short, non-blank text (may be Chinese, may have spaces)."""
    text = check_text(field_name, value, max_chars=_NAME_MAX)
    if text != text.strip():
        raise ValidationError(field_name, "must not start or end with whitespace")
    return text


def _check_unit_interval(field_name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field_name, "must be a finite number")
    if not 0.0 <= float(value) <= 1.0:
        raise ValidationError(field_name, "must be within [0, 1]")
    return float(value)


def _check_aware(field_name: str, value: Any) -> datetime:
    if not isinstance(value, datetime):
        raise ValidationError(field_name, f"must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        raise ValidationError(field_name, "must be timezone-aware")
    return value


@dataclass(frozen=True, slots=True)
class UnitSource:
    """Where a unit came from: tenant, user, and a session turn or a document."""

    tenant: str
    user: str
    session_id: str | None = None
    turn_id: str | None = None
    document_id: str | None = None
    confidence: float = 1.0

    def __post_init__(self) -> None:
        check_id("source.tenant", self.tenant)
        check_id("source.user", self.user)
        for name in ("session_id", "turn_id", "document_id"):
            value = getattr(self, name)
            if value is not None:
                check_id(f"source.{name}", value)
        _check_unit_interval("source.confidence", self.confidence)

    @property
    def label(self) -> str:
        if self.document_id:
            return f"doc:{self.document_id}"
        if self.turn_id:
            return f"turn:{self.session_id or '-'}/{self.turn_id}"
        return "direct"


@dataclass(frozen=True, slots=True)
class Dispute:
    """Why a fact is in doubt: a newer episode on its topic said it changed ("我搬家了",
    "I changed jobs", "that's not right anymore") without saying to what."""

    episode: str
    """The id of the newer episode."""
    at: datetime
    """When it was said."""
    text: str
    """What it said (at most :data:`MAX_DISPUTE_TEXT` characters)."""
    confidence: float
    """The fact's confidence before the doubt (given back when it is said again)."""

    def __post_init__(self) -> None:
        check_id("disputed.episode", self.episode)
        _check_aware("disputed.at", self.at)
        check_text("disputed.text", self.text, max_chars=MAX_DISPUTE_TEXT)
        _check_unit_interval("disputed.confidence", self.confidence)


@dataclass(frozen=True, slots=True)
class MemoryUnit:
    """One versioned memory."""

    subject: str
    attribute: str
    value: str
    kind: UnitKind
    source: UnitSource
    observed_at: datetime
    valid_from: datetime
    valid_to: datetime | None = None
    version: int = 1
    active: bool = True
    importance: float = 0.5
    pinned: bool = False
    last_accessed: datetime | None = None
    access_count: int = 0
    id: str | None = None
    extras: tuple[tuple[str, str], ...] = field(default=())
    """Verbatim never-compress values found in the text: ids, amounts, dates."""
    derived_from: tuple[str, ...] = field(default=())
    """Ids of the units a summary compresses; non-empty marks a summary, which
    consolidation never summarizes again (no nested summaries: docs/architecture.md,
    "Upkeep")."""
    episodes: tuple[str, ...] = field(default=())
    """Ids of the episodes (the stored turns or remembered texts) this unit was
    extracted from, oldest first: a fact never replaces what the user said."""
    superseded_by: str | None = None
    """The id of the version that closed this one (history only)."""
    feedback_applied: tuple[str, ...] = field(default=())
    """Ids of the newest feedback events whose importance step this unit took (at
    most :data:`FEEDBACK_KEPT`): a replayed event moves it once."""
    disputed: Dispute | None = None
    """Set while a newer episode puts this fact in doubt: it is never shown as plainly
    current, and its confidence (``source.confidence``) is lowered meanwhile."""

    def __post_init__(self) -> None:
        _check_name("subject", self.subject)
        _check_name("attribute", self.attribute)
        check_text("value", self.value, max_chars=MAX_VALUE_CHARS)
        if self.kind not in UNIT_KINDS:
            raise ValidationError("kind", f"must be one of {sorted(UNIT_KINDS)}")
        if not isinstance(self.source, UnitSource):
            raise ValidationError("source", "must be a UnitSource")
        _check_aware("observed_at", self.observed_at)
        _check_aware("valid_from", self.valid_from)
        if self.valid_to is not None:
            _check_aware("valid_to", self.valid_to)
            if self.valid_to < self.valid_from:
                raise ValidationError("valid_to", "must not be before valid_from")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValidationError("version", "must be an integer >= 1")
        _check_unit_interval("importance", self.importance)
        if (
            isinstance(self.access_count, bool)
            or not isinstance(self.access_count, int)
            or self.access_count < 0
        ):
            raise ValidationError("access_count", "must be an integer >= 0")
        if self.last_accessed is not None:
            _check_aware("last_accessed", self.last_accessed)
        if not isinstance(self.extras, tuple) or any(
            not isinstance(pair, tuple)
            or len(pair) != 2
            or not all(isinstance(part, str) for part in pair)
            for pair in self.extras
        ):
            raise ValidationError("extras", "must be a tuple of (str, str) pairs")
        for name in ("derived_from", "episodes", "feedback_applied"):
            ids = getattr(self, name)
            if not isinstance(ids, tuple) or any(not isinstance(i, str) or not i for i in ids):
                raise ValidationError(name, "must be a tuple of non-empty id strings")
        if self.superseded_by is not None and (
            not isinstance(self.superseded_by, str) or not self.superseded_by
        ):
            raise ValidationError("superseded_by", "must be a non-empty id string or None")
        if self.id is not None and (not isinstance(self.id, str) or not self.id):
            raise ValidationError("id", "must be a non-empty string or None")
        if self.active and self.valid_to is not None:
            raise ValidationError("active", "an active unit cannot have valid_to set")
        if self.disputed is not None and not isinstance(self.disputed, Dispute):
            raise ValidationError("disputed", "must be a Dispute or None")

    @property
    def slot(self) -> tuple[str, str, str]:
        """The versioning slot: (user, normalized subject, normalized attribute)."""
        return (self.source.user, self.subject.casefold(), self.attribute.casefold())

    @property
    def content_hash(self) -> str:
        """Identity of what is said (not when or how often): drives idempotence and dedupe."""
        return sha256_hex(
            [self.source.tenant, self.source.user, self.kind, *self.slot[1:], self.value.strip()]
        )

    @property
    def text(self) -> str:
        """The sentence indexed for retrieval."""
        return f"{self.subject} {self.attribute}: {self.value}"

    def superseded(self, at: datetime, by: str | None = None) -> MemoryUnit:
        """This version closed at ``at`` (kept as history), by version ``by`` if known."""
        return replace(
            self,
            active=False,
            valid_to=max(at, self.valid_from),
            superseded_by=by if by is not None else self.superseded_by,
        )

    def doubted(self, dispute: Dispute) -> MemoryUnit:
        """This fact put in doubt by ``dispute``: its confidence lowered to
        :data:`DISPUTED_FACTOR` of what it was (once, however often it is disputed)."""
        before = self.disputed.confidence if self.disputed else self.source.confidence
        kept = replace(dispute, confidence=before)
        lowered = round(before * DISPUTED_FACTOR, 4)
        return replace(self, disputed=kept, source=replace(self.source, confidence=lowered))

    def confirmed(self) -> MemoryUnit:
        """This fact said again after a doubt: undisputed, its confidence given back."""
        if self.disputed is None:
            return self
        source = replace(self.source, confidence=self.disputed.confidence)
        return replace(self, disputed=None, source=source)

    def with_feedback(self, event_id: str) -> MemoryUnit:
        """This unit having taken the importance step of feedback event ``event_id``."""
        return replace(self, feedback_applied=noted_feedback(self.feedback_applied, event_id))

    def with_episodes(self, ids: tuple[str, ...]) -> MemoryUnit:
        """This unit also sourced from ``ids`` (kept in order, no repeats, bounded:
        the first and the latest ``MAX_EPISODES - 1`` stay)."""
        merged = tuple(dict.fromkeys((*self.episodes, *ids)))
        if len(merged) > MAX_EPISODES:
            merged = (merged[0], *merged[-(MAX_EPISODES - 1) :])
        return self if merged == self.episodes else replace(self, episodes=merged)

    @property
    def is_summary(self) -> bool:
        """True for a consolidation summary (never summarized again)."""
        return bool(self.derived_from)

    def accessed(self, at: datetime) -> MemoryUnit:
        """This unit read or re-asserted at ``at`` (access stats bumped)."""
        return replace(self, last_accessed=at, access_count=self.access_count + 1)


def unit_from_candidate(
    candidate: Candidate, turn: Turn, *, episodes: tuple[str, ...] = ()
) -> MemoryUnit:
    """The memory unit ``candidate`` becomes, sourced from ``turn`` (stored as the
    episodes ``episodes``).

    Without its own ``valid_from`` the unit starts when the turn was observed.
    """
    source = UnitSource(
        tenant=turn.tenant,
        user=turn.user,
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        confidence=candidate.confidence,
    )
    return MemoryUnit(
        subject=candidate.subject,
        attribute=candidate.attribute,
        value=candidate.value,
        kind=candidate.kind,
        source=source,
        observed_at=turn.observed_at,
        valid_from=candidate.valid_from or turn.observed_at,
        importance=candidate.importance,
        extras=candidate.extras,
        episodes=episodes,
    )


def noted_feedback(applied: Sequence[str], event_id: str) -> tuple[str, ...]:
    """``applied`` (feedback event ids, oldest first) with ``event_id`` last; the
    newest :data:`FEEDBACK_KEPT` stay (pure)."""
    ids = (*(i for i in applied if i != event_id), event_id)
    return ids[-FEEDBACK_KEPT:]
