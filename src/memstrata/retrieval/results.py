"""Values of multi-route retrieval: the query, each retrieved item, the result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from memstrata.errors import ValidationError
from memstrata.longterm.points import COLLECTIONS
from memstrata.retrieval.routes import Route
from memstrata.retrieval.timeexpr import TimeWindow
from memstrata.validation import check_id, check_positive_int, check_text

MAX_RETRIEVE_K = 200
MAX_RECENT_TURNS = 20


@dataclass(frozen=True, slots=True)
class RetrievalQuery:
    """One retrieval: what to find, for whom, how many, and when it is asked.

    ``now`` (timezone-aware) resolves relative dates in the question and ages the
    memories for time decay; ``recent`` are the last conversation turns (the intent
    route); ``as_of`` (timezone-aware) reads memories as they stood then: what had
    been said by then, and the fact versions valid at that instant (``types`` must
    then admit ``history``). Validated on construction; errors name the field.
    """

    text: str
    tenant: str
    user: str | None = None
    k: int = 10
    now: datetime | None = None
    recent: tuple[str, ...] = ()
    collection: str = "memories"
    types: tuple[str, ...] | None = None
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        check_text("text", self.text)
        check_id("tenant", self.tenant)
        if self.user is not None:
            check_id("user", self.user)
        check_positive_int("k", self.k, maximum=MAX_RETRIEVE_K)
        if self.now is not None and (not isinstance(self.now, datetime) or self.now.tzinfo is None):
            raise ValidationError("now", "must be a timezone-aware datetime")
        if not isinstance(self.recent, tuple) or len(self.recent) > MAX_RECENT_TURNS:
            raise ValidationError("recent", f"must be a tuple of at most {MAX_RECENT_TURNS} turns")
        for i, turn in enumerate(self.recent):
            if not isinstance(turn, str):
                raise ValidationError(f"recent[{i}]", "must be a string")
        if self.collection not in COLLECTIONS:
            raise ValidationError("collection", f"must be one of {', '.join(COLLECTIONS)}")
        if self.types is not None:
            if not isinstance(self.types, tuple) or not self.types:
                raise ValidationError("types", "must be a non-empty tuple or None")
            for name in self.types:
                check_id("types", name)
        if self.as_of is not None and (
            not isinstance(self.as_of, datetime) or self.as_of.tzinfo is None
        ):
            raise ValidationError("as_of", "must be a timezone-aware datetime")


class Signals(NamedTuple):
    """What an item's confidence is computed from, each in [0, 1]
    (:mod:`memstrata.retrieval.confidence`)."""

    cosine: float
    """The dense cosine to the question, by its language's route (MiniLM's scale)."""
    coverage: float
    """The share of the question's BM25 terms the item (with its facts) holds."""
    attribute: float
    """1: the item holds an attribute the question asks or implies."""
    entity: float
    """1: the item holds a name or number the question names."""
    in_window: float
    """1: said inside the time window the question names."""
    outside_window: float
    """1: the question names a time window and the item was said outside it."""
    recency: float
    """1 / (1 + age in days / 30): 1 today, 0.5 a month ago."""


@dataclass(frozen=True, slots=True, eq=False)
class RetrievedItem:
    """One retrieved memory with the evidence for its rank.

    ``score`` is the final score (comparable within one result); ``cosine`` the
    dense similarity to the raw query (the confidence signal; for a fact brought in by
    the episode it was said in, the better of its own and the episode's); ``routes``
    the query routes that found it (``episode`` for a fact reached through its
    episode); ``in_time_window`` whether it was observed inside the question's time
    window (None when the question names no time). ``superseded_by`` is set on an
    episode whose content a newer fact has replaced (the fact's id: the episode is
    the past) and on a superseded fact version.
    """

    id: str
    score: float
    cosine: float
    low_confidence: bool
    routes: tuple[str, ...]
    payload: Mapping[str, Any]
    observed_at: datetime | None
    in_time_window: bool | None
    superseded_by: str | None = None
    facts: tuple[RetrievedItem, ...] = ()
    """For an episode: the current facts extracted from it (or that replaced what it
    said), best first."""
    cosine_route: str = "dense"
    """The named dense vector ``cosine`` was measured with: ``dense`` (MiniLM) or
    ``multilingual`` (mapped onto MiniLM's scale, :mod:`memstrata.retrieval.languages`)."""
    confidence: float | None = None
    """The calibrated confidence in [0, 1] (:mod:`memstrata.retrieval.confidence`),
    which ``low_confidence`` reads; None: not graded (an L2 cached read, a read
    ranked by BM25 alone), then ``cosine`` is all there is."""
    signals: Signals | None = None
    """What ``confidence`` was computed from (None: not graded)."""

    @property
    def relevance(self) -> float:
        """The confidence when graded, else the cosine."""
        return self.cosine if self.confidence is None else self.confidence

    @property
    def text(self) -> str:
        """The stored text."""
        return str(self.payload.get("text", ""))

    @property
    def kind(self) -> str:
        """The payload type: ``episode``, ``fact``, ``event``, ``history`` (a closed
        fact version), ``knowledge``..."""
        return str(self.payload.get("type", ""))

    @property
    def is_history(self) -> bool:
        """A closed fact version (returned only with history or ``as_of`` reads)."""
        return self.kind == "history"


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """What :meth:`Retriever.retrieve` returns.

    ``l3_skipped``: L3 served nothing for this read, for the reason in
    ``l3_skip_reason``: ``below_threshold`` (every candidate was below the skip
    threshold: ``items`` is empty and the would-be items are in ``below_threshold``),
    or L3 could not be read: ``l3_timeout``, ``l3_unavailable``, ``circuit_open``
    (``items`` are then the user's cached reads from L2 that fit the question, route
    ``l2_cache``; docs/service.md, "When L3 is slow or down"). Either way the caller
    builds its context from L1/L2 and can say why.
    """

    items: tuple[RetrievedItem, ...]
    below_threshold: tuple[RetrievedItem, ...]
    l3_skipped: bool
    time_window: TimeWindow | None
    routes: tuple[Route, ...]
    l3_skip_reason: str | None = None
    """Why ``l3_skipped`` (None when L3 served this read)."""
    dense_skip_reason: str | None = None
    """Set when the query could not be embedded (``embedder_failed``,
    ``embedder_timeout``, ``embedder_circuit_open``): BM25 alone ranked, so every
    item's cosine is unknown (0) and every item is flagged low-confidence."""
    warnings: tuple[str, ...] = ()
    """What this read could not see though L3 answered, each a sentence ending in its
    code: ``[multilingual_pending]``, a Chinese or mixed question over memories whose
    multilingual vectors are still being computed (:mod:`memstrata.longterm.catchup`)."""

    def current_facts(self) -> tuple[RetrievedItem, ...]:
        """Every current fact or event in ``items``, found on its own or carried by
        an episode, once each, in rank order."""
        seen: dict[str, RetrievedItem] = {}
        for item in self.items:
            for found in (item, *item.facts):
                if found.kind in ("fact", "event") and found.id not in seen:
                    seen[found.id] = found
        return tuple(seen.values())
