"""What a person browsing memory reads: a user's memories without a query, newest
first, a page at a time; every version of a fact; the users of a tenant
(docs/architecture.md, "Listing").

Pure values and functions: :class:`memstrata.capabilities.listing.Listing` reads the
stores and builds these. One listed memory shows every layer's view of the same
unit: the L3 point (an episode, or a fact with its validity, marks, importance,
feedback and provenance), the episodes a fact came from and the facts an episode
gave (links both ways), and for a fact whether the L2 slot record names it as the
slot's current version.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from memstrata.errors import ValidationError
from memstrata.memory.codec import TYPE_HISTORY, is_pending
from memstrata.memory.episodes import EPISODE_TYPE, Episode
from memstrata.memory.units import MemoryUnit
from memstrata.permissions import Level
from memstrata.working.values import Preference

ListKind = Literal["episode", "fact", "event", "preference", "pinned"]
LIST_KINDS: tuple[ListKind, ...] = ("episode", "fact", "event", "preference", "pinned")
"""What ``list_memories`` can be narrowed to (``pinned``: facts and events kept
whatever their age)."""
Status = Literal["current", "disputed", "superseded", "closed", "invalidated", "stored"]
MAX_PAGE_SIZE = 200
DEFAULT_PAGE_SIZE = 50
POINT_TYPES: dict[str, tuple[str, ...]] = {
    "episode": (EPISODE_TYPE,),
    "fact": ("fact", TYPE_HISTORY),
    "event": ("event", TYPE_HISTORY),
    "pinned": ("fact", "event", TYPE_HISTORY),
    "preference": (),
}
"""The L3 point types each kind reads (history holds every closed version)."""
ALL_POINT_TYPES: tuple[str, ...] = (EPISODE_TYPE, "fact", "event", TYPE_HISTORY)


@dataclass(frozen=True, slots=True)
class ListedMemory:
    """One unit of a user's memory as every layer holds it."""

    id: str
    """The episode's or fact's point id (a preference: ``pref:<type>``)."""
    kind: Literal["episode", "fact", "event", "preference"]
    at: datetime
    """When it was said or observed (a preference: when it was last set)."""
    text: str
    status: Status
    """``current`` / ``disputed`` (a fact in doubt), ``superseded`` (a newer version
    closed it), ``closed`` (no longer valid), ``invalidated`` (found wrong, bound for
    cold storage); ``stored`` for an episode or a preference."""
    level: Level
    """Its permission level: a key of a lower clearance never sees it."""
    episode: Episode | None = None
    fact: MemoryUnit | None = None
    preference: Preference | None = None
    facts: tuple[MemoryUnit, ...] = ()
    """An episode's: the facts extracted from it (their current state)."""
    episodes: tuple[Episode, ...] = ()
    """A fact's: the episodes it came from, oldest first."""
    slot_current: bool | None = None
    """A fact's L2 slot record names this version as current (None: not a fact)."""


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of :meth:`list_memories`, newest first; ``next_page`` continues it."""

    items: tuple[ListedMemory, ...]
    next_page: str | None = None


@dataclass(frozen=True, slots=True)
class FactHistory:
    """Every version of one fact's slot, oldest to newest, each with the episodes it
    came from and its validity window."""

    fact_id: str
    user: str
    subject: str
    attribute: str
    versions: tuple[ListedMemory, ...]


@dataclass(frozen=True, slots=True)
class UserSummary:
    """A user who has memory in the caller's tenant."""

    user: str
    episodes: int
    facts: int
    """Facts and events, every version."""
    last_active: datetime


# --- pages -------------------------------------------------------------------------


def order_key(item: ListedMemory) -> tuple[float, str]:
    """The sort key; pages list items by it descending (newest first, ties by id)."""
    return (item.at.timestamp(), item.id)


def page_token(item: ListedMemory) -> str:
    """The opaque marker of the page after ``item``."""
    raw = json.dumps([item.at.timestamp(), item.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_page_token(token: str) -> tuple[float, str]:
    """``(at, id)`` of the last item of the previous page (ValidationError ``page``)."""
    if not isinstance(token, str) or not token or len(token) > 512:
        raise ValidationError("page", "must be the next_page marker of a previous page")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        at, last = json.loads(raw)
    except (ValueError, binascii.Error, TypeError) as exc:
        raise ValidationError("page", "is not a page marker this service gave") from exc
    if isinstance(at, bool) or not isinstance(at, int | float) or not isinstance(last, str):
        raise ValidationError("page", "is not a page marker this service gave")
    return float(at), last


def cut_page(
    items: Sequence[ListedMemory], page_size: int, token: tuple[float, str] | None
) -> MemoryPage:
    """The page of ``items`` after ``token``, newest first (pure)."""
    ordered = sorted(items, key=order_key, reverse=True)
    if token is not None:
        ordered = [i for i in ordered if order_key(i) < token]
    page = tuple(ordered[:page_size])
    more = len(ordered) > page_size
    return MemoryPage(page, page_token(page[-1]) if more and page else None)


def check_window(since: datetime | None, until: datetime | None) -> None:
    """Both timezone-aware, ``since`` before ``until`` (ValidationError naming the field)."""
    for name, value in (("since", since), ("until", until)):
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            raise ValidationError(name, "must be a timezone-aware datetime")
    if since is not None and until is not None and until <= since:
        raise ValidationError("until", "must be after since")


def in_window(at: datetime, since: datetime | None, until: datetime | None) -> bool:
    """``since <= at < until`` (either bound open when None)."""
    return (since is None or at >= since) and (until is None or at < until)


# --- statuses ----------------------------------------------------------------------


def unit_status(unit: MemoryUnit, payload: Mapping[str, Any]) -> Status:
    """How a person reads a stored version: in force, in doubt, replaced, or ended."""
    if payload.get("invalidated"):
        return "invalidated"
    if not unit.active:
        return "superseded" if unit.superseded_by else "closed"
    return "disputed" if unit.disputed is not None else "current"


def listable(payload: Mapping[str, Any]) -> bool:
    """A committed unit or an episode (never a version written before its commit)."""
    return not is_pending(payload)


def preference_item(pref: Preference, level: Level) -> ListedMemory:
    """A preference as a listed memory (it lives in L2 only)."""
    value = json.dumps(pref.value, ensure_ascii=False, default=str)
    return ListedMemory(
        id=f"pref:{pref.pref_type}",
        kind="preference",
        at=pref.last_updated.astimezone(UTC),
        text=f"{pref.pref_type} = {value}",
        status="stored",
        level=level,
        preference=pref,
    )
