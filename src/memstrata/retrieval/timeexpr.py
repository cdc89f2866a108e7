"""Relative dates in a question, resolved against the session's date (English, Chinese).

"last week", "two months ago", "yesterday", 上周, 三个月前, 去年 ... become a
:class:`TimeWindow` the retriever uses to boost (or filter) memories by when they were
observed. Pure functions; the caller supplies ``now`` (the session's or question's date),
never the wall clock, so answers are reproducible.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from memstrata.attributes.numbers import EN_NUMBERS, EN_VAGUE, read_count
from memstrata.errors import ValidationError

_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open interval ``[start, end)`` named by ``phrase`` in the question."""

    start: datetime
    end: datetime
    phrase: str

    def contains(self, moment: datetime) -> bool:
        """True when ``moment`` falls inside the window."""
        return self.start <= moment < self.end


_EN_NUMBERS = {**EN_NUMBERS, **EN_VAGUE}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week"}
_ZH_UNITS |= {"个月": "month", "月": "month", "年": "year"}
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}

_EN_COUNT = "|".join(sorted((re.escape(k) for k in _EN_NUMBERS), key=len, reverse=True))
_EN_AGO = re.compile(
    rf"\b(?P<n>\d+|{_EN_COUNT})\s+(?P<unit>day|week|month|year)s?\s+(?:ago|before)\b", re.I
)
_EN_LAST = re.compile(r"\b(?:last|past|previous)\s+(?P<unit>week|month|year|weekend)\b", re.I)
_EN_THIS = re.compile(r"\bthis\s+(?P<unit>week|month|year)\b", re.I)
_EN_PAST_N = re.compile(
    rf"\b(?:last|past|previous)\s+(?P<n>\d+|{_EN_COUNT})\s+(?P<unit>day|week|month|year)s\b", re.I
)
_EN_MONTH = re.compile(
    r"\b(?:in|during|on)\s+(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
    r"(?:\s+(?P<year>\d{4}))?\b",
    re.I,
)
# Only from the start of a number: trying every digit of a long run is quadratic.
_ZH_NUM = r"(?<![\d零一两二三四五六七八九十几])(?P<n>\d+|[零一两二三四五六七八九十]+|几)"
_ZH_AGO = re.compile(_ZH_NUM + r"\s*(?P<unit>个月|星期|礼拜|天|日|周|月|年)(?:之|以)?前")
_ZH_FIXED = {
    "前天": ("day", -2),
    "昨天": ("day", -1),
    "今天": ("day", 0),
    "上上周": ("week", -2),
    "上周": ("week", -1),
    "上个星期": ("week", -1),
    "上星期": ("week", -1),
    "上个礼拜": ("week", -1),
    "这周": ("week", 0),
    "本周": ("week", 0),
    "上个月": ("month", -1),
    "上月": ("month", -1),
    "这个月": ("month", 0),
    "本月": ("month", 0),
    "前年": ("year", -2),
    "去年": ("year", -1),
    "今年": ("year", 0),
}
_EN_FIXED = {
    "day before yesterday": ("day", -2),  # with or without "the"
    "yesterday": ("day", -1),
    "today": ("day", 0),
    "tonight": ("day", 0),
}
_RECENT = re.compile(r"\b(?:recently|lately|these days)\b|最近|近来|这几天", re.I)
_RECENT_DAYS = 14


def _zh_number(text: str) -> int | None:
    return read_count(text, vague=True)


