"""The current value first: a question about an attribute the user has a current fact
for ranks the episode that said it first, and marks episodes of older values as past.

"Where do I live?" after "I've been living in Denver for years." and, later, "We
finally relocated to Austin last month." must be answered from the Austin episode. The
links of :mod:`memstrata.retrieval.links` mark an episode as the past only when a fact
was extracted from it and later superseded; an older value said in a phrasing no
pattern read leaves its episode unmarked, and it may well rank first. So, after the
links are followed, :func:`current_first`:

1. reads which single-valued attributes the question asks the current value of
   (:func:`asked_attributes`: first person, English and Chinese cues - where I live,
   我的住处 / 哪座城市, my budget, my delivery / 收件 address, where I work, my current
   job, my birthday, what I eat ...);
2. reads that slot of the asking user (one engine call per attribute): its active
   fact and the values of its closed versions;
3. when an episode of the user in the ranking, said after the active fact, states the
   attribute anew (its cue words, a change word - new / now / 改 / 调到 / 辞职 -
   and some value: "New job confirmed - lawyer.", 电脑预算我调到两万块了), the fact is
   stale (no pattern read the newer value): that episode goes first instead, and
   the fact's own episode is not lifted;
4. otherwise puts the episode the active fact was said in first (read from L3 when
   the ranking left it out), carrying that fact;
5. marks as past (``superseded_by`` the active fact, which it then carries) every other
   episode of the user, said before the current fact, that names an older value of the
   slot, or that speaks of the attribute (its cue words: 住 / live / moved ...) and
   names some value of it (a place, a sum) other than the current one - unless it
   speaks of someone else (我姐姐一家住在深圳, "my sister lives in Denver").

A lifted episode keeps the ranking's confidence: when the ranking's first item was
confident, the lifted one is not flagged low-confidence either.

Multi-valued attributes (allergies, likes ...) accumulate instead of superseding and
are left alone - except allergies once an item was taken out of the set ("I'm allergic
to shellfish, not peanuts", 我不再对花生过敏, a feedback naming it wrong): then "What am I
allergic to?" gets the episode of the current set first, and an earlier episode naming a
removed item (not the one that removed it) is marked past. So is a question naming
nobody in the first person (a question about someone else's home says nothing about the
user's slot).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.attributes import asked, by_name
from memstrata.attributes.words import CN_OTHERS, CN_PLACES
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter, ScoredPoint
from memstrata.memory.codec import slot_string
from memstrata.retrieval.guard import checkpoint
from memstrata.retrieval.results import RetrievalQuery, RetrievedItem

__all__ = ["ROUTE", "asked_attributes", "current_first"]

ROUTE = "current_fact"
"""The route of a current fact's episode the ranking had left out."""

_I = re.IGNORECASE


_MULTI_VALUED_GUARD = frozenset({"likes", "dislikes", "interests", "health", "avoids"})
_SETS = frozenset({"allergies"})
"""Set-valued attributes asked here: they count only once a value was taken out of the
set (a correction, "not peanuts", 我不再对花生过敏); a set that only grew is left alone."""
_SEPARATOR = ";"
_TAKES_BACK = re.compile(
    r"\bnot\b|\bno\s+longer\b|\banymore\b|\boff\b|\bremove\b|不再|不是|去掉|删|不过敏|没有过敏",
    _I,
)


def asked_attributes(question: str) -> tuple[str, ...]:
    """The attributes whose current value ``question`` asks, in order (the registry's
    ``asks`` cues); none unless it speaks in the first person."""
    return asked(question)


def _states(attribute: str) -> re.Pattern[str]:
    found = by_name(attribute)
    assert found is not None, attribute  # asked() only names registered attributes
    return found.states


@dataclass(frozen=True, slots=True)
class _Slot:
    attribute: str
    fact: ScoredPoint
    old_values: tuple[str, ...]
    since: float


def _stamp(payload: Any, *keys: str) -> float | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


ScoredRead = Callable[[Sequence[str]], dict[str, ScoredPoint]]
"""Points by id with their payloads and cosines to the question."""


def _slot(
    store: LongTermStore, query: RetrievalQuery, read: ScoredRead, attribute: str
) -> _Slot | None:
    """The user's slot of ``attribute``: its active fact (with its cosine to the
    question) and the values it held before; None without an active fact."""
    if query.user is None:
        return None
    key = slot_string(query.tenant, (query.user, "user", attribute))
    flt = Filter(
        tenant=query.tenant, user=query.user, types=("fact", "history"), extras=(("slot", key),)
    )
    checkpoint()
    records = list(store.iter_records(MEMORIES, flt))
    active = [r for r in records if r.payload.get("type") == "fact"]
    if not active:
        return None
    checkpoint()
    scored = read([active[0].id])
    fact = scored.get(active[0].id)
    if fact is None:
        return None
    value = str(fact.payload.get("value", ""))
    history = [
        str(r.payload.get("value", "")) for r in records if r.payload.get("type") == "history"
    ]
    if attribute in _SETS:
        # The old values of a set are the items taken out of it; none: nothing to do.
        held = {_set_key(v) for v in value.split(_SEPARATOR)}
        items = [i.strip() for v in history for i in v.split(_SEPARATOR) if i.strip()]
        old = tuple(dict.fromkeys(i for i in items if _set_key(i) not in held))
        if not old:
            return None
    else:
        old = tuple(
            dict.fromkeys(v for v in history if v.casefold() != value.casefold() and v.strip())
        )
    since = _stamp(fact.payload, "valid_from_ts", "observed_at_ts") or 0.0
    return _Slot(attribute, fact, old, since)


