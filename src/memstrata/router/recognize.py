"""The message understood without a step intent: which registered intent it is, with a
confidence, and the entities it names (docs/architecture.md, "The reader").

A caller that does not name a step intent passes the user's message; the engine asks an
:class:`IntentRecognizer` which registered intent the message is. The default one,
:class:`ExampleRecognizer`, compares the message with the examples each intent carries
(:attr:`IntentSpec.examples <memstrata.router.intents.IntentSpec.examples>`) in a
multilingual embedding space (Chinese and English side by side), blended with the
words they share; a configured chat model (:class:`ModelRecognizer`) replaces it, and
the examples answer whenever the model fails. Under ``min_confidence`` the message is
routed to the general conversational intent (``respond``) and the recognition says it
fell back.

Entities are what retrieval already reads from a query
(:func:`memstrata.retrieval.routes.entities`, the entity route) and the time it names
(:func:`memstrata.retrieval.timeexpr.resolve`), each with a coarse kind.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.attributes import NEEDS, asked, by_name
from memstrata.attributes.numbers import read_amount
from memstrata.errors import BackendError, ValidationError
from memstrata.language import detect_language
from memstrata.retrieval.routes import entities as query_entities
from memstrata.retrieval.timeexpr import resolve as resolve_time
from memstrata.router.intents import IntentRegistry, IntentSpec
from memstrata.validation import check_positive_int

EntityKind = Literal["date", "amount", "id", "number", "name", "term", "attribute"]
TextEmbedder = Callable[[Sequence[str]], NDArray[np.float32]]
"""Texts -> unit-norm rows (the multilingual embedder's ``embed``)."""

DEFAULT_MIN_CONFIDENCE = 0.4
"""Under this the message falls back to ``respond`` (chosen on the dev split of
``memstrata eval intents``; docs/benchmarks.md)."""
DEFAULT_LEXICAL_WEIGHT = 0.0
"""The share of shared words in an example's score (the rest is the cosine); off by
default: on the dev split it did not beat the cosine alone."""
DEFAULT_TOP = 2
"""An intent's score: the mean score of its closest this many examples."""


@dataclass(frozen=True, slots=True)
class Entity:
    """Something the message names: its text as written and a coarse kind
    (``date``, ``amount``, ``id``, ``number``, ``name``, ``term`` for a Chinese
    noun phrase, or ``attribute``: a property of the user the message asks about or
    bears on, from the attribute registry). ``value``: a date's window
    (``start/end``, ISO), an amount's number (Chinese numerals read: 五千块 is 5000),
    or an attribute's registry name."""

    text: str
    kind: EntityKind
    value: str = ""


@dataclass(frozen=True, slots=True)
class Recognition:
    """Which intent a message was routed to, and why."""

    intent: str
    """The intent the step was routed with (the fallback when ``fell_back``)."""
    confidence: float
    """The recognizer's confidence in its best candidate, in [0, 1]."""
    fell_back: bool
    """True when the best candidate was under the threshold (or none was found) and
    the message went to the fallback intent."""
    candidate: str | None
    """The registered intent the recognizer found closest (None: none)."""
    entities: tuple[Entity, ...] = ()
    language: str = "en"
    """The message's language: ``en``, ``zh`` or ``mixed``."""
    by: str = "examples"
    """Who recognized it: ``examples`` or ``model``."""
    threshold: float = DEFAULT_MIN_CONFIDENCE


@dataclass(frozen=True, slots=True)
class Guess:
    """A recognizer's answer: the closest intent (None: none fits) and its confidence."""

    intent: str | None
    confidence: float
    by: str = "examples"


class IntentRecognizer(Protocol):
    """Picks the registered intent closest to a message."""

    def guess(self, message: str, intents: Sequence[IntentSpec]) -> Guess: ...


# -- examples in a multilingual space --------------------------------------------------

_LATIN = re.compile(r"[a-z0-9]+")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_STOP = frozenset(
    (
        *("a", "an", "the", "i", "me", "my", "you", "your", "is", "are", "was", "were"),
        *("do", "does", "did", "to", "of", "in", "on", "for", "it", "this", "that", "be"),
        *("can", "will", "please", "what", "how", "when", "where", "which", "who", "why"),
    )
)
_CJK_STOP = frozenset("的了吗呢吧我你是在有么啊")


def _cues(text: str) -> frozenset[str]:
    """Lexical cues: English words (no function words) and Chinese characters and
    character pairs (no particles)."""
    lowered = text.lower()
    words = {w for w in _LATIN.findall(lowered) if w not in _STOP}
    chars = [c for c in _HAN.findall(lowered) if c not in _CJK_STOP]
    pairs = {a + b for a, b in pairwise(chars)}
    return frozenset(words | set(chars) | pairs)


def _overlap(message: frozenset[str], example: frozenset[str]) -> float:
    """The share of the message's cues an example holds too."""
    if not message:
        return 0.0
    return len(message & example) / len(message)


class ExampleRecognizer:
    """Nearest examples: an example's score is its cosine to the message, blended with
    the share of the message's words it holds (``lexical_weight``); an intent's score
    is the mean of its ``top`` best examples'. Example vectors are computed once per
    intent version (its name and examples)."""

    def __init__(
        self,
        embed: TextEmbedder,
        *,
        lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
        top: int = DEFAULT_TOP,
        max_cached: int = 4_096,
    ) -> None:
        if not 0.0 <= lexical_weight <= 1.0:
            raise ValidationError("lexical_weight", "must be within [0, 1]")
        self._embed = embed
        self._lexical = lexical_weight
        self._top = check_positive_int("top", top)
        self._max = max_cached
        self._lock = threading.Lock()
        self._cache: OrderedDict[
            tuple[str, tuple[str, ...]], tuple[NDArray[np.float32], tuple[frozenset[str], ...]]
        ] = OrderedDict()

    def _examples(
        self, specs: Sequence[IntentSpec]
    ) -> list[tuple[str, NDArray[np.float32], tuple[frozenset[str], ...]]]:
        keys = [(s.name, s.examples) for s in specs if s.examples]
        with self._lock:
            missing = [k for k in keys if k not in self._cache]
        if missing:
            texts = [text for _, examples in missing for text in examples]
            rows = self._embed(texts)
            start = 0
            with self._lock:
                for key in missing:
                    n = len(key[1])
                    self._cache[key] = (rows[start : start + n], tuple(map(_cues, key[1])))
                    start += n
        with self._lock:
            out = []
            for key in keys:
                self._cache.move_to_end(key)
                matrix, cues = self._cache[key]
                out.append((key[0], matrix, cues))
            while len(self._cache) > self._max:
                self._cache.popitem(last=False)
        return out

    def guess(self, message: str, intents: Sequence[IntentSpec]) -> Guess:
        examples = self._examples(intents)
        if not examples:
            return Guess(None, 0.0)
        vector = self._embed([message])[0]
        cues = _cues(message)
        best: tuple[float, str | None] = (0.0, None)
        for name, matrix, example_cues in examples:
            cosines = matrix @ vector
            scores = [
                (1 - self._lexical) * float(c) + self._lexical * _overlap(cues, e)
                for c, e in zip(cosines, example_cues, strict=True)
            ]
            # The mean of the closest ``top`` examples: one lucky example does not
            # carry an intent alone.
            score = float(np.mean(sorted(scores, reverse=True)[: self._top]))
            if score > best[0]:
                best = (score, name)
        return Guess(best[1], round(min(1.0, max(0.0, best[0])), 6))


# -- entities ----------------------------------------------------------------------------

_CURRENCY_BEFORE = re.compile(r"(?:[$¥￥€£]|USD|RMB|CNY)\s*$", re.IGNORECASE)
_UNIT_AFTER = re.compile(
    r"^\s*(?:元|块|万|美元|人民币|%|percent|dollars?|yuan|rmb|usd|eur|euros?)", re.IGNORECASE
)
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
_ZH_AMOUNT = re.compile(r"[零一二两三四五六七八九十百千万\d.]+(?:元|块钱|块|美元)")
_ZH_UNIT = re.compile(r"(?:元|块钱|块|美元)$")


def message_entities(message: str, now: datetime) -> tuple[Entity, ...]:
    """The dates, amounts, ids, numbers, names and Chinese terms ``message`` names
    (``now``: the session's time, which relative dates are resolved against)."""
    found: list[Entity] = []
    window = resolve_time(message, now)
    if window is not None:
        span = f"{window.start.date().isoformat()}/{window.end.date().isoformat()}"
        found.append(Entity(window.phrase.strip(), "date", span))
    for match in _ZH_AMOUNT.finditer(message):
        found.append(Entity(match.group(0), "amount", _amount_value(match.group(0))))
    seen = {e.text for e in found}
    for text in query_entities(message):
        if text in seen or (window is not None and text in window.phrase):
            continue
        if any(text in e.text for e in found):
            continue
        seen.add(text)
        found.append(_typed(text, message))
    found.extend(_attributes(message))
    return tuple(found)


def _amount_value(text: str) -> str:
    """An amount's number in digits (八千块 -> 8000), or the text when unread."""
    number = read_amount(_ZH_UNIT.sub("", text))
    if number is None:
        return text
    return str(int(number)) if number.is_integer() else str(number)


def _attributes(message: str) -> list[Entity]:
    """The registry's attributes the message asks (its cue as the text) or implies (a
    meal implies the allergies: the text is the word that implied it)."""
    found: list[Entity] = []
    named: set[str] = set()
    for name in asked(message):
        attribute = by_name(name)
        cue = attribute.asks.search(message) if attribute is not None else None
        text = cue.group(0) if cue is not None else name
        found.append(Entity(text.strip() or name, "attribute", name))
        named.add(name)
    for need in NEEDS:
        cue = need.cues.search(message)
        if cue is None:
            continue
        for name in need.attributes:
            if name not in named:
                named.add(name)
                found.append(Entity(cue.group(0), "attribute", name))
    return found


def _typed(text: str, message: str) -> Entity:
    if any(c.isdigit() for c in text):
        at = message.find(text)
        before, after = (
            message[:at] if at >= 0 else "",
            message[at + len(text) :] if at >= 0 else "",
        )
        if _NUMBER.match(text):
            if _CURRENCY_BEFORE.search(before) or _UNIT_AFTER.match(after):
                return Entity(text, "amount", text.replace(",", ""))
            return Entity(text, "number", text)
        return Entity(text, "id")
    if _HAN.search(text):
        return Entity(text, "term")
    return Entity(text, "name")


# -- the threshold and the fallback ------------------------------------------------------


class MessageUnderstanding:
    """Recognizes the intent of a message among the registered ones, falls back under
    ``min_confidence``, and reads the message's entities. ``backup`` answers when
    ``recognizer`` fails (a model endpoint down)."""

    def __init__(
        self,
        recognizer: IntentRecognizer,
        *,
        min_confidence: float = DEFAULT_MIN_CONFIDENCE,
        fallback: str = "respond",
        backup: IntentRecognizer | None = None,
    ) -> None:
        if not 0.0 <= min_confidence <= 1.0:
            raise ValidationError("min_confidence", "must be within [0, 1]")
        self._recognizer = recognizer
        self._backup = backup
        self._min = min_confidence
        self._fallback = fallback

    @property
    def min_confidence(self) -> float:
        return self._min

    def understand(self, message: str, intents: IntentRegistry, now: datetime) -> Recognition:
        """The intent ``message`` is routed to, its confidence and entities."""
        specs = [intents.get(name) for name in intents.names()]
        try:
            guess = self._recognizer.guess(message, specs)
        except BackendError:
            if self._backup is None:
                raise
            guess = self._backup.guess(message, specs)
        known = guess.intent is not None and guess.intent in intents.names()
        fell_back = not known or guess.confidence < self._min
        intent = self._fallback if fell_back else str(guess.intent)
        intents.get(intent)  # the fallback must be registered (UnknownIntentError)
        return Recognition(
            intent=intent,
            confidence=guess.confidence,
            fell_back=fell_back,
            candidate=guess.intent if known else None,
            entities=message_entities(message, now),
            language=detect_language(message),
            by=guess.by,
            threshold=self._min,
        )