def _start_of_day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(index, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def calendar_window(now: datetime, unit: str, offset: int, phrase: str) -> TimeWindow:
    """The calendar ``unit`` (day, week from Monday, month, year) ``offset`` units from now."""
    day = _start_of_day(now)
    if unit == "day":
        start = day + offset * _DAY
        return TimeWindow(start, start + _DAY, phrase)
    if unit == "week":
        start = day - day.weekday() * _DAY + offset * 7 * _DAY
        return TimeWindow(start, start + 7 * _DAY, phrase)
    if unit == "month":
        first = _add_months(day.replace(day=1), offset)
        return TimeWindow(first, _add_months(first, 1), phrase)
    first = day.replace(month=1, day=1, year=day.year + offset)
    return TimeWindow(first, first.replace(year=first.year + 1), phrase)


def ago_window(now: datetime, count: int, unit: str, phrase: str) -> TimeWindow:
    """About ``count`` units before ``now``: half a unit of slack either side
    ("two months ago" is rarely exactly 60 days), at least a day."""
    days = _UNIT_DAYS[unit]
    center = now - timedelta(days=count * days)
    slack = timedelta(days=max(1.0, days / 2))
    return TimeWindow(_start_of_day(center - slack), _start_of_day(center + slack) + _DAY, phrase)


def _past_window(now: datetime, count: int, unit: str, phrase: str) -> TimeWindow:
    start = _start_of_day(now - timedelta(days=count * _UNIT_DAYS[unit]))
    return TimeWindow(start, _start_of_day(now) + _DAY, phrase)


def _month_window(now: datetime, month: int, year: int | None, phrase: str) -> TimeWindow:
    if year is None:
        # "in May" means the latest May not after now.
        year = now.year if month <= now.month else now.year - 1
    first = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    return TimeWindow(first, _add_months(first, 1), phrase)


_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_NUM = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d{2})"
_EN_DAY_MONTH = re.compile(
    rf"\b{_DAY_NUM}\s+(?:of\s+)?(?P<m>{_MONTH_NAMES})\.?(?:\s*,?\s*{_YEAR})?\b", re.I
)
_EN_MONTH_DAY = re.compile(rf"\b(?P<m>{_MONTH_NAMES})\.?\s+{_DAY_NUM}(?:\s*,?\s*{_YEAR})?\b", re.I)
_EN_MONTH_YEAR = re.compile(rf"\b(?P<m>{_MONTH_NAMES})\.?\s*,?\s+{_YEAR}\b", re.I)
_ISO_DAY = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b")
_YEAR_ONLY = re.compile(rf"\b(?:in|during|since|of)\s+{_YEAR}\b", re.I)
_ZH_DATE = re.compile(
    r"(?:(?P<y>\d{4})年|(?P<rel>前年|去年|今年))?(?P<m>\d{1,2})月(?:(?P<d>\d{1,2})[日号])?"
)
_ZH_REL_YEAR = {"前年": -2, "去年": -1, "今年": 0}
_ZH_YEAR = re.compile(r"(?P<y>(?:19|20)\d{2})年(?!\d{1,2}月)")

Found = list[tuple[int, TimeWindow]]


def _day_window(
    now: datetime, year: int | None, month: int, day: int, phrase: str
) -> TimeWindow | None:
    if year is None:
        # A date without a year means its latest occurrence not after now.
        year = now.year if (month, day) <= (now.month, now.day) else now.year - 1
    try:
        start = now.replace(
            year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0
        )
    except ValueError:
        return None  # 31 February and the like: not a date
    return TimeWindow(start, start + _DAY, phrase)


def _absolute(question: str, now: datetime) -> Found:
    found: Found = []
    for pattern in (_EN_DAY_MONTH, _EN_MONTH_DAY):
        for match in pattern.finditer(question):
            month = _MONTHS[match["m"].lower()]
            if match["m"] == "may" and not match["y"]:
                continue  # "may 3 people", "all 5 may join" - the verb, not the month
            year = int(match["y"]) if match["y"] else None
            window = _day_window(now, year, month, int(match["d"]), match[0])
            if window is not None:
                found.append((match.start(), window))
    for match in _ISO_DAY.finditer(question):
        window = _day_window(now, int(match["y"]), int(match["m"]), int(match["d"]), match[0])
        if window is not None:
            found.append((match.start(), window))
    for match in _EN_MONTH_YEAR.finditer(question):
        found.append(
            (
                match.start(),
                _month_window(now, _MONTHS[match["m"].lower()], int(match["y"]), match[0]),
            )
        )
    for match in _YEAR_ONLY.finditer(question):
        span = calendar_window(now, "year", int(match["y"]) - now.year, match[0])
        if match[0].lower().startswith("since") and span.start <= now:
            # "since 2022" runs from that year up to today, not through 2022 only
            span = TimeWindow(span.start, _start_of_day(now) + _DAY, match[0])
        found.append((match.start(), span))
    for match in _ZH_DATE.finditer(question):
        month = int(match["m"])
        if not 1 <= month <= 12:
            continue
        if match["y"]:
            year = int(match["y"])
        elif match["rel"]:
            year = now.year + _ZH_REL_YEAR[match["rel"]]  # 去年6月: June of last year
        else:
            year = None
        if match["d"]:
            window = _day_window(now, year, month, int(match["d"]), match[0])
        else:
            window = _month_window(now, month, year, match[0])
        if window is not None:
            found.append((match.start(), window))
    for match in _ZH_YEAR.finditer(question):
        found.append(
            (match.start(), calendar_window(now, "year", int(match["y"]) - now.year, match[0]))
        )
    return found