def _set_key(item: str) -> str:
    return " ".join(item.casefold().split())


def _item(point: ScoredPoint, score: float, floor: float, routes: tuple[str, ...]) -> RetrievedItem:
    stamp = _stamp(point.payload, "created_at")
    return RetrievedItem(
        id=point.id,
        score=score,
        cosine=point.score,
        low_confidence=point.score < floor,
        routes=routes,
        payload=point.payload,
        observed_at=None if stamp is None else datetime.fromtimestamp(stamp, tz=UTC),
        in_time_window=None,
    )


def _with_fact(item: RetrievedItem, fact: RetrievedItem) -> tuple[RetrievedItem, ...]:
    return (fact, *(f for f in item.facts if f.id != fact.id))


def _is_past(item: RetrievedItem, slot: _Slot, current_ids: set[str]) -> bool:
    """Whether episode ``item`` (not one the current fact was said in) tells an older
    value of ``slot``: it names one of the slot's old values, or it speaks of the
    attribute without naming the current value; said before the current fact."""
    if item.kind != "episode" or item.id in current_ids:
        return False
    if str(item.payload.get("role", "user")) != "user":
        return False
    said = _stamp(item.payload, "created_at")
    if said is not None and said >= slot.since:
        return False
    text = item.text.casefold()
    if text.rstrip().endswith(("?", "？")):
        return False
    if slot.attribute in _SETS:
        # An episode naming an item taken out of the set told what is no longer so -
        # unless it is one taking it out ("..., not peanuts", 我不再对花生过敏).
        return not _TAKES_BACK.search(text) and any(o.casefold() in text for o in slot.old_values)
    value = str(slot.fact.payload.get("value", "")).casefold()
    if value and value in text:
        return False
    if any(old.casefold() in text for old in slot.old_values):
        return True
    return (
        bool(_states(slot.attribute).search(item.text))
        and _names_a_value(slot.attribute, item.text)
        and not _ABOUT_OTHERS.search(item.text)
    )


# Someone else's home, job, birthday (我姐姐一家住在深圳, "my sister lives in Denver"):
# none of the user's values, old or new.
_ABOUT_OTHERS = re.compile(
    rf"我的?{CN_OTHERS}|\b(?:my|our)\s+(?:\w+\s+)?(?:sister|brother|mom|mum|mother|dad|father|"
    r"parents|friends?|wife|husband|partner|boyfriend|girlfriend|son|daughter|kids?|children|"
    r"boss|colleagues?|co-?workers?|neighbou?rs?|roommates?|cousins?|aunt|uncle|grandma|grandpa|"
    r"grandparents|in-laws)\b",
    _I,
)

# Words a statement of a new value carries ("new job", 改成, 搬到, "now I'm ...").
_CHANGE = re.compile(
    r"\b(?:now|new|moved|moving|relocated|switched|changed?|update[sd]?|instead|no\s+longer|"
    r"anymore|confirmed|quit|left|actually|raised|lowered|bumped|increased|cut)\b|"
    r"改|换|搬|新|调到|调整|提高到|降到|不再|转行|辞职|其实|记混|说错|现在|如今",
    _I,
)


def _restated(
    items: Sequence[RetrievedItem], slot: _Slot, current_ids: set[str]
) -> RetrievedItem | None:
    """The latest episode of the user said after the current fact that states the
    attribute anew (its cue words, a change word, some value): a newer value no
    pattern read, which makes the slot's active fact stale. None when there is none."""
    found: list[tuple[float, int, RetrievedItem]] = []
    for index, item in enumerate(items):
        if item.kind != "episode" or item.id in current_ids:
            continue
        if str(item.payload.get("role", "user")) != "user":
            continue
        said = _stamp(item.payload, "created_at")
        if said is None or said <= slot.since:
            continue
        if item.text.rstrip().endswith(("?", "？")):
            continue
        if (
            _states(slot.attribute).search(item.text)
            and _CHANGE.search(item.text)
            and _names_a_value(slot.attribute, item.text)
            and not _ABOUT_OTHERS.search(item.text)
        ):
            found.append((said, -index, item))
    return max(found, key=lambda f: (f[0], f[1]))[2] if found else None


