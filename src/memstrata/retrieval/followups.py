"""A later turn that corrects or changes what an earlier one said (docs/architecture.md,
"Confidence").

"My budget for the trip is 8,000 yuan." then "Sorry, I meant 10,000."; "My flight is
MU5137." then "Airline changed it, I'm on MU5139 now."; 我的面试是6月2号。 then 不对，是6月3号。
The later turn often names no attribute the registry knows and repeats few of the
question's words, so no fact versions it and it ranks far below the stale statement. After
the links and the current value are read, :func:`with_followups` pairs each ranked episode
with a later episode of the same user that follows it up:

* a *correction* (actually, sorry, I meant, make that, 不对, 说错了, 其实是 ...) sharing
  a content word with it, or the user's next statement after it, within
  :data:`CORRECTION_DAYS`;
* a *change* (changed, switched, now, moved, no longer, 改成, 换了, 推迟, 现在 ...) that
  shares a content word with it or with the question.

The follow-up is placed just before the episode it follows, with the route
:data:`ROUTE` (so :func:`memstrata.retrieval.confidence.grade` gives it the confidence of
the episode it replaces), and that episode is marked as the past (``superseded_by`` the
follow-up, which it carries so that the context says what replaced it). Only episodes
are paired (a fact's own versions are the write path's); a follow-up is used once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

from memstrata.attributes.registry import first_person
from memstrata.attributes.words import CN_OTHERS
from memstrata.memo import remember
from memstrata.retrieval.results import RetrievalQuery, RetrievedItem

__all__ = [
    "CORRECTION_DAYS",
    "ROUTE",
    "changes",
    "corrects",
    "forget_texts",
    "names_someone_else",
    "with_followups",
]

ROUTE = "followup"
"""The route of an episode that corrects or changes an earlier ranked one."""

CORRECTION_DAYS = 3.0
"""How soon after a statement a bare correction ("Sorry, I meant 10,000.") still
refers to it without repeating any of its words."""

_I = re.IGNORECASE
_CORRECTION = re.compile(
    r"\b(?:actually|sorry|oops|I\s+meant|I\s+mean|wait|correction|scratch\s+that|"
    r"make\s+(?:it|that)|not\s+\w+,\s+(?:it's|its)|instead|my\s+mistake|I\s+misspoke|"
    r"typo|swapped|on\s+second\s+thought|come\s+to\s+think\s+of\s+it|changed\s+my\s+mind)\b|"
    r"不对|说错|搞错|记错|写错|更正|纠正|其实是|应该是|不是\S{0,8}[，,]\s*是|想了想|"
    r"再想想|改主意|还是\S{0,16}吧",
    _I,
)
_CHANGE = re.compile(
    r"\b(?:changed?|changing|switch(?:ed)?|moved?|moving|now|no\s+longer|anymore|new|"
    r"quit|left|joined|bumped|raised|dropped|postponed|rescheduled|pushed|moved\s+up|"
    r"replaced|upgraded|sold|booked|closed|started|stopped)\b|"
    r"改成|改到|改为|改了|换了|换成|换到|换号|调到|调整|推迟|提前|延期|搬到|搬家|离职|辞职|跳槽|"
    r"现在|如今|新的?|不再|升职|降到|涨到|卖了|取消|改",
    _I,
)


_RELATION = re.compile(
    rf"{CN_OTHERS}|\b(?:sister|brother|mom|mum|mother|dad|father|parents?|wife|husband|"
    r"partner|son|daughter|kids?|children|child|friend|boss|colleague|coworker|roommate|"
    r"neighbou?r|girlfriend|boyfriend|cousin|aunt|uncle|grand\w+)s?\b",
    _I,
)
_THIRD_PERSON = re.compile(r"\b(?:he|she|him|her|his|they|them|their)\b|他|她", _I)


# Each ranked episode is paired with every other, and the same memories come back
# read after read: the patterns' answers are remembered per text (bounded,
# memstrata.memo). On long turns these regexes were most of a read's scoring time.
_MEMO_MAX = 16_384
_whom: dict[str, frozenset[str]] = {}
_corrections: dict[str, bool] = {}
_changes: dict[str, bool] = {}
_third: dict[str, bool] = {}


def forget_texts() -> None:
    """Drop every remembered text (a forget: no copy outlives what it deleted)."""
    for memo in (_whom, _corrections, _changes, _third):
        memo.clear()


def _whose(text: str) -> frozenset[str]:
    found = _whom.get(text)
    if found is None:
        found = remember(
            _whom, text, frozenset(m.casefold() for m in _RELATION.findall(text)), _MEMO_MAX
        )
    return found


def _third_person(text: str) -> bool:
    found = _third.get(text)
    if found is None:
        found = remember(_third, text, _THIRD_PERSON.search(text) is not None, _MEMO_MAX)
    return found


def corrects(text: str) -> bool:
    """Whether ``text`` corrects what was just said (actually / I meant / 不对 ...)."""
    found = _corrections.get(text)
    if found is None:
        found = remember(_corrections, text, _CORRECTION.search(text) is not None, _MEMO_MAX)
    return found


def changes(text: str) -> bool:
    """Whether ``text`` says a value changed (now / switched / 改成 / 换了 ...)."""
    found = _changes.get(text)
    if found is None:
        found = remember(_changes, text, _CHANGE.search(text) is not None, _MEMO_MAX)
    return found


Terms = Callable[[str], frozenset[str]]


def _shares(a: str, b: str, terms: Terms) -> bool:
    """Whether two texts share a content word; a Chinese word of one found inside the
    other counts (jieba cuts 朗逸卖了 as one word, 我的车是大众朗逸 as 朗逸)."""
    mine, theirs = terms(a), terms(b)
    if mine & theirs:
        return True
    return any(
        len(word) >= 2 and _CJK.fullmatch(word) is not None and word in other
        for words, other in ((mine, b), (theirs, a))
        for word in words
    )


_CJK = re.compile(r"[\u4e00-\u9fff]+")


def _follows(
    earlier: RetrievedItem,
    later: RetrievedItem,
    question: frozenset[str],
    terms: Terms,
    between: bool,
) -> bool:
    """Whether ``later`` corrects or changes ``earlier`` (``between``: the user said
    something else in between)."""
    if earlier.observed_at is None or later.observed_at is None:
        return False
    if later.observed_at <= earlier.observed_at:
        return False
    text = later.text
    # What was said of someone else ("My brother lives in Beijing") is changed only by
    # a turn about them too, not by the user's own move.
    others = _whose(earlier.text)
    if others and not (others & _whose(text) or _third_person(text)):
        return False
    shared = _shares(text, earlier.text, terms)
    if corrects(text):
        # A bare correction ("Sorry, I meant 10,000.") corrects what came just before.
        soon = later.observed_at - earlier.observed_at <= timedelta(days=CORRECTION_DAYS)
        return shared or (soon and not between)
    return changes(text) and (shared or bool(terms(text) & question))


def _between(items: Sequence[RetrievedItem], earlier: RetrievedItem, later: RetrievedItem) -> bool:
    """Whether the user said something else (in ``items``) between the two."""
    if earlier.observed_at is None or later.observed_at is None:
        return False
    return any(
        item.kind == "episode"
        and item.observed_at is not None
        and earlier.observed_at < item.observed_at < later.observed_at
        and _same_user(earlier, item)
        for item in items
    )


def _same_user(a: RetrievedItem, b: RetrievedItem) -> bool:
    # What the assistant said corrects nothing the user stated.
    speaker = b.payload.get("speaker") or b.payload.get("role") or "user"
    return a.payload.get("user") == b.payload.get("user") and speaker != "assistant"


_WORD = re.compile(r"[A-Za-z][\w'-]*")


def names_someone_else(question: str) -> bool:
    """A question that names a person or thing by a capitalized name past its first word
    and does not speak of the user ("What did Caroline research?"); "When's the
    standup?" and "Where does my sister live?" do not."""
    if first_person(question):
        return False
    words = _WORD.findall(question)[1:]
    return any(w[:1].isupper() and w != "I" for w in words)