def _relative(question: str, now: datetime) -> Found:
    found: Found = []
    lowered = question.lower()
    for phrase, (unit, offset) in _EN_FIXED.items():
        at = re.search(rf"\b{phrase}\b", lowered)
        if at:
            found.append((at.start(), calendar_window(now, unit, offset, phrase)))
            lowered = lowered.replace(phrase, " " * len(phrase))  # "day before yesterday"
    for phrase, (unit, offset) in _ZH_FIXED.items():
        at_zh = question.find(phrase)
        if at_zh >= 0:
            found.append((at_zh, calendar_window(now, unit, offset, phrase)))
    for match in _EN_PAST_N.finditer(question):
        count = _EN_NUMBERS.get(match["n"].lower()) or int(match["n"])
        found.append((match.start(), _past_window(now, count, match["unit"].lower(), match[0])))
    for match in _EN_AGO.finditer(question):
        count = _EN_NUMBERS.get(match["n"].lower()) or int(match["n"])
        found.append((match.start(), ago_window(now, count, match["unit"].lower(), match[0])))
    for match in _EN_LAST.finditer(question):
        unit = match["unit"].lower()
        if unit == "weekend":
            week = calendar_window(now, "week", -1, match[0])
            found.append((match.start(), TimeWindow(week.start + 5 * _DAY, week.end, match[0])))
        else:
            found.append((match.start(), calendar_window(now, unit, -1, match[0])))
    for match in _EN_THIS.finditer(question):
        found.append((match.start(), calendar_window(now, match["unit"].lower(), 0, match[0])))
    for match in _EN_MONTH.finditer(question):
        if match["year"]:
            continue  # "in May 2023" is an absolute month
        month = _MONTHS[match["month"].lower()]
        if match["month"].lower() == "may" and match[0].lower().startswith("on"):
            continue  # "on may" is more often the verb than the month ("during May" is not)
        found.append((match.start(), _month_window(now, month, None, match[0])))
    for match in _ZH_AGO.finditer(question):
        zh_count = _zh_number(match["n"])
        if zh_count is not None:
            unit = _ZH_UNITS[match["unit"]]
            found.append((match.start(), ago_window(now, zh_count, unit, match[0])))
    recent = _RECENT.search(question)
    if recent:
        found.append((recent.start(), _past_window(now, _RECENT_DAYS, "day", recent[0])))
    return found


_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WEEKDAY_NAMES = "|".join(_WEEKDAYS)
_EN_WEEKDAY = re.compile(
    rf"\b(?:(?P<rel>last|this|past|previous)\s+)?(?P<day>{_WEEKDAY_NAMES})\b(?!s)", re.I
)
_EN_THIS_WEEKEND = re.compile(r"\b(?P<rel>this|the|over\s+the)\s+weekend\b", re.I)
_ZH_WEEKDAY_NUMS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_WEEKDAY = re.compile(
    r"(?<!每)(?P<rel>上上|上|这|本|这个|上个)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])"
)
_ZH_WEEKEND = re.compile(r"(?<!每)(?P<rel>上上|上|这|本|这个|上个)?(?:个)?周末")
_ZH_WEEK_OFFSET = {"上上": -2, "上": -1, "上个": -1, "这": 0, "本": 0, "这个": 0}
_ZH_DIGIT_DATE = re.compile(
    r"(?P<m>[一二三四五六七八九十]{1,2})月(?P<d>[一二三四五六七八九十]{1,3})[日号]"
)
_ZH_BARE_DAY = re.compile(r"(?<![\d月年])(?P<d>\d{1,2})[号日](?![\d])")


