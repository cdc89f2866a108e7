"""How the time a question names steers the ranking (English, Chinese).

:func:`question_window` is the window the retriever ranks by: what
:func:`~memstrata.retrieval.timeexpr.resolve` finds in the question (a date, a
weekday, a relative day), or, for "the first time we talked" / 第一次聊天, the day of
the user's earliest memory. :func:`window_weight` says how much an item observed at
some moment is lifted: fully inside the window, less and less through the slack
around it (a plan told on May 4 is not "on May 1" just because it is three days
later), not at all beyond. Nothing is filtered out here: a wrong parse lowers an
answer's rank at most, never hides it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from memstrata.config import RetrievalSettings
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import Filter
from memstrata.longterm.protocol import VectorIndex
from memstrata.retrieval.scoring import fuse_route
from memstrata.retrieval.timeexpr import TimeWindow, resolve

SLACK_WEIGHT = 0.5
"""The weight at the window's edge for an item observed just outside it; it falls
linearly to 0 at the end of the slack. Inside the window the weight is 1."""

_FIRST_SESSION = re.compile(
    r"\b(?:the\s+)?(?:very\s+)?first\s+time\s+(?:we|i|you)\s+(?:ever\s+)?"
    r"(?:talked|spoke|chatted|met|messaged)\b"
    r"|\bwhen\s+we\s+first\s+(?:talked|spoke|chatted|met)\b"
    r"|\bour\s+(?:very\s+)?first\s+(?:conversation|chat|talk|session)\b"
    r"|第一次(?:和你|跟你|与你|我们|咱们)?(?:聊|谈|说话|对话|交流|见面)"
    r"|(?:我们|咱们)第一次"
    r"|(?:最开始|刚开始|一开始)(?:和你|跟你)?(?:聊|谈|说话|对话)",
    re.I,
)
_HOUR = timedelta(hours=1)
_DAY = timedelta(days=1)
# Where the search for the earliest memory starts: before any memory this engine keeps.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

CountBefore = Callable[[float], int]
"""How many of the asker's memories were observed before an instant (epoch seconds)."""


def first_session_phrase(question: str) -> str | None:
    """The words that ask about the first conversation ("the first time we talked",
    第一次聊天), or None."""
    match = _FIRST_SESSION.search(question)
    return None if match is None else match[0]


def earliest_observed(count_before: CountBefore, now: datetime) -> datetime | None:
    """The hour in which the asker's earliest memory was observed (a binary search
    on counts: about twenty of them), or None when nothing was observed before now."""
    low, high = _EPOCH.timestamp(), now.timestamp()
    if count_before(high) == 0:
        return None
    step = _HOUR.total_seconds()
    while high - low > step:
        middle = (low + high) / 2
        if count_before(middle) > 0:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(low, tz=now.tzinfo)


def question_window(question: str, now: datetime) -> TimeWindow | None:
    """The window ``question`` names, resolved against ``now`` (no L3 read)."""
    return resolve(question, now)


def first_session_lookup(
    question: str, now: datetime, index: VectorIndex, collection: str, flt: Filter
) -> Callable[[], TimeWindow | None] | None:
    """For a question about "the first time we talked" (第一次聊天), the L3 read that
    finds that conversation's day: from the hour of the earliest memory ``flt`` lets
    the asker see, a day long. None for any other question."""
    phrase = first_session_phrase(question)
    if phrase is None:
        return None

    def lookup() -> TimeWindow | None:
        earliest = earliest_observed(
            lambda stamp: index.count(
                collection,
                replace(
                    flt,
                    created_before=stamp
                    if flt.created_before is None
                    else min(stamp, flt.created_before),
                ),
            ),
            now,
        )
        return None if earliest is None else TimeWindow(earliest, earliest + _HOUR + _DAY, phrase)

    return lookup


