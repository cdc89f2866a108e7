"""Never-compress values: order ids, amounts and dates, found and kept verbatim.

Ids, amounts and dates must survive every summary unchanged (docs/architecture.md,
"Context budget and compression"), so they are captured exactly as written
(``¥1,299.00`` stays ``¥1,299.00``) and labelled ``order_id``, ``id``, ``amount`` or
``date``.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

_SCALE = r"(?:[kKmMbB]|bn|million|billion|thousand|万|亿)"
_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_CURRENCY_WORD = (
    r"(?:USD|RMB|CNY|EUR|GBP|JPY|HKD|dollars?|bucks|euros?|pounds|yuan|"
    r"元|块钱|块|美元|欧元|英镑|人民币|港币|日元)"
)
_AMOUNT_SOURCES = (
    # ¥1,299.00  $3.5M  €20  USD 5k
    rf"(?:[¥￥$€£]|\b(?:USD|RMB|CNY|EUR|GBP|JPY|HKD)\s?){_NUMBER}(?:\s?{_SCALE}(?![A-Za-z]))?",
    # 300元  5k USD  3万元  1,200 dollars
    rf"(?<![\dA-Za-z.,]){_NUMBER}\s?(?:{_SCALE}\s?)?{_CURRENCY_WORD}(?![A-Za-z])",
)
_AMOUNT_RES = tuple(re.compile(source) for source in _AMOUNT_SOURCES)
AMOUNT_PATTERN = "(?:" + "|".join(_AMOUNT_SOURCES) + ")"
"""An amount as the finder sees it, for patterns that capture one ("my budget is ...")."""

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_WEEKDAY = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_DATE_RES = (
    re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b"),
    re.compile(rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?"),
    re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b(?:,?\s+\d{{4}}\b)?"),
    re.compile(r"(?:\d{4}年)?\d{1,2}月\d{1,2}[日号]|\d{4}年\d{1,2}月"),
    re.compile(
        rf"\b(?:yesterday|today|tomorrow|tonight|"
        rf"(?:last|next|this)\s+(?:week|month|year|{_WEEKDAY}))\b",
        re.IGNORECASE,
    ),
    re.compile(rf"\b{_WEEKDAY}\b"),
    re.compile(r"(?:周|星期|礼拜)[一二三四五六日天]"),
    re.compile(
        r"大前天|前天|昨天|今天|明天|后天|(?:上|下|这|本)(?:周|星期|个月)[一二三四五六日天]?"
    ),
)

_ORDER_ID_RES = (
    # ORD-2024-000123, INV-88812: an upper-case prefix and at least three digits.
    # Bounded by non-alphanumerics rather than \b: in 发票INV-55310 a CJK character, a word
    # character to \b, sits right before the id.
    re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)+(?![A-Za-z0-9_])"),
    # 订单#77120: a CJK character before '#' is a word character but no part of the id.
    re.compile(r"(?<![A-Za-z0-9_#])#\d{3,}\b"),
    re.compile(
        r"(?:订单(?:号|编号)?|单(?:号|编号))\s*(?:是|为)?\s*[:：]?\s*([A-Za-z0-9][A-Za-z0-9-]{3,})"
    ),
    re.compile(
        r"\border\s*(?:number|no\.?|id|#)?\s*[:#]?\s*(\d[\d-]{3,}|[A-Z0-9]+-[A-Z0-9-]+)\b",
        re.IGNORECASE,
    ),
)
_ORDER_WORDS = re.compile(r"\border\b|订单|下单|单号", re.IGNORECASE)

_RELATIVE_DAYS = {
    "yesterday": -1,
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
    "大前天": -3,
    "前天": -2,
    "昨天": -1,
    "今天": 0,
    "明天": 1,
    "后天": 2,
}
_ISO_PARTS = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_CN_PARTS = re.compile(r"^(?:(\d{4})年)?(\d{1,2})月(\d{1,2})[日号]$")


def _spans(
    patterns: tuple[re.Pattern[str], ...], text: str, label: str
) -> list[tuple[int, int, str, str]]:
    found = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            group = 1 if pattern.groups else 0
            start, end = match.span(group)
            found.append((start, end, label, match.group(group)))
    return found


def _has_enough_digits(value: str) -> bool:
    return sum(char.isdigit() for char in value) >= 3


def find_extras(text: str) -> tuple[tuple[str, str], ...]:
    """Order ids, other ids, amounts and dates in ``text``, verbatim, in text order.

    Overlapping finds keep the longest (``$3.5M`` is one amount, not ``$3.5`` and ``M``);
    an exact repeat of a ``(label, value)`` pair is kept once.
    """
    ids = [
        span
        for span in _spans(_ORDER_ID_RES, text, "id")
        if span[3].startswith("#") or _has_enough_digits(span[3])
    ]
    if _ORDER_WORDS.search(text):
        ids = [(start, end, "order_id", value) for start, end, _label, value in ids]
    candidates = ids + _spans(_AMOUNT_RES, text, "amount") + _spans(_DATE_RES, text, "date")
    # Longest first, so a shorter overlapping find loses to the one containing it.
    candidates.sort(key=lambda span: (-(span[1] - span[0]), span[0]))
    taken: list[tuple[int, int, str, str]] = []
    for span in candidates:
        if all(span[1] <= other[0] or span[0] >= other[1] for other in taken):
            taken.append(span)
    taken.sort()
    result: list[tuple[str, str]] = []
    for _start, _end, label, value in taken:
        pair = (label, value.strip())
        if pair not in result:
            result.append(pair)
    return tuple(result)


def resolve_date(value: str, observed_at: datetime) -> datetime | None:
    """The start of the day ``value`` names, in ``observed_at``'s zone; None if unclear.

    Only unambiguous forms resolve: ISO-like dates, ``3月24日`` (the observed year when
    none is written) and day-relative words (yesterday, 昨天 ...). Weekday and month
    words are kept verbatim in extras but not guessed at.
    """
    midnight = observed_at.replace(hour=0, minute=0, second=0, microsecond=0)
    offset = _RELATIVE_DAYS.get(value.casefold())
    if offset is not None:
        return midnight + timedelta(days=offset)
    parts = _ISO_PARTS.match(value)
    cn_parts = _CN_PARTS.match(value)
    try:
        if parts:
            day = date(int(parts[1]), int(parts[2]), int(parts[3]))
        elif cn_parts:
            year = int(cn_parts[1]) if cn_parts[1] else observed_at.year
            day = date(year, int(cn_parts[2]), int(cn_parts[3]))
        else:
            return None
    except ValueError:
        return None  # 2025-02-30 is kept verbatim but is not a date
    return midnight.replace(year=day.year, month=day.month, day=day.day)
