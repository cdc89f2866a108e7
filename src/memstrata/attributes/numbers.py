"""Numerals: the one reader of numbers written in words, Chinese numerals and mixed
forms, for extraction, the time expressions and the reply check.

* Counts: ``3``, ``three``, ``三``, ``十二``, ``二〇二六`` (digit by digit), and with
  ``vague`` the counts a phrase implies (``a few``, ``several``, ``几``: 3).
* Amounts: ``5,000``, ``0.8万``, ``1.2万``, ``5k``, ``3千5``, ``五千``, ``一万``,
  ``两万五`` (25,000: a digit after the last unit is a tenth of it), ``三千五百``,
  ``一百零五``, ``2 thousand``.

Units and currencies are the caller's (:mod:`memstrata.decision.claims`); this module
reads the number only. Pure functions, no model.
"""

from __future__ import annotations

import re

__all__ = [
    "AMOUNT_NUMBER",
    "EN_NUMBERS",
    "EN_VAGUE",
    "ZH_DIGITS",
    "ZH_NUMERAL",
    "ZH_VAGUE",
    "has_tail",
    "read_amount",
    "read_count",
    "zh_number",
]

ZH_DIGITS: dict[str, int] = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1_000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
ZH_NUMERAL = "[零〇一二两三四五六七八九十百千万亿]"
"""One character of a Chinese numeral (a character class)."""

EN_NUMBERS: dict[str, int] = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
}
EN_VAGUE: dict[str, int] = {"a": 1, "an": 1, "a few": 3, "several": 3}
"""Counts a phrase implies ("a week ago", "a few days ago")."""
ZH_VAGUE: dict[str, int] = {"几": 3}

_MULTIPLIERS = {
    "万": 10_000.0,
    "千": 1_000.0,
    "百": 100.0,
    "亿": 100_000_000.0,
    "k": 1_000.0,
    "thousand": 1_000.0,
    "million": 1_000_000.0,
}
_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_ZH_TAIL_DIGIT = "[一二两三四五六七八九]"
AMOUNT_NUMBER = (
    rf"(?:{_DIGITS})(?:\s?(?:万|千)(?:\d(?!\d)|{_ZH_TAIL_DIGIT})?"
    r"|\s?k(?![A-Za-z])|\s(?:thousand|million)\b)?"
    rf"|[一二两三四五六七八九十]{ZH_NUMERAL}*"
)
"""A number as an amount is written (a pattern; :func:`read_amount` reads it): digits
with an optional multiplier, or a Chinese numeral."""
_MIXED = re.compile(
    rf"^(?P<n>{_DIGITS})\s?(?P<mult>万|千|百|亿|k|thousand|million)?(?P<tail>\d|{_ZH_TAIL_DIGIT})?$",
    re.I,
)


def zh_number(text: str) -> int | None:
    """The integer a Chinese numeral writes (三十四 34, 两万五 25,000, 一百零五 105,
    二〇二六 2026), or digits; None when ``text`` is neither."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if not text or any(
        c not in ZH_DIGITS and c not in _ZH_UNITS and c not in _ZH_BIG for c in text
    ):
        return None
    if text[0] in "百千" or text[0] in _ZH_BIG:
        return None  # 千万 (by all means), 万一 (in case): words, not numbers
    if all(c in ZH_DIGITS for c in text):
        return int("".join(str(ZH_DIGITS[c]) for c in text))
    total, section, digit = 0, 0, None
    last_unit, zero_seen = 0, False
    for char in text:
        if char in ZH_DIGITS:
            if digit is not None and not zero_seen:
                return None  # 五五千: two digits in a row inside a positional numeral
            digit = ZH_DIGITS[char]
            zero_seen = char in "零〇"
            if zero_seen:
                digit = None
        elif char in _ZH_UNITS:
            unit = _ZH_UNITS[char]
            section += (1 if digit is None else digit) * unit
            digit, last_unit, zero_seen = None, unit, False
        else:
            big = _ZH_BIG[char]
            section += digit or 0
            total += (section or 1) * big
            section, digit, last_unit, zero_seen = 0, None, big, False
    if digit is not None:
        # 两万五, 三千五, 一百五: a digit right after the last unit counts a tenth of it;
        # after 零 (一百零五) or a ten (十五) it counts ones.
        follows_unit = text[-2] in _ZH_UNITS or text[-2] in _ZH_BIG
        tail = digit * (last_unit // 10) if follows_unit and last_unit >= 100 else digit
        section += tail
    return total + section


def has_tail(text: str) -> bool:
    """Whether ``text`` ends in a digit right after 万 or 千 (两万五, 3千5)."""
    return len(text) >= 2 and text[-2] in "万千" and (text[-1].isdigit() or text[-1] in ZH_DIGITS)


def read_count(text: str, *, vague: bool = False) -> int | None:
    """A count in digits, English words or Chinese numerals (``three``, ``三``,
    ``十二``); with ``vague`` also ``a``, ``a few``, ``several``, ``几``."""
    key = text.strip().casefold()
    if key.isdigit():
        return int(key)
    if key in EN_NUMBERS:
        return EN_NUMBERS[key]
    if vague and key in EN_VAGUE:
        return EN_VAGUE[key]
    if vague and key in ZH_VAGUE:
        return ZH_VAGUE[key]
    return zh_number(key)


def read_amount(text: str, *, tail: bool = True) -> float | None:
    """The value an amount's number writes: ``5,000`` 5000, ``0.8万`` 8000, ``5k``
    5000, ``3千5`` 3500, ``2 thousand`` 2000, ``八千`` 8000, ``两万五`` 25000; None
    when ``text`` is no number. Without ``tail`` a digit after the last 万 or 千 is
    not read (两万一个月 is 20,000 a month: the 一 counts the month)."""
    text = text.strip()
    if not tail and has_tail(text):
        text = text[:-1]
    mixed = _MIXED.match(text)
    if mixed:
        value = float(mixed["n"].replace(",", ""))
        mult = _MULTIPLIERS.get((mixed["mult"] or "").casefold(), 1.0)
        last = mixed["tail"]
        if last:
            if mult < 1_000.0:
                return None  # "5百3" is not written
            tail_value = int(last) if last.isdigit() else ZH_DIGITS[last]
            return value * mult + tail_value * mult / 10
        return value * mult
    number = zh_number(text)
    return None if number is None else float(number)
