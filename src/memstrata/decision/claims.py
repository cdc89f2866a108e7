"""What a text claims, read by rule for the reply check (:mod:`memstrata.decision.consistency`).

A reply and the memories it was built from are read the same way, in English and
Chinese:

* **Amounts**: a number with its unit or currency (``5000 yuan``, ``5,000元``,
  ``¥5000``, ``30万``, ``$1,200``, ``1200 dollars``, ``10 km``, ``10公里``, ``72 kg``,
  ``15%``), normalized to a value and a unit class (CNY, USD, km, kg, %; none for a
  bare number), and the *topic* it is stated about: the content words of its clause
  (``budget``, ``预算``).
* **Dates**: ``May 3``, ``3 May``, ``May 3, 2026``, ``2026-05-03``, ``5月3日``,
  ``2026年5月3日`` as (year or none, month, day), with their topic.
* **Ids**: order numbers and references (``A1234``, ``#5521``, ``O-1789``,
  ``INV-2024-0087``): letters and digits, at least four, with a digit.
* **Denials and assertions**: the reply's "you have no allergies", "you don't live
  in Berlin", "peanuts are fine for you", "你没有过敏", "花生没问题", "你不住在上海";
  the memories' affirmative statements (episodes, and facts rewritten as statements:
  ``user allergies: peanuts`` reads as "I'm allergic to peanuts").

Everything here is deterministic text processing; no model.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from memstrata.cer import content_words

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"

# -- amounts, dates, ids --------------------------------------------------------------

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_DATES = (
    re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)"),
    re.compile(r"(?:(?P<y>\d{4})\s?年\s?)?(?P<m>\d{1,2})\s?月\s?(?P<d>\d{1,2})\s?[日号]"),
    re.compile(
        rf"\b(?P<mon>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}})\b)?",
        re.I,
    ),
    re.compile(
        rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH})\b(?:,?\s+(?P<y>\d{{4}})\b)?",
        re.I,
    ),
)
_ID = re.compile(r"(?<![A-Za-z0-9#-])(#\d{3,}|[A-Z0-9]+(?:-[A-Z0-9]+)*)(?![A-Za-z0-9-])")
_QUANTITY = re.compile(
    r"(?<![A-Za-z0-9.,#_-])"
    r"(?P<pre>US\$|\$|¥|￥|USD\s?|CNY\s?|RMB\s?)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"\s?(?P<mult>万|千|k(?![A-Za-z]))?"
    r"\s?(?P<unit>元人民币|块钱|元|块|人民币|yuan(?![A-Za-z])|CNY|RMB|USD|US dollars?|dollars?"
    r"|bucks|kilomet(?:er|re)s?|km(?![A-Za-z])|公里|千米|kilograms?|kgs?(?![A-Za-z])|公斤|千克"
    r"|%|percent|per cent)?"
    r"(?![A-Za-z0-9_])",
    re.I,
)
_UNIT_CLASS = {
    "元人民币": "CNY",
    "块钱": "CNY",
    "元": "CNY",
    "块": "CNY",
    "人民币": "CNY",
    "yuan": "CNY",
    "cny": "CNY",
    "rmb": "CNY",
    "¥": "CNY",
    "￥": "CNY",
    "usd": "USD",
    "us dollar": "USD",
    "us dollars": "USD",
    "dollar": "USD",
    "dollars": "USD",
    "bucks": "USD",
    "$": "USD",
    "us$": "USD",
    "km": "km",
    "公里": "km",
    "千米": "km",
    "kilometer": "km",
    "kilometers": "km",
    "kilometre": "km",
    "kilometres": "km",
    "kg": "kg",
    "kgs": "kg",
    "kilogram": "kg",
    "kilograms": "kg",
    "公斤": "kg",
    "千克": "kg",
    "%": "%",
    "percent": "%",
    "per cent": "%",
}
_MULTIPLIER = {"万": 10_000.0, "千": 1_000.0, "k": 1_000.0}

# Clause boundaries: punctuation (a comma between digits is a thousands separator)
# and the connectives that start a new statement.
_CLAUSE_BREAK = re.compile(
    r"[;；，。！？!?、\n]|,(?!\d{3})|\.(?!\d)|\s(?:so|but|and then|because|while)\s", re.I
)
# A Western end mark ends a sentence only before a space ("2.12", "4.2.1" do not).
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
# Spans that are neither amounts nor ids: clock times and timestamps, citation marks.
_NOT_AMOUNTS = re.compile(
    r"\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?|(?<!\d)\d{1,2}:\d{2}(?::\d{2})?(?:Z\b)?"
    r"|\[\d{1,3}\]"
)

# Words that name no topic (on top of the CER matcher's function words).
_TOPIC_STOP = frozenset(
    """since each every per up said can could now just also only around roughly nearly
    over under until due will should get got please sure still all any much many more
    less month monthly year yearly day daily week weekly night nightly morning evening
    time times user usual usually here there around a an one two three""".split()  # noqa: SIM905
)
_ZH_STOP_WORDS = re.compile(
    "每个月|每月|每天|每年|每晚|每周|一般|已经|大约|大概|一共|总共|可以|应该|到时候"
)
_ZH_STOP_CHARS = re.compile(
    "[的是我你您他她它们了在有和与及或就都也很还要会能这那个些吧呢吗啊把被让给着过约只按]"
)
# Words that name the dimension a unit already gives, not what is measured.
_DIMENSION = frozenset(
    "weigh heavy cost price pay paid worth long far dista amoun sum 价格 售价 费用 花费".split()  # noqa: SIM905
)
# A few bilingual topic keys so a Chinese reply is compared with an English memory.
_ZH_TOPIC = {
    "预算": "budge",
    "房租": "rent",
    "租金": "rent",
    "工资": "salar",
    "薪": "salar",
    "体重": "weigh",
    "生日": "birth",
    "航班": "fligh",
    "订单": "order",
    "折扣": "disco",
    "贷": "loan",
    "存款": "savin",
    "小费": "tip",
    "预约": "appoi",
    "租约": "lease",
    "合同": "contr",
    "考试": "exam",
}


@dataclass(frozen=True, slots=True)
class Amount:
    """A number as stated: its value, unit class ("" for a bare number) and topic."""

    value: float
    unit: str
    text: str
    topic: frozenset[str]
    clause: int = 0
    """Which clause of the text states it (amounts side by side share one)."""


@dataclass(frozen=True, slots=True)
class Date:
    """A calendar date as stated (year 0: not said) and its topic."""

    year: int
    month: int
    day: int
    text: str
    topic: frozenset[str]
    clause: int = 0

    def same_day(self, other: Date) -> bool:
        years_agree = not self.year or not other.year or self.year == other.year
        return years_agree and (self.month, self.day) == (other.month, other.day)


@dataclass(frozen=True, slots=True)
class Claims:
    """The amounts, dates and ids one text states."""

    amounts: tuple[Amount, ...]
    dates: tuple[Date, ...]
    ids: tuple[str, ...]


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (English and Chinese end marks)."""
    return [s for s in _SENTENCE.split(text) if s.strip()]