# A word that may name a place, a sum, an employer: a capitalized word that does not
# start the sentence (and is not "I"), a known Chinese place, a 市 / 区 / 县 name, a number.
_PROPER_EN = re.compile(r"(?<=[a-z,;:]\s)(?!I\b|I')[A-Z][\w'-]+")
_CN_PLACE_WORD = re.compile(r"[\u4e00-\u9fff]{1,6}(?:市|省|区|县|镇)")
_NUMBER = re.compile(r"\d|[一二两三四五六七八九十百千万]+(?:块|元|万)")
_OPENERS = frozenset(
    [
        "i",
        "i'm",
        "i've",
        "i'd",
        "my",
        "our",
        "we",
        "we're",
        "we've",
        "the",
        "this",
        "that",
        "it",
        "it's",
        "just",
        "please",
        "so",
        "and",
        "but",
        "actually",
        "well",
        "oh",
        "hey",
        "hi",
        "heads",
        "big",
        "been",
        "home",
        "moved",
        "finally",
        "yes",
        "no",
        "sorry",
        "thanks",
        "also",
        "now",
        "these",
        "there",
        "here",
        "what",
        "where",
        "when",
        "how",
        "why",
    ]
)
_NAMED_BY = {
    "city": "place",
    "address": "place",
    "delivery_address": "place",
    "budget": "sum",
    "birthday": "sum",
}


def _names_a_value(attribute: str, text: str) -> bool:
    """Whether ``text`` names some value of ``attribute`` at all: "I love my apartment"
    speaks of home but tells no older city; "My place in Denver is tiny" does."""
    kind = _NAMED_BY.get(attribute)
    if kind == "sum":
        return bool(_NUMBER.search(text))
    if kind == "place":
        first = text.split(maxsplit=1)[0].strip(",.!:;") if text.split() else ""
        return bool(
            _PROPER_EN.search(text)
            or (first[:1].isupper() and first.casefold() not in _OPENERS)
            or _CN_PLACE_WORD.search(text)
            or any(place in text for place in CN_PLACES)
            or _NUMBER.search(text)
        )
    return True


def current_first(
    store: LongTermStore,
    query: RetrievalQuery,
    vector: NDArray[np.float32],
    ranked: Sequence[RetrievedItem],
    floor: float,
    read: ScoredRead | None = None,
) -> list[RetrievedItem]:
    """``ranked`` (best first, links followed) with the current fact's episode first
    and older values' episodes marked past, for a question about a current value
    (see the module docstring); unchanged otherwise. ``read``: how points are read
    with their cosines (default: the store's ``read_scored`` with ``vector``)."""
    if read is None:

        def read(ids: Sequence[str]) -> dict[str, ScoredPoint]:
            return store.read_scored(MEMORIES, ids, vector, tenant=query.tenant)

    attributes = [a for a in asked_attributes(query.text) if a not in _MULTI_VALUED_GUARD]
    if not attributes or query.user is None or not ranked:
        return list(ranked)
    items = list(ranked)
    # Lifting an episode changes the order, not whether the memory holds an answer:
    # a lifted episode is as confident as the ranking's own first item was.
    confident = not ranked[0].low_confidence
    firsts: list[RetrievedItem] = []
    for attribute in attributes:
        slot = _slot(store, query, read, attribute)
        if slot is None:
            continue
        top = max(item.score for item in items + firsts)
        fact = _item(slot.fact, top, floor, ("episode",))
        episodes = slot.fact.payload.get("episodes") or ()
        current_ids = {str(e) for e in episodes}
        newer = None if attribute in _SETS else _restated(items, slot, current_ids)
        if newer is not None:
            # The active fact is stale: the newer statement comes first, bare (no
            # fact was read from it), and the fact's own episode is not lifted.
            items = [item for item in items if item.id != newer.id]
            firsts.append(
                replace(
                    newer,
                    score=max(top, newer.score),
                    superseded_by=None,
                    low_confidence=newer.low_confidence and not confident,
                )
            )
            continue
        listed = [item for item in items if item.id in current_ids]
        if listed:
            head = listed[-1]  # the latest episode the value was said in
            items = [item for item in items if item.id != head.id]
        else:
            checkpoint()
            wanted = [str(e) for e in episodes][-1:]
            found = read(wanted)
            if not found:
                continue
            head = _item(next(iter(found.values())), top, floor, (ROUTE,))
        lifted = head.low_confidence and not confident
        # The current fact comes with its episode, as confident as the episode is.
        fact = replace(fact, cosine=max(fact.cosine, head.cosine), low_confidence=lifted)
        firsts.append(
            replace(
                head,
                score=max(top, head.score),
                facts=_with_fact(head, fact),
                superseded_by=None,
                low_confidence=lifted,
            )
        )
        items = [
            replace(
                item,
                superseded_by=fact.id,
                facts=_with_fact(item, fact),
                score=min(item.score, top),
            )
            if _is_past(item, slot, current_ids)
            else item
            for item in items
        ]
    if not firsts:
        return items
    firsts.sort(key=lambda item: -item.score)
    return firsts + items
