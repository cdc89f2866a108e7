"""Patterns for the attributes only everyday speech states: the reply ``language``
("Please reply in English", 用中文回答, 跟我说英语就好) and the ``schedule`` ("I work the
night shift", 我上夜班, 我只有周末有空).

Everyday phrasings of the other attributes live with their plain forms (one module per
group of attributes, see :mod:`memstrata.extract.patterns`), so one place decides each.
"""

from __future__ import annotations

from memstrata.extract.lexicon import LANGUAGES_CN, LANGUAGES_EN
from memstrata.extract.patterns import (
    CN_ADV,
    CN_ME,
    FactPattern,
    cn,
    en,
)

# --- language and schedule ---------------------------------------------------------------
_REPLY_IN_EN = en(
    r"\b(?:(?:reply|respond|answer|talk|speak|write|chat|text)\s+(?:to\s+me\s+|back\s+)?|"
    r"(?:keep|make|write|give\s+me|send)\s+(?:your\s+|the\s+|all\s+)?(?:replies|answers|"
    r"responses|messages)\s+|(?:replies|answers|responses)\s+(?:should\s+be\s+)?)"
    r"(?:only\s+|all\s+)?in\s+(?P<v>",
    LANGUAGES_EN,
    r")\b",
    r"|\bI\s+(?:prefer|'d\s+prefer|would\s+prefer|'d\s+rather|like)\s+(?:to\s+(?:chat|talk|"
    r"speak|write)\s+)?in\s+(?P<v2>",
    LANGUAGES_EN,
    r")\b",
)
_REPLY_IN_CN = cn(
    r"(?:用|说)(?P<v>",
    LANGUAGES_CN,
    r")(?:来)?(?:跟我|和我|给我)?(?:回答|回复|答复|聊天?|交流|沟通|说|讲|写)",
    r"|(?:跟|和)我(?:说|讲|聊)(?P<v2>",
    LANGUAGES_CN,
    r")(?:就好|就行|吧|就可以)",
    # The reply named first, then its language, which may be English (回复用中文就好,
    # reply我的时候用English吧).
    r"|(?:回复|回答|答复|(?i:reply|answer))(?:我)?(?:的时候)?(?:都|就|请|一律|全部|最好)?(?:用|说|讲)"
    r"(?P<v3>",
    LANGUAGES_CN,
    "|(?i:",
    LANGUAGES_EN,
    r"))",
)
_SHIFT_EN = en(
    r"\bI(?:'m|\s+am)?\s+(?:work|working|on|do|doing|pull)\s+(?:the\s+)?(?P<v>(?:night|day|early|"
    r"late|morning|evening|graveyard|overnight|weekend)\s+shifts?)\b"
)
_FREE_ON_EN = en(
    r"\bI(?:'m|\s+am)\s+(?:only\s+|usually\s+|mostly\s+|really\s+|generally\s+){0,3}"
    r"(?:free|available)\s+(?:on|during|in\s+the)\s+(?P<v>weekends|weekdays|evenings|mornings|"
    r"afternoons|(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?)\b"
)
# A time of the week or day, as schedules are said: days or a range of days, a part of
# the day, a clock range ("Tuesday through Saturday, 10 to 6", "weekday evenings after 7",
# 周末晚上, 每天早上七点到八点, weekdays 9点到6点).
_DAY_EN = (
    r"(?:weekdays?|weekends?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|mon|tue|wed|thu|fri|"
    r"sat|sun)"
)
_PART_EN = r"(?:mornings?|afternoons?|evenings?|nights?|lunchtimes?)"
_CLOCK_EN = r"\d{1,2}(?::\d{2})?(?:\s*(?:am|pm|a\.m\.|p\.m\.))?"
_TIME_EN = (
    rf"(?:(?:every\s+|on\s+)?{_DAY_EN}(?:\s*(?:through|thru|to|-|–|and)\s*{_DAY_EN})?"
    rf"(?:\s+{_PART_EN})?|(?:every\s+|in\s+the\s+)?{_PART_EN})"
    rf"(?:,?\s+(?:(?:after|before|from|until|till)\s+)?{_CLOCK_EN}"
    rf"(?:\s*(?:to|-|–|until|till)\s*{_CLOCK_EN})?)?"
)
_SCHEDULE_EN = en(
    r"\bI(?:'m|\s+am)?\s+(?:only\s+|usually\s+|mostly\s+|generally\s+|normally\s+){0,2}"
    r"(?:free|available|off|around|work|working|have\s+(?:free\s+)?time|(?:have|get)\s+time\s+off)"
    r"\s+(?:on\s+|in\s+the\s+)?(?P<v>",
    _TIME_EN,
    r")(?![\w:])",
)
_CN_NUM = r"[零一二两三四五六七八九十\d]{1,3}"
_CN_CLOCK = rf"{_CN_NUM}点(?:半|{_CN_NUM}分?)?"
_TIME_CN = (
    r"(?:(?:每天|每周[一二三四五六日天]?|每个?周末|周[一二三四五六日天](?:到周[一二三四五六日天])?|"
    r"工作日|周末|平时|(?i:weekdays?|weekends?))\s*)?"
    r"(?:早上|上午|中午|下午|傍晚|晚上|夜里|半夜)?"
    rf"(?:{_CN_CLOCK}(?:到|至|-){_CN_CLOCK}|{_CN_CLOCK}(?:以后|之后|以前|之前)?)?"
)
_SCHEDULE_CN = cn(
    r"(?:^|(?<=[，,]))?我?(?:一般|通常|平时|只有|只在|基本上?|都)*(?P<v>",
    _TIME_CN,
    r")(?<=[\u4e00-\u9fff\w])(?:才|都|会|要)?(?:有空|有时间|方便|空闲|上班|工作|值班|跑步|健身|锻炼|上课)",
)
_SHIFT_CN = cn(CN_ME, CN_ADV, r"(?:上|值|倒)(?P<v>夜班|白班|早班|晚班|中班|三班)")
_FREE_CN = cn(
    CN_ME,
    r"(?:只有|只在|一般|通常|平时|基本)?(?P<v>周末|工作日|晚上|下午|上午|早上|",
    r"周[一二三四五六日天](?:和周[一二三四五六日天])?)(?:才)?(?:有空|有时间|方便|空闲)",
)


EVERYDAY_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(_REPLY_IN_EN, "language", 0.85, 0.6, "language"),
    FactPattern(_REPLY_IN_CN, "language", 0.85, 0.6, "language"),
    FactPattern(_SHIFT_EN, "schedule", 0.8, 0.5, "object"),
    FactPattern(_FREE_ON_EN, "schedule", 0.8, 0.5, "object"),
    FactPattern(_SCHEDULE_EN, "schedule", 0.8, 0.5, "object"),
    FactPattern(_SCHEDULE_CN, "schedule", 0.8, 0.5, "cn_object"),
    FactPattern(_SHIFT_CN, "schedule", 0.8, 0.5, "cn_object"),
    FactPattern(_FREE_CN, "schedule", 0.8, 0.5, "cn_object"),
)
"""Appended to the rule extractor's patterns; an exact duplicate of another pattern's
candidate is dropped by the extractor."""