def read_claims(text: str) -> Claims:
    """The amounts, dates and ids ``text`` states, each with the topic of its clause."""
    amounts: list[Amount] = []
    dates: list[Date] = []
    ids: list[str] = []
    offset = 0
    for sentence in sentences(text):
        found = _scan(sentence)
        for start, year, month, day, said in found.dates:
            topic, at = found.topics.at(start)
            dates.append(Date(year, month, day, said, topic, offset + at))
        for start, value, unit, said in found.amounts:
            topic, at = found.topics.at(start)
            # "weighs", "costs" restate the unit; what is weighed or paid is the topic.
            topic = (topic - _DIMENSION) or topic
            amounts.append(Amount(value, unit, said, topic, offset + at))
        ids.extend(found.ids)
        offset += found.topics.count
    return Claims(tuple(amounts), tuple(dates), tuple(dict.fromkeys(ids)))


@dataclass(slots=True)
class _Scan:
    dates: list[tuple[int, int, int, int, str]]
    ids: list[str]
    amounts: list[tuple[int, float, str, str]]
    topics: _Topics


def _scan(sentence: str) -> _Scan:
    """One sentence's dates, ids and amounts (with where each starts). Each kind is
    found with the kinds before it blanked out, in one pass per pattern."""
    found = _Scan([], [], [], _Topics(""))

    def date(m: re.Match[str]) -> str:
        month, day = _month(m), int(m["d"])
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            return m[0]
        found.dates.append((m.start(), int(m["y"]) if m["y"] else 0, month, day, m[0]))
        return _spaces(m)

    def ident(m: re.Match[str]) -> str:
        if not _is_id(m[1]):
            return m[0]
        found.ids.append(m[1])
        return _spaces(m)

    def amount(m: re.Match[str]) -> str:
        mult = (m["mult"] or "").lower()
        value = float(m["num"].replace(",", "")) * _MULTIPLIER.get(mult, 1.0)
        marks = [x.strip().lower() for x in (m["pre"], m["unit"]) if x]
        unit = next((_UNIT_CLASS[x] for x in marks if x in _UNIT_CLASS), "")
        if not unit and mult == "万":
            unit = "CNY"  # "30万" alone is an amount of yuan
        found.amounts.append((m.start(), value, unit, m[0].strip()))
        return _spaces(m)

    blank = _NOT_AMOUNTS.sub(_spaces, sentence)
    for pattern in _DATES:
        blank = pattern.sub(date, blank)
    blank = _QUANTITY.sub(amount, _ID.sub(ident, blank))
    found.topics = _Topics(blank)
    return found


