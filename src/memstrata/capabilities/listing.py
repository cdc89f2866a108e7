"""Listing: a user's memories without a query, a fact's history, a tenant's users
(docs/architecture.md, "Listing").

Reads only, never ranked: L3 is scrolled by exact payload filters (tenant, user,
type, time) inside the engine, the L2 slot records say which version of a fact is
current, and L2 holds the preferences. Every read is the caller's tenant's, and an
item above the caller's clearance is left out as ``retrieve`` leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from memstrata.errors import NotFoundError, ValidationError
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter, Record
from memstrata.memory.codec import from_payload, is_pending, slot_string
from memstrata.memory.episodes import EPISODE_TYPE, Episode, episode_of_payload
from memstrata.memory.episodes import FACTS_KEY as EPISODE_FACTS
from memstrata.memory.listing import (
    ALL_POINT_TYPES,
    DEFAULT_PAGE_SIZE,
    LIST_KINDS,
    MAX_PAGE_SIZE,
    POINT_TYPES,
    FactHistory,
    ListedMemory,
    MemoryPage,
    UserSummary,
    check_window,
    cut_page,
    in_window,
    parse_page_token,
    preference_item,
    unit_status,
)
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit
from memstrata.permissions import L2_LEVEL, Level, check_level, cleared, level_of_payload
from memstrata.validation import check_id, check_positive_int
from memstrata.working.memory import WorkingMemory

_PAD_S = 1.0
"""The engine's time range is widened by this much and cut exactly here: its bounds
are strict and float seconds, a person's ``since`` is inclusive."""


