"""The feedback report: which intents and questions keep missing the right memory
(corrected, abandoned, rated 1-2) and which memories are retrieved and ignored, built
from the processed events of :func:`memstrata.feedback.events.feedback_records`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memstrata.feedback.events import FeedbackRecord

_QUESTION_NOISE = re.compile(r"[\s?？!！.。]+$")
_SPACES = re.compile(r"\s+")


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
