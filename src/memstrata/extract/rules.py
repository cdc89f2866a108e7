"""The deterministic, rule-based default extractor (English and Chinese).

It reads one sentence at a time and finds:

* facts about the user (role ``user`` only): ``name``, ``city`` (a move writes the same
  attribute, so it supersedes the old city), ``job``, ``contact_channel`` and
  preferences (``likes`` / ``dislikes`` / ``prefers``);
* events: ``decision`` and ``commitment`` (subject ``user`` or ``assistant`` by role),
  and ``order`` / ``payment`` / ``refund`` for sentences with an order id or a paid
  amount (any role but ``system``: tool results carry them too).

Every candidate of a sentence carries the verbatim ids, amounts and dates of that
sentence. Negated facts are dropped (or flipped, for "I don't like X"), hedged ones
("I think I like X") get a lower confidence, questions and hypotheticals give nothing.
"""

from __future__ import annotations

import re
from datetime import datetime

from memstrata.extract.models import Candidate, Turn
from memstrata.extract.patterns import (
    CHANNELS,
    CN_QUESTION_END,
    EVENT_PATTERNS,
    FACT_PATTERNS,
    FLIPPING_NEGATIONS,
    HEDGE,
    HYPOTHETICAL,
    INTERROGATIVE_VALUE,
    LOW_INFO_COMMITMENTS,
    ORDER_WORDS,
    PAYMENT_WORDS,
    PREFERENCE_VERBS,
    QUESTION_START,
    REFUND_WORDS,
    FactPattern,
)
from memstrata.extract.text import fold_quotes, normal_form, split_sentences
from memstrata.extract.verbatim import find_extras, resolve_date

MAX_FACT_VALUE_CHARS = 120
# A longer run without sentence punctuation is pasted content, not something said.
MAX_EVENT_SENTENCE_CHARS = 1_000
HEDGE_FACTOR = 0.6
"""Confidence multiplier for hedged statements ("I think I like X", 可能喜欢)."""

_FILLER_TAIL = re.compile(
    r"\s+(?:now|anymore|any\s+more|these\s+days|nowadays|at\s+the\s+moment|right\s+now|"
    r"for\s+now|too|as\s+well|though|actually|a\s+lot|very\s+much|so\s+much|more|either|"
    r"again|currently|lately|already|instead|a\s+bit|btw|by\s+the\s+way)$",
    re.IGNORECASE,
)
_PLACE_CUT = re.compile(
    r"\s+(?:with|for|since|from|near|because|last|next|this|in|on|at|after|before|about|"
    r"recently|yesterday|today|ago|two|three|a|an)\b.*$",
    re.IGNORECASE,
)
_PREFERENCE_CUT = re.compile(r"\s+(?:over|rather\s+than|instead\s+of|than)\s+.*$", re.I)
_JOB_CUT = re.compile(r"\s+(?:at|for|in|with|from|on|by)\b.*$", re.IGNORECASE)
_CN_PARTICLES = re.compile(r"(?:了|啦|呀|啊|吧|呢|哦|喔)+$")
_REFERENCE_START = re.compile(
    r"^(?:it|that|this|these|those|them|you|your|him|her|me|us|one|so|very|too|to\s+say|"
    r"when|whenever|how|why|if)\b",
    re.IGNORECASE,
)
_DETERMINER_START = re.compile(r"^(?:a|an|my|our|his|her|their|some|this|that|your)\b", re.I)
_CN_REFERENCES = frozenset({"你", "你们", "它", "它们", "这个", "那个", "这样", "那样", "他", "她"})
_NAME_STOPWORDS = frozenset({"irrelevant", "unimportant", "secret", "private", "long", "hard"})
# "I'm a X" only means a job when X looks like one: a known title or a job suffix.
_JOB_WORDS = frozenset(
    {
        "nurse",
        "chef",
        "cook",
        "clerk",
        "pilot",
        "student",
        "doctor",
        "lawyer",
        "dentist",
        "founder",
        "ceo",
        "cto",
        "cfo",
        "pm",
        "surgeon",
        "pharmacist",
        "barista",
        "mechanic",
        "plumber",
        "electrician",
        "journalist",
        "artist",
        "scientist",
        "accountant",
        "architect",
        "analyst",
        "consultant",
        "engineer",
        "developer",
        "programmer",
        "designer",
        "teacher",
        "professor",
        "lecturer",
        "researcher",
        "manager",
        "director",
        "freelancer",
        "intern",
        "secretary",
        "cashier",
        "driver",
        "farmer",
        "judge",
        "police officer",
        "soldier",
    }
)
_JOB_SUFFIXES = ("er", "or", "ist", "ant", "eer", "ician", "ographer", "ect")
_NOT_JOBS = frozenset(
    {
        "fan",
        "lover",
        "beginner",
        "customer",
        "user",
        "member",
        "subscriber",
        "newbie",
        "believer",
        "follower",
        "parent",
        "mother",
        "father",
        "owner",
        "vegetarian",
        "vegan",
        "person",
        "winner",
        "loser",
        "reader",
        "gamer",
        "foodie",
        "smoker",
        "runner",
        "player",
    }
)