def with_followups(
    query: RetrievalQuery,
    ranked: Sequence[RetrievedItem],
    terms: Terms,
    *,
    top: int = 3,
) -> list[RetrievedItem]:
    """``ranked`` with each of its first ``top`` current episodes followed up by the
    latest later episode that corrects or changes it (see the module docstring);
    unchanged when none does, and for a question about someone else by name (their
    turns are read as they were said: "Caroline started painting" is news, not a
    correction of what she said before)."""
    items = list(ranked)
    if names_someone_else(query.text):
        return items
    question = terms(query.text)
    used: set[str] = set()
    heads = [
        item.id
        for item in items[:top]
        if item.kind == "episode" and item.superseded_by is None and ROUTE not in item.routes
    ]
    for head_id in heads:
        at = next((i for i, item in enumerate(items) if item.id == head_id), None)
        if at is None or head_id in used:
            continue
        head = items[at]
        later = [
            item
            for item in items
            if item.id != head.id
            and item.id not in used
            and item.kind == "episode"
            and _same_user(item, head)
            and _follows(head, item, question, terms, _between(items, head, item))
        ]
        if not later:
            continue
        # The latest follow-up is what holds now.
        follow = max(later, key=_said)
        used.update((follow.id, head.id))
        follow = replace(
            follow,
            score=max(follow.score, head.score),
            routes=follow.routes if ROUTE in follow.routes else (*follow.routes, ROUTE),
            superseded_by=None,
        )
        doubted = tuple(_doubted(fact, follow) for fact in head.facts)
        past = replace(head, superseded_by=follow.id, facts=(follow, *doubted))
        # Where the first of the two stood (the follow-up may have ranked above it).
        at = min(i for i, item in enumerate(items) if item.id in (head.id, follow.id))
        items = [item for item in items if item.id not in (head.id, follow.id)]
        items[at:at] = [follow, past]
    return items


def _doubted(fact: RetrievedItem, follow: RetrievedItem) -> RetrievedItem:
    """A fact read from a statement a later turn corrected is in doubt (served as
    DISPUTED, never as plainly current), as a fact the write path disputed is."""
    if fact.kind not in ("fact", "event") or fact.payload.get("disputed"):
        return fact
    at = follow.observed_at or fact.observed_at
    if at is None:
        return fact
    dispute = {
        "episode": follow.id,
        "at": at.isoformat(),
        "text": follow.text,
        "confidence": 1.0,
        "by": ROUTE,
    }
    return replace(fact, payload={**fact.payload, "disputed": dispute})


def _said(item: RetrievedItem) -> float:
    return item.observed_at.timestamp() if item.observed_at is not None else 0.0
