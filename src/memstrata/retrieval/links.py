"""Links between episodes and the facts extracted from them, followed at read time.

An episode names the facts extracted from it (payload ``facts``); a fact names its
episodes and its slot (``slot``: one active version per user, subject and attribute).
A read that finds episodes follows those links (:func:`follow`):

* an episode's facts that are still current come with it: a fact is what was said,
  distilled, and ranks with the episode that says it even when its own short text
  ("user city: Chengdu") embeds far from the question;
* an episode whose fact has been superseded since is the past: it is marked with the
  current fact of that slot, which comes with it instead, so the current value is
  always read next to (and above) the old one.

Resolved at read time, so a mark is never stale: a later correction, a forget or a
restore changes what the next read sees without rewriting any episode.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter, Hit, ScoredPoint
from memstrata.retrieval.guard import checkpoint
from memstrata.retrieval.results import RetrievedItem

EPISODE = "episode"
EPISODE_WINDOW = "episode_window"
"""A long episode's dense window key (``memstrata.memory.episodes``), never an item."""
CURRENT_TYPES: tuple[str, ...] = ("fact", "event")
HISTORY = "history"
# A slot holds one active version; more hops than this is a corrupt chain.
_MAX_LINKS_PER_EPISODE = 16

ScoredRead = Callable[[Sequence[str]], dict[str, ScoredPoint]]
"""Points by id with their payloads and cosines to the question."""


@dataclass(frozen=True, slots=True)
class Links:
    """What :func:`follow` found: per episode, the current facts that come with it
    (best first), and the episodes whose content a newer fact superseded."""

    facts: Mapping[str, tuple[ScoredPoint, ...]] = field(default_factory=dict)
    """Episode id -> current fact points (payload and cosine to the query)."""
    superseded: Mapping[str, str] = field(default_factory=dict)
    """Episode id -> the id of the current fact that replaced what it said."""


