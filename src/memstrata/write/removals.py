"""Taking values out of a slot: removals said by the user and facts named wrong.

A set-valued slot (allergies, dislikes, ...) holds one active version whose value lists
its items ("peanuts; shellfish"). Removing an item writes a new version holding the
rest, which supersedes the old one (kept in history, so nothing said is lost); removing
the last item, or the value of a single-valued slot, closes the active version with no
successor. Both :func:`resolve_removals` (an entry's ``remove`` candidates, "I'm
allergic to shellfish, not peanuts", 我不再对花生过敏) and :func:`remove_wrong`
(feedback naming a fact wrong) work this way.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.memory.versioning import item_key, value_items

if TYPE_CHECKING:
    from memstrata.write.handle import Prepared

__all__ = ["remove_wrong", "resolve_removals"]

_TICK = timedelta(microseconds=1)


def _after(at: datetime, active: MemoryUnit) -> datetime:
    """When a version replacing ``active`` starts: ``at``, but never at or before the
    start of the version it closes (an id is derived from the value and its start, so
    the rest of a set stated at the same instant would be the very same point)."""
    return max(at, active.valid_from + _TICK)


def _slot(unit: MemoryUnit) -> tuple[str, str, str, str]:
    return unit.source.tenant, unit.source.user, unit.subject, unit.attribute


def resolve_removals(
    store: MemoryStore, prepared: Prepared
) -> tuple[Prepared, list[tuple[str, str]]]:
    """``prepared`` with its removals applied to the slots as they stand now: for each
    slot whose active version holds a removed item, one unit (a replacing one) holding
    what remains together with the entry's own new items of that slot - or, when
    nothing remains, the active version's ``(tenant, id)`` to close. Removals of items
    the slot does not hold change nothing."""
    separator = store.settings.value_separator
    units = list(prepared.units)
    flags = list(prepared.flags())
    closing: list[tuple[str, str]] = []
    groups: dict[tuple[str, str, str, str], list[MemoryUnit]] = {}
    for removal in prepared.removals:
        groups.setdefault(_slot(removal), []).append(removal)
    for (tenant, user, subject, attribute), removed in groups.items():
        active = store.active_fact(tenant, user, subject, attribute)
        if active is None or active.id is None:
            continue
        gone = {item_key(r.value) for r in removed}
        items = value_items(active.value, separator)
        kept = [item for item in items if item_key(item) not in gone]
        if len(kept) == len(items):
            continue
        mine = [
            i
            for i, unit in enumerate(units)
            if unit.kind == "fact" and _slot(unit) == (tenant, user, subject, attribute)
        ]
        # A correction says what the slot holds; otherwise the rest of the set stays.
        values = [] if any(flags[i] for i in mine) else kept
        for i in mine:
            values += [v for v in value_items(units[i].value, separator) if item_key(v) not in gone]
        values = list({item_key(v): v for v in reversed(values)}.values())[::-1]
        template = units[mine[0]] if mine else removed[0]
        for i in reversed(mine):
            del units[i], flags[i]
        if not values:
            closing.append((tenant, active.id))
            continue
        rest = separator.join(values)
        units.append(
            replace(template, value=rest, valid_from=_after(template.valid_from, active), id=None)
        )
        flags.append(True)
    return replace(prepared, units=tuple(units), replaces=tuple(flags)), closing


def remove_wrong(
    store: MemoryStore,
    wrong: MemoryUnit,
    source: UnitSource,
    at: datetime,
    *,
    reply: str = "",
) -> None:
    """Feedback named ``wrong`` wrong: its value leaves the current version of its slot.

    A set-valued slot keeps its other items (a new version sourced from ``source``,
    observed ``at``); a slot left empty, or a single-valued one holding that value, is
    closed. When the current set itself is named wrong, the items the checked
    ``reply`` stated are the wrong ones ("You're allergic to peanuts" names peanuts, not
    shellfish); a reply stating all of them or none closes the whole version. The old
    versions stay in history."""
    tenant, user, subject, attribute = _slot(wrong)
    active = store.active_fact(tenant, user, subject, attribute)
    if active is None or active.id is None:
        return
    separator = store.settings.value_separator
    items = value_items(active.value, separator)
    if active.id == wrong.id:
        said = reply.casefold()
        stated = {item_key(i) for i in items if item_key(i) and item_key(i) in said}
        if not stated or len(stated) == len(items):
            store.invalidate(tenant, active.id)
            return
        gone = stated
    else:
        gone = {item_key(v) for v in value_items(wrong.value, separator)}
    kept = [item for item in items if item_key(item) not in gone]
    if len(kept) == len(items):
        return
    if not kept:
        store.invalidate(tenant, active.id)
        return
    rest = MemoryUnit(
        subject=subject,
        attribute=attribute,
        value=separator.join(kept),
        kind="fact",
        source=source,
        observed_at=at,
        valid_from=_after(at, active),
        importance=active.importance,
        pinned=active.pinned,
        extras=active.extras,
        episodes=active.episodes,
    )
    store.write(rest, replaces=True)
