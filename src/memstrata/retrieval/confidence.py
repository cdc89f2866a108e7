"""The confidence of every L3 read (docs/architecture.md, "Confidence").

Confidence grades, it does not withhold. Each retrieved item gets one calibrated
confidence in [0, 1] from several signals (:class:`Signals`): the dense cosine to the
question (by the question's language route), the share of the question's BM25 terms
the item holds, whether the item holds an attribute the question asks or implies
(:func:`memstrata.attributes.asked`, :func:`memstrata.attributes.needed`), whether it
holds a name or number the question names, whether it was said inside the time window
the question names (or outside it), and how recent it is. A logistic model combines
them (:data:`MODEL`, fitted offline on the bilingual set's dev split by
:mod:`memstrata.eval.confidence_fit`; the command that produced it is beside it).

An item below ``low_confidence_cosine`` (on this confidence's scale: the model's bias
is shifted so that the bar chosen on dev lands on the setting's default, which is
also the low-risk bar of ``decide``) is served flagged low-confidence, with its
reason (:func:`reason`). L3 is skipped for a read only when every item is below
``skip_below_cosine`` *and* nothing was said inside a time window the question names:
what every signal calls unrelated costs tokens and misleads the model; anything else
is served, graded. ``retrieve``, ``route``, ``build_context`` and ``decide`` all read
this one confidence.

Reads with no question-side signals (an L2 cached read, a preference) still judge by
cosine alone (:func:`is_low_confidence`, :func:`below_floor`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import NamedTuple

from memstrata.attributes import asked, needed, plans
from memstrata.config import LongTermSettings
from memstrata.longterm.sparse import tokenize
from memstrata.memo import remember
from memstrata.retrieval.followups import ROUTE as FOLLOWUP
from memstrata.retrieval.results import RetrievedItem, Signals
from memstrata.retrieval.standing import ROUTE as STANDING
from memstrata.retrieval.timeexpr import TimeWindow

__all__ = [
    "MODEL",
    "Model",
    "QuestionSignals",
    "Signals",
    "below_floor",
    "combined",
    "content_terms",
    "grade",
    "is_disputed",
    "is_low_confidence",
    "question_signals",
    "reason",
    "relevance_below",
    "skips_graded",
    "skips_l3",
]


class Model(NamedTuple):
    """A logistic model over :class:`Signals` (one weight per field, in order)."""

    weights: tuple[float, ...]
    bias: float

    def confidence(self, signals: Signals) -> float:
        z = self.bias + sum(w * x for w, x in zip(self.weights, signals, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


# Fitted by `python -m memstrata.eval.confidence_fit --split dev` (the bilingual set's
# dev split through the real engine: 210 questions, 2,100 retrieved items; a logistic
# regression of "the item is evidence of the question" on the signals, then the bias
# shifted so that the flag bar chosen on dev lands on ``low_confidence_cosine``'s
# default 0.36). On dev no bar meets the target (>= 95 % of unanswerable questions
# flagged with <= 5 % of answerable ones); this one is the best trade-off: 0.90 / 0.10.
# The weights, in the order of :class:`Signals`: cosine, coverage, attribute, entity,
# in window, outside window, recency.
MODEL = Model(
    weights=(3.73, 2.019, 1.919, -0.195, 0.427, -0.804, -0.012),
    bias=-1.919,
)


class QuestionSignals(NamedTuple):
    """What :func:`grade` reads of the question once per read."""

    terms: frozenset[str]
    attributes: frozenset[str]
    named: tuple[str, ...]
    window: TimeWindow | None
    now: datetime | None
    recall_only: bool = False
    """The question asks only what was said inside its window ("What did I tell you
    yesterday?", 前天我跟你说了什么): the window is all its evidence."""


# Words every question and most turns share (我, 什么, "tell"): BM25's IDF discounts
# them in a search; coverage has no IDF, so they are not counted at all.
_QUESTION_WORDS = frozenset(
    (  # noqa: SIM905
        "我 你 什么 哪 哪里 哪儿 哪个 哪些 哪天 怎么 怎样 什么样 吗 几 多少 来着 有 呢 一下 "
        "时候 记得 告诉 说 过 给 让 吧 还 跟 最近 平时 一般 现在 tell remind know rememb say "
        "said told ask"
    ).split()
)


def content_terms(text: str) -> frozenset[str]:
    """The BM25 terms of ``text`` (:func:`memstrata.longterm.sparse.tokenize`: stems,
    jieba words, stopwords dropped) less the words every question shares."""
    return frozenset(t for t in tokenize(text) if t not in _QUESTION_WORDS)


class TermsMemo:
    """:func:`content_terms` remembered by text (bounded, :mod:`memstrata.memo`): the
    same memories come back read after read, and tokenizing their texts (stems, jieba)
    was the confidence model's largest cost per item."""

    def __init__(self, limit: int = 65_536) -> None:
        self._terms: dict[str, frozenset[str]] = {}
        self._limit = limit
        self.computed = 0  # texts tokenized (not answered from memory)

    def __call__(self, text: str) -> frozenset[str]:
        found = self._terms.get(text)
        if found is None:
            self.computed += 1
            found = remember(self._terms, text, content_terms(text), self._limit)
        return found

    def clear(self) -> None:
        """Forget every text (texts of deleted memories among them)."""
        self._terms.clear()


def question_signals(
    text: str, named: Sequence[str], window: TimeWindow | None, now: datetime | None
) -> QuestionSignals:
    """The question's side of the signals: its content terms, the attributes it asks
    or implies, the names it names, its time window. A plan's time ("where should I
    eat tonight?") is when it will happen, not when anything was said: it does not
    count for or against a memory."""
    attributes = frozenset((*asked(text), *needed(text)))
    said_in = None if plans(text) else window
    terms = content_terms(text)
    recall_only = said_in is not None and not (
        terms - content_terms(said_in.phrase) - _SAYING - _TIME_WORDS
    )
    return QuestionSignals(terms, attributes, tuple(named), said_in, now, recall_only)


# What a question about what was said uses besides its time phrase (stems, as
# content_terms reads them).
_SAYING = content_terms(
    "mention mentioned say said tell told talk talked chat chatted share shared bring "
    "brought up discuss discussed 说 说过 聊 聊过 聊了 提 提过 提到 讲 讲过 跟 和 您"
)
_TIME_WORDS = content_terms(
    "morning afternoon evening tonight night today yesterday ago day days week weeks "
    "month months about around roughly 早上 上午 下午 晚上 今天 昨天 前天 天 周 上周 月"
)

_SPACES = re.compile(r"\s+")


def _attributes_of(item: RetrievedItem) -> set[str]:
    found = {str(f.payload.get("attribute", "")) for f in (item, *item.facts)}
    return {a for a in found if a}


def signals(
    question: QuestionSignals, item: RetrievedItem, terms: Callable[[str], frozenset[str]]
) -> Signals:
    """One item's signals (``terms``: :func:`content_terms`, perhaps cached)."""
    text = " ".join([item.text, *(f.text for f in item.facts)])
    held = terms(text) if question.terms else frozenset()
    coverage = len(question.terms & held) / len(question.terms) if question.terms else 0.0
    attribute = 1.0 if question.attributes & _attributes_of(item) else 0.0
    folded = _SPACES.sub(" ", text.casefold())
    entity = 1.0 if any(n.casefold() in folded for n in question.named if len(n) > 1) else 0.0
    inside = 1.0 if question.window is not None and item.in_time_window else 0.0
    outside = 1.0 if question.window is not None and not item.in_time_window else 0.0
    recency = 0.0
    if question.now is not None and item.observed_at is not None:
        age_days = max(0.0, (question.now - item.observed_at).total_seconds() / 86_400)
        recency = 1.0 / (1.0 + age_days / 30.0)
    cosine = max(0.0, min(1.0, item.cosine))
    return Signals(cosine, coverage, attribute, entity, inside, outside, recency)


def grade(
    question: QuestionSignals,
    items: Sequence[RetrievedItem],
    settings: LongTermSettings,
    *,
    terms: Callable[[str], frozenset[str]] = content_terms,
    model: Model = MODEL,
) -> list[RetrievedItem]:
    """``items`` with their confidence, signals and flag set, their facts too
    (:func:`combined`)."""
    bar = settings.low_confidence_cosine
    out: list[RetrievedItem] = []
    for item in items:
        own = [(fact, signals(question, fact, terms)) for fact in item.facts]
        found = signals(question, item, terms)
        value = combined(model, found, [s for _, s in own], settings.skip_below_cosine)
        if question.recall_only and found.in_window:
            # What was said then is the answer, whatever its words.
            value = max(value, bar)
        facts = tuple(_graded(fact, max(value, model.confidence(s)), s, bar) for fact, s in own)
        out.append(replace(_graded(item, value, found, bar), facts=facts))
    # A standing fact the question implies (retrieval/standing.py) is as sure as the
    # read's best item: the registry, not the wording, says the question needs it.
    # It is served as confident even when every other item is weak ("Suggest a walking
    # tour" shares no word with "I live in Lisbon").
    best = max([bar, *(item.confidence or 0.0 for item in out)])
    # A turn that corrects or changes a ranked one (retrieval/followups.py) is as sure
    # as the statement it replaces: it is the current version of that statement.
    replaced = {item.superseded_by: item.confidence or 0.0 for item in out if item.superseded_by}
    return [
        _lifted(item, best, bar)
        if STANDING in item.routes
        else _lifted(item, replaced.get(item.id, 0.0), bar)
        if FOLLOWUP in item.routes
        else item
        for item in out
    ]


def _lifted(item: RetrievedItem, best: float, bar: float) -> RetrievedItem:
    value = max(item.confidence or 0.0, best)
    facts = tuple(
        f if is_disputed(f) else replace(f, confidence=value, low_confidence=value < bar)
        for f in item.facts
    )
    if is_disputed(item):
        return replace(item, facts=facts)
    return replace(item, confidence=value, low_confidence=value < bar, facts=facts)


def combined(model: Model, own: Signals, facts: Sequence[Signals], floor: float) -> float:
    """An item's confidence: the better of its own and its facts' (an episode is as
    sure as what was read from it; a fact as the episode it was said in), and at least
    ``floor`` when it was said inside the time window the question names (served,
    never withheld)."""
    value = max([model.confidence(own), *(model.confidence(s) for s in facts)])
    return max(value, floor) if own.in_window else value


DISPUTED_FACTOR = 0.5
"""A disputed fact's confidence is halved (a newer turn said it changed, and no rule
read the new value): it is never served as plainly current."""


def is_disputed(item: RetrievedItem) -> bool:
    """Whether ``item`` is a fact a newer turn put in doubt (``write/disputes.py``)."""
    return bool(item.payload.get("disputed"))


def _graded(item: RetrievedItem, value: float, found: Signals, bar: float) -> RetrievedItem:
    if is_disputed(item):
        value *= DISPUTED_FACTOR
        return replace(item, confidence=value, signals=found, low_confidence=True)
    return replace(item, confidence=value, signals=found, low_confidence=value < bar)


def skips_graded(items: Sequence[RetrievedItem], settings: LongTermSettings) -> bool:
    """Whether a graded read skips L3: it found some, every one is below
    ``skip_below_cosine`` on the confidence scale, and none was said inside the time
    window the question names (:func:`grade` keeps those at the floor at least)."""
    floor = settings.skip_below_cosine
    return bool(items) and all(
        relevance_below(item.confidence, item.cosine, floor) for item in items
    )


def relevance_below(confidence: float | None, cosine: float, floor: float) -> bool:
    """Whether an item is below ``floor``: by its confidence when graded, else by
    its cosine."""
    return (cosine if confidence is None else confidence) < floor


_NAMES = (
    "cosine",
    "words matched",
    "asked attribute",
    "named entity",
    "inside the time window",
    "said outside the time window",
    "recency",
)


def reason(item: RetrievedItem, model: Model = MODEL) -> str | None:
    """Why an item is flagged low-confidence: its confidence and the signals that
    pulled it down most (None when it is not flagged or was not graded)."""
    if not item.low_confidence or item.signals is None or item.confidence is None:
        return None
    if is_disputed(item):
        return f"confidence {item.confidence:.2f}: disputed by a newer turn"
    parts = []
    for name, weight, value in zip(_NAMES, model.weights, item.signals, strict=True):
        # Only the signals that weigh (|weight| >= 0.5) and went against it.
        if weight >= 0.5 and value < 0.5:
            parts.append(f"{name} {value:.2f}")
        elif weight <= -0.5 and value >= 0.5:
            parts.append(name)
    return f"confidence {item.confidence:.2f}: " + (", ".join(parts) or "every signal weak")


def is_low_confidence(cosine: float, settings: LongTermSettings) -> bool:
    """Whether an item judged by ``cosine`` alone is flagged low-confidence."""
    return cosine < settings.low_confidence_cosine


def below_floor(cosine: float, settings: LongTermSettings) -> bool:
    """Whether an item judged by ``cosine`` alone is under the floor below which L3
    is not served."""
    return cosine < settings.skip_below_cosine


def skips_l3(cosines: Iterable[float], settings: LongTermSettings) -> bool:
    """Whether a read judged by cosines alone skips L3: it found some, and every one
    is below the floor."""
    found = list(cosines)
    return bool(found) and all(below_floor(c, settings) for c in found)