def fact_ids(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """The ids of the facts an episode payload names (none for any other point)."""
    if payload.get("type") != EPISODE:
        return ()
    ids = payload.get("facts") or ()
    if not isinstance(ids, Sequence) or isinstance(ids, str):
        return ()
    return tuple(str(i) for i in ids[:_MAX_LINKS_PER_EPISODE])


def follow(
    store: LongTermStore,
    tenant: str,
    query_vector: NDArray[np.float32],
    episodes: Sequence[tuple[str, Mapping[str, Any]]],
    read: ScoredRead | None = None,
) -> Links:
    """The links of ``episodes`` (``(id, payload)``), in at most three engine calls:
    the facts they name, and - only when one was superseded - the current versions
    of those slots. ``read``: how points are read with their cosines (default: the
    store's ``read_scored`` with ``query_vector``; the reader passes its question's
    routes, :mod:`memstrata.retrieval.languages`)."""
    if read is None:

        def read(ids: Sequence[str]) -> dict[str, ScoredPoint]:
            return store.read_scored(MEMORIES, ids, query_vector, tenant=tenant)

    named = {episode_id: fact_ids(payload) for episode_id, payload in episodes}
    wanted = list(dict.fromkeys(i for ids in named.values() for i in ids))
    if not wanted:
        return Links()
    checkpoint()
    points = read(wanted)
    closed_slots = {
        str(p.payload["slot"])
        for p in points.values()
        if p.payload.get("type") == HISTORY and isinstance(p.payload.get("slot"), str)
    }
    current_of_slot: dict[str, ScoredPoint] = {}
    if closed_slots:
        flt = Filter(
            tenant=tenant, types=("fact",), extras=(("slot", tuple(sorted(closed_slots))),)
        )
        checkpoint()
        active_ids = [r.id for r in store.iter_records(MEMORIES, flt)]
        checkpoint()
        current = read(active_ids) if active_ids else {}
        for point in current.values():
            current_of_slot[str(point.payload["slot"])] = point
    facts: dict[str, tuple[ScoredPoint, ...]] = {}
    superseded: dict[str, str] = {}
    for episode_id, ids in named.items():
        found: dict[str, ScoredPoint] = {}
        for point_id in ids:
            named_point = points.get(point_id)
            if named_point is None:
                continue
            kind = named_point.payload.get("type")
            if kind in CURRENT_TYPES:
                found[named_point.id] = named_point
            elif kind == HISTORY:
                now = current_of_slot.get(str(named_point.payload.get("slot")))
                if now is not None:
                    # A version that grew out of this same episode (a set that gained a
                    # second item from one sentence) does not make the episode the past.
                    if episode_id not in (now.payload.get("episodes") or ()):
                        superseded.setdefault(episode_id, now.id)
                    found[now.id] = now
        if found:
            facts[episode_id] = tuple(sorted(found.values(), key=lambda p: (-p.score, p.id)))
    return Links(facts, superseded)


class LinkedHit(NamedTuple):
    """One point of a plain search after its links were followed: its cosine to the
    query, its payload and, for an episode a newer fact replaced, that fact's text."""

    id: str
    cosine: float
    payload: Mapping[str, Any]
    replaced_by: str | None
    low_confidence: bool | None = None
    """The retrieval's own flag when the hit comes from one (a memory the ranking lifted
    for the attribute the question asks is confident whatever its cosine); ``None``:
    judge by ``cosine``."""
    confidence: float | None = None
    """The retrieval's calibrated confidence (:mod:`memstrata.retrieval.confidence`);
    ``None``: not graded, ``cosine`` is the relevance."""


def fold_hits(
    store: LongTermStore,
    tenant: str,
    query_vector: NDArray[np.float32],
    hits: Sequence[Hit],
    read: ScoredRead | None = None,
) -> list[LinkedHit]:
    """Hits of :class:`~memstrata.retrieval.search.HybridSearch` with their episode
    links followed (:func:`follow`): an episode's current facts come right before it
    (a fact found on its own and also carried comes once, with the better cosine),
    and an episode whose fact was superseded names the current one."""
    return fold(hits, episode_links(store, tenant, query_vector, hits, read))


def episode_links(
    store: LongTermStore,
    tenant: str,
    query_vector: NDArray[np.float32],
    hits: Sequence[Hit],
    read: ScoredRead | None = None,
) -> Links:
    """:func:`follow` for the episodes among ``hits``."""
    return follow(
        store,
        tenant,
        query_vector,
        [(h.id, h.payload) for h in hits if h.payload.get("type") == EPISODE],
        read,
    )


def fold(hits: Sequence[Hit], links: Links) -> list[LinkedHit]:
    """``hits`` with ``links`` folded in, as :func:`fold_hits` gives them."""
    carried = {p.id for points in links.facts.values() for p in points}
    out: list[LinkedHit] = []
    emitted: set[str] = set()
    for hit in hits:
        episode = hit.payload.get("type") == EPISODE
        if hit.id in emitted or (not episode and hit.id in carried):
            continue
        replaced_by = None
        for point in links.facts.get(hit.id, ()):
            if point.id == links.superseded.get(hit.id):
                replaced_by = str(point.payload.get("text", ""))
            if point.id not in emitted:
                emitted.add(point.id)
                out.append(LinkedHit(point.id, max(point.score, hit.cosine), point.payload, None))
        emitted.add(hit.id)
        out.append(LinkedHit(hit.id, hit.cosine, hit.payload, replaced_by))
    return out


def flatten(items: Sequence[RetrievedItem]) -> list[LinkedHit]:
    """Retrieved items as a search's linked hits: each episode's current facts right
    before it, once each; an episode a newer fact replaced names that fact's text."""
    out: list[LinkedHit] = []
    emitted: set[str] = set()
    for item in items:
        replaced_by = None
        for fact in item.facts:
            if fact.id == item.superseded_by:
                replaced_by = fact.text
            if fact.id not in emitted:
                emitted.add(fact.id)
                out.append(
                    LinkedHit(
                        fact.id,
                        fact.cosine,
                        fact.payload,
                        None,
                        fact.low_confidence,
                        fact.confidence,
                    )
                )
        if item.id not in emitted:
            emitted.add(item.id)
            out.append(
                LinkedHit(
                    item.id,
                    item.cosine,
                    item.payload,
                    replaced_by,
                    item.low_confidence,
                    item.confidence,
                )
            )
    return out
