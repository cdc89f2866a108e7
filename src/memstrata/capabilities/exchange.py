"""Export and import (docs/service.md, "Export and import").

``export_memories`` writes one versioned JSON Lines file of a user's or a tenant's
memory (:mod:`memstrata.memory.exchange`): every episode, every version of every fact
and event, and the preferences. ``import_memories`` reads it back under the caller's
tenant: the whole file is validated before anything is written, ids, dates and
history are kept (namespaced when the file came from another tenant, so it never
overwrites that tenant's points), and importing it again changes nothing. Episodes
of a thread are written together, so they get the vectors the write path gave them
(its neighbours' context), and each fact slot's L2 record is rebuilt from what was
written.

A conversation a user already has (OpenAI messages, or JSON Lines of role, content
and timestamp) is imported through the normal write path instead: each message is
observed in a session of its own, through the gateway (secrets and PII never reach
a store), dated as it was said, its facts extracted like any turn's.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from memstrata.clock import Clock
from memstrata.config import LongTermSettings
from memstrata.distribution import version as installed_version
from memstrata.errors import ValidationError
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.codec import TYPE_HISTORY, from_payload, is_pending, slot_string, to_item
from memstrata.memory.episodes import EPISODE_TYPE, FACTS_KEY, episode_of_payload, window_points
from memstrata.memory.exchange import (
    IMPORT_FORMATS,
    ImportFormat,
    ImportReport,
    StoredEpisode,
    StoredFact,
    conversation_session,
    dumps,
    episode_record,
    fact_record,
    header,
    into_tenant,
    parse_conversation,
    parse_export,
    preference_record,
)
from memstrata.memory.store import MemoryStore
from memstrata.validation import check_id
from memstrata.working.memory import WorkingMemory
from memstrata.write.submit import WriteReceipt

UNIT_POINT_TYPES = ("fact", "event", TYPE_HISTORY)
_BATCH = 256

Observe = Callable[..., WriteReceipt]
ListUsers = Callable[[str], Sequence[str]]


class Exchange:
    """``export_memories``, ``import_memories`` and ``import_conversation``."""

    def __init__(
        self,
        *,
        longterm: LongTermStore,
        memory: MemoryStore,
        working: WorkingMemory,
        clock: Clock,
        settings: LongTermSettings,
        users: ListUsers,
        start_session: Callable[..., Any],
        end_session: Callable[[str], Any],
        observe: Observe,
    ) -> None:
        self._lt = longterm
        self._memory = memory
        self._working = working
        self._clock = clock
        self._settings = settings
        self._users = users
        self._start_session = start_session
        self._end_session = end_session
        self._observe = observe

    # --- export ----------------------------------------------------------------------

    def export_memories(
        self, user_id: str | None = None, *, tenant: str = "default"
    ) -> Iterator[str]:
        """The lines of the export file (no newlines): the header, then each user's
        episodes, fact versions and preferences. ``user_id`` None: the whole tenant.
        A forgotten (or unknown) user's file is the header alone."""
        check_id("tenant", tenant)
        if user_id is not None:
            check_id("user_id", user_id)
        source = {
            "distribution": "ctxstrata",
            "version": installed_version(),
            "host": socket.gethostname(),
            "tenant": tenant,
            "embedder": self._lt.embedder.name,
            "dim": self._lt.embedder.dim,
        }
        yield dumps(
            header(tenant=tenant, user=user_id, exported_at=self._clock.now(), source=source)
        )
        users = [user_id] if user_id is not None else sorted(self._users(tenant))
        for user in users:
            yield from self._user_lines(tenant, user)

    def _user_lines(self, tenant: str, user: str) -> Iterator[str]:
        episodes: list[StoredEpisode] = []
        facts: list[StoredFact] = []
        flt = Filter(tenant=tenant, user=user, types=(EPISODE_TYPE, *UNIT_POINT_TYPES))
        for record in self._lt.iter_records(MEMORIES, flt):
            payload = record.payload
            if is_pending(payload):
                continue
            updated = payload.get("updated_at")
            stamp = float(updated) if isinstance(updated, int | float) else None
            if payload.get("type") == EPISODE_TYPE:
                facts_of = tuple(str(i) for i in payload.get(FACTS_KEY) or ())
                episode = episode_of_payload(record.id, payload)
                episodes.append(StoredEpisode(episode, facts_of, stamp))
            else:
                unit = from_payload(record.id, payload)
                facts.append(StoredFact(unit, bool(payload.get("invalidated")), stamp))
        episodes.sort(key=lambda s: (s.episode.observed_at, s.episode.id))
        facts.sort(key=lambda s: (s.unit.valid_from, s.unit.version, s.unit.id or ""))
        for stored in episodes:
            yield dumps(episode_record(stored))
        for fact in facts:
            yield dumps(fact_record(fact))
        for pref in self._working.list_preferences(user, tenant=tenant):
            yield dumps(preference_record(pref))

    # --- import ----------------------------------------------------------------------

    def import_file(
        self,
        lines: Sequence[str],
        *,
        format: str = "memstrata",
        user_id: str | None = None,
        tenant: str = "default",
    ) -> ImportReport:
        """An export file (``memstrata``), or a conversation of ``user_id`` (``openai``
        messages, or ``messages``: JSON Lines of role, content and timestamp)."""
        if format not in IMPORT_FORMATS:
            raise ValidationError("format", f"must be one of {', '.join(IMPORT_FORMATS)}")
        if format == "memstrata":
            if user_id is not None:
                raise ValidationError("user_id", "an export file names its users itself")
            return self.import_memories(lines, tenant=tenant)
        if user_id is None:
            raise ValidationError("user_id", f"a {format} conversation needs the user it is of")
        form: ImportFormat = "openai" if format == "openai" else "messages"
        return self.import_conversation("\n".join(lines), form, user_id=user_id, tenant=tenant)

    def import_memories(self, lines: Sequence[str], *, tenant: str = "default") -> ImportReport:
        """Read an export file into ``tenant`` (idempotent; nothing is written unless the
        whole file is valid: ValidationError naming the line and field)."""
        check_id("tenant", tenant)
        parsed = parse_export(lines)
        scope = parsed.header.get("scope")
        source_tenant = scope.get("tenant") if isinstance(scope, dict) else None
        remap = source_tenant != tenant
        placed = into_tenant(parsed, tenant, remap=remap)
        ids = [s.episode.id for s in placed.episodes] + [s.unit.id or "" for s in placed.facts]
        existing = self._existing(tenant, ids)
        self._write_episodes(placed.episodes)
        self._write_facts(placed.facts, tenant)
        for pref in placed.preferences:
            self._working.set_preference(
                pref.user_id,
                pref.pref_type,
                pref.value,
                pref.confidence,
                pref.last_updated,
                tenant=tenant,
            )
        users = {s.episode.user for s in placed.episodes}
        users |= {s.unit.source.user for s in placed.facts}
        users |= {p.user_id for p in placed.preferences}
        return ImportReport(
            format="memstrata",
            users=tuple(sorted(users)),
            episodes=len(placed.episodes),
            facts=len(placed.facts),
            preferences=len(placed.preferences),
            added=len(set(ids) - existing),
            remapped=remap,
        )

    def _existing(self, tenant: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), _BATCH):
            chunk = unique[start : start + _BATCH]
            found.update(r.id for r in self._lt.get(MEMORIES, chunk, tenant=tenant))
        return found

    def _write_episodes(self, episodes: Sequence[StoredEpisode]) -> None:
        # A thread's turns in one call: each is indexed with its neighbours, as the
        # write path indexed it once all of them had arrived (memstrata.write.index).
        groups: dict[tuple[str, str] | None, list[NewItem]] = {}
        for stored in episodes:
            e = stored.episode
            item = replace(e.item(stored.facts), updated_at=stored.updated_at)
            key = None if e.position is None else (e.tenant, e.thread or "")
            groups.setdefault(key, []).append(item)
        for key, items in groups.items():
            batches = [items] if key is not None else _chunks(items, _BATCH)
            for batch in batches:
                self._lt.add(MEMORIES, batch)
                windows = window_points(batch, self._settings, self._lt.embedder.embed)
                if windows:
                    self._lt.add_points(MEMORIES, windows)

    def _write_facts(self, facts: Sequence[StoredFact], tenant: str) -> None:
        items = [
            replace(to_item(f.unit, invalidated=f.invalidated), updated_at=f.updated_at)
            for f in facts
        ]
        for batch in _chunks(items, _BATCH):
            self._lt.add(MEMORIES, batch)
        # Events are append-only: only facts have a slot record.
        slots = {
            (f.unit.source.user, slot_string(tenant, f.unit.slot))
            for f in facts
            if f.unit.kind == "fact"
        }
        for user, slot in sorted(slots):
            # The L2 record that says which version is current, from what L3 now holds
            # (one already there, from an earlier import, stands).
            if self._memory.slots.read(tenant, user, slot).rev == 0:
                self._memory.rebuild_slot(tenant, user, slot)

    def import_conversation(
        self,
        text: str,
        form: ImportFormat,
        *,
        user_id: str,
        tenant: str = "default",
    ) -> ImportReport:
        """Observe a conversation's messages as ``user_id``'s turns through the normal
        write path (the gateway first), dated as they were said; a conversation already
        imported is recognized and not observed again."""
        check_id("tenant", tenant)
        check_id("user_id", user_id)
        turns = parse_conversation(text, form)  # every message checked before any turn
        session_id = conversation_session(tenant, user_id, text)
        already = Filter(
            tenant=tenant, user=user_id, types=(EPISODE_TYPE,), extras=(("session_id", session_id),)
        )
        if next(iter(self._lt.iter_records(MEMORIES, already, page_size=1)), None) is not None:
            return ImportReport(
                form, (user_id,), 0, 0, 0, 0, note="this conversation was imported before"
            )
        self._start_session(user_id, "imported conversation", tenant=tenant, session_id=session_id)
        queued = 0
        try:
            for turn in turns:
                receipt = self._observe(
                    session_id, turn.role, turn.text, speaker=turn.speaker, at=turn.at
                )
                queued += int(receipt.queued)
        finally:
            self._end_session(session_id)
        return ImportReport(form, (user_id,), queued, 0, 0, queued)


def _chunks(items: list[NewItem], size: int) -> list[list[NewItem]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
