"""Values of the extraction stage: the turn read, and the candidates found in it.

Both are frozen and validated on construction, so a malformed value can never reach the
versioning stage. A :class:`Candidate` carries exactly what a memory unit needs beyond
its source (``memstrata.memory.units.unit_from_candidate`` makes that conversion). This
package is a leaf of the write path: it imports nothing of ``memstrata.memory``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memstrata.errors import ValidationError
from memstrata.validation import check_id, check_text

UnitKind = Literal["fact", "event"]
UNIT_KINDS: frozenset[str] = frozenset({"fact", "event"})
Change = Literal["state", "correct", "remove", "dispute"]
"""What a fact candidate does to its slot: ``state`` adds (a set-valued attribute) or
supersedes as usual; ``correct`` is an explicit correction ("Sorry, I got that wrong:
...", 不对，我记错了): it replaces what the slot holds, near-duplicate or not;
``remove`` takes its value out of the slot ("not peanuts", 我不再对花生过敏);
``dispute`` says the slot's current value is in doubt without giving a new one ("I
changed jobs", 我搬家了): its value is the words that said so, and the write path marks
the active fact disputed instead of storing it (:mod:`memstrata.extract.thread`)."""
CHANGES: frozenset[str] = frozenset({"state", "correct", "remove", "dispute"})
MAX_PREVIOUS_TURNS = 8
"""The most earlier turns of its thread a turn carries to the extractor."""
MAX_VALUE_CHARS = 4_000
"""The longest value a candidate (and so a memory unit) may carry."""

Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool"})

# Same limit MemoryUnit applies to subjects and attributes: a candidate that passes here
# can always become a unit.
MAX_NAME_CHARS = 128
MAX_EXTRA_LABEL_CHARS = 64
MAX_EXTRA_VALUE_CHARS = 256


def check_aware(field: str, value: Any) -> datetime:
    """Return ``value`` if it is a timezone-aware datetime."""
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field, "must be timezone-aware")
    return value


def check_name(field: str, value: Any) -> str:
    """Subjects and attributes: short, non-blank, no surrounding whitespace."""
    text = check_text(field, value, max_chars=MAX_NAME_CHARS)
    if text != text.strip():
        raise ValidationError(field, "must not start or end with whitespace")
    return text


def check_unit_interval(field: str, value: Any) -> float:
    """Return ``value`` as float if it is a finite number within [0, 1] (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(field, "must be a finite number within [0, 1]")
    return float(value)


def check_extras(field: str, value: Any) -> tuple[tuple[str, str], ...]:
    """Return ``value`` if it is a tuple of non-blank ``(label, value)`` string pairs."""
    if not isinstance(value, tuple):
        raise ValidationError(field, "must be a tuple of (label, value) pairs")
    for index, pair in enumerate(value):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ValidationError(f"{field}[{index}]", "must be a (label, value) pair")
        check_name(f"{field}[{index}].label", pair[0])
        if len(pair[0]) > MAX_EXTRA_LABEL_CHARS:
            raise ValidationError(f"{field}[{index}].label", "is too long")
        check_text(f"{field}[{index}].value", pair[1], max_chars=MAX_EXTRA_VALUE_CHARS)
    return value


@dataclass(frozen=True, slots=True)
class PriorFact:
    """A fact stored from an earlier turn of the thread: ``(subject, attribute) =
    value`` as it was written then (it may have been superseded since)."""

    subject: str
    attribute: str
    value: str

    def __post_init__(self) -> None:
        check_name("subject", self.subject)
        check_name("attribute", self.attribute)
        check_text("value", self.value, max_chars=MAX_VALUE_CHARS)


@dataclass(frozen=True, slots=True)
class PriorTurn:
    """An earlier turn of the same thread, with the facts stored from it: what a bare
    correction ("不对，是6月3号。", "I meant 10,000") or "me too" refers to."""

    text: str
    role: Role
    facts: tuple[PriorFact, ...] = ()

    def __post_init__(self) -> None:
        check_text("text", self.text)
        if self.role not in ROLES:
            raise ValidationError("role", f"must be one of {sorted(ROLES)}")
        if not isinstance(self.facts, tuple) or any(
            not isinstance(f, PriorFact) for f in self.facts
        ):
            raise ValidationError("facts", "must be a tuple of PriorFact")


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, as the write pipeline received it.

    ``previous``: the last few turns of its thread, oldest first, with the facts
    stored from them (the write path passes them; empty for a text remembered
    outside a conversation). The extractor reads a turn in its conversation with
    them (:mod:`memstrata.extract.thread`)."""

    text: str
    role: Role
    tenant: str
    user: str
    session_id: str
    turn_id: str
    observed_at: datetime
    previous: tuple[PriorTurn, ...] = ()

    def __post_init__(self) -> None:
        check_text("text", self.text)
        if self.role not in ROLES:
            raise ValidationError("role", f"must be one of {sorted(ROLES)}")
        check_id("tenant", self.tenant)
        check_id("user", self.user)
        check_id("session_id", self.session_id)
        check_id("turn_id", self.turn_id)
        check_aware("observed_at", self.observed_at)
        if not isinstance(self.previous, tuple) or any(
            not isinstance(p, PriorTurn) for p in self.previous
        ):
            raise ValidationError("previous", "must be a tuple of PriorTurn")
        if len(self.previous) > MAX_PREVIOUS_TURNS:
            raise ValidationError("previous", f"holds at most {MAX_PREVIOUS_TURNS} turns")


@dataclass(frozen=True, slots=True)
class Candidate:
    """Something a turn says that may become a memory unit.

    ``extras`` holds verbatim never-compress values found next to it (order ids,
    amounts, dates) as ``(label, value)`` pairs; ``valid_from`` is set only when the
    text says when the fact or event started (otherwise the turn's time is used);
    ``change`` (facts only) says whether it states, corrects or removes a value
    (:data:`Change`).
    """

    subject: str
    attribute: str
    value: str
    kind: UnitKind
    confidence: float
    importance: float
    extras: tuple[tuple[str, str], ...] = ()
    valid_from: datetime | None = None
    change: Change = "state"

    def __post_init__(self) -> None:
        check_name("subject", self.subject)
        check_name("attribute", self.attribute)
        check_text("value", self.value, max_chars=MAX_VALUE_CHARS)
        if self.kind not in UNIT_KINDS:
            raise ValidationError("kind", f"must be one of {sorted(UNIT_KINDS)}")
        check_unit_interval("confidence", self.confidence)
        check_unit_interval("importance", self.importance)
        check_extras("extras", self.extras)
        if self.valid_from is not None:
            check_aware("valid_from", self.valid_from)
        if self.change not in CHANGES:
            raise ValidationError("change", f"must be one of {sorted(CHANGES)}")
        if self.change != "state" and self.kind != "fact":
            raise ValidationError("change", "only a fact corrects, removes or disputes a value")