def topic_words(text: str) -> frozenset[str]:
    """The words that say what ``text`` is about: English content words cut to five
    letters (``weight`` and ``weigh`` agree), Chinese bigrams of the runs left when
    function characters are taken out (a run of one character stays as it is)."""
    words: set[str] = set()
    for word in content_words(re.sub(rf"[{_CJK}]+", " ", text)):
        if word in _TOPIC_STOP or word.isdigit() or len(word) < 2:
            continue
        words.add(word[:5])
    for run in re.findall(rf"[{_CJK}]+", text):
        for key, stem in _ZH_TOPIC.items():
            if key in run:
                words.add(stem)
        run = _ZH_STOP_WORDS.sub(" ", run)
        for seg in _ZH_STOP_CHARS.sub(" ", run).split():
            if len(seg) == 1:
                words.add(seg)
            else:
                words.update(seg[i : i + 2] for i in range(len(seg) - 1))
    return frozenset(words)


def same_topic(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two topics are about the same thing: more than half of the smaller one
    is in the other (a single Chinese character counts when it is part of a word
    there)."""
    if not a or not b:
        return False
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    shared = sum(1 for w in small if w in large or _inside(w, large))
    return shared / len(small) > 0.5


def covers(held: frozenset[str], said: frozenset[str]) -> bool:
    """Whether every word of a held value's topic is in the reply's (the test for a
    bare held number, an L2 field ``total: 120``, whose label is all it has)."""
    return bool(held) and all(w in said or _inside(w, said) for w in held)


def id_shape(token: str) -> str:
    """An id with every digit as ``9``: ``A1243`` and ``A1234`` have one shape."""
    return re.sub(r"\d", "9", token.upper())


def _inside(word: str, words: frozenset[str]) -> bool:
    return len(word) == 1 and bool(re.match(rf"[{_CJK}]", word)) and any(word in w for w in words)


def _month(m: re.Match[str]) -> int:
    if m.groupdict().get("mon"):
        return _MONTHS[m["mon"][:3].lower()]
    return int(m["m"])


def _is_id(token: str) -> bool:
    bare = token.lstrip("#")
    if len(bare.replace("-", "")) < 4 or not re.search(r"\d", bare):
        return False
    return token.startswith("#") or bool(re.search(r"[A-Z]", bare))


def _spaces(m: re.Match[str]) -> str:
    return " " * len(m[0])


class _Topics:
    """The clauses of one sentence whose amounts, dates and ids are blanked out (a
    separator inside one of them is gone with it), and their topics, each read once."""

    def __init__(self, blank: str) -> None:
        self._blank = blank
        self._starts = [0, *(m.start() for m in _CLAUSE_BREAK.finditer(blank))]
        self._ends = [*self._starts[1:], len(blank)]
        self._topics: dict[int, frozenset[str]] = {}
        self._whole: frozenset[str] | None = None
        self.count = len(self._starts)

    def at(self, start: int) -> tuple[frozenset[str], int]:
        """The topic of the clause at ``start`` (the sentence's when the clause names
        none) and the clause's index."""
        index = max(0, bisect_right(self._starts, start) - 1)
        if index not in self._topics:
            self._topics[index] = topic_words(self._blank[self._starts[index] : self._ends[index]])
        topic = self._topics[index]
        if not topic:
            if self._whole is None:
                self._whole = topic_words(self._blank)
            topic = self._whole
        return topic, index
