"""Facts that admit doubt: a newer episode said they changed, without saying to what.

An entry's ``dispute`` candidates ("我搬家了", "I changed jobs", "that's not right
anymore" after the value it answers: :mod:`memstrata.extract.thread`) name slots, not
values. When the entry is written, the user's current fact of each such slot, if one
was stated before the episode, is marked disputed (:meth:`MemoryStore.dispute`): its
confidence drops and every reader shows it with the newer episode and both dates,
never as plainly current. A new value for the slot supersedes it as usual; the same
value said again takes the doubt back.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.memory.episodes import Episode
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MAX_DISPUTE_TEXT, Dispute, MemoryUnit

__all__ = ["apply_disputes"]


def apply_disputes(
    store: MemoryStore, episode: Episode, disputes: Sequence[MemoryUnit]
) -> list[str]:
    """Mark disputed the user's current facts of the slots ``disputes`` name (units
    of ``episode``, the newer one); the ids of the facts marked."""
    text = " ".join(episode.text.split())
    quote = text if len(text) <= MAX_DISPUTE_TEXT else text[: MAX_DISPUTE_TEXT - 1] + "…"
    marked: list[str] = []
    seen: set[tuple[str, str]] = set()
    for unit in disputes:
        slot = (unit.subject.casefold(), unit.attribute.casefold())
        if slot in seen:
            continue
        seen.add(slot)
        tenant, user = unit.source.tenant, unit.source.user
        active = store.active_fact(tenant, user, unit.subject, unit.attribute)
        if active is None or active.id is None:
            continue
        dispute = Dispute(episode=episode.id, at=episode.observed_at, text=quote, confidence=1.0)
        if store.dispute(tenant, active.id, dispute) is not None:
            marked.append(active.id)
    return marked
