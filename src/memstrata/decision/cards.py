"""Trace cards (docs/architecture.md, "Decisions and feedback"): one per decision, kept in
Valkey, bounded.

A card holds what an operator needs to replay a step: the route, the confidence and
its threshold, why L3 was skipped (or ranked by BM25 alone), the memory, episode and
knowledge ids used, the tool with its sanitized parameters, the gate's verdicts, who
confirmed or rejected a high-impact call and when, the fallbacks taken, the timings,
and, once the reply is checked, the consistency verdict and whether the step's
context was effective (CER).

Every field of a card passes the gateway as the card is stored
(:meth:`~memstrata.gateway.Sanitizer.sanitize_record`), with the raw texts it was
built from as context: an entity read out of "the password is Quokka5RavineB" is the
bare value, which no detector would call a password on its own, so whatever the
question was found to hold is removed from every other field too. The card's own
identifiers (id, tenant, session, user) are keys and are kept as they are: the
service refuses an identifier that holds a finding before anything is decided.

Keys (one hash tag per tenant, so a pipeline stays on one cluster slot)::

    {cards:<tenant>}:card:<id>          string  the card's JSON, expiring after the retention
    {cards:<tenant>}:time               zset    card id -> decided at (epoch s)
    {cards:<tenant>}:session:<sid>      zset    card id -> decided at, for one session
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

import redis
from redis.cluster import RedisCluster

from memstrata.errors import NotFoundError, ValidationError
from memstrata.gateway import Sanitizer
from memstrata.validation import check_id, check_positive_int
from memstrata.working.redis_errors import redis_errors

Consistency = Literal["unchecked", "consistent", "conflict"]
Confirmation = Literal["confirmed", "rejected"]
DEFAULT_RETENTION_S = 30 * 86_400
DEFAULT_MAX_CARDS = 100_000
MAX_QUERY = 10_000
CARD_LOCATION = "l2:cards"
_IDENTIFIERS = ("id", "tenant", "session_id", "user", "at")
_COMPUTED = ("effective", "at_iso", "confirmation_at_iso")


@dataclass(frozen=True, slots=True)
class TraceCard:
    """One decision, as an operator reads it back."""

    id: str
    tenant: str
    session_id: str
    step: int
    intent: str
    at: float
    route: str
    confidence: float
    threshold: float
    judged_by: str
    user: str = ""
    """The session's user (whose memories a correction changes)."""
    question: str = ""
    reasons: tuple[str, ...] = ()
    memory_ids: tuple[str, ...] = ()
    episode_ids: tuple[str, ...] = ()
    knowledge_ids: tuple[str, ...] = ()
    l2_keys: tuple[str, ...] = ()
    ask_for: tuple[str, ...] = ()
    tool: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    tool_outcome: str | None = None
    gate: tuple[Mapping[str, Any], ...] = ()
    attempts: tuple[Mapping[str, Any], ...] = ()
    fallbacks: tuple[str, ...] = ()
    timing_ms: Mapping[str, float] = field(default_factory=dict)
    reply: str = ""
    consistency: Consistency = "unchecked"
    conflicts: tuple[str, ...] = ()
    context_loaded: bool | None = None
    context_used: bool | None = None
    flags: tuple[str, ...] = ()
    l3_skip_reason: str | None = None
    """Why the step's bundle had nothing from L3: ``below_threshold``, or L3 could not
    be read (``l3_timeout``, ``l3_unavailable``, ``circuit_open``: decided from L2 and
    L1; docs/service.md, "When L3 is slow or down")."""
    dense_skip_reason: str | None = None
    """Why the step's L3 items were ranked by BM25 alone (``embedder_failed``,
    ``embedder_timeout``, ``embedder_circuit_open``)."""
    detected_intent: str | None = None
    """When the step was routed from the message alone: the registered intent the
    recognizer found closest (None: none, or the intent was named by the caller)."""
    intent_confidence: float | None = None
    """The recognizer's confidence in ``detected_intent``."""
    intent_fell_back: bool | None = None
    """True when the confidence was under the threshold and the step went to
    ``respond`` (``intent``)."""
    entities: tuple[Mapping[str, str], ...] = ()
    """The entities the message names: ``{"text", "kind", "value"}`` each."""
    confirmation: Confirmation | None = None
    """A high-impact call held for confirmation: ``confirmed`` (it ran) or
    ``rejected`` (it never ran); None while none was asked or answered."""
    confirmation_by: str = ""
    """Who confirmed or rejected the call: the engine caller's ``confirmed_by`` (by
    default the session's user, whom the agent asked), on the service the API key
    that called (``key-<key id>.<agent>``)."""
    confirmation_at: float | None = None
    """When it was confirmed or rejected (epoch s)."""

    @property
    def effective(self) -> bool | None:
        """The step's CER verdict: context loaded and used by a reply that does not
        contradict it (None until checked)."""
        if self.context_loaded is None or self.context_used is None:
            return None
        return self.consistency != "conflict" and self.context_loaded and self.context_used

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["params"] = dict(self.params)
        data["timing_ms"] = dict(self.timing_ms)
        data["gate"] = [dict(g) for g in self.gate]
        data["attempts"] = [dict(a) for a in self.attempts]
        data["entities"] = [dict(e) for e in self.entities]
        data["effective"] = self.effective
        data["at_iso"] = datetime.fromtimestamp(self.at).astimezone().isoformat()
        if self.confirmation_at is not None:
            data["confirmation_at_iso"] = (
                datetime.fromtimestamp(self.confirmation_at).astimezone().isoformat()
            )
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceCard:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        for name in (
            "reasons",
            "memory_ids",
            "episode_ids",
            "knowledge_ids",
            "l2_keys",
            "ask_for",
            "gate",
            "attempts",
            "fallbacks",
            "conflicts",
            "flags",
            "entities",
        ):
            values[name] = tuple(values.get(name, ()))
        return cls(**values)


