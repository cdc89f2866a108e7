"""Whether a bare value fits an attribute's value type (a date for a birthday, an
amount for a budget, a place for a city). The value types are the registry's
(:mod:`memstrata.attributes`); what a value looks like is read here, with the
extractor's own date finder (:mod:`.verbatim`).

A correction that names no attribute ("不对，是6月3号。", "I meant 10,000", "no wait,
Tuesday") gives a value alone; the attribute it corrects is the one just stated whose
value type (:attr:`~memstrata.attributes.registry.Attribute.value_type`) the value
fits. :func:`shape` reads what a value looks like, :func:`fits` compares that with a
value type.
"""

from __future__ import annotations

import re
from typing import Literal

from memstrata.extract.verbatim import find_extras

__all__ = ["Shape", "fits", "shape"]

Shape = Literal["date", "amount", "number", "id", "words", "none"]

_I = re.IGNORECASE
_CN_DIGITS = "零〇一二两三四五六七八九十百千万亿"
_NUMBER = rf"(?:\d[\d,]*(?:\.\d+)?|[{_CN_DIGITS}]+(?:点[{_CN_DIGITS}]+)?)"
_CURRENCY_BEFORE = r"(?:[¥$€£￥]|RMB|USD|CNY)"
_UNIT_AFTER = (
    r"(?:k|K|w|W|万元?|千元?|百元?|元|块钱?|毛|yuan|rmb|RMB|bucks?|dollars?|usd|USD|euros?|"
    r"pounds?|美元|欧元|英镑|刀)"
)
_AMOUNT = re.compile(
    rf"^(?:{_CURRENCY_BEFORE}\s*{_NUMBER}\s*{_UNIT_AFTER}?|{_NUMBER}\s*{_UNIT_AFTER})$", _I
)
_BARE_NUMBER = re.compile(rf"^{_NUMBER}(?:\s*(?:岁|years?\s+old|个|人|只))?$", _I)
_ID = re.compile(r"^(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9-]{4,}$", _I)
_MAX_WORDS_CHARS = 60
# What a reply says that is no value of anything ("No, thanks.", "Actually it's fine.").
_NOT_VALUES = frozenset(
    [
        "thanks",
        "thank you",
        "ok",
        "okay",
        "fine",
        "good",
        "great",
        "cool",
        "nice",
        "sure",
        "right",
        "wrong",
        "true",
        "false",
        "correct",
        "nothing",
        "none",
        "it",
        "that",
        "this",
        "same",
        "yes",
        "no",
        "never mind",
        "nevermind",
        "whatever",
        "all good",
        "my bad",
        "sorry",
        "ok then",
        "not sure",
        "idk",
        "谢谢",
        "好",
        "好的",
        "没事",
        "没关系",
        "算了",
        "对",
        "是的",
        "不是",
        "没有",
        "一样",
        "随便",
        "不知道",
        "错了",
        "对的",
        "就这样",
    ]
)
_PARTICLES = re.compile(r"[了吧呢吗啊呀哦嗯么嘛]|谢|没事|算了")
_NAMED_KINDS = frozenset({"place", "person", "org"})


def shape(value: str) -> Shape:
    """What ``value`` looks like: a date, an amount (a number with a currency or a
    unit: 10,000 is an amount too), a bare number, an id, words, or nothing."""
    text = value.strip()
    if not text:
        return "none"
    dates = [v for label, v in find_extras(text) if label == "date"]
    if dates and sum(len(d) for d in dates) >= len(text.replace(" ", "")) * 0.6:
        return "date"
    if _AMOUNT.match(text):
        return "amount"
    if _BARE_NUMBER.match(text):
        # "10,000" (thousands grouped) reads as money; "32" may be an age or a count.
        return "amount" if "," in text or len(text.strip(_CN_DIGITS)) == 0 else "number"
    if _ID.match(text):
        return "id"
    if len(text) > _MAX_WORDS_CHARS:
        return "none"
    return "words"


# Which shapes a value type takes. A type missing here takes words.
_TAKES: dict[str, frozenset[str]] = {
    "date": frozenset({"date"}),
    "amount": frozenset({"amount", "number"}),
    "count": frozenset({"number"}),
    "id": frozenset({"id"}),
    "address": frozenset({"words", "id"}),
}


def fits(value_type: str, value: str) -> bool:
    """Whether a bare ``value`` can be a value of ``value_type`` (the registry's)."""
    found = shape(value)
    if found == "none":
        return False
    taken = _TAKES.get(value_type, frozenset({"words"}))
    if found not in taken:
        return False
    text = value.strip()
    if text.casefold().strip(".!。！ ") in _NOT_VALUES:
        return False
    if found == "words" and not text.isascii():
        # Chinese: a noun phrase, not a reply ("好吧", "没事了").
        return _PARTICLES.search(text) is None
    if found == "words" and (len(text.split()) > 6 or text.endswith("?")):
        return False
    if value_type in _NAMED_KINDS:
        # A place, a person, a company is named: its words are capitalized.
        words = [w for w in text.split() if w.casefold() not in ("de", "of", "van", "von", "la")]
        if not words or any(not w[0].isupper() for w in words if w[0].isalpha()):
            return False
    if value_type in ("place", "person") and any(ch.isdigit() for ch in text):
        return False
    return not (value_type == "person" and len(text.split()) > 4)