def _strip_tail(value: str) -> str:
    value = value.strip().strip("\"'")
    while True:
        trimmed = _FILLER_TAIL.sub("", value).strip()
        if trimmed == value:
            return value
        value = trimmed


def _words(value: str) -> int:
    return len(value.split())


def _check_value(kind: str, raw: str) -> tuple[str, float] | None:
    """The cleaned value and a confidence factor, or None when it is not a usable value."""
    value = _strip_tail(raw)
    if not value or len(value) > MAX_FACT_VALUE_CHARS or INTERROGATIVE_VALUE.search(value):
        return None
    if kind.startswith("cn_"):
        value = _CN_PARTICLES.sub("", value)
        if not value or value in _CN_REFERENCES or value.startswith("的"):
            return None
        return (value, 1.0) if len(value) <= (12 if kind == "cn_name" else 24) else None
    if kind == "name":
        first = value[0]
        if _words(value) > 4 or value.casefold() in _NAME_STOPWORDS:
            return None
        return (value, 1.0) if not first.isascii() or first.isupper() else None
    if kind == "place":
        value = _PLACE_CUT.sub("", value).strip()
        if not value or _DETERMINER_START.match(value) or _words(value) > 5:
            return None
        # A lowercase "place" is as often a state of mind ("I live in fear").
        return value, (1.0 if not value[0].isascii() or value[0].isupper() else 0.6)
    if kind in ("job", "job_noun"):
        value = _JOB_CUT.sub("", value).strip()
        if not value or _words(value) > 5 or _REFERENCE_START.match(value):
            return None
        if kind == "job_noun":
            last = value.split()[-1].casefold()
            looks_like_job = (
                value.casefold() in _JOB_WORDS
                or last in _JOB_WORDS
                or (last.endswith(_JOB_SUFFIXES) and last not in _NOT_JOBS)
            )
            if not looks_like_job or value.split()[0].casefold() in ("bit", "little", "lot"):
                return None
        return value, 1.0
    # a preference object
    if _REFERENCE_START.match(value) or _words(value) > 8:
        return None
    return value, 1.0


def _is_question(sentence: str) -> bool:
    stripped = sentence.rstrip()
    return bool(
        (QUESTION_START.match(stripped) and stripped.endswith(("?", "？")))
        or (CN_QUESTION_END.search(stripped) and not stripped.isascii())
    )


