"""The deterministic, rule-based default extractor (English and Chinese).

It reads one sentence at a time, cut into clauses by :func:`split_clauses` (which puts
back the subject a Chinese clause or an English "and ..." leaves out), and finds:

* facts about the user (role ``user`` only; patterns in :mod:`.patterns`,
  :mod:`.home_patterns`, :mod:`.work_patterns`, :mod:`.profile_patterns` and
  :mod:`.everyday_patterns`, then the registry's frames in :mod:`.frames`):
  ``name``, ``age``, ``birthday``, ``hometown``, ``city``
  (a move writes the same attribute, so it supersedes the old city), ``job``,
  ``employer``, ``contact_channel``, preferences (``likes`` / ``dislikes`` /
  ``prefers`` / ``interests``), health (``allergies``, ``health``, ``diet``,
  ``avoids``), family (``spouse``, ``marital_status``, ``children``,
  ``children_count``, ``pets``) and ``budget``; in everyday phrasings too
  ("Home is Leeds these days", 目前人在广州), with the
  home and delivery ``address`` / ``delivery_address`` (收货地址), ``language`` and
  ``schedule``. A list ("peanuts and shellfish", 花生和虾) gives one fact per item;
* events: ``decision`` and ``commitment`` (subject ``user`` or ``assistant`` by role),
  and ``order`` / ``payment`` / ``refund`` for sentences with an order id or a paid
  amount (any role but ``system``: tool results carry them too).

Negations and retractions: "I don't like X (anymore)" / 我不再喜欢X了 becomes a
``dislikes`` fact; "I no longer eat meat", "I quit smoking", 我不再喝咖啡了, 我戒烟了
become ``avoids`` facts (the food: meat, 咖啡; the habit as written: smoking); "I don't
live in X anymore", "I'm no longer a teacher", "I'm not vegetarian anymore", 我现在能吃
鸡蛋了 state nothing and take the value back (``remove`` candidates of the removal
frames: the write path closes the slot, the old value stays in history); "I used to
..." gives nothing (the new value, when stated, supersedes the old one). Hedged facts ("I think I
like X") get a lower confidence; questions, hypotheticals and sentences laughed off
("I'm allergic to Mondays, haha", 哈哈) give nothing. Every
candidate of a sentence carries the verbatim ids, amounts and dates of that sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from memstrata.config import DEFAULT_MULTI_VALUED
from memstrata.extract.candidates import Candidate, Turn
from memstrata.extract.clauses import Clause, split_clauses
from memstrata.extract.corrections import (
    adds_only,
    corrected,
    correction_at,
    removals,
    swapped,
)
from memstrata.extract.everyday_patterns import EVERYDAY_PATTERNS
from memstrata.extract.frames import frame_facts, frame_removals, normalized, only_now
from memstrata.extract.home_patterns import HOME_PATTERNS
from memstrata.extract.patterns import (
    CHANNELS,
    CN_QUESTION_END,
    EVENT_PATTERNS,
    FACT_PATTERNS,
    FLIPPING_NEGATIONS,
    HEDGE,
    HYPOTHETICAL,
    LOW_INFO_COMMITMENTS,
    ORDER_WORDS,
    PAYMENT_WORDS,
    PREFERENCE_ATTRIBUTES,
    PREFERENCE_VERBS,
    QUESTION_START,
    REFUND_WORDS,
    FactPattern,
)
from memstrata.extract.profile_patterns import PROFILE_PATTERNS
from memstrata.extract.sets import set_facts
from memstrata.extract.text import fold_quotes, normal_form, split_sentences
from memstrata.extract.thread import in_thread
from memstrata.extract.values import (
    MAX_FACT_VALUE_CHARS,
    PREFERENCE_CUT,
    check_value,
    split_items,
    strip_tail,
)
from memstrata.extract.verbatim import find_extras, resolve_date
from memstrata.extract.work_patterns import WORK_PATTERNS

__all__ = ["HEDGE_FACTOR", "MAX_EVENT_SENTENCE_CHARS", "MAX_FACT_VALUE_CHARS", "RuleExtractor"]

# One module per group of attributes, so one place decides each (see patterns.py); the
# frames (frames.py) read the registry's cues where none of these found the attribute.
ALL_FACT_PATTERNS: tuple[FactPattern, ...] = (
    FACT_PATTERNS + HOME_PATTERNS + WORK_PATTERNS + PROFILE_PATTERNS + EVERYDAY_PATTERNS
)
# "I'm allergic to Mondays, haha", 我对上班过敏，哈哈: a sentence laughed off states no fact.
_JOKING = re.compile(
    r"\b(?:haha+|hahaha+|lol|lmao|rofl|jk|just\s+kidding|kidding)\b|哈哈|开玩笑|开个玩笑|逗你",
    re.IGNORECASE,
)
# A longer run without sentence punctuation is pasted content, not something said.
MAX_EVENT_SENTENCE_CHARS = 1_000
HEDGE_FACTOR = 0.6
"""Confidence multiplier for hedged statements ("I think I like X", 可能喜欢)."""
_VALUE_GROUPS = ("v", "v2", "v3", "v4")
_NEVER = float("inf")
_MIN_FACT_CHARS = 3
# Every id and amount the finder labels holds a digit (ids at least three): a sentence
# without one can be no order, payment or refund.
_DIGIT = re.compile(r"\d")


class _Extras:
    """A sentence's verbatim extras, found on first use: most sentences of a long
    answer make no candidate, and the finder would be the costliest step for them."""

    __slots__ = ("_found", "_sentence")

    def __init__(self, sentence: str) -> None:
        self._sentence = sentence
        self._found: tuple[tuple[str, str], ...] | None = None

    def __call__(self) -> tuple[tuple[str, str], ...]:
        if self._found is None:
            self._found = find_extras(self._sentence)
        return self._found


@dataclass(frozen=True, slots=True)
class _Scope:
    """Where in a clause the first hypothetical and hedge words are, earlier clauses
    included (an earlier "如果..." or "I think" scopes over what follows). Found once
    per clause, so a long turn costs linear time however many matches it holds."""

    text: str
    index: int
    hypothetical_at: float
    hedge_end: float

    def hypothetical(self, start: int) -> bool:
        return self.hypothetical_at <= start

    def hedged(self, end: int) -> bool:
        return self.hedge_end <= end


def _scopes(clauses: tuple[Clause, ...]) -> list[_Scope]:
    scopes: list[_Scope] = []
    hypothetical_before = hedged_before = False
    for index, clause in enumerate(clauses):
        hypothetical = HYPOTHETICAL.search(clause.text)
        hedge = HEDGE.search(clause.text)
        scopes.append(
            _Scope(
                clause.text,
                index,
                -1 if hypothetical_before else (hypothetical.start() if hypothetical else _NEVER),
                -1 if hedged_before else (hedge.end() if hedge else _NEVER),
            )
        )
        hypothetical_before = hypothetical_before or hypothetical is not None
        hedged_before = hedged_before or hedge is not None
    return scopes


@dataclass(frozen=True, slots=True)
class _Found:
    """A candidate and where its match sits (to order them and settle overlaps)."""

    position: int
    clause: int
    span: tuple[int, int]
    candidate: Candidate


# "Could you answer in Spanish from now on?" asks for something the user wants kept: a
# request, read like a statement (the language, channel or address it names).
_REQUEST = re.compile(
    r"^\s*(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?(?:answer|reply|respond|write|"
    r"talk|speak|text|e-?mail|call|contact|message|send|ship|deliver|keep)\b|"
    r"(?:你|您)?(?:可以|能|能不能|可不可以|麻烦)(?:你|您)?(?:以后|之后|今后)?(?:都|就)?(?:用|给我发|"
    r"发到|寄到|送到))",
    re.IGNORECASE,
)


def _is_question(sentence: str) -> bool:
    stripped = sentence.rstrip()
    if _REQUEST.match(stripped):
        return False
    return bool(
        (QUESTION_START.match(stripped) and stripped.endswith(("?", "？")))
        or (CN_QUESTION_END.search(stripped) and not stripped.isascii())
    )


def _negation(groups: dict[str, str | None]) -> str:
    raw = groups.get("neg") or groups.get("neg2") or ""
    return " ".join(raw.casefold().split())


def _overlaps(one: tuple[int, int], other: tuple[int, int]) -> bool:
    return one[0] < other[1] and other[0] < one[1]


class RuleExtractor:
    """Deterministic pattern-based :class:`~memstrata.extract.protocol.Extractor`.

    Needs no model and no network, so it is the default and the fallback when an LLM
    extractor is down. ``hedge_factor`` scales the confidence of hedged statements.
    """

    def __init__(
        self,
        *,
        hedge_factor: float = HEDGE_FACTOR,
        multi_valued: frozenset[str] = DEFAULT_MULTI_VALUED,
    ) -> None:
        if not 0.0 < hedge_factor <= 1.0:
            raise ValueError("hedge_factor: must be within (0, 1]")
        self._hedge_factor = hedge_factor
        self._multi_valued = multi_valued

    def extract(self, turn: Turn) -> tuple[Candidate, ...]:
        """Candidates of ``turn``, sentence by sentence, without exact duplicates.

        After an explicit correction marker ("Sorry, I got that wrong", 不对，我记错了)
        the turn's facts are ``correct`` candidates; removals ("not peanuts",
        我不再对花生过敏) are ``remove`` candidates (:mod:`.corrections`).
        """
        if turn.role == "system":
            return ()  # instructions to the model, not things the user told us
        found: list[Candidate] = []
        seen: set[tuple[str, str, str, str]] = set()
        correcting = False
        for sentence in split_sentences(fold_quotes(turn.text)):
            correcting = correcting or correction_at(sentence)
            fixing = correcting and not adds_only(sentence)
            for candidate in self._sentence(sentence, turn, fixing):
                key = (candidate.subject, candidate.attribute, candidate.value, candidate.change)
                if key not in seen:
                    seen.add(key)
                    found.append(candidate)
        # Read in its conversation: bare corrections, "me too", "not anymore"; and a
        # correction naming its attribute by label ("不对，预算应该是一万元。").
        return in_thread(turn, found, self._reread)

    def _reread(self, text: str) -> list[Candidate]:
        """``text`` read as the user's own statement ("me too" after another's)."""
        found: list[Candidate] = []
        for sentence in split_sentences(fold_quotes(text)):
            if _is_question(sentence):
                continue
            clauses = split_clauses(sentence)
            found += self._facts(sentence, clauses, _Extras(sentence))
        return found

    def _sentence(self, sentence: str, turn: Turn, correcting: bool = False) -> list[Candidate]:
        if _is_question(sentence):
            return []
        extras = _Extras(sentence)
        clauses = split_clauses(sentence)
        speaks = turn.role == "user" and not _JOKING.search(sentence)
        facts = self._facts(sentence, clauses, extras) if speaks else []
        if speaks:
            facts = self._framed(sentence, clauses, facts, extras)
            facts += set_facts(sentence, facts)
            facts = only_now(sentence, facts, self._multi_valued)
        if correcting:
            facts = corrected(facts)
        if speaks:
            facts += removals(sentence, facts, self._multi_valued)
            facts += frame_removals(clauses, facts, self._multi_valued)
            facts = swapped(facts, self._multi_valued)
        events = self._events(sentence, clauses, turn, extras)
        # "My budget is 500 yuan" states a limit, not a payment.
        if not events and all(fact.attribute != "budget" for fact in facts):
            events = self._transactions(sentence, turn, extras)
        return facts + events

    def _framed(
        self,
        sentence: str,
        clauses: tuple[Clause, ...],
        facts: list[Candidate],
        extras: _Extras,
    ) -> list[Candidate]:
        """The patterns' ``facts`` with what the registry's frames read where the
        patterns read nothing, values normalized by their type (:mod:`.frames`)."""
        framed = frame_facts(
            sentence,
            clauses,
            normalized(facts),
            extras,
            hedge_factor=self._hedge_factor,
            correcting=correction_at(sentence),
        )
        return normalized(framed)

    def _confidence(self, scope: _Scope, end: int, base: float) -> float:
        """``base``, lowered when a hedge ("I think", 可能) occurs before ``end``."""
        return round(base * (self._hedge_factor if scope.hedged(end) else 1.0), 4)

    def _facts(
        self, sentence: str, clauses: tuple[Clause, ...], extras: _Extras
    ) -> list[Candidate]:
        found: list[_Found] = []
        # Every fact pattern needs three characters at least (我单身): shorter clauses
        # ("我，" repeated) cost a pass of every pattern and can hold nothing.
        scopes = [
            s
            for s in _scopes(clauses)
            if clauses[s.index].subject != "pronoun" and len(s.text) >= _MIN_FACT_CHARS
        ]
        whole = _scopes((Clause(sentence, "speaker"),))[0]
        offsets = [0]
        for clause in clauses:
            offsets.append(offsets[-1] + len(clause.text))
        for rule in ALL_FACT_PATTERNS:
            for scope in [whole] if rule.sentence else scopes:
                for match in rule.pattern.finditer(scope.text):
                    if scope.hypothetical(match.start()):
                        continue
                    position = (0 if rule.sentence else offsets[scope.index]) + match.start()
                    for candidate in self._fact(rule, match, scope, extras):
                        index = -1 if rule.sentence else scope.index
                        found.append(_Found(position, index, match.span(), candidate))
        # A specific pattern over the same words wins over a preference ("I prefer to be
        # contacted by phone" is a contact channel, 我更喜欢用电话联系 too).
        specific: dict[int, list[tuple[int, int]]] = {}
        for f in found:
            if f.candidate.attribute not in PREFERENCE_ATTRIBUTES:
                specific.setdefault(f.clause, []).append(f.span)
        kept = [
            f
            for f in found
            if f.candidate.attribute not in PREFERENCE_ATTRIBUTES
            or not any(_overlaps(span, f.span) for span in specific.get(f.clause, ()))
        ]
        kept.sort(key=lambda f: f.position)
        return [f.candidate for f in kept]

    def _fact(
        self,
        rule: FactPattern,
        match: re.Match[str],
        scope: _Scope,
        extras: _Extras,
    ) -> list[Candidate]:
        groups = match.groupdict()
        negation = _negation(groups)
        attribute, base = rule.attribute, rule.confidence
        verb = groups.get("verb")
        if verb is not None:
            attribute, base, flipped = PREFERENCE_VERBS[" ".join(verb.casefold().split())]
            if negation:
                if flipped is None or negation not in FLIPPING_NEGATIONS:
                    return []
                attribute, base = flipped, base * 0.9
        elif negation:
            if rule.negated is None:
                return []  # "I don't live in X anymore" says nothing positive
            attribute = rule.negated
        values: list[tuple[str, float, str | None]] = []
        if rule.check == "channel":
            word = groups.get("ch") or groups.get("ch2") or groups.get("ch3") or ""
            channel = CHANNELS.get(" ".join(word.casefold().split()))
            if channel is not None:
                values.append((channel, 1.0, None))
        else:
            raw = next((groups[g] for g in _VALUE_GROUPS if groups.get(g)), None)
            if raw is None:
                return []
            if attribute == "prefers":
                # "tea over coffee": the preferred thing is the value, not the comparison
                raw = PREFERENCE_CUT.sub("", raw).strip() or raw
            items = split_items(strip_tail(raw)) if rule.many else [raw]
            for position, item in enumerate(items):
                checked = check_value(rule.check, item, groups)
                if checked is None and position == 0:
                    return []  # "I love it, thanks": the head says what the list is about
                if checked is not None:
                    values.append(checked)
        made: list[Candidate] = []
        for value, factor, override in values:
            name = override or attribute
            channel = CHANNELS.get(value.casefold()) if name == "prefers" else None
            if channel is not None:
                name, value = "contact_channel", channel  # "I prefer email"
            made.append(
                Candidate(
                    subject="user",
                    attribute=name,
                    value=value,
                    kind="fact",
                    confidence=self._confidence(scope, match.end(), base * factor),
                    importance=rule.importance,
                    extras=extras(),
                )
            )
        return made

    def _events(
        self,
        sentence: str,
        clauses: tuple[Clause, ...],
        turn: Turn,
        extras: _Extras,
    ) -> list[Candidate]:
        if len(sentence) > MAX_EVENT_SENTENCE_CHARS or sentence.rstrip().endswith(("?", "？")):
            return []  # "let's go with X?" proposes; it does not decide
        subject = "assistant" if turn.role == "assistant" else "user"
        if turn.role == "tool":
            return []
        for scope in _scopes(clauses):
            if clauses[scope.index].subject == "pronoun":
                continue
            for rule in EVENT_PATTERNS:
                match = rule.pattern.search(scope.text)
                if match is None or scope.hypothetical(match.start()):
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
                        confidence=self._confidence(scope, match.end(), rule.confidence),
                        importance=rule.importance,
                        extras=extras(),
                    )
                ]
        return []

    def _transactions(self, sentence: str, turn: Turn, lazy: _Extras) -> list[Candidate]:
        if len(sentence) > MAX_EVENT_SENTENCE_CHARS or not _DIGIT.search(sentence):
            return []
        extras = lazy()
        labels = {label for label, _value in extras}
        refund = REFUND_WORDS.search(sentence)
        money = PAYMENT_WORDS.search(sentence) or refund
        has_id = "order_id" in labels or ("id" in labels and money)
        if not has_id and not ("amount" in labels and (money or ORDER_WORDS.search(sentence))):
            return []
        if refund:
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
