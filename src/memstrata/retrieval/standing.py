"""The standing facts a question implies (docs/architecture.md, "Confidence").

"Where should I eat tonight?" names no allergy, diet or city, yet an answer that
ignores them is wrong. The attribute registry says which standing attributes a kind
of question bears on (:func:`memstrata.attributes.needed`: eating -> allergies, diet,
avoids, city; travel -> budget, city, schedule). When the question asks for a plan
or a recommendation (:func:`memstrata.attributes.plans`), :func:`with_standing`
reads the asking user's active fact of each such attribute (one exact engine call
per attribute, no vector search) and puts the episode it was said in first, in the
needs' order, carrying the fact (route ``standing_fact``): what the user must not be
offered comes before what merely sounds like the question. Such an episode is as
confident as the best item of the read (:func:`memstrata.retrieval.confidence.grade`),
as an episode lifted for a current value is (:mod:`memstrata.retrieval.currency`).

A question about what was said ("what did I eat on Tuesday?") is left alone: its
answer is the episode it names, not the standing constraints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from memstrata.attributes import asked, needed, plans
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter, ScoredPoint
from memstrata.memory.codec import slot_string
from memstrata.retrieval.guard import checkpoint
from memstrata.retrieval.results import RetrievalQuery, RetrievedItem

__all__ = ["ROUTE", "standing_attributes", "with_standing"]

ROUTE = "standing_fact"
"""The route of an episode brought in for a standing fact the question implies."""

ScoredRead = Callable[[Sequence[str]], dict[str, ScoredPoint]]


# Someone named in the question ("Where should Melanie eat?") is whose needs it asks.
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|we|us|our)\b|我", re.IGNORECASE)
_NAMED = re.compile(r"(?<=[\w,;:]\s)[A-Z][a-z]+")


def standing_attributes(question: str) -> tuple[str, ...]:
    """The standing attributes ``question`` brings first: those it implies when it
    asks the user's plan or a recommendation and asks no attribute by name (none
    otherwise)."""
    if not plans(question) or asked(question):
        return ()
    if not _FIRST_PERSON.search(question) and _NAMED.search(question):
        return ()
    return needed(question)


def _item(point: ScoredPoint, score: float) -> RetrievedItem:
    stamp = point.payload.get("created_at")
    at = None
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        at = datetime.fromtimestamp(float(stamp), tz=UTC)
    return RetrievedItem(
        id=point.id,
        score=score,
        cosine=point.score,
        low_confidence=False,
        routes=(ROUTE,),
        payload=point.payload,
        observed_at=at,
        in_time_window=None,
    )


def with_standing(
    store: LongTermStore,
    query: RetrievalQuery,
    ranked: Sequence[RetrievedItem],
    read: ScoredRead,
) -> list[RetrievedItem]:
    """``ranked`` with the episodes of the user's standing facts the question implies
    first, each carrying its fact (see the module docstring); unchanged when it
    implies none, or the user holds none of them."""
    attributes = standing_attributes(query.text)
    if not attributes or query.user is None:
        return list(ranked)
    items = list(ranked)
    top = max((item.score for item in items), default=1.0)
    firsts: list[RetrievedItem] = []
    for attribute in attributes:
        key = slot_string(query.tenant, (query.user, "user", attribute))
        flt = Filter(tenant=query.tenant, user=query.user, types=("fact",), extras=(("slot", key),))
        checkpoint()
        active = [r.id for r in store.iter_records(MEMORIES, flt)][:1]
        if not active:
            continue
        facts = read(active)
        if not facts:
            continue
        fact = _item(facts[active[0]], top)
        episodes = [str(e) for e in fact.payload.get("episodes") or ()]
        listed = [item for item in items + firsts if item.id in episodes]
        if listed:
            head = listed[-1]
        else:
            checkpoint()
            found = read(episodes[-1:])
            if not found:
                firsts.append(fact)
                continue
            head = _item(next(iter(found.values())), top)
        carried = (fact, *(f for f in head.facts if f.id != fact.id))
        routes = head.routes if ROUTE in head.routes else (*head.routes, ROUTE)
        head = replace(head, score=top, facts=carried, superseded_by=None, routes=routes)
        items = [item for item in items if item.id != head.id]
        firsts = [item for item in firsts if item.id != head.id] + [head]
    return firsts + items
