"""The feedback loop (seed 003 §4.3): what a user's follow-up to a decision does to
memory, decided here without I/O.

A feedback event records one decision (its trace card: the question, the intent and
route, the memories and episodes it retrieved, the reply) and the user's follow-up:
``confirmed``, ``corrected`` (with the correction's text), ``abandoned``, or a
``rating`` from 1 to 5. ``engine.feedback`` builds the event and puts it on the write
queue (entry kind :data:`KIND_FEEDBACK`); the queue's handler
(:mod:`memstrata.memory.handler`) applies :func:`feedback_plan`:

* confirmed, or a rating of 4-5: every memory the reply used moves ``confirm`` of the
  way to importance 1 (an access moves 0.05); every memory retrieved but not used
  moves ``ignored`` of the way to 0;
* corrected, or a rating of 1-2: the used memories move ``correct`` of the way to 0,
  the memories named ``wrong`` are closed (no longer current), and the correction's
  text becomes memory through the extraction path, sourced from the event (session
  :data:`FEEDBACK_SESSION`, turn the event id): its fact supersedes the used fact of
  the same subject and attribute through the slot versioning;
* abandoned: the used memories move ``abandon`` of the way to 0;
* a rating of 3 changes nothing.

Which memories the reply used is the caller's ``used`` when given, else the CER
matcher (:func:`memstrata.decision.consistency.context_used`) per L3 item of the
decision's bundle against its checked reply (:func:`used_in_reply`), else, when the
step is no longer held or its reply was never checked, every fact and event of the
card - and then nothing counts as ignored, since nothing is known to be.

Every processed event is appended to a bounded stream per tenant
(:func:`stream_key`), from which :func:`build_feedback_report` says which intents and
questions keep missing the right memory and which memories keep being retrieved
and ignored.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memstrata.decision.consistency import context_used
from memstrata.errors import ValidationError
from memstrata.frozen import thaw
from memstrata.router.bundle import ContextItem
from memstrata.validation import check_id, check_text

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
MAX_CORRECTION_CHARS = 4_000
MAX_STREAM_EVENTS = 100_000
"""Feedback events kept per tenant (``XADD MAXLEN ~``)."""
DONE_TTL_S = 7 * 86_400
"""How long a processed event's marker stops a replay from applying it twice."""
RECORD_TEXT_CHARS = 300
"""The question and the correction as the event stream keeps them (the reply stays on
the trace card)."""
MEMORY_TYPES = frozenset({"fact", "event", "episode"})
_QUESTION_NOISE = re.compile(r"[\s?？!！.。]+$")
_SPACES = re.compile(r"\s+")


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


def used_in_reply(reply: str, items: Iterable[ContextItem]) -> tuple[str, ...]:
    """The L3 memories and episodes among ``items`` that ``reply`` reflects, each judged
    on its own by the CER matcher (a value it holds, or a sentence of its text)."""
    used: list[str] = []
    for item in items:
        content = thaw(item.content)
        kind = content.get("type") if isinstance(content, dict) else None
        if item.provenance.layer == "L3" and kind in MEMORY_TYPES and context_used(reply, [item]):
            used.append(item.provenance.ref)
    return tuple(dict.fromkeys(used))


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
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class QuestionStats:
    """The events of one question (grouped case- and punctuation-insensitively)."""

    question: str
    events: int
    misses: int

    @property
    def miss_rate(self) -> float:
        return self.misses / self.events if self.events else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "events": self.events,
            "misses": self.misses,
            "miss_rate": round(self.miss_rate, 4),
        }


@dataclass(frozen=True, slots=True)
class IntentStats:
    """The events of one intent: how often its steps missed the right memory."""

    intent: str
    events: int
    confirmed: int
    corrected: int
    abandoned: int
    ratings: int
    low_ratings: int
    mean_rating: float | None
    questions: tuple[QuestionStats, ...] = ()

    @property
    def misses(self) -> int:
        """Corrected, abandoned or rated 1-2."""
        return self.corrected + self.abandoned + self.low_ratings

    @property
    def miss_rate(self) -> float:
        return self.misses / self.events if self.events else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "events": self.events,
            "confirmed": self.confirmed,
            "corrected": self.corrected,
            "abandoned": self.abandoned,
            "ratings": self.ratings,
            "low_ratings": self.low_ratings,
            "mean_rating": None if self.mean_rating is None else round(self.mean_rating, 3),
            "misses": self.misses,
            "miss_rate": round(self.miss_rate, 4),
            "questions": [q.as_dict() for q in self.questions],
        }


