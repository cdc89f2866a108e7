"""What a text claims, read by rule for the reply check (:mod:`memstrata.decision.consistency`).

A reply and the memories it was built from are read the same way, in English and
Chinese:

* **Amounts**: a number with its unit or currency (``5000 yuan``, ``5,000元``,
  ``¥5000``, ``30万``, ``$1,200``, ``1200 dollars``, ``10 km``, ``10公里``, ``72 kg``,
  ``15%``), its numeral read by :mod:`memstrata.attributes.numbers` (``五千``,
  ``八千块``, ``两万五``, ``0.8万``, ``5k``), normalized to a value and a unit class
  (CNY, USD, km, kg, %; none for a bare number), and the *topic* it is stated about:
  the content words of its clause (``budget``, ``预算``), a glossary term in either
  language as its English key (:mod:`memstrata.attributes.glossary`: 牙医预约 and
  "dentist appointment" agree).
* **Dates**: ``May 3``, ``3 May``, ``May 3rd, 2026``, ``2026-05-03``, ``5月3日``,
  ``2026年5月3日``, ``五月三号``, and ``3/5`` (read both ways) as (year or none, month,
  day), with their topic.
* **Ids**: order numbers, flights and references (``A1234``, ``#5521``, ``O-1789``,
  ``INV-2024-0087``, ``MU 5123``): letters and digits, at least four, with a digit;
  compared in upper case without ``#``, hyphens and spaces.
* **Denials and assertions**: the reply's "you have no allergies", "you don't live
  in Berlin", "peanuts are fine for you", "你没有过敏", "花生没问题", "你不住在上海";
  the memories' affirmative statements (episodes, and facts rewritten as statements:
  ``user allergies: peanuts`` reads as "I'm allergic to peanuts").

Everything here is deterministic text processing; no model.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from memstrata.attributes import glossary
from memstrata.attributes.numbers import (
    AMOUNT_NUMBER,
    ZH_NUMERAL,
    has_tail,
    read_amount,
    read_count,
    zh_number,
)
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
_ZH_DAY = r"\d{1,2}|[一二三四五六七八九十]{1,3}"
_DATES = (
    re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)"),
    re.compile(
        r"(?:(?P<y>\d{4}|[〇零一二三四五六七八九]{4})\s?年\s?)?"
        rf"(?P<m>{_ZH_DAY})\s?月(?:份)?\s?(?P<d>{_ZH_DAY})\s?[日号]"
    ),
    re.compile(
        rf"\b(?P<mon>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}})\b)?",
        re.I,
    ),
    re.compile(
        rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>{_MONTH})\b(?:,?\s+(?P<y>\d{{4}})\b)?",
        re.I,
    ),
)
# A day of the week (weekly plans: "yoga on Tuesdays", 每周二, 下周四).
_WEEKDAYS_EN = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")
_WEEKDAYS_ZH = "一二三四五六日"
_WEEKDAY = re.compile(
    r"\b(?P<en>mon|tues|wednes|thurs|fri|satur|sun)day(?:s)?\b"
    r"|(?:星期|礼拜|周)(?P<zh>[一二三四五六日天])",
    re.I,
)
# 3/5: day and month in either order (read both ways; a held date said either way agrees).
_SLASH_DATE = re.compile(
    r"(?<![\d/.])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<y>\d{4}|\d{2}))?(?![\d/])"
)
# An id: letters and digits (MU5123, INV-2024-0087, #5521), or a flight-style code
# with a space (CA 1234; a currency code is an amount's, not an id).
_ID = re.compile(
    r"(?<![A-Za-z0-9#-])(#\d{3,}"
    r"|(?!USD|CNY|RMB|EUR|GBP|JPY|HKD|AUD|CAD|SGD|CHF|KRW|INR)[A-Z]{2,3} \d{3,6}(?![\d.,])"
    r"|[A-Z0-9]+(?:-[A-Z0-9]+)*)(?![A-Za-z0-9-])"
)
# A number said in groups (a phone 138 0013 4572, a card 8806 4412, 021-6473 9920):
# seven digits or more, an id rather than amounts (checked in ``_scan``).
_DIGIT_GROUPS = re.compile(r"(?<![\w$¥￥.,#-])\d{2,4}(?:[ -]\d{3,8}){1,3}(?![\w-]|[.,]\d)")
_AFTER_AMOUNT = re.compile(
    r"\s?(?:元|块|美元|人民币|万|千|%|yuan|dollars?|usd|cny|rmb|bucks)", re.I
)
_QUANTITY = re.compile(
    rf"(?<![A-Za-z0-9.,#_-])(?<!{ZH_NUMERAL})(?<!第)"
    r"(?P<pre>US\$|\$|¥|￥|USD\s?|CNY\s?|RMB\s?)?"
    rf"(?P<num>{AMOUNT_NUMBER})"
    r"\s?(?P<unit>元人民币|块钱|元|块|人民币|美元|yuan(?![A-Za-z])|CNY|RMB|USD|US dollars?|dollars?"
    r"|bucks|kilomet(?:er|re)s?|km(?![A-Za-z])|公里|千米|kilograms?|kgs?(?![A-Za-z])|公斤|千克"
    r"|%|percent|per cent|guests?(?![A-Za-z])|steps?(?![A-Za-z])|步(?!行)|位客人|位宾客)?"
    r"(?![A-Za-z0-9_])",
    re.I,
)
_UNIT_CLASS = {
    "元人民币": "CNY",
    "块钱": "CNY",
    "元": "CNY",
    "块": "CNY",
    "人民币": "CNY",
    "美元": "USD",
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
    "guest": "guest",
    "guests": "guest",
    "位客人": "guest",
    "位宾客": "guest",
    "step": "step",
    "steps": "step",
    "步": "step",
}
# Units that name what is counted (120 guests, 五千步): two counts of one such unit
# are about the same thing whatever the words around them.
COUNTED = frozenset({"guest", "step"})
MONEY = frozenset({"CNY", "USD"})
_SCALED = re.compile(r"[百万千亿]|\dk|thousand|million", re.I)
_CJK_NUMERAL_START = re.compile(r"[一二两三四五六七八九十]")
# "More than" after a number: 一万多, 8000多元, 两千出头, 5k+.
_AT_LEAST = re.compile(r"\s?(?:多|余|出头|\+)")
# What a terse answer may say beside its amount ("是九千元", "about 8k").
_ALONE_FILLER = re.compile(
    r"\b(?:about|around|roughly|approximately|only|just|exactly)\b|是|大概|大约|约|一共|总共|只有|就",
    re.I,
)

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
    time times user usual usually here there around a an one two three booked booking
    scheduled planned set fixed go goes going went""".split()  # noqa: SIM905
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
# Terms read across languages in a topic (预约 and "appointment" give one word);
# verbs are left to the words around them.
_TOPIC_KINDS = frozenset({"food", "diet", "city", "language", "topic", "attribute"})
_TOPIC_KINDS_EN = _TOPIC_KINDS - {"attribute"}


