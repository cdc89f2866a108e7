"""Feedback events: one decision and the user's follow-up, as the write queue carries
them, what each asks of memory, and what the tenant's stream keeps once processed.

Below both the decision layer (which builds an event from a trace card) and the write
path (whose handler applies :func:`feedback_plan`): pure values and codecs, plus the
one read of the processed-events stream (:func:`feedback_records`).

* confirmed, or a rating of 4-5: every memory the reply used moves ``confirm`` of the
  way to importance 1 (an access moves 0.05); every memory retrieved but not used
  moves ``ignored`` of the way to 0;
* corrected, or a rating of 1-2: the used memories move ``correct`` of the way to 0,
  the memories named ``wrong`` are closed (no longer current; a set-valued fact loses
  only the wrong value, which stays in history: ``memstrata.write.removals``), and the
  correction's text becomes memory through the extraction path, sourced from the event (session
  :data:`FEEDBACK_SESSION`, turn the event id): its fact supersedes the used fact of
  the same subject and attribute through the slot versioning;
* abandoned: the used memories move ``abandon`` of the way to 0;
* a rating of 3 changes nothing.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memstrata.errors import ValidationError
from memstrata.validation import MAX_CORRECTION_CHARS, check_id, check_text
from memstrata.working.redis_errors import redis_errors

KIND_FEEDBACK = "feedback"
"""The write-queue entry kind of a feedback event."""
FeedbackKind = Literal["confirmed", "corrected", "abandoned", "rating"]
FEEDBACK_KINDS: tuple[FeedbackKind, ...] = ("confirmed", "corrected", "abandoned", "rating")
Outcome = Literal["positive", "negative", "abandoned", "neutral"]
UsedBy = Literal["caller", "reply", "card"]
"""Where ``used`` came from: the caller, the CER matcher on the reply, or the card."""
USED_BY: tuple[UsedBy, ...] = ("caller", "reply", "card")
FEEDBACK_SESSION = "feedback"
"""The session id of the episode and units a correction becomes (the turn id is the
event id), so ``source.label`` reads ``turn:feedback/<event id>``."""
MAX_STREAM_EVENTS = 100_000
"""Feedback events kept per tenant (``XADD MAXLEN ~``)."""
DONE_TTL_S = 7 * 86_400
"""How long a processed event's marker stops a replay from applying it twice."""
RECORD_TEXT_CHARS = 300
"""The question and the correction as the event stream keeps them (the reply stays on
the trace card)."""
MEMORY_TYPES = frozenset({"fact", "event", "episode"})


def new_event_id(at: float) -> str:
    """A new event id: sortable by time (epoch ``at``), then random."""
    return f"{max(0, int(at * 1000)):012x}{uuid.uuid4().hex[:16]}"


def stream_key(tenant: str) -> str:
    """The tenant's stream of processed feedback events."""
    return f"{{feedback:{tenant}}}:events"


def done_key(tenant: str, event_id: str) -> str:
    """Set once an event's effects are applied (same hash tag as the stream)."""
    return f"{{feedback:{tenant}}}:done:{event_id}"


@dataclass(frozen=True, slots=True)
class FeedbackSteps:
    """How far one event moves importance (fractions of the way to 1 or to 0)."""

    confirm: float = 0.3
    """A used memory the user confirmed (an access moves 0.05)."""
    ignored: float = 0.1
    """A memory retrieved for a confirmed reply but not used in it."""
    correct: float = 0.3
    """A used memory the user corrected."""
    abandon: float = 0.1
    """A used memory of a step the user abandoned."""

    def __post_init__(self) -> None:
        for name in ("confirm", "ignored", "correct", "abandon"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0.0 <= value <= 1.0
            ):
                raise ValidationError(f"steps.{name}", "must be a number within [0, 1]")


# --- validation -------------------------------------------------------------------------