@dataclass(frozen=True, slots=True)
class IgnoredMemory:
    """A memory retrieved for replies that did not use it."""

    id: str
    ignored: int
    used: int
    text: str | None
    """Its (sanitized) text in L3; None when it is gone."""

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ignored": self.ignored, "used": self.used, "text": self.text}


@dataclass(frozen=True, slots=True)
class FeedbackReport:
    """Which query types keep missing the right memory, and which memories keep being
    retrieved and ignored, over the events since ``since`` (epoch seconds)."""

    tenant: str
    since: float | None
    events: int
    by_kind: Mapping[str, int] = field(default_factory=dict)
    intents: tuple[IntentStats, ...] = ()
    """Worst first: highest miss rate, then most events."""
    ignored: tuple[IgnoredMemory, ...] = ()
    """Most often ignored first."""

    @property
    def corrected_share(self) -> float | None:
        """Corrections among the feedback events (not over all decisions: that is
        ``DecisionRates.correction_rate``)."""
        return self.by_kind.get("corrected", 0) / self.events if self.events else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "since": self.since,
            "events": self.events,
            "by_kind": dict(self.by_kind),
            "corrected_share": (
                None if self.corrected_share is None else round(self.corrected_share, 4)
            ),
            "intents": [i.as_dict() for i in self.intents],
            "ignored": [m.as_dict() for m in self.ignored],
        }


def question_key(question: str) -> str:
    """How questions are grouped: case-folded, spaces collapsed, end punctuation off."""
    return _QUESTION_NOISE.sub("", _SPACES.sub(" ", question.casefold()).strip())


def ignored_counts(records: Iterable[FeedbackRecord]) -> tuple[Counter[str], Counter[str]]:
    """Per memory: how many events retrieved it without using it, and how many used it
    (events whose use is known only)."""
    ignored: Counter[str] = Counter()
    used: Counter[str] = Counter()
    for record in records:
        if record.used_known:
            ignored.update(record.ignored)
            used.update(record.used)
    return ignored, used


def most_ignored(records: Sequence[FeedbackRecord], limit: int) -> tuple[str, ...]:
    """The ``limit`` memories ignored most often (ties: by id)."""
    ignored, _ = ignored_counts(records)
    ranked = sorted(ignored.items(), key=lambda entry: (-entry[1], entry[0]))
    return tuple(i for i, _ in ranked[:limit])


def build_feedback_report(
    tenant: str,
    records: Sequence[FeedbackRecord],
    *,
    since: float | None = None,
    texts: Mapping[str, str] | None = None,
    top: int = 20,
) -> FeedbackReport:
    """The report over ``records`` at or after ``since``; ``texts`` give the ignored
    memories' texts (from L3)."""
    chosen = sorted(
        (r for r in records if since is None or r.at >= since), key=lambda r: (r.at, r.id)
    )
    by_kind = Counter(r.kind for r in chosen)
    intents: list[IntentStats] = []
    for intent in sorted({r.intent for r in chosen}):
        mine = [r for r in chosen if r.intent == intent]
        ratings = [r.rating for r in mine if r.kind == "rating" and r.rating is not None]
        groups: dict[str, list[FeedbackRecord]] = {}
        for record in mine:
            groups.setdefault(question_key(record.question), []).append(record)
        questions = sorted(
            (
                QuestionStats(group[0].question, len(group), sum(r.missed for r in group))
                for group in groups.values()
            ),
            key=lambda q: (-q.miss_rate, -q.events, q.question),
        )
        intents.append(
            IntentStats(
                intent=intent,
                events=len(mine),
                confirmed=sum(r.kind == "confirmed" for r in mine),
                corrected=sum(r.kind == "corrected" for r in mine),
                abandoned=sum(r.kind == "abandoned" for r in mine),
                ratings=len(ratings),
                low_ratings=sum(rating <= 2 for rating in ratings),
                mean_rating=sum(ratings) / len(ratings) if ratings else None,
                questions=tuple(questions),
            )
        )
    intents.sort(key=lambda s: (-s.miss_rate, -s.events, s.intent))
    ignored, used = ignored_counts(chosen)
    texts = texts or {}
    return FeedbackReport(
        tenant=tenant,
        since=since,
        events=len(chosen),
        by_kind=dict(sorted(by_kind.items())),
        intents=tuple(intents),
        ignored=tuple(
            IgnoredMemory(i, ignored[i], used[i], texts.get(i)) for i in most_ignored(chosen, top)
        ),
    )


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