@dataclass(frozen=True, slots=True)
class Amount:
    """A number as stated: its value, unit class ("" for a bare number) and topic."""

    value: float
    unit: str
    text: str
    topic: frozenset[str]
    clause: int = 0
    """Which clause of the text states it (amounts side by side share one)."""
    scaled: bool = False
    """Written with a multiplier (8k, 五千, 0.8万): an amount of money or the like
    even without its unit."""
    alone: bool = False
    """Its sentence says nothing but amounts: a terse answer ("九千元。"), about
    whatever was asked."""
    at_least: bool = False
    """Said as "more than" (一万多, 8000多元, 5k+): it admits the values up to its
    last stated digit's next step (一万多: 10,000 to 19,999)."""

    def admits(self, value: float) -> bool:
        """Whether the amount as said agrees with ``value``."""
        if round(self.value, 6) == round(value, 6):
            return True
        if not self.at_least or not self.value.is_integer() or self.value <= 0:
            return False
        step, whole = 1, int(self.value)
        while whole % (step * 10) == 0:
            step *= 10
        return self.value <= value < self.value + step


@dataclass(frozen=True, slots=True)
class Date:
    """A calendar date as stated (year 0: not said) and its topic."""

    year: int
    month: int
    day: int
    text: str
    topic: frozenset[str]
    clause: int = 0
    alt: tuple[int, int] | None = None
    """The other (month, day) reading of a date whose order is not said (3/5)."""

    def days(self) -> tuple[tuple[int, int], ...]:
        """The (month, day) readings of the date."""
        return ((self.month, self.day),) if self.alt is None else ((self.month, self.day), self.alt)

    def same_day(self, other: Date) -> bool:
        years_agree = not self.year or not other.year or self.year == other.year
        return years_agree and bool(set(self.days()) & set(other.days()))