def window_weight(start: float, end: float, slack: float, observed: float | None) -> float:
    """How far an item observed at ``observed`` (epoch seconds) is inside the window
    ``[start, end)``: 1 inside, 0 beyond the ``slack`` seconds either side and when
    the time is unknown. Within the slack of a narrow window (a named day: precise)
    :data:`SLACK_WEIGHT` falling linearly to 0; of a wider one ("recently", a month:
    vague at its edges) still 1."""
    if observed is None:
        return 0.0
    if start <= observed < end:
        return 1.0
    distance = start - observed if observed < start else observed - end
    if slack <= 0 or distance >= slack:
        return 0.0
    if end - start > NARROW_WINDOW.total_seconds():
        return 1.0
    return SLACK_WEIGHT * (1.0 - distance / slack)


WINDOW_ROUTE = "time_window"
"""The route that searches the question's window alone (a narrow window only)."""
WINDOW_ROUTE_WEIGHT = 1.0
"""Its weight in the cross-route merge: the window's best matches compete with the
whole history's best on equal terms, then the time boost puts them ahead."""
NARROW_WINDOW = timedelta(days=3)
"""Windows up to this long (a day, a weekend, the first conversation) get the route;
a month or "recently" would only repeat the main route."""


def window_route(
    store: LongTermStore,
    collection: str,
    text: str,
    flt: Filter,
    window: TimeWindow | None,
    settings: RetrievalSettings,
) -> Callable[[NDArray[np.float32] | None], tuple[str, float, Mapping[str, float]]] | None:
    """For a narrow window (:data:`NARROW_WINDOW`), the search of ``text`` inside it
    alone, as a route for the cross-route merge (given the query vector, or None for
    BM25 alone); None for a wide window or none."""
    if window is None or window.end - window.start > NARROW_WINDOW:
        return None
    # within the read's own bounds (an as-of read never sees what came after it)
    start, end = window.start.timestamp(), window.end.timestamp()
    inside = replace(
        flt,
        created_after=start if flt.created_after is None else max(start, flt.created_after),
        created_before=end if flt.created_before is None else min(end, flt.created_before),
    )
    depth = settings.secondary_route_depth

    def search(vector: NDArray[np.float32] | None) -> tuple[str, float, Mapping[str, float]]:
        encoded = store.encode_query(text)
        with store.searching(collection):
            # BM25 on the whole history's scale: normalized to the window's own best,
            # a small window's best match is often only a shared particle (我, 了)
            best = store.index.search_sparse(collection, encoded, flt, 1, with_payload=False)
            if vector is None:
                found = store.index.search_sparse(
                    collection, encoded, inside, depth, with_payload=False
                )
        if vector is None:
            dense: list[tuple[str, float]] = []
            sparse = [(p.id, p.score) for p in found]
        else:
            dense, sparse = store.route_lists(
                collection, text, vector, inside, dense_depth=depth, sparse_depth=depth
            )
        # fuse_route's dense half as is; its BM25 half on the whole history's scale
        fused = fuse_route(
            dense, [], dense_weight=settings.dense_weight, sparse_weight=settings.sparse_weight
        )
        scale = max([p.score for p in best] + [score for _, score in sparse], default=0.0)
        for item_id, score in sparse if scale > 0 else ():
            fused[item_id] = fused.get(item_id, 0.0) + settings.sparse_weight * score / scale
        return WINDOW_ROUTE, WINDOW_ROUTE_WEIGHT, fused

    return search


C = TypeVar("C")
Scored = list[tuple[float, str, C, float | None, bool | None]]


def lead_with_window(scored: Scored[C], window: TimeWindow | None, k: int) -> Scored[C]:
    """For a narrow window, the best ``k // 2`` (at least one) candidates observed
    inside it lifted above every other, their order kept; the rest of the top ``k``
    stays open to what was said outside it (a wrong parse must not hide the answer).
    Entries are ``(score, id, candidate, observed seconds, inside)``."""
    if not scored or window is None or window.end - window.start > NARROW_WINDOW:
        return scored
    start, end = window.start.timestamp(), window.end.timestamp()
    inside = [e for e in scored if e[3] is not None and start <= e[3] < end]
    inside.sort(key=lambda e: (-e[0], e[1]))
    lifted = {e[1] for e in inside[: max(1, k // 2)]}
    if not lifted:
        return scored
    top = max(e[0] for e in scored)
    return [(e[0] + top, *e[1:]) if e[1] in lifted else e for e in scored]
