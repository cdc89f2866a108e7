"""Value checks of the rule-based extractor: is a captured phrase a usable value?

A pattern captures the words where a value should be; :func:`check_value` trims them
("Chengdu originally" -> "Chengdu", 吃辣的 -> 吃辣), rejects what only looks like one
("I live in fear", "I have a cat" as a health note, "I quit my job" as a habit) and
may name a different attribute (我在深圳工作 is a city, 我在腾讯工作 an employer).
Pure functions over strings; the word lists are in :mod:`memstrata.extract.lexicon`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from memstrata.attributes.numbers import zh_number
from memstrata.attributes.values import diet_class, food_object
from memstrata.attributes.words import CN_PLACES
from memstrata.extract.lexicon import (
    BODY_PART_STATES,
    BODY_PARTS,
    CN_CONDITION_SUFFIXES,
    CN_FOOD_SUFFIXES,
    CN_JOB_SUFFIXES,
    CN_NOT_JOBS,
    CN_NOT_NAMES,
    CN_NOT_WORKPLACES,
    CN_ORG_SUFFIXES,
    CN_ORGS,
    CN_PLACE_SUFFIXES,
    CN_SURNAMES,
    CONDITION_SUFFIXES,
    CONDITIONS,
    FOODS,
    JOB_SUFFIXES,
    JOB_WORDS,
    LANGUAGES_CN,
    LANGUAGES_EN,
    NOT_JOBS,
    NOT_NAMES,
    NUMBER_WORDS,
    words,
)
from memstrata.extract.patterns import INTERROGATIVE_VALUE

MAX_FACT_VALUE_CHARS = 120

Checked = tuple[str, float, str | None]
"""A cleaned value, a confidence factor, and the attribute to use instead (or None)."""

_FILLER_TAIL = re.compile(
    r"\s+(?:now|anymore|any\s+more|these\s+days|nowadays|at\s+the\s+moment|right\s+now|"
    r"for\s+now|too|as\s+well|though|actually|a\s+lot|very\s+much|so\s+much|more|either|"
    r"again|currently|lately|already|instead|a\s+bit|btw|by\s+the\s+way|originally|at\s+all|"
    r"in\s+general|sometimes|often|only|and|or|about|around|roughly|almost|nearly)$",
    re.IGNORECASE,
)
_PLACE_CUT = re.compile(
    r"\s+(?:with|for|since|from|near|because|last|next|this|in|on|at|after|before|about|over|"
    r"during|earlier|around|back|by|these|those|most|all|until|till|my|our|ever|"
    r"recently|yesterday|today|ago|two|three|a|an|as)\b.*$",
    re.IGNORECASE,
)
PREFERENCE_CUT = re.compile(r"\s+(?:over|rather\s+than|instead\s+of|than)\s+.*$", re.I)
"""Cuts "tea over coffee" to the preferred "tea"."""
# When and where something is liked is no part of what is liked ("window seats on flights").
_PREFERENCE_ADJUNCT = re.compile(
    r"\s+(?:without\b.*|on\s+(?:the\s+)?(?:weekends?|weekdays?|flights?|planes?|trains?|"
    r"holidays?|vacations?|trips?|sundays?|saturdays?)\b.*|in\s+the\s+(?:morning|evening|"
    r"afternoon|summer|winter|spring|fall)s?\b.*|at\s+(?:night|home|work)\b.*|every\s+(?:day|"
    r"morning|evening|night|week|weekend)\b.*)$",
    re.IGNORECASE,
)
_JOB_CUT = re.compile(r"\s+(?:at|for|in|with|from|on|by|of)\b.*$", re.IGNORECASE)
_CN_PARTICLES = re.compile(r"(?:了|啦|呀|啊|吧|呢|哦|喔)+$")
_REFERENCE_START = re.compile(
    r"^(?:it|that|this|these|those|them|you|your|him|her|me|us|one|so|very|too|to\s+say|"
    r"when|whenever|how|why|if|something|anything|everything|nothing|what)\b",
    re.IGNORECASE,
)
# "getting into it", "doing that": the thing is named elsewhere
_REFERENCE_END = re.compile(r"\s(?:it|that|this|them|those|these)$", re.IGNORECASE)
_DETERMINER_START = re.compile(r"^(?:a|an|my|our|his|her|their|some|this|that|your)\b", re.I)
_ARTICLE = re.compile(r"^(?:a|an|the|one)\s+", re.IGNORECASE)
_CN_REFERENCES = frozenset({"你", "你们", "它", "它们", "这个", "那个", "这样", "那样", "他", "她"})
_CN_NOT_PLACES = words(
    "一起|这里|那里|这边|那边|这儿|那儿|附近|家|家里|楼上|楼下|隔壁|一块|外面|里面"
)
_CN_GENERIC_ORG = re.compile(r"^(?:一家|一个|某|这家|那家|一所|一间)")
_FUNCTION_WORDS = words("to|it|so|too|that|this|them|one|do|be|you|me|a|an|the|and|or")
_NOT_ROLES = words("team|group|unit|family|pair|couple|whole|one")
_ORG_CALLED = re.compile(r"^(?:an?|the)\s+.+?\s+(?:called|named)\s+(.+)$", re.IGNORECASE)
_ORG_TAIL = re.compile(
    r"\s+(?:(?:for|since)\s+(?:\d|a|an|over|about|almost|nearly|two|three|four|five|six|"
    r"seven|eight|nine|ten|many|several|years?|months?|the\s+(?:last|past))|last|this|next|"
    r"until|as\s+(?:an?|the)|yesterday|today|recently|a\s+(?:week|month|year)\s+ago|"
    r"in\s+(?:\d{4}|their|the|its|our|a|an|my|january|february|march|april|may|june|july|"
    r"august|september|october|november|december|spring|summer|fall|autumn|winter))\b.*$",
    re.IGNORECASE,
)
# "the city council" names an employer without capitals; "the shop" does not.
_ORG_NOUNS = words(
    "council|bank|hospital|university|college|school|company|firm|agency|ministry|department|"
    "government|library|museum|police|army|navy|court|clinic|newspaper|institute|foundation|"
    "charity|embassy|consulate|post office|fire department|city|state|county|district"
)
_NOT_ORGS = words("home|myself|himself|herself|themselves|a living|free|fun|money|nothing|it|you")
_CONDITION_TAIL = re.compile(
    r"\s+(?:as\s+an?\s+\w+|when\b.*|in\s+\d{4}|last\s+\w+|\w+\s+ago|since\b.*|for\s+years|"
    r"every\s+\w+|and\s+.*)$",
    re.IGNORECASE,
)
_LENIENT_HOW = re.compile(r"suffer|struggle|live\s+with|diagnosed", re.IGNORECASE)
_AVOID_TAIL = re.compile(
    r"\s+(?:for|because|since|as|due\s+to|anymore|any\s+more|at\s+all|ever|again|now|"
    r"these\s+days|nowadays|either|after\b|before\b|unless)\b.*$",
    re.IGNORECASE,
)
_NOT_QUIT = re.compile(
    r"^(?:my|the|a|an|his|her|their|our|your|this|that|it|by|at|in|on|to|for|with|from|off|"
    r"after|being|going|working|living|talking|trying|there|here|doing|using|when|and)\b",
    re.IGNORECASE,
)
_EN_LIST_SPLIT = re.compile(
    r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|as\s+well\s+as|plus|&)\s+", re.I
)
_CN_LIST_SPLIT = re.compile(r"[、,，]|以及|和|及|跟|与|还有")
_QUANTITY_START = re.compile(r"^(?:few|couple|lot|lots|bunch|pair|bit|piece|pound)\b", re.I)
_CN_LEAD = re.compile(r"^(?:一个|一只|一条|一|个|只|条)")
_MARITAL = {
    **{word: word for word in ("married", "single", "divorced", "engaged", "widowed", "separated")},
    **dict.fromkeys(("已婚", "结婚了", "结过婚", "结过婚了"), "已婚"),
    **dict.fromkeys(("离婚", "离婚了", "离异"), "离婚"),
    **dict.fromkeys(("订婚", "订婚了"), "订婚"),
    "单身": "单身",
    "结婚": "已婚",
    "丧偶": "丧偶",
}


# How long ago or for how long, and why or for whom it is said, are no part of a value
# ("Stripe two weeks ago", "alcohol about six months", "X now if you need it for forms").
_SPAN = (
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+|a\s+few|"
    r"a\s+couple\s+of|several|many)\s+(?:days?|weeks?|months?|years?|decades?)"
)
_ADJUNCT_TAIL = re.compile(
    rf"\s+(?:(?:for\s+|since\s+)?(?:about|around|roughly|almost|nearly|over|some)\s+{_SPAN}"
    rf"|(?:for\s+)?{_SPAN}\s+(?:ago|now|already)|(?:for|in)\s+the\s+(?:last|past)\s+{_SPAN}"
    r"|(?:if|in\s+case|so\s+that)\s+(?:you|I|it|we|anyone)\b)\b.*$",
    re.IGNORECASE,
)


def strip_tail(value: str) -> str:
    """``value`` without quotes and trailing fillers ("coffee anymore" -> "coffee")."""
    value = value.strip().strip("\"'")
    value = _ADJUNCT_TAIL.sub("", value).strip() or value
    while True:
        trimmed = _FILLER_TAIL.sub("", value).strip()
        if trimmed == value:
            return value
        value = trimmed


def _words(value: str) -> int:
    return len(value.split())


def cn_number(text: str) -> int | None:
    """``34`` for 三十四 (or "34"); None when ``text`` is no number
    (:func:`memstrata.attributes.numbers.zh_number`)."""
    return zh_number(text)


def split_items(value: str) -> list[str]:
    """The items of a list value ("peanuts, shellfish and eggs", 花生和虾)."""
    splitter = _EN_LIST_SPLIT if value.isascii() else _CN_LIST_SPLIT
    items = [item.strip() for item in splitter.split(value)]
    if any(not item for item in items):
        return [value]  # 喜欢和朋友聊天: a leading 和 joins, it does not list
    return items


def _cn_clean(value: str) -> str:
    value = _CN_PARTICLES.sub("", value)
    # 吃辣的 / 猫的: a trailing 的 closes the phrase, it is no part of the thing
    return value[:-1] if len(value) > 1 and value.endswith("的") else value


def _cn_object(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _cn_clean(value)
    if not value or value in _CN_REFERENCES or value.startswith("的") or len(value) > 24:
        return None
    return value, 1.0, None


def _cn_name(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _CN_PARTICLES.sub("", value)
    if (
        not value
        or len(value) > 12
        or value in CN_NOT_NAMES
        or value[0] in "去来做帮起回吃别给到在把说"
    ):
        return None
    return value, 1.0, None


_CN_DURATION_TAIL = re.compile(
    r"(?:快|已经|有|都|差不多|将近|好)?(?:[一二两三四五六七八九十几半\d]+|好几)(?:个)?(?:多)?"
    r"(?:年|月|周|天|星期|礼拜)(?:多)?(?:了)?$"
)


def _cn_place(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    # 搬回老家西安: the city is 西安; 搬到深圳快一个月了: 深圳
    value = _CN_DURATION_TAIL.sub("", value) or value
    checked = _cn_object(value.removeprefix("老家") if len(value) > 3 else value, _groups)
    if checked is None or checked[0] in _CN_NOT_PLACES or checked[0] in CN_NOT_WORKPLACES:
        return None
    if looks_like_address(checked[0]):
        return None  # 我住在浦东新区世纪大道100号: an address (its own pattern), no city
    return checked


def _cn_known_place(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    checked = _cn_place(value, groups)
    return checked if checked is not None and _is_cn_place(checked[0]) else None


_ADDRESS_WORDS_EN = re.compile(
    r"\b(?:street|st|avenue|ave|road|rd|lane|ln|drive|dr|court|ct|boulevard|blvd|way|place|pl|"
    r"square|sq|terrace|highway|hwy|suite|apt|apartment|unit|floor|room|parkway|pkwy|close|"
    r"crescent|row|plaza|building|tower)\b\.?",
    re.IGNORECASE,
)
_ADDRESS_WORDS_CN = re.compile(r"路|街|道|号|栋|幢|楼|室|小区|弄|巷|村|单元|大厦|花园|苑|座|园区")
_ADDRESS_TAIL = re.compile(
    r"\s*,?\s*(?:not\s+(?:my|the|to)\b.*|instead|please|from\s+now\s+on|thanks?|thank\s+you|"
    r"going\s+forward)\s*$|(?:吧|哦|啊|呀|就行|就好|就可以|谢谢)+$",
    re.IGNORECASE,
)


def looks_like_address(value: str) -> bool:
    """Whether ``value`` reads as a street address: a number and a street word
    ("42 Elm Street", "Room 1203, 88 Century Avenue"), or, in Chinese, a road,
    building or house number word (中关村大街1号, 科技园南区5栋)."""
    if not any(char.isdigit() for char in value):
        return False
    if _ADDRESS_WORDS_CN.search(value):
        return True
    return _ADDRESS_WORDS_EN.search(value) is not None


def _is_cn_org(value: str) -> bool:
    return value in CN_ORGS or value.endswith(CN_ORG_SUFFIXES)


def _is_cn_place(value: str) -> bool:
    return value in CN_PLACES or (value.endswith(CN_PLACE_SUFFIXES) and len(value) <= 6)


def _cn_workplace(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _cn_clean(value)
    if not value or len(value) > 20 or value in CN_NOT_WORKPLACES or _CN_GENERIC_ORG.match(value):
        return None
    if not _is_cn_org(value) and _is_cn_place(value):
        return value, 1.0, "city"  # 我在深圳工作: where, not for whom
    return value, 1.0, None


def _cn_org(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    checked = _cn_workplace(value, groups)
    return None if checked is None or checked[2] == "city" else checked


def _cn_known_org(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    checked = _cn_org(value, groups)
    return checked if checked is not None and _is_cn_org(checked[0]) else None


_ADDRESS_LEAD = re.compile(
    r"^(?:(?:my|our|the)\s+(?:office|work|workplace|home|house|place|parents'?|flat|apartment)"
    r"\s+(?:at|in|on)\s+|[^：:\d]{1,8}[：:]\s*)",
    re.IGNORECASE,
)


def _address(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _ADDRESS_TAIL.sub("", value.strip()).strip().strip(",，:：").strip()
    # "my office at 100 Main St", 公司的：南京市...: the place named, then its address
    value = _ADDRESS_LEAD.sub("", value)
    if not 4 <= len(value) <= MAX_FACT_VALUE_CHARS or not looks_like_address(value):
        return None
    return value, 1.0, None


def _cn_address(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    return _address(value, groups)


_LANGUAGES = words(f"{LANGUAGES_EN.lower()}|{LANGUAGES_CN}")


def _language(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = value.strip()
    return (value, 1.0, None) if value.casefold() in _LANGUAGES else None


# Chinese jobs named without a title ending (我是做财务的, 在外企做销售, 当运营).
CN_JOB_NOUNS = words(
    "财务|销售|运营|产品|设计|开发|测试|市场|客服|人事|行政|会计|出纳|审计|法务|采购|物流|"
    "翻译|编程|前端|后端|算法|数据分析|HR|PM|IT|UI|UX|自由职业者|个体户|牙医|兽医|中医|西医|"
    "医生|护士|外卖骑手|快递员|保安|厨师|公务员|研发|咨询|投资|金融|教育|培训|主持"
)


def _cn_job_noun(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    cleaned = _cn_clean(value)
    if cleaned in CN_JOB_NOUNS or cleaned.upper() in CN_JOB_NOUNS:
        return cleaned, 1.0, None
    return _cn_job(value, groups)


def _cn_job(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _cn_clean(value).rsplit("的", 1)[-1]
    if (
        not value
        or len(value) > 12
        or any(char.isdigit() for char in value)
        or value in CN_NOT_JOBS
        or not value.endswith(CN_JOB_SUFFIXES)
    ):
        return None
    return value, 1.0, None


def _cn_hometown(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    checked = _cn_place(value, groups)
    if checked is None:
        return None
    # 我是四川人 names a place; 我是好人 / 我是外地人 do not
    if groups.get("v") is not None and not _is_cn_place(checked[0]):
        return None
    return checked


_CN_TRIGGER = re.compile(r"^一(?:吃|喝|碰|闻到?|接触|用)(.+?)就$")
# Figurative "allergies": 我对上班过敏 is a joke, no allergy.
_CN_NOT_ALLERGENS = words("上班|加班|开会|学习|工作|早起|考试|周一|老板|数学|运动|社交")
_NOT_ALLERGENS = words(
    "work|working|mondays|monday|meetings|homework|exercise|mornings|people|math|school|"
    "deadlines|commitment|effort|chores|overtime"
)


def _cn_allergen(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _cn_clean(value)
    trigger = _CN_TRIGGER.match(value)
    if trigger:
        value = trigger.group(1)  # 我一吃芒果就过敏: 芒果
    if value in _CN_NOT_ALLERGENS:
        return None
    if not value or len(value) > 10 or INTERROGATIVE_VALUE.search(value):
        return None
    return value, 1.0, None


def _cn_condition(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    value = _cn_clean(value)
    if not value or len(value) > 10 or value[0] in "点些":
        return None
    if (groups.get("how") or "有") == "有" and not value.endswith(CN_CONDITION_SUFFIXES):
        return None  # 我有两个孩子 is no health note
    return value, 1.0, None


def _cn_spouse(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    checked = _cn_name(value, groups)
    if checked is None:
        return None
    # 我妻子是李华 names her; 我妻子是老师 says what she does
    if groups.get("how") == "是" and not (
        2 <= len(checked[0]) <= 3 and checked[0][0] in CN_SURNAMES
    ):
        return None
    return checked


def _name(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    first = value[0]
    if _words(value) > 4 or value.casefold() in NOT_NAMES:
        return None
    if value.split()[0].casefold() in NOT_NAMES:
        return None
    return (value, 1.0, None) if not first.isascii() or first.isupper() else None


def _place(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _PLACE_CUT.sub("", value).strip()
    if not value or _DETERMINER_START.match(value) or _words(value) > 5:
        return None
    if value[0].isdigit() or looks_like_address(value):
        return None  # "I live in 42 Elm Street": an address, not a city
    # A lowercase "place" is as often a state of mind ("I live in fear").
    return value, (1.0 if not value[0].isascii() or value[0].isupper() else 0.6), None


def _job(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _JOB_CUT.sub("", value).strip()
    if not value or _words(value) > 5 or _REFERENCE_START.match(value):
        return None
    if value.casefold() in _NOT_ROLES:
        return None  # "work as a team"
    return value, 1.0, None


def _job_noun(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    checked = _job(value, groups)
    if checked is None:
        return None
    value = checked[0]
    last = value.split()[-1].casefold()
    looks_like_job = (
        value.casefold() in JOB_WORDS
        or last in JOB_WORDS
        or (last.endswith(JOB_SUFFIXES) and last not in NOT_JOBS)
    )
    if not looks_like_job or value.split()[0].casefold() in ("bit", "little", "lot"):
        return None
    return checked


def _org(value: str, _groups: Mapping[str, str | None], *, proper: bool = False) -> Checked | None:
    called = _ORG_CALLED.match(value)
    if called:
        value = called.group(1)
    value = _ORG_TAIL.sub("", value).strip()
    if value.casefold().startswith("the "):
        value = value[4:].strip()
        if not value:
            return None
        if not value[:1].isupper() and (proper or value.casefold().split()[-1] not in _ORG_NOUNS):
            return None  # "I joined the team", "I work on cars at the shop"
    elif not value[:1].isupper():
        return None  # "I work for a living", "I work at home"
    if not value or value.casefold() in _NOT_ORGS or _words(value) > 6:
        return None
    return value, 1.0, None


def _org_proper(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    return _org(value, groups, proper=True)


def _age(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    number = cn_number(value.strip())
    return (str(number), 1.0, None) if number is not None and 1 <= number <= 120 else None


def _count(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    text = value.strip().casefold()
    number = NUMBER_WORDS.get(text) if not text.isdigit() else int(text)
    return (str(number), 1.0, None) if number is not None and 1 <= number <= 20 else None


_CN_DATE = re.compile(r"[一二三四五六七八九十]{1,3}月(?:[一二三四五六七八九十]{1,3}[日号])?")
_DATE_LEAD = re.compile(r"^(?:on|is)\s+", re.IGNORECASE)


def _date(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _DATE_LEAD.sub("", _cn_clean(value.strip()))
    dated = any(char.isdigit() for char in value) or _CN_DATE.fullmatch(value) is not None
    return (value, 1.0, None) if dated else None


def _born(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    dated = _date(value, groups)
    if dated is not None:
        return dated
    placed = _place(value, groups)
    return None if placed is None else (placed[0], placed[1], "hometown")


def _object(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    if _REFERENCE_START.match(value) or _REFERENCE_END.search(value) or _words(value) > 8:
        return None
    if value.casefold() in _FUNCTION_WORDS:
        return None  # "I love to."
    return value, 1.0, None


_PREFERENCE_LEAD = re.compile(
    r"^(?:(?:have|get)\s+(?!to\b)|(?:go\s+with|take|pick|choose|use)\s+(?=(?:something|anything)\s))"
    r"|^(?:something|anything)\s+(?=[a-z]+$)",
    re.IGNORECASE,
)


def _preference(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    value = _PREFERENCE_ADJUNCT.sub("", value).strip()
    if value.casefold().startswith("to "):
        value = value[3:].strip()  # "I love to cook": what is loved is cooking
    # "I'd rather have something quiet": what is preferred is the quality, not the having.
    for _ in range(2):  # "have something quiet": the verb, then the "something"
        value = _PREFERENCE_LEAD.sub("", value).strip() or value
    return _object(value, groups) if value else None


_ALLERGY_ADJECTIVES = words(
    "pretty|really|very|quite|super|bad|severe|serious|terrible|awful|nasty|mild|slight|strong|"
    "major|minor|life-threatening|deadly|real"
)


def _allergen(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    value = _ARTICLE.sub("", value).strip()
    if not value or _words(value) > 4:
        return None
    lowered = value.casefold()
    if lowered in _NOT_ALLERGENS or all(w in _ALLERGY_ADJECTIVES for w in lowered.split()):
        return None  # "a pretty bad allergy to X" names X, not "pretty bad"
    return _object(value, groups)


def _condition(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    value = _CONDITION_TAIL.sub("", _ARTICLE.sub("", value)).strip()
    if not value or _words(value) > 5 or _REFERENCE_START.match(value):
        return None
    if _LENIENT_HOW.search(groups.get("how") or ""):
        return value, 1.0, None
    lowered = value.casefold()
    parts = lowered.split()
    medical = (
        lowered in CONDITIONS
        or parts[-1].endswith(CONDITION_SUFFIXES)
        or (len(parts) == 2 and parts[0] in BODY_PART_STATES and parts[1] in BODY_PARTS)
    )
    return (value, 1.0, None) if medical else None  # "I have a cat" is no health note


def _diet(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = value.strip()
    return (value, 1.0, None) if value and _words(value) <= 3 else None


def _avoid(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = strip_tail(_AVOID_TAIL.sub("", value))
    return (value, 1.0, None) if value and _words(value) <= 6 else None


def _quit(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    # "I quit my job", "I stopped by the shop", "I stopped working there": no habit
    if _NOT_QUIT.match(value) or _words(value) > 4:
        return None
    return _object(value, groups)


def _marital(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    canonical = _MARITAL.get(value.strip().casefold())
    return (canonical, 1.0, None) if canonical else None


def _kin(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _CN_LEAD.sub("", _ARTICLE.sub("", value.strip())).strip()
    if not value or _QUANTITY_START.match(value):
        return None  # "we got a few fish" caught them
    return value, 1.0, None


def _amount(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = value.strip()
    return (value, 1.0, None) if value else None


_MONEY = re.compile(
    r"^(?:[$¥￥€£]\s*)?(?:\d[\d,.]*|[零一二两三四五六七八九十百千万]+)(?:\s*(?:万|千|百|k|K|w|W))?"
    r"[一二三四五六七八九]?\s*(?:块钱?|元|美元|刀|欧元|英镑|港币|日元|dollars?|bucks|usd|USD|rmb|RMB|"
    r"yuan|euros?|pounds?|quid)?$"
)
_MONEY_TAIL = re.compile(r"(?:左右|以内|以下|上下|之内|吧|就行|就好|了)+$|\s+(?:max|tops|or\s+so)$")


def _money(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    """An amount as written: digits or Chinese numerals, a unit (一万元, $5,000, 8k)."""
    value = _MONEY_TAIL.sub("", value.strip()).strip().rstrip(".,")
    if not value or not _MONEY.match(value) or value in ("十", "百", "千", "万"):
        return None
    return value, 1.0, None


def _diet_word(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    value = _cn_clean(value.strip())
    return (value, 1.0, None) if diet_class(value) is not None else None


def is_food(value: str) -> bool:
    """Whether ``value`` names a food or drink by its kind (dairy, 鸡蛋, 海鲜)."""
    text = _ARTICLE.sub("", food_object(value).strip()).casefold()
    if not text:
        return False
    if text.isascii():
        return text in FOODS or text.split()[-1] in FOODS
    return len(text) <= 8 and text.endswith(CN_FOOD_SUFFIXES)


def _food(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    """A food the user avoids, as the food (not "eat pork": pork)."""
    value = strip_tail(_cn_clean(value.strip()))
    obj = _ARTICLE.sub("", food_object(value)).strip()
    return (obj, 1.0, None) if obj and is_food(obj) else None


_CN_REGION = re.compile(r"省|市|区|县|镇|乡|街道|路|街|村|小区|号|栋|弄|巷|大厦|花园|苑")


def _cn_region_address(value: str, groups: Mapping[str, str | None]) -> Checked | None:
    """A Chinese address, a street one or down to the district (北京市朝阳区望京): a
    value after an address cue or 我家住在 may stop at the district."""
    street = _address(value, groups)
    if street is not None:
        return street
    value = _ADDRESS_TAIL.sub("", _cn_clean(value.strip())).strip("，,:： ")
    if not 4 <= len(value) <= 60 or value.isascii() or len(_CN_REGION.findall(value)) < 2:
        return None
    return value, 1.0, None


_TAUGHT_CUT = re.compile(
    r"\s+(?:on|at|in|for|with|every|online|part-time|full-time|twice|once|three|two)\b.*$", re.I
)


def _taught(value: str, _groups: Mapping[str, str | None]) -> Checked | None:
    """What a teacher teaches, as the job ("I teach chemistry" -> chemistry teacher)."""
    value = _cn_clean(value.strip())
    if value.isascii():
        value = _TAUGHT_CUT.sub("", _ARTICLE.sub("", value)).strip()
        if not value or _words(value) > 3 or _REFERENCE_START.match(value):
            return None
        if _DETERMINER_START.match(value) or re.search(
            r"\b(?:to|how|my|them)\b|^(?:at|in|for|on|with|from|part|full)\b", value, re.I
        ):
            return None  # "I teach my kids to swim"
        return f"{value} teacher", 1.0, None
    if value in ("书", "学", "课"):
        return "老师", 1.0, None  # 教书: a teacher of no subject named
    if not 2 <= len(value) <= 6 or value in _CN_REFERENCES or value[0] in "你我他她":
        return None
    return f"{value}老师", 1.0, None


_CHECKS: dict[str, Callable[[str, Mapping[str, str | None]], Checked | None]] = {
    "object": _object,
    "preference": _preference,
    "name": _name,
    "place": _place,
    "job": _job,
    "job_noun": _job_noun,
    "org": _org,
    "org_proper": _org_proper,
    "age": _age,
    "count": _count,
    "date": _date,
    "born": _born,
    "allergen": _allergen,
    "condition": _condition,
    "diet": _diet,
    "avoid": _avoid,
    "quit": _quit,
    "marital": _marital,
    "kin": _kin,
    "amount": _amount,
    "cn_object": _cn_object,
    "cn_name": _cn_name,
    "cn_place": _cn_place,
    "cn_known_place": _cn_known_place,
    "address": _address,
    "cn_address": _cn_address,
    "language": _language,
    "cn_job_noun": _cn_job_noun,
    "cn_workplace": _cn_workplace,
    "cn_org": _cn_org,
    "cn_known_org": _cn_known_org,
    "cn_job": _cn_job,
    "cn_hometown": _cn_hometown,
    "cn_allergen": _cn_allergen,
    "cn_condition": _cn_condition,
    "cn_spouse": _cn_spouse,
    "money": _money,
    "diet_word": _diet_word,
    "food": _food,
    "cn_region_address": _cn_region_address,
    "taught": _taught,
}
CHECK_KINDS = frozenset(_CHECKS)

# Code-switched speech names an English value inside a Chinese frame (我是一名data
# analyst, 我比较喜欢window seat): a Chinese check that refuses a Latin value hands it
# to its English counterpart.
_ENGLISH_CHECK = {
    "cn_object": "object",
    "cn_name": "name",
    "cn_place": "place",
    "cn_known_place": "place",
    "cn_org": "org_proper",
    "cn_known_org": "org_proper",
    "cn_workplace": "org_proper",
    "cn_hometown": "place",
    "cn_allergen": "allergen",
    "cn_condition": "condition",
    "cn_spouse": "name",
}
_LATIN_VALUE = re.compile(r"^[A-Za-z][A-Za-z0-9 .'&/-]*$")


def check_value(kind: str, raw: str, groups: Mapping[str, str | None]) -> Checked | None:
    """The cleaned value of ``raw`` for a pattern of check ``kind``, or None.

    ``groups`` are the match's named groups (some checks read how the value was
    introduced: "suffer from" accepts any condition, "have" only a medical one).
    """
    value = strip_tail(raw)
    if not value or len(value) > MAX_FACT_VALUE_CHARS or INTERROGATIVE_VALUE.search(value):
        return None
    checked = _CHECKS[kind](value, groups)
    english = _ENGLISH_CHECK.get(kind)
    if checked is None and english is not None and _LATIN_VALUE.match(value):
        return _CHECKS[english](value, groups)
    return checked