def _weekday_window(
    now: datetime, weekday: int, week_offset: int | None, phrase: str
) -> TimeWindow:
    """That weekday of the calendar week ``week_offset`` weeks from now's, or with
    ``week_offset`` None its latest occurrence not after today."""
    today = _start_of_day(now)
    if week_offset is None:
        start = today - ((today.weekday() - weekday) % 7) * _DAY
    else:
        start = today + (weekday - today.weekday() + 7 * week_offset) * _DAY
    return TimeWindow(start, start + _DAY, phrase)


def _weekend_window(now: datetime, week_offset: int, phrase: str) -> TimeWindow:
    week = calendar_window(now, "week", week_offset, phrase)
    return TimeWindow(week.start + 5 * _DAY, week.end, phrase)


def _weekdays(question: str, now: datetime) -> Found:
    """Weekdays and weekends: "last Tuesday" (the latest Tuesday before today),
    "this Tuesday", "on Tuesday" (the latest not after today); 上周二 (Tuesday of
    last calendar week), 这周二, 周二; 上周末, 这周末, "this weekend"."""
    found: Found = []
    for match in _EN_WEEKDAY.finditer(question):
        weekday = _WEEKDAYS[match["day"].lower()]
        rel = (match["rel"] or "").lower()
        if rel == "this":
            found.append((match.start(), _weekday_window(now, weekday, 0, match[0])))
            continue
        window = _weekday_window(now, weekday, None, match[0])
        if rel and window.start == _start_of_day(now):
            # "last Tuesday" said on a Tuesday is a week ago, not today
            window = TimeWindow(window.start - 7 * _DAY, window.end - 7 * _DAY, match[0])
        found.append((match.start(), window))
    # "the weekend" / 周末 alone: the latest one begun by now; "this weekend": this week's
    latest = 0 if now.weekday() >= 5 else -1
    for match in _EN_THIS_WEEKEND.finditer(question):
        offset = 0 if match["rel"].lower() == "this" else latest
        found.append((match.start(), _weekend_window(now, offset, match[0])))
    for match in _ZH_WEEKDAY.finditer(question):
        weekday = _ZH_WEEKDAY_NUMS[match["day"]]
        week = None if match["rel"] is None else _ZH_WEEK_OFFSET[match["rel"]]
        found.append((match.start(), _weekday_window(now, weekday, week, match[0])))
    for match in _ZH_WEEKEND.finditer(question):
        offset = latest if match["rel"] is None else _ZH_WEEK_OFFSET[match["rel"]]
        found.append((match.start(), _weekend_window(now, offset, match[0])))
    if "大前天" in question:
        found.append((question.find("大前天"), calendar_window(now, "day", -3, "大前天")))
    return found


def _zh_more_dates(question: str, now: datetime) -> Found:
    """五月一号 (a date in Chinese numerals) and 3号 (a day of the latest month that
    has it, not after today)."""
    found: Found = []
    for match in _ZH_DIGIT_DATE.finditer(question):
        month, dom = _zh_number(match["m"]), _zh_number(match["d"])
        if month is None or dom is None or not 1 <= month <= 12:
            continue
        window = _day_window(now, None, month, dom, match[0])
        if window is not None:
            found.append((match.start(), window))
    for match in _ZH_BARE_DAY.finditer(question):
        dom = int(match["d"])
        if not 1 <= dom <= 31:
            continue
        month_start = _start_of_day(now).replace(day=1)
        for back in range(3):  # the latest month with that day, not after today
            first = _add_months(month_start, -back)
            window = _day_window(now, first.year, first.month, dom, match[0])
            if window is not None and window.start <= now:
                found.append((match.start(), window))
                break
    return found


def resolve(question: str, now: datetime) -> TimeWindow | None:
    """The time the question asks about, as a window, or None when it names none.

    Absolute dates ("on 21 March, 2023", "July 2023", 2023年3月21日) win over
    relative ones; among equals the most specific (shortest) window, then the first
    in the text. Relative phrases are resolved against ``now`` (the session's date,
    timezone-aware; windows share its zone).
    """
    if not isinstance(question, str):
        raise ValidationError("question", "must be a string")
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise ValidationError("now", "must be a timezone-aware datetime")
    absolute = _absolute(question, now) or _zh_more_dates(question, now)
    for found in (absolute, _relative(question, now) + _weekdays(question, now)):
        if found:
            return min(found, key=lambda pair: (pair[1].end - pair[1].start, pair[0]))[1]
    return None