@dataclass(frozen=True, slots=True)
class Weekday:
    """A day of the week as stated (0 Monday .. 6 Sunday) and its topic."""

    day: int
    text: str
    topic: frozenset[str]
    clause: int = 0


@dataclass(frozen=True, slots=True)
class Claims:
    """The amounts, dates and ids one text states."""

    amounts: tuple[Amount, ...]
    dates: tuple[Date, ...]
    ids: tuple[str, ...]
    weekdays: tuple[Weekday, ...] = ()


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (English and Chinese end marks)."""
    return [s for s in _SENTENCE.split(text) if s.strip()]


def read_claims(text: str) -> Claims:
    """The amounts, dates and ids ``text`` states, each with the topic of its clause."""
    amounts: list[Amount] = []
    dates: list[Date] = []
    ids: list[str] = []
    weekdays: list[Weekday] = []
    offset = 0
    for sentence in sentences(text):
        found = _scan(sentence)
        for start, year, month, day, said, alt in found.dates:
            topic, at = found.topics.at(start)
            dates.append(Date(year, month, day, said, topic, offset + at, alt))
        for start, value, unit, said, at_least in found.amounts:
            topic, at = found.topics.at(start)
            # "weighs", "costs" restate the unit; what is weighed or paid is the topic.
            topic = (topic - _DIMENSION) or topic
            scaled = bool(_SCALED.search(said))
            amounts.append(
                Amount(value, unit, said, topic, offset + at, scaled, found.alone, at_least)
            )
        for start, day, said in found.weekdays:
            topic, at = found.topics.at(start)
            weekdays.append(Weekday(day, said, topic, offset + at))
        ids.extend(found.ids)
        offset += found.topics.count
    return Claims(tuple(amounts), tuple(dates), tuple(dict.fromkeys(ids)), tuple(weekdays))


@dataclass(slots=True)
class _Scan:
    dates: list[tuple[int, int, int, int, str, tuple[int, int] | None]]
    ids: list[str]
    amounts: list[tuple[int, float, str, str, bool]]
    topics: _Topics
    weekdays: list[tuple[int, int, str]] = field(default_factory=list)
    alone: bool = False
    """The sentence states its amounts and nothing else ("九千元。", "About 8k.")."""


def _scan(sentence: str) -> _Scan:
    """One sentence's dates, ids and amounts (with where each starts). Each kind is
    found with the kinds before it blanked out, in one pass per pattern."""
    found = _Scan([], [], [], _Topics(""))

    def date(m: re.Match[str]) -> str:
        month, day = _month(m), read_count(m["d"]) or 0
        if not 1 <= month <= 12 or not 1 <= day <= 31:
            return m[0]
        found.dates.append((m.start(), _year(m["y"]), month, day, m[0], None))
        return _spaces(m)

    def slash_date(m: re.Match[str]) -> str:
        a, b = int(m["a"]), int(m["b"])
        readings = [(x, y) for x, y in ((a, b), (b, a)) if 1 <= x <= 12 and 1 <= y <= 31]
        if not readings:
            return m[0]
        (month, day), alt = readings[0], (readings[1] if len(readings) > 1 else None)
        found.dates.append((m.start(), _year(m["y"]), month, day, m[0], alt))
        return _spaces(m)

    def ident(m: re.Match[str]) -> str:
        if not _is_id(m[1]):
            return m[0]
        found.ids.append(m[1])
        return _spaces(m)

    def weekday(m: re.Match[str]) -> str:
        if m["en"]:
            day = _WEEKDAYS_EN.index(m["en"].lower())
        else:
            day = 6 if m["zh"] in "日天" else _WEEKDAYS_ZH.index(m["zh"])
        found.weekdays.append((m.start(), day, m[0]))
        return _spaces(m)

    def digit_id(m: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", m[0])
        if len(digits) < 7 or _AFTER_AMOUNT.match(sentence, m.end()):
            return m[0]
        found.ids.append(digits)
        return _spaces(m)

    def amount(m: re.Match[str]) -> str:
        number = m["num"]
        marks = [x.strip().lower() for x in (m["pre"], m["unit"]) if x]
        unit = next((_UNIT_CLASS[x] for x in marks if x in _UNIT_CLASS), "")
        if _CJK_NUMERAL_START.match(number) and not unit and not re.search("[百千万亿]", number):
            return m[0]  # 一起, 十分, 三个: a Chinese numeral is an amount with a unit or 百/千/万
        # 两万一个月: the 一 counts the month, not a thousand.
        after = sentence[m.end() : m.end() + 1]
        tail = not (has_tail(number) and not unit and re.match(rf"[{_CJK}]", after))
        value = read_amount(number, tail=tail)
        if value is None:
            return m[0]
        if not unit and "万" in number:
            unit = "CNY"  # "30万" alone is an amount of yuan
        at_least = bool(_AT_LEAST.match(sentence, m.end()))
        found.amounts.append((m.start(), value, unit, m[0].strip(), at_least))
        return _spaces(m)

    blank = _NOT_AMOUNTS.sub(_spaces, sentence)
    for pattern in _DATES:
        blank = pattern.sub(date, blank)
    blank = _SLASH_DATE.sub(slash_date, blank)
    blank = _WEEKDAY.sub(weekday, blank)
    # 浙A·8K2Q7: a middle dot inside an id joins its parts.
    blank = re.sub(r"(?<=[A-Za-z0-9])[·・](?=[A-Za-z0-9])", "-", blank)
    blank = _DIGIT_GROUPS.sub(digit_id, blank)
    blank = _QUANTITY.sub(amount, _ID.sub(ident, blank))
    found.topics = _Topics(blank)
    found.alone = not re.search(r"\w", _ALONE_FILLER.sub(" ", blank))
    return found


def topic_words(text: str) -> frozenset[str]:
    """The words that say what ``text`` is about: English content words cut to five
    letters (``weight`` and ``weigh`` agree), Chinese bigrams of the runs left when
    function characters are taken out (a run of one character stays as it is); a
    term of the glossary in either language is its English key's words (牙医预约 and
    "dentist appointment" agree)."""
    words: set[str] = set()
    latin = _glossed(re.sub(rf"[{_CJK}]+", " ", text), _TOPIC_KINDS_EN, words)
    for word in content_words(latin):
        if word in _TOPIC_STOP or word.isdigit() or len(word) < 2:
            continue
        words.add(word[:5])
    for run in re.findall(rf"[{_CJK}]+", text):
        run = _glossed(run, _TOPIC_KINDS, words)
        run = _ZH_STOP_WORDS.sub(" ", run)
        for seg in _ZH_STOP_CHARS.sub(" ", run).split():
            if len(seg) == 1:
                words.add(seg)
            else:
                words.update(seg[i : i + 2] for i in range(len(seg) - 1))
    return frozenset(words)


def _glossed(text: str, kinds: frozenset[str], words: set[str]) -> str:
    """``text`` with the glossary terms it names blanked out, their English keys'
    words added to ``words``."""
    spans = sorted(glossary.find(text, kinds), key=lambda found: found[0])
    out, at = [], 0
    for start, end, term in spans:
        if start < at:
            continue
        words.update(glossary.english_stems(term))
        out.append(text[at:start])
        out.append(" ")
        at = end
    out.append(text[at:])
    return "".join(out)


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
    """An id with every digit as ``9`` and every letter as ``A``: ``A1243`` and
    ``A1234`` have one shape, and so have flights ``MU1234`` and ``CA1234``."""
    return re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", bare_id(token)))


def bare_id(token: str) -> str:
    """An id as compared: upper case, without ``#``, hyphens and spaces (``mu 1234``,
    ``MU-1234`` and ``MU1234`` are one id)."""
    return re.sub(r"[#\s-]", "", token).upper()


def _inside(word: str, words: frozenset[str]) -> bool:
    return len(word) == 1 and bool(re.match(rf"[{_CJK}]", word)) and any(word in w for w in words)


def _month(m: re.Match[str]) -> int:
    if m.groupdict().get("mon"):
        return _MONTHS[m["mon"][:3].lower()]
    return read_count(m["m"]) or 0


def _year(said: str | None) -> int:
    """A stated year (2026, 26, 二〇二六); 0 when none is said."""
    if not said:
        return 0
    year = zh_number(said) or 0
    return year + 2000 if year < 100 else year


def _is_id(token: str) -> bool:
    bare = token.lstrip("#").replace(" ", "")
    if len(bare.replace("-", "")) < 4 or not re.search(r"\d", bare):
        return False
    if re.fullmatch(r"\d+(?:-\d+)*", bare) and len(bare.replace("-", "")) >= 7:
        return True  # a phone, card or order number: long enough not to be an amount
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