def check_feedback(kind: Any, rating: Any, correction: Any) -> FeedbackKind:
    """The event's kind, after checking that the rating and the correction fit it;
    ValidationError names the field."""
    if kind not in FEEDBACK_KINDS:
        raise ValidationError("kind", f"must be one of {', '.join(FEEDBACK_KINDS)}")
    checked: FeedbackKind = kind
    if checked == "rating":
        if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
            raise ValidationError("rating", "must be an integer from 1 to 5")
    elif rating is not None:
        raise ValidationError("rating", "only a 'rating' event carries a rating")
    if not isinstance(correction, str):
        raise ValidationError("correction", f"must be a string, got {type(correction).__name__}")
    if checked == "corrected":
        check_text("correction", correction, max_chars=MAX_CORRECTION_CHARS)
    elif correction:
        raise ValidationError("correction", "only a 'corrected' event carries a correction")
    return checked


def check_ids(field_name: str, ids: Any, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    """``ids`` as a tuple without repeats, each one of ``allowed``."""
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise ValidationError(field_name, "must be a list of memory ids")
    known = set(allowed)
    for i, value in enumerate(ids):
        check_id(f"{field_name}[{i}]", value)
        if value not in known:
            raise ValidationError(field_name, f"{value} is not {what} of this decision")
    return tuple(dict.fromkeys(ids))


def outcome_of(kind: str, rating: int | None) -> Outcome:
    """Confirmed or rated 4-5: positive; corrected or rated 1-2: negative."""
    if kind == "confirmed" or (kind == "rating" and rating is not None and rating >= 4):
        return "positive"
    if kind == "corrected" or (kind == "rating" and rating is not None and rating <= 2):
        return "negative"
    return "abandoned" if kind == "abandoned" else "neutral"


# --- the event ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeedbackEvent:
    """One decision and the user's follow-up, as the write queue carries it. Every text
    has passed the gateway (the card's when it was written, the correction's in
    ``engine.feedback``)."""

    id: str
    tenant: str
    card_id: str
    session_id: str
    kind: FeedbackKind
    at: float
    """When the feedback was given (epoch seconds, engine clock)."""
    intent: str
    route: str
    question: str = ""
    reply: str = ""
    correction: str = ""
    rating: int | None = None
    user: str | None = None
    """The decision's user (needed to remember a correction)."""
    memory_ids: tuple[str, ...] = ()
    episode_ids: tuple[str, ...] = ()
    used: tuple[str, ...] = ()
    used_by: UsedBy = "card"
    wrong: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("id", "tenant", "card_id", "session_id"):
            check_id(name, getattr(self, name))
        if self.user is not None:
            check_id("user", self.user)
        check_feedback(self.kind, self.rating, self.correction)
        if self.used_by not in USED_BY:
            raise ValidationError("used_by", f"must be one of {', '.join(USED_BY)}")
        if isinstance(self.at, bool) or not isinstance(self.at, int | float):
            raise ValidationError("at", "must be epoch seconds")
        if not math.isfinite(self.at):
            raise ValidationError("at", "must be finite")
        for name in ("intent", "route", "question", "reply"):
            if not isinstance(getattr(self, name), str):
                raise ValidationError(name, "must be a string")
        for name in ("memory_ids", "episode_ids", "used", "wrong"):
            values = getattr(self, name)
            if not isinstance(values, tuple):
                raise ValidationError(name, "must be a tuple of ids")
            for i, value in enumerate(values):
                check_id(f"{name}[{i}]", value)

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.kind, self.rating)

    @property
    def retrieved(self) -> tuple[str, ...]:
        """Every memory and episode the decision was made from."""
        return tuple(dict.fromkeys((*self.memory_ids, *self.episode_ids)))

    @property
    def ignored(self) -> tuple[str, ...]:
        """Retrieved but not used (none when what was used is not known)."""
        if self.used_by == "card":
            return ()
        skip = {*self.used, *self.wrong}
        return tuple(i for i in self.retrieved if i not in skip)

    def as_payload(self) -> dict[str, Any]:
        """The queue payload (plain JSON)."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "user": self.user,
            "card_id": self.card_id,
            "session_id": self.session_id,
            "kind": self.kind,
            "rating": self.rating,
            "at": self.at,
            "intent": self.intent,
            "route": self.route,
            "question": self.question,
            "reply": self.reply,
            "correction": self.correction,
            "memory_ids": list(self.memory_ids),
            "episode_ids": list(self.episode_ids),
            "used": list(self.used),
            "used_by": self.used_by,
            "wrong": list(self.wrong),
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> FeedbackEvent:
        """Rebuild an event from :meth:`as_payload`; ValidationError names the field."""
        values: dict[str, Any] = {}
        for name in ("id", "tenant", "card_id", "session_id", "kind", "intent", "route"):
            values[name] = _string(payload, name)
        for name in ("question", "reply", "correction"):
            values[name] = _string(payload, name, default="")
        for name in ("memory_ids", "episode_ids", "used", "wrong"):
            values[name] = _ids(payload, name)
        at = payload.get("at")
        if isinstance(at, bool) or not isinstance(at, int | float):
            raise ValidationError("at", "must be epoch seconds")
        rating = payload.get("rating")
        user = payload.get("user")
        if user is not None and not isinstance(user, str):
            raise ValidationError("user", "must be a string or null")
        return cls(
            **values,
            at=float(at),
            rating=rating,
            user=user,
            used_by=payload.get("used_by", "card"),
        )

    def record(self, created: Sequence[str] = ()) -> FeedbackRecord:
        """What the event stream keeps of this event once processed; ``created``: the
        memories its correction became."""
        return FeedbackRecord(
            id=self.id,
            at=self.at,
            card_id=self.card_id,
            session_id=self.session_id,
            intent=self.intent,
            route=self.route,
            kind=self.kind,
            rating=self.rating,
            question=self.question[:RECORD_TEXT_CHARS],
            correction=self.correction[:RECORD_TEXT_CHARS],
            used=self.used,
            used_known=self.used_by != "card",
            ignored=self.ignored,
            wrong=self.wrong,
            created=tuple(created),
            user=self.user,
        )


def _string(payload: Mapping[str, Any], name: str, *, default: str | None = None) -> str:
    value = payload.get(name, default)
    if not isinstance(value, str):
        raise ValidationError(name, "must be a string")
    return value


def _ids(payload: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = payload.get(name, ())
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError(name, "must be a list of ids")
    if not all(isinstance(i, str) for i in value):
        raise ValidationError(name, "must be a list of ids")
    return tuple(value)


# --- what an event does -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeedbackPlan:
    """The memory changes one event asks for.

    ``steps``: (id, signed step) - a positive step moves importance that fraction of the
    way to 1, a negative one that fraction of the way to 0; ``invalidate``: memories to
    close as wrong (those still current once the correction is written);
    ``remember``: the correction to write as new memory ("" for none).
    """

    steps: tuple[tuple[str, float], ...] = ()
    invalidate: tuple[str, ...] = ()
    remember: str = ""


def feedback_plan(event: FeedbackEvent, steps: FeedbackSteps | None = None) -> FeedbackPlan:
    """The changes ``event`` asks for (module docstring)."""
    steps = steps or FeedbackSteps()
    outcome = event.outcome
    wrong = set(event.wrong)
    used = [i for i in event.used if i not in wrong]
    changes: list[tuple[str, float]] = []
    if outcome == "positive":
        changes += [(i, steps.confirm) for i in used]
        changes += [(i, -steps.ignored) for i in event.ignored]
    elif outcome == "negative":
        changes += [(i, -steps.correct) for i in used]
    elif outcome == "abandoned":
        changes += [(i, -steps.abandon) for i in used]
    return FeedbackPlan(
        steps=tuple((i, s) for i, s in changes if s != 0.0),
        invalidate=event.wrong if outcome == "negative" else (),
        remember=event.correction,
    )


# --- the report ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeedbackRecord:
    """One processed event as the tenant's stream keeps it."""

    id: str
    at: float
    card_id: str
    session_id: str
    intent: str
    route: str
    kind: str
    rating: int | None
    question: str
    correction: str
    used: tuple[str, ...]
    used_known: bool
    ignored: tuple[str, ...]
    wrong: tuple[str, ...]
    created: tuple[str, ...]
    user: str | None = None
    """The decision's user (what ``forget`` of that user finds the event by)."""

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.kind, self.rating)

    @property
    def missed(self) -> bool:
        """The step missed the right memory: corrected, abandoned or rated 1-2."""
        return self.outcome in ("negative", "abandoned")

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "at": self.at,
            "card_id": self.card_id,
            "session_id": self.session_id,
            "intent": self.intent,
            "route": self.route,
            "kind": self.kind,
            "rating": self.rating,
            "question": self.question,
            "correction": self.correction,
            "used": list(self.used),
            "used_known": self.used_known,
            "ignored": list(self.ignored),
            "wrong": list(self.wrong),
            "created": list(self.created),
            "user": self.user,
        }

    def fields(self) -> dict[str, str]:
        """The stream entry's fields."""
        return {"event": json.dumps(self.as_dict(), ensure_ascii=False, sort_keys=True)}

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> FeedbackRecord | None:
        """The record of a stream entry (None for one this version cannot read)."""
        try:
            data = json.loads(fields["event"])
            rating = data.get("rating")
            return cls(
                id=str(data["id"]),
                at=float(data["at"]),
                card_id=str(data["card_id"]),
                session_id=str(data["session_id"]),
                intent=str(data["intent"]),
                route=str(data["route"]),
                kind=str(data["kind"]),
                rating=None if rating is None else int(rating),
                question=str(data.get("question", "")),
                correction=str(data.get("correction", "")),
                used=tuple(str(i) for i in data.get("used", ())),
                used_known=bool(data.get("used_known", False)),
                ignored=tuple(str(i) for i in data.get("ignored", ())),
                wrong=tuple(str(i) for i in data.get("wrong", ())),
                created=tuple(str(i) for i in data.get("created", ())),
                user=None if data.get("user") is None else str(data["user"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class FeedbackReceipt:
    """What ``engine.feedback`` did: the event queued (``queued`` False, with the error
    type, when the queue could not take it), and what it will change."""

    event_id: str
    card_id: str
    kind: FeedbackKind
    queued: bool
    entry_ids: tuple[str, ...]
    used: tuple[str, ...]
    used_by: UsedBy
    ignored: tuple[str, ...]
    wrong: tuple[str, ...]
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "card_id": self.card_id,
            "kind": self.kind,
            "queued": self.queued,
            "entry_ids": list(self.entry_ids),
            "used": list(self.used),
            "used_by": self.used_by,
            "ignored": list(self.ignored),
            "wrong": list(self.wrong),
            "error": self.error,
        }


def feedback_records(client: Any, tenant: str, *, page: int = 1000) -> list[FeedbackRecord]:
    """Every processed feedback event the tenant's stream holds, oldest first (records
    this version cannot read are skipped)."""
    records: list[FeedbackRecord] = []
    low = "-"
    with redis_errors("redis read feedback events"):
        while True:
            rows = client.xrange(stream_key(tenant), min=low, max="+", count=page)
            for _, fields in rows:
                record = FeedbackRecord.from_fields(fields)
                if record is not None:
                    records.append(record)
            if len(rows) < page:
                return records
            low = f"({rows[-1][0]}"


def delete_user_events(
    client: Any, tenant: str, user: str, card_ids: Sequence[str] = (), *, page: int = 1000
) -> int:
    """Delete the processed feedback events of ``user`` in ``tenant`` (those naming the
    user, or one of the user's trace cards ``card_ids``: events kept before records
    named their user) and their done markers; how many. XDEL leaves an entry's bytes
    in its stream node (and in every rewrite of the AOF): the caller rebuilds a stream
    that lost entries (``forget`` does, as for the write queue's streams)."""
    check_id("tenant", tenant)
    check_id("user", user)
    cards = set(card_ids)
    stream = stream_key(tenant)
    doomed: list[tuple[str, str]] = []
    low = "-"
    with redis_errors("forget feedback events"):
        while True:
            rows = client.xrange(stream, min=low, max="+", count=page)
            for entry_id, fields in rows:
                record = FeedbackRecord.from_fields(fields)
                if record is not None and (record.user == user or record.card_id in cards):
                    doomed.append((str(entry_id), record.id))
            if len(rows) < page:
                break
            low = f"({rows[-1][0]}"
        for start in range(0, len(doomed), page):
            chunk = doomed[start : start + page]
            pipe = client.pipeline(transaction=False)
            pipe.xdel(stream, *(entry for entry, _ in chunk))
            pipe.delete(*(done_key(tenant, event) for _, event in chunk))
            pipe.execute()
    return len(doomed)
