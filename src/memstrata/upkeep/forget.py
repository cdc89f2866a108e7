"""Forget, for real: a user's memory deleted everywhere, the files on disk included.

:func:`forget_user` deletes every episode, fact (with its history) and cold copy of a
user (L3, by an engine filter), the user's slot records, preferences, working-memory
sessions and write-queue entries (L2, :mod:`memstrata.upkeep.erase`), the user's trace
cards and processed feedback events (their question, reply and correction are the
user's words), then makes the
deletion stick on disk: the embedded Qdrant shards are rebuilt without the deleted
points (their WAL keeps every write otherwise) and the Valkey append-only file is
rewritten (:mod:`memstrata.working.compaction`). :func:`forget_memories` does the
same for chosen memories: a fact with every version of its slot, an episode with
the facts extracted from it, and :func:`forget_store_items` for the item store's
items under a namespace prefix (they are keyed by namespace, not by user).

What remains is that a deletion happened: the caller writes one deletion record
(:func:`deletion_record`: when, the tenant, a hash of the user id, the counts) and
nothing of what was deleted.

A forget needs disk: each rebuilt shard is built beside the live one. When the disk
cannot hold that, the forget is refused (DiskSpaceError) before anything is deleted,
rather than answering an error after deleting half of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memstrata.decision.cards import delete_user_cards
from memstrata.errors import ValidationError
from memstrata.feedback.events import delete_user_events, stream_key
from memstrata.hashing import sha256_hex
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, MEMORIES_COLD, Filter
from memstrata.memory.codec import UNIT_TYPES
from memstrata.memory.episodes import EPISODE_TYPE, EPISODE_WINDOW_TYPE
from memstrata.memory.versioning import slot_key
from memstrata.upkeep.erase import REBUILD_STREAM_LUA, delete_user_keys, rebuild_key
from memstrata.validation import check_id
from memstrata.working.compaction import compact_persistence
from memstrata.working.redis_errors import redis_errors

USER_COLLECTIONS = (MEMORIES, MEMORIES_COLD)
"""Where a user's memories live (knowledge is the tenant's, never a user's)."""


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What a forget deleted (counts only: nothing of the content)."""

    tenant: str
    points_deleted: int
    """L3 points: episodes, fact versions and events, hot and cold."""
    keys_deleted: int
    """Redis keys: slot records, preferences, working-memory sessions, and the user's
    trace cards and processed feedback events (one each)."""
    queue_entries_deleted: int
    sessions_ended: int = 0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "tenant": self.tenant,
            "points_deleted": self.points_deleted,
            "keys_deleted": self.keys_deleted,
            "queue_entries_deleted": self.queue_entries_deleted,
            "sessions_ended": self.sessions_ended,
        }


def forget_user(
    longterm: LongTermStore,
    redis_client: Any,
    tenant: str,
    user: str,
    *,
    memory_prefix: str,
    queues: Sequence[str],
    sessions: Sequence[str] = (),
    deleted: Callable[[], None] | None = None,
) -> ForgetReport:
    """Delete ``user``'s memories in ``tenant`` from L3 and Redis, call ``deleted``,
    then delete them from the files on disk. The caller stops the user's writers
    first (flushes the queue)."""
    check_id("tenant", tenant)
    check_id("user", user)
    check_room_to_forget(longterm)
    flt = Filter(tenant=tenant, user=user)
    points = sum(longterm.index.delete_where(collection, flt) for collection in USER_COLLECTIONS)
    erased = delete_user_keys(
        redis_client,
        tenant,
        user,
        memory_prefix=memory_prefix,
        queues=queues,
        sessions=sessions,
    )
    cards = delete_user_cards(redis_client, tenant, user)
    events = delete_user_events(redis_client, tenant, user, cards)
    if events:
        stream = stream_key(tenant)
        with redis_errors("forget feedback stream rebuild"):
            redis_client.register_script(REBUILD_STREAM_LUA)(keys=[stream, rebuild_key(stream)])
    _make_it_stick(longterm, redis_client, tenant, deleted)
    keys = erased.keys_deleted + len(cards) + events
    return ForgetReport(tenant, points, keys, erased.stream_entries_deleted)


def forget_memories(
    longterm: LongTermStore,
    redis_client: Any,
    tenant: str,
    ids: Sequence[str],
    *,
    memory_prefix: str,
    deleted: Callable[[], None] | None = None,
) -> ForgetReport:
    """Delete the memories ``ids`` of ``tenant``: a fact with every version of its slot
    (and the slot record), an event as is, an episode with the facts extracted from
    it. Ids the tenant does not hold are ignored (another tenant's id is not there)."""
    check_id("tenant", tenant)
    if isinstance(ids, str) or not ids:
        raise ValidationError("ids", "must be a non-empty sequence of memory ids")
    check_room_to_forget(longterm)
    found = [r for c in USER_COLLECTIONS for r in longterm.get(c, ids, tenant=tenant)]
    points = 0
    episodes = tuple(r.id for r in found if r.payload.get("type") == EPISODE_TYPE)
    slots: set[tuple[str, str]] = {
        (str(r.payload["user"]), str(r.payload["slot"]))
        for r in found
        if r.payload.get("kind") == "fact" and isinstance(r.payload.get("slot"), str)
    }
    if episodes:
        extracted = Filter(tenant=tenant, types=UNIT_TYPES, extras=(("episodes", episodes),))
        for collection in USER_COLLECTIONS:
            units = list(longterm.iter_records(collection, extracted))
            for record in units:
                if isinstance(record.payload.get("slot"), str):
                    slots.add((str(record.payload["user"]), str(record.payload["slot"])))
            points += longterm.index.delete_where(collection, extracted)
    points += len(found)
    for collection in USER_COLLECTIONS:
        longterm.delete(collection, [r.id for r in found], tenant=tenant)
        if episodes:  # a long episode's window keys hold its text too
            windows = Filter(
                tenant=tenant, types=(EPISODE_WINDOW_TYPE,), extras=(("episode", episodes),)
            )
            points += longterm.index.delete_where(collection, windows)
        for user, slot in sorted(slots):
            versions = Filter(tenant=tenant, user=user, extras=(("slot", slot),))
            points += longterm.index.delete_where(collection, versions)
    keys = 0
    with redis_errors("forget DEL"):
        for user, slot in sorted(slots):
            keys += int(redis_client.delete(slot_key(memory_prefix, tenant, user, slot)))
    _make_it_stick(longterm, redis_client, tenant, deleted)
    return ForgetReport(tenant, points, keys, 0)


def forget_store_items(
    longterm: LongTermStore,
    redis_client: Any,
    tenant: str,
    where: Filter,
    *,
    deleted: Callable[[], None] | None = None,
) -> ForgetReport:
    """Delete the item-store items ``where`` selects (a namespace prefix of
    :class:`memstrata.sharing.items.ItemStore`), then from the files on disk."""
    check_id("tenant", tenant)
    if where.tenant != tenant:
        raise ValidationError("where", "must select items of the tenant it deletes in")
    check_room_to_forget(longterm)
    points = longterm.index.delete_where(MEMORIES, where)
    _make_it_stick(longterm, redis_client, tenant, deleted)
    return ForgetReport(tenant, points, 0, 0)


def check_room_to_forget(longterm: LongTermStore) -> None:
    """DiskSpaceError when the disk cannot hold a rebuilt collection beside the live
    one (checked again when the forget runs: the disk may fill meanwhile)."""
    # Only the embedded index rebuilds shards (and so can say whether one fits).
    check = getattr(longterm.index, "check_room_to_purge", None)
    if check is not None:
        check(USER_COLLECTIONS)


def _make_it_stick(
    longterm: LongTermStore, redis_client: Any, tenant: str, deleted: Callable[[], None] | None
) -> None:
    # Deleted is not gone: the engine's WAL and segments, and the server's AOF, keep
    # what was deleted until they are rebuilt. ``deleted`` runs first, so what it
    # writes to Valkey (the pending request dropped) is rewritten with the rest.
    if deleted is not None:
        deleted()
    # Only what holds this tenant is rebuilt (the embedded index: the tenant's part
    # of each collection), so a forget stalls no other tenant's reads.
    longterm.index.purge([tenant])
    compact_persistence(redis_client)


def deletion_record(report: ForgetReport, at: datetime, *, user: str | None) -> dict[str, Any]:
    """The one line an audit keeps of a forget: when, where, whom (as a hash of the
    tenant and user id, so a later request can be checked against it without the
    log naming anyone) and how much - never what."""
    record: dict[str, Any] = {"event": "forget", "at": at.isoformat(), **report.as_dict()}
    if user is not None:
        record["user_sha256"] = sha256_hex([report.tenant, user])
    return record