class CardStore:
    """Trace cards of every tenant in Valkey/Redis (a client with decoded responses).

    At most ``max_cards`` per tenant (the oldest go first), each for at most
    ``retention_s``.
    """

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        retention_s: int = DEFAULT_RETENTION_S,
        max_cards: int = DEFAULT_MAX_CARDS,
        sanitizer: Sanitizer | None = None,
    ) -> None:
        self._redis = client
        self._sanitizer = sanitizer if sanitizer is not None else Sanitizer()
        self._retention_s = check_positive_int("retention_s", retention_s)
        self._max = check_positive_int("max_cards", max_cards)

    @staticmethod
    def _key(tenant: str, *parts: str) -> str:
        return ":".join((f"{{cards:{tenant}}}", *parts))

    @property
    def gateway(self) -> Sanitizer:
        """The sanitizer every card passes (feedback events built from cards use it too)."""
        return self._sanitizer

    def sanitized(self, card: TraceCard, context: Sequence[str] = ()) -> TraceCard:
        """``card`` with every field through the gateway, ``context`` being the raw
        texts it was built from (the module docstring)."""
        data = card.as_dict()
        kept = {name: data.pop(name) for name in _IDENTIFIERS}
        for name in _COMPUTED:
            data.pop(name, None)
        clean = self._sanitizer.sanitize_record(
            data, location=CARD_LOCATION, context=tuple(context)
        ).value
        return TraceCard.from_dict({**clean, **kept})

    def put(self, card: TraceCard, *, context: Sequence[str] = ()) -> TraceCard:
        """Store a new card (or a card's later state: same id, same time) after the
        gateway (:meth:`sanitized`); the card as stored."""
        card = self.sanitized(card, context)
        body = json.dumps(card.as_dict(), ensure_ascii=False, sort_keys=True)
        time_key = self._key(card.tenant, "time")
        session_key = self._key(card.tenant, "session", card.session_id)
        with redis_errors("redis write trace card"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.set(self._key(card.tenant, "card", card.id), body, ex=self._retention_s)
            pipe.zadd(time_key, {card.id: card.at})
            pipe.zadd(session_key, {card.id: card.at})
            pipe.expire(session_key, self._retention_s)
            pipe.zcard(time_key)
            size = int(pipe.execute()[-1])
            if size > self._max:
                dropped = cast(list[str], self._redis.zrange(time_key, 0, size - self._max - 1))
                pipe = self._redis.pipeline(transaction=False)
                pipe.zrem(time_key, *dropped)
                pipe.delete(*(self._key(card.tenant, "card", i) for i in dropped))
                pipe.execute()
        return card

    def get(self, tenant: str, card_id: str) -> TraceCard:
        check_id("card_id", card_id)
        with redis_errors("redis read trace card"):
            raw = self._redis.get(self._key(tenant, "card", card_id))
        if raw is None:
            raise NotFoundError(f"no trace card {card_id!r}")
        return TraceCard.from_dict(json.loads(cast(str, raw)))

    def query(
        self,
        tenant: str,
        *,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 100,
    ) -> tuple[TraceCard, ...]:
        """Cards in ``[since, until]`` (epoch s), oldest first, at most ``limit``."""
        check_positive_int("limit", limit, maximum=MAX_QUERY)
        if since is not None and until is not None and since > until:
            raise ValidationError("since", "must not be after until")
        key = (
            self._key(tenant, "time")
            if session_id is None
            else self._key(tenant, "session", session_id)
        )
        low = "-inf" if since is None else repr(float(since))
        high = "+inf" if until is None else repr(float(until))
        with redis_errors("redis query trace cards"):
            ids = cast(list[str], self._redis.zrangebyscore(key, low, high, start=0, num=limit))
            raws = cast(
                list[str | None],
                self._redis.mget([self._key(tenant, "card", i) for i in ids]) if ids else [],
            )
        return tuple(TraceCard.from_dict(json.loads(raw)) for raw in raws if raw is not None)


def cards_json(cards: Sequence[TraceCard]) -> str:
    """The cards as one JSON document (the export format)."""
    return json.dumps(
        {"cards": [card.as_dict() for card in cards]}, ensure_ascii=False, indent=2, sort_keys=True
    )


def delete_user_cards(client: Any, tenant: str, user: str, *, page: int = 500) -> tuple[str, ...]:
    """Delete every trace card of ``user`` in ``tenant`` (the card, its place in the
    tenant's and its session's time index); the ids deleted. Part of ``forget``: the
    values leave the disk when the server's files are rewritten after it."""
    check_id("tenant", tenant)
    check_id("user", user)
    check_positive_int("page", page, maximum=100_000)
    time_key = CardStore._key(tenant, "time")
    doomed: list[tuple[str, str]] = []
    with redis_errors("forget trace cards"):
        ids = cast(list[str], client.zrange(time_key, 0, -1))
        for start in range(0, len(ids), page):
            chunk = ids[start : start + page]
            raws = cast(
                list[str | None], client.mget([CardStore._key(tenant, "card", i) for i in chunk])
            )
            for card_id, raw in zip(chunk, raws, strict=True):
                if raw is None:
                    continue
                data = json.loads(raw)
                if data.get("user") == user:
                    doomed.append((card_id, str(data.get("session_id", ""))))
        for start in range(0, len(doomed), page):
            chunk_ids = [card_id for card_id, _ in doomed[start : start + page]]
            pipe = client.pipeline(transaction=False)
            pipe.delete(*(CardStore._key(tenant, "card", i) for i in chunk_ids))
            pipe.zrem(time_key, *chunk_ids)
            for card_id, session in doomed[start : start + page]:
                if session:
                    pipe.zrem(CardStore._key(tenant, "session", session), card_id)
            pipe.execute()
    return tuple(card_id for card_id, _ in doomed)