class RuleExtractor:
    """Deterministic pattern-based :class:`~memstrata.extract.protocol.Extractor`.

    Needs no model and no network, so it is the default and the fallback when an LLM
    extractor is down. ``hedge_factor`` scales the confidence of hedged statements.
    """

    def __init__(self, *, hedge_factor: float = HEDGE_FACTOR) -> None:
        if not 0.0 < hedge_factor <= 1.0:
            raise ValueError("hedge_factor: must be within (0, 1]")
        self._hedge_factor = hedge_factor

    def extract(self, turn: Turn) -> tuple[Candidate, ...]:
        """Candidates of ``turn``, sentence by sentence, without exact duplicates."""
        if turn.role == "system":
            return ()  # instructions to the model, not things the user told us
        found: list[Candidate] = []
        for sentence in split_sentences(fold_quotes(turn.text)):
            for candidate in self._sentence(sentence, turn):
                if all(
                    (c.subject, c.attribute, c.value)
                    != (candidate.subject, candidate.attribute, candidate.value)
                    for c in found
                ):
                    found.append(candidate)
        return tuple(found)

    def _sentence(self, sentence: str, turn: Turn) -> list[Candidate]:
        if _is_question(sentence):
            return []
        extras = find_extras(sentence)
        candidates = self._facts(sentence, extras) if turn.role == "user" else []
        events = self._events(sentence, turn, extras)
        if not events:
            events = self._transactions(sentence, turn, extras)
        return candidates + events

    def _confidence(self, sentence: str, end: int, base: float) -> float:
        """``base``, lowered when a hedge ("I think", 可能) occurs before ``end``."""
        hedged = HEDGE.search(sentence, 0, end) is not None
        return round(base * (self._hedge_factor if hedged else 1.0), 4)

    def _facts(self, sentence: str, extras: tuple[tuple[str, str], ...]) -> list[Candidate]:
        found: list[tuple[int, Candidate]] = []
        for rule in FACT_PATTERNS:
            for match in rule.pattern.finditer(sentence):
                if HYPOTHETICAL.search(sentence, 0, match.start() + 1):
                    continue
                made = self._fact(rule, match, sentence, extras)
                if made is not None:
                    found.append((match.start(), made))
        found.sort(key=lambda pair: pair[0])
        return [candidate for _start, candidate in found]

    def _fact(
        self,
        rule: FactPattern,
        match: re.Match[str],
        sentence: str,
        extras: tuple[tuple[str, str], ...],
    ) -> Candidate | None:
        groups = match.groupdict()
        negation = " ".join((groups.get("neg") or "").casefold().split())
        attribute, base = rule.attribute, rule.confidence
        verb = groups.get("verb")
        if verb is not None:
            attribute, base, flipped = PREFERENCE_VERBS[" ".join(verb.casefold().split())]
            if negation:
                if flipped is None or negation not in FLIPPING_NEGATIONS:
                    return None
                attribute, base = flipped, base * 0.9
        elif negation:
            if rule.negated is None:
                return None  # "I don't live in X anymore" says nothing positive
            attribute = rule.negated
        if rule.check == "channel":
            value, factor = CHANNELS[groups["ch"].casefold()], 1.0
        else:
            checked = _check_value(rule.check, groups["v"])
            if checked is None:
                return None
            value, factor = checked
            if attribute == "prefers":
                # "tea over coffee": the preferred thing is the value, not the comparison
                value = _PREFERENCE_CUT.sub("", value).strip() or value
        return Candidate(
            subject="user",
            attribute=attribute,
            value=value,
            kind="fact",
            confidence=self._confidence(sentence, match.end(), base * factor),
            importance=rule.importance,
            extras=extras,
        )

    def _events(
        self, sentence: str, turn: Turn, extras: tuple[tuple[str, str], ...]
    ) -> list[Candidate]:
        if len(sentence) > MAX_EVENT_SENTENCE_CHARS or sentence.rstrip().endswith(("?", "？")):
            return []  # "let's go with X?" proposes; it does not decide
        subject = "assistant" if turn.role == "assistant" else "user"
        if turn.role == "tool":
            return []
        for rule in EVENT_PATTERNS:
            match = rule.pattern.search(sentence)
            if match is None or HYPOTHETICAL.search(sentence, 0, match.start() + 1):
                continue
            rest = next((g for g in match.groups() if g), None)
            if rest is not None and not _informative_rest(rest):
                continue
            return [
                Candidate(
                    subject=subject,
                    attribute=rule.attribute,
                    value=_event_value(sentence),
                    kind="event",
                    confidence=self._confidence(sentence, match.end(), rule.confidence),
                    importance=rule.importance,
                    extras=extras,
                )
            ]
        return []

    def _transactions(
        self, sentence: str, turn: Turn, extras: tuple[tuple[str, str], ...]
    ) -> list[Candidate]:
        if len(sentence) > MAX_EVENT_SENTENCE_CHARS:
            return []
        labels = {label for label, _value in extras}
        money = PAYMENT_WORDS.search(sentence) or REFUND_WORDS.search(sentence)
        if "order_id" not in labels and not (
            "amount" in labels and (money or ORDER_WORDS.search(sentence))
        ):
            return []
        if REFUND_WORDS.search(sentence):
            attribute = "refund"
        elif PAYMENT_WORDS.search(sentence):
            attribute = "payment"
        else:
            attribute = "order"
        return [
            Candidate(
                subject="user",
                attribute=attribute,
                value=_event_value(sentence),
                kind="event",
                confidence=0.8,
                importance=0.8,
                extras=extras,
                valid_from=_event_date(extras, turn.observed_at),
            )
        ]


def _informative_rest(rest: str) -> bool:
    """Whether what follows "I'll" / 我们会 promises something concrete."""
    text = normal_form(rest)
    if not text.isascii():
        return len(text.replace(" ", "")) >= 3
    return len(text.split()) >= 2 and text not in LOW_INFO_COMMITMENTS


def _event_value(sentence: str) -> str:
    """An event is described by its whole sentence: nothing in it is lost."""
    return sentence.strip().rstrip("。.!！;；").strip()


def _event_date(extras: tuple[tuple[str, str], ...], observed_at: datetime) -> datetime | None:
    """When a past order / payment happened, if the sentence says so unambiguously."""
    for label, value in extras:
        if label == "date":
            resolved = resolve_date(value, observed_at)
            if resolved is not None and resolved <= observed_at:
                return resolved
    return None