class Listing:
    """``list_memories``, ``history`` and ``list_users`` over one stack's stores."""

    def __init__(self, longterm: LongTermStore, memory: MemoryStore, working: WorkingMemory):
        self._lt = longterm
        self._memory = memory
        self._working = working

    def list_memories(
        self,
        user_id: str,
        *,
        tenant: str = "default",
        kind: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        page: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        clearance: Level = "high",
    ) -> MemoryPage:
        """One page of ``user_id``'s memories, newest first, each with every layer's
        view of it; ``page`` is the previous page's ``next_page``."""
        check_id("tenant", tenant)
        check_id("user_id", user_id)
        if kind is not None and kind not in LIST_KINDS:
            raise ValidationError("kind", f"must be one of {', '.join(LIST_KINDS)}")
        check_window(since, until)
        check_positive_int("page_size", page_size, maximum=MAX_PAGE_SIZE)
        check_level("clearance", clearance)
        token = None if page is None else parse_page_token(page)
        newest = until
        if token is not None:
            marker = datetime.fromtimestamp(token[0], UTC)
            newest = marker if newest is None else min(newest, marker)
        items: list[ListedMemory] = []
        payloads: dict[str, Mapping[str, Any]] = {}
        if kind != "preference":
            for record in self._scroll(tenant, user_id, kind, since, newest):
                item = _listed(record, clearance)
                if item is None or not in_window(item.at, since, until):
                    continue
                if kind == "pinned" and (item.fact is None or not item.fact.pinned):
                    continue
                items.append(item)
                payloads[item.id] = record.payload
        if kind in (None, "preference") and cleared(L2_LEVEL, clearance):
            for pref in self._working.list_preferences(user_id, tenant=tenant):
                pref_item = preference_item(pref, L2_LEVEL)
                if in_window(pref_item.at, since, until):
                    items.append(pref_item)
        cut = cut_page(items, page_size, token)
        linked = self._linked(tenant, cut.items, payloads, clearance)
        return replace(cut, items=tuple(linked))

    def history(
        self, fact_id: str, *, tenant: str = "default", clearance: Level = "high"
    ) -> FactHistory:
        """Every version of the fact ``fact_id`` (any of its versions' ids), oldest to
        newest by validity, each with its episodes; NotFoundError when the tenant has no
        such fact the caller may read."""
        check_id("tenant", tenant)
        check_level("clearance", clearance)
        records = self._lt.get(MEMORIES, [fact_id], tenant=tenant)
        if not records or not cleared(level_of_payload(records[0].payload), clearance):
            raise NotFoundError(f"fact_id: no fact {fact_id} in this tenant")
        payload = records[0].payload
        if payload.get("type") == EPISODE_TYPE or "slot" not in payload:
            raise ValidationError("fact_id", f"{fact_id} is an episode, not a fact")
        user = str(payload["user"])
        flt = Filter(tenant=tenant, user=user, extras=(("slot", str(payload["slot"])),))
        versions = [
            item
            for record in self._lt.iter_records(MEMORIES, flt)
            if (item := _listed(record, clearance)) is not None and item.fact is not None
        ]
        versions.sort(key=lambda i: (_unit(i).valid_from, _unit(i).version))
        linked = self._linked(tenant, versions, {}, clearance)
        first = _unit(linked[0]) if linked else from_payload(fact_id, payload)
        return FactHistory(
            fact_id=fact_id,
            user=user,
            subject=first.subject,
            attribute=first.attribute,
            versions=tuple(linked),
        )

    def list_users(
        self, *, tenant: str = "default", clearance: Level = "high"
    ) -> tuple[UserSummary, ...]:
        """The users with memory in ``tenant`` that the caller may read, with their
        counts and last activity, most recently active first."""
        check_id("tenant", tenant)
        check_level("clearance", clearance)
        episodes: dict[str, int] = {}
        facts: dict[str, int] = {}
        last: dict[str, float] = {}
        for record in self._lt.iter_records(MEMORIES, Filter(tenant=tenant, types=ALL_POINT_TYPES)):
            payload = record.payload
            if is_pending(payload) or not cleared(level_of_payload(payload), clearance):
                continue
            user = str(payload.get("user", ""))
            if not user:
                continue
            bucket = episodes if payload.get("type") == EPISODE_TYPE else facts
            bucket[user] = bucket.get(user, 0) + 1
            at = float(payload.get("created_at") or 0.0)
            last[user] = max(last.get(user, at), at)
        users = [
            UserSummary(
                user=u,
                episodes=episodes.get(u, 0),
                facts=facts.get(u, 0),
                last_active=datetime.fromtimestamp(at, UTC),
            )
            for u, at in last.items()
        ]
        users.sort(key=lambda s: (-s.last_active.timestamp(), s.user))
        return tuple(users)

    # --- helpers -------------------------------------------------------------------

    def _scroll(
        self,
        tenant: str,
        user: str,
        kind: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> Iterable[Record]:
        types = POINT_TYPES[kind] if kind is not None else ALL_POINT_TYPES
        extras: tuple[tuple[str, str], ...] = ()
        if kind in ("fact", "event"):
            extras = (("kind", kind),)
        flt = Filter(
            tenant=tenant,
            user=user,
            types=types,
            created_after=None if since is None else since.timestamp() - _PAD_S,
            created_before=None if until is None else until.timestamp() + _PAD_S,
            extras=extras,
        )
        return self._lt.iter_records(MEMORIES, flt)

    def _linked(
        self,
        tenant: str,
        items: Sequence[ListedMemory],
        payloads: Mapping[str, Mapping[str, Any]],
        clearance: Level,
    ) -> list[ListedMemory]:
        """``items`` with the facts each episode gave, the episodes each fact came
        from (one L3 read for the page), and each fact's L2 slot verdict."""
        wanted: list[str] = []
        for item in items:
            if item.fact is not None:
                wanted.extend(item.fact.episodes)
            elif item.episode is not None:
                payload = payloads.get(item.id)
                wanted.extend(str(i) for i in (payload or {}).get(EPISODE_FACTS) or ())
        found: dict[str, Record] = {}
        unique = list(dict.fromkeys(wanted))
        for start in range(0, len(unique), 256):
            for record in self._lt.get(MEMORIES, unique[start : start + 256], tenant=tenant):
                if not is_pending(record.payload) and cleared(
                    level_of_payload(record.payload), clearance
                ):
                    found[record.id] = record
        slots = [
            (tenant, _unit(i).source.user, slot_string(tenant, _unit(i).slot))
            for i in items
            if i.fact is not None
        ]
        current = self._slot_current(items, slots)
        out: list[ListedMemory] = []
        for item in items:
            if item.fact is not None:
                eps = tuple(
                    episode_of_payload(r.id, r.payload)
                    for i in item.fact.episodes
                    if (r := found.get(i)) is not None and r.payload.get("type") == EPISODE_TYPE
                )
                out.append(replace(item, episodes=eps, slot_current=current.get(item.id)))
            elif item.episode is not None:
                ids = (payloads.get(item.id) or {}).get(EPISODE_FACTS) or ()
                got = tuple(
                    from_payload(r.id, r.payload)
                    for i in ids
                    if (r := found.get(str(i))) is not None and "slot" in r.payload
                )
                out.append(replace(item, facts=got))
            else:
                out.append(item)
        return out

    def _slot_current(
        self, items: Sequence[ListedMemory], slots: Sequence[tuple[str, str, str]]
    ) -> dict[str, bool]:
        facts = [i for i in items if i.fact is not None]
        if not facts:
            return {}
        states = self._memory.slots.read_many(slots)
        return {f.id: state.active_id == f.id for f, state in zip(facts, states, strict=True)}


def _unit(item: ListedMemory) -> MemoryUnit:
    assert item.fact is not None
    return item.fact


def _listed(record: Record, clearance: Level) -> ListedMemory | None:
    """A stored point as a listed memory (None: uncommitted, or above ``clearance``)."""
    payload = record.payload
    if is_pending(payload):
        return None
    level = level_of_payload(payload)
    if not cleared(level, clearance):
        return None
    if payload.get("type") == EPISODE_TYPE:
        episode: Episode = episode_of_payload(record.id, payload)
        return ListedMemory(
            id=record.id,
            kind="episode",
            at=episode.observed_at,
            text=episode.text,
            status="stored",
            level=level,
            episode=episode,
        )
    unit = from_payload(record.id, payload)
    return ListedMemory(
        id=record.id,
        kind=unit.kind,
        at=unit.observed_at,
        text=unit.text,
        status=unit_status(unit, payload),
        level=level,
        fact=unit,
    )
