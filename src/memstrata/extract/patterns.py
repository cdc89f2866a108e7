"""Regular expressions for the rule-based extractor (English and Chinese).

Every fact pattern has an optional ``neg`` group: the rules read it to turn
"I don't like X" into a dislike and to drop "I don't live in X anymore" instead of
storing it as a positive fact. Values are captured as ``v`` and end at a clause
boundary, so one sentence can hold several facts ("I live in Hangzhou and I work as...");
a pattern with ``many=True`` captures a list ("peanuts, shellfish and eggs", 花生和虾)
that the rules split into one fact per item. The building blocks here are shared with
the other pattern modules, one per group of attributes so one place decides each:
this one reads ``name``, ``contact_channel`` and the preferences; :mod:`.home_patterns`
the city and addresses, :mod:`.work_patterns` the job and employer,
:mod:`.profile_patterns` age, birthday, hometown, health, diet, family and budget, and
:mod:`.everyday_patterns` the reply language and schedule.

Every pattern is a bounded alternation or a lazy run with a bounded length, so matching
stays linear in the sentence length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memstrata.attributes.values import CHANNEL_WORDS
from memstrata.attributes.words import CN_OTHERS

_I = re.IGNORECASE

# --- English building blocks ----------------------------------------------------------
ADV = (
    r"(?:(?:really|also|just|actually|now|currently|still|truly|absolutely|definitely|"
    r"totally|kind\s+of|kinda|sort\s+of|recently|finally|already|only|mostly|generally|"
    r"usually|personally|honestly|do|always|even|then|so|probably|maybe|perhaps|originally|"
    r"officially|happily|severely|very|seriously)\s+){0,4}"
)
NEG = (
    r"(?P<neg>(?:don't|do\s+not|dont|no\s+longer|never|didn't|did\s+not|used\s+to|"
    r"won't|will\s+not|wouldn't|can't|cannot|haven't|have\s+not|'ve\s+not|not)\s+)?"
)
VAL = r"(?P<v>[^,.;:!?。，；！？()\"]{1,120}?)"
END = (
    r"(?=\s*(?:[,.;:!?。，；！？()\"]|\s-\s|$)|\s+(?:and|but|because|since|so|though|"
    r"although|if|when|while|which|who|where|as\s+long\s+as)\b)"
)
# A list value may hold commas and "and" ("dust, pollen, and cats"); it ends where a new
# clause starts: a subject or a conjunction after the comma or "and".
LIST_VAL = r"(?P<v>[^.;:!?。；！？()\"]{1,160}?)"
LIST_END = (
    r"(?=\s*(?:[.;:!?。；！？()\"]|\s-\s|$)|\s*,?\s+(?:and\s+)?(?:but|because|since|so|though|"
    r"although|if|when|while|which|where|not|except|as\s+long\s+as|'?cause|cuz)\b|\s*,\s*(?:and\s+)?"
    r"(?:I|my|we|it|its|you|please|so|which|who|what|then|thanks|thank\s+you|lol|haha|the|this|"
    r"that|these|those|they|he|she|there|to\s+be\s+honest|honestly|tbh|though|really)\b|"
    r"\s+and\s+(?:I|my|we|it|you|please|now|then|also)\b)"
)
NAME = r"(?P<v>[^\W\d_][\w'-]{0,40}(?:\s+[^\W\d_][\w'-]{0,40}){0,3}?)"
CHANNEL_EN = (
    r"(?P<ch>e-?mails?|mail|phone(?:\s+calls?)?|telephone|calls?|text(?:\s+messages?)?|texts|"
    r"sms|wechat|whatsapp|telegram|slack|signal)"
)

# --- Chinese building blocks ----------------------------------------------------------
CN_ADV = (
    r"(?:现在|目前|已经|刚刚|刚|也|一直|其实|就|还是|还|最近|今年|去年|前年|上个月|这个月|"
    r"上周|上星期|昨天|今天|前几天|前段时间|后来|以后|平时|平常|周末|每天|真的|特别|非常|"
    r"很|挺|超|都|却|可能|大概|好像|应该|也许|确实|本来|终于|早就|全家|一家人|一家|又|"
    r"准确地说|其实是|超级|十分|相当|蛮|下个月|下周|明年|马上|很快|"
    r"(?:[一二三四五六七八九十]{1,2}|\d{1,2})月份?|\d{4}年){0,4}"
)
CN_NEG = r"(?P<neg>从来不|从不|并不|不再|不太|不怎么|没那么|已经不|以前|曾经|没有|没|不)?"
CN_END = (
    r"(?=(?:了|啦|呀|啊|吧|呢|哦|喔)*(?:[，。,.;；!！?？、]|\s(?![A-Za-z])|$)|但|可是|不过|而且|因为|所以|"
    r"并且|然后|和我|工作|生活|上班|附近|这边|那边|一带|住|定居|安家|发展|去(?:了|啦)?(?:[，。,.!！]|$))"
)
# A Chinese clause ends here (particles, then punctuation or the end).
CN_CLAUSE_END = r"(?=(?:了|啦|呀|啊|吧|呢)*(?:[，。,.;；!！?？、]|\s(?![A-Za-z])|$))"
# A space between two Latin words is inside a code-switched value (我是data analyst).
LATIN_SPACE = r"(?<=[A-Za-z])\s(?=[A-Za-z])"
CN_VAL = rf"(?P<v>(?:[^，。,.;；!！?？、\s]|{LATIN_SPACE}){{1,30}}?)"
CN_LIST_VAL = rf"(?P<v>(?:[^，。,.;；!！?？\s]|{LATIN_SPACE}){{1,40}}?)"
CN_CHANNEL = (
    r"(?P<ch>微信|电子邮件|邮件|邮箱|电邮|电话|短信|手机|钉钉|飞书|QQ|qq|(?i:e-?mail|"
    r"telegram|whatsapp|slack|signal|wechat))"
)
# Who else a Chinese clause may be about: 我朋友对花生过敏 is not the user's allergy.
CN_ME = rf"我(?!们|的?{CN_OTHERS})"
CN_WE = rf"(?:我们|我(?:跟|和|与)(?:我的?)?{CN_OTHERS}(?:一起)?)"


@dataclass(frozen=True, slots=True)
class FactPattern:
    """One pattern for a fact about the user.

    ``negated`` names the attribute a negated match becomes (``None``: drop it);
    ``check`` picks the value test the rules apply ("place", "job", "name", ...);
    ``many`` splits a list value into one fact per item; ``sentence`` matches the
    whole sentence instead of each clause (for patterns that span a comma, 养了一只猫，
    叫咪咪).
    """

    pattern: re.Pattern[str]
    attribute: str
    confidence: float
    importance: float
    check: str = "object"
    negated: str | None = None
    many: bool = False
    sentence: bool = False


def phrases(text: str) -> frozenset[str]:
    """A set of phrases written as one ``|``-separated string (keeps tables short)."""
    return frozenset(text.split("|"))


def alternation(words: frozenset[str] | tuple[str, ...]) -> str:
    """A regex alternation of ``words``, longest first (so "golden retriever" wins)."""
    return "(?:" + "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w))) + ")"


def en(*parts: str) -> re.Pattern[str]:
    """An English pattern (case-insensitive)."""
    return re.compile("".join(parts), _I)


def cn(*parts: str) -> re.Pattern[str]:
    """A Chinese pattern."""
    return re.compile("".join(parts))


I_ADV_NEG = (r"\bI\s+", ADV, NEG, ADV)
IM_ADV_NEG = (r"\bI(?:'m|\s+am)\s+", ADV, NEG, ADV)
CLAUSE_START = r"(?:^|(?<=,\s)|(?<=;\s)|(?<=:\s)|(?<=\bplease\s)|(?<=\bjust\s)|(?<=\bso\s))"

_NAME_EN = en(
    r"\bmy\s+(?:full\s+|first\s+|real\s+)?name(?:\s+is|'s)\s+(?:actually\s+)?(?P<neg>not\s+)?",
    NAME,
    END,
)
_CALL_ME = en(
    r"(?:\b(?:you\s+can|please|just|everyone|everybody|people|friends|my\s+friends|they|"
    r"most\s+people)\s+|^|(?<=,\s))call(?:s)?\s+me\s+",
    NAME,
    END,
)
# "Hi, I'm Tom." / "I'm Ken, I'm from Osaka": a capitalized word right after "I'm".
_IM_NAME = en(
    r"(?:^|(?<=[,!]\s)|(?<=\bhi\s)|(?<=\bhey\s)|(?<=\bhello\s))I(?:'m|\s+am)\s+",
    r"(?-i:(?P<v>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))",
    r"(?=\s*(?:[,.!;]|$)|\s+and\b|\s+by\s+the\s+way)",
)
CN_NAME_END = r"(?=就行|就好|就可以|好了|吧|呀|啊|哦|[，。,.;；!！?？、\s]|$)"
_NAME_CN = cn(
    r"(?:我(?P<neg>不)?叫|我的名字(?:是|叫)|我名字叫)(?P<v>[\u4e00-\u9fffA-Za-z·]{1,12}?)", CN_END
)
_CALL_ME_CN = cn(
    r"(?:大家|别人|朋友们|朋友|他们|你|您)?(?:都|可以|就|也)?(?P<neg>别)?叫我",
    r"(?P<v>[\u4e00-\u9fffA-Za-z·]{1,6}?)",
    CN_NAME_END,
)

# --- contact channels -------------------------------------------------------------------
_CONTACT_EN = en(
    r"\b(?P<neg>(?:please\s+)?(?:don't|do\s+not|never)\s+)?(?:contact|reach|message|ping|"
    r"notify)\s+me\s+(?:only\s+)?(?:by|via|through|on|over|using|with)\s+(?:an?\s+|the\s+)?",
    CHANNEL_EN,
    r"\b",
)
_USE_TO_CONTACT_EN = en(
    r"\b(?P<neg>(?:don't|do\s+not)\s+)?use\s+", CHANNEL_EN, r"\s+to\s+(?:contact|reach)\s+me\b"
)
_PREFER_CONTACT_EN = en(
    r"\bI\s+prefer\s+(?:to\s+be\s+|being\s+)contacted\s+(?:by|via|through|over)\s+",
    CHANNEL_EN,
    r"\b",
)
# "Text me if anything changes", "please email me": an imperative at a clause start.
# "Call me Mike" is a name, hence no capitalized word after "me".
_IMPERATIVE_CONTACT_EN = en(
    CLAUSE_START,
    r"(?:actually,?\s+)?(?P<neg>(?:please\s+)?(?:don't|do\s+not|never)\s+)?(?:please\s+)?",
    r"(?P<ch>text|e-?mail|call|phone|ring|whatsapp|wechat)\s+me\b(?!\s+(?-i:[A-Z]))",
)
_USE_CHANNEL_EN = en(CLAUSE_START, r"use\s+", CHANNEL_EN, r"\s+(?:instead|please)\b")
_BEST_WAY_EN = en(
    r"\bbest\s+way\s+to\s+(?:reach|contact|get\s+(?:hold\s+of|in\s+touch\s+with)|talk\s+to)\s+"
    r"me\s+is\s+(?:by\s+|via\s+|through\s+|on\s+|over\s+|with\s+)?(?:an?\s+|the\s+)?",
    CHANNEL_EN,
    r"\b",
)
_CHANNEL_IS_BEST_EN = en(
    r"\b",
    CHANNEL_EN,
    r"\s+(?:is|are)\s+the\s+best\s+way\s+to\s+(?:reach|contact|get\s+(?:hold\s+of|in\s+touch"
    r"\s+with))\s+me\b|\b",
    CHANNEL_EN.replace("?P<ch>", "?P<ch2>"),
    r"\s+(?:works?|is|are)\s+(?:best|better)\s+for\s+me\b",
)
_SEND_TO_MY_EN = en(r"\bsend\s+(?:[\w-]+\s+){0,3}?to\s+my\s+", CHANNEL_EN, r"\b")
_SWITCHED_CHANNEL_EN = en(
    r"\bI(?:'ve|\s+have)?\s+(?:just\s+|now\s+)?(?:switched|moved|changed)\s+(?:over\s+)?to\s+",
    CHANNEL_EN,
    r"\b",
)
_CONTACT_CN = cn(
    r"(?P<neg>别|不要|不用|请勿|不再)?(?:以后|之后|今后|请|还是|改成|改|平时|可以)*(?:用|通过|走|发|打)",
    CN_CHANNEL,
    r"(?:来|和|跟)?(?:联系|联络|找|通知)",
)
_GIVE_ME_CN = cn(
    r"(?P<neg>别|不要|不用|请勿|不再)?(?:再)?(?:给我|跟我)(?:发|打)(?:个|条)?",
    CN_CHANNEL,
    r"|(?P<neg2>别|不要|不用)?(?:发|打|加)我(?:的)?",
    CN_CHANNEL.replace("?P<ch>", "?P<ch2>"),
)
_CHANNEL_ME_CN = cn(
    r"(?P<neg>别|不要|不用|请勿|不再)?(?:用|通过)?",
    CN_CHANNEL,
    r"(?:上)?(?:联系|联络|找|通知)我|(?P<neg2>别|不要|不用|请勿)?(?:发|用)",
    CN_CHANNEL.replace("?P<ch>", "?P<ch2>"),
    r"(?:给我)?(?:就行|就好|就可以|即可)|(?:发|打)",
    CN_CHANNEL.replace("?P<ch>", "?P<ch3>"),
    r"给我",
)
_CHANNEL_IS_BEST_CN = cn(
    r"(?:我的)?",
    CN_CHANNEL,
    r"是(?:联系|找)我最(?:好|方便|快)的|(?:换成|改成|改用|换用)(?:了)?用?",
    CN_CHANNEL.replace("?P<ch>", "?P<ch2>"),
)

# --- preferences ------------------------------------------------------------------------
_PREFERENCE_EN = en(
    *I_ADV_NEG,
    r"(?P<verb>like|love|enjoy|adore|prefer|dislike|hate|detest|loathe|can't\s+stand|"
    r"cannot\s+stand)s?\s+",
    LIST_VAL,
    LIST_END,
)
_RATHER_EN = en(
    r"\bI(?:'d|\s+would)\s+(?:much\s+)?rather\s+(?!not\b)(?P<v>[^,.;:!?。，；！？()\"]+?)"
    r"(?=\s+than\b|\s*[,.;:!?。，；！？()\"]|$)"
)
_WOULD_PREFER_EN = en(
    r"\bI(?:'d|\s+would)\s+(?:much\s+|really\s+)?prefer\s+(?!not\b|to\s+be\s+contacted\b)",
    LIST_VAL,
    LIST_END,
)
_KEEN_EN = en(
    *IM_ADV_NEG,
    r"(?:really\s+|so\s+|totally\s+|quite\s+|very\s+)?(?:obsessed\s+with|crazy\s+about|"
    r"passionate\s+about|keen\s+on|fond\s+of|addicted\s+to|hooked\s+on|mad\s+about)\s+",
    LIST_VAL,
    LIST_END,
)
_FAN_EN = en(
    r"\bI(?:'m|\s+am)\s+(?P<neg>not\s+)?(?:an?\s+)?(?:big\s+|huge\s+|great\s+|real\s+)?fan\s+of\s+",
    VAL,
    END,
)
_INTO_EN = en(
    *IM_ADV_NEG,
    r"(?:very\s+|really\s+|big\s+|so\s+|totally\s+|super\s+)?into\s+",
    LIST_VAL,
    LIST_END,
)
_FAVOURITE_EN = en(r"\bmy\s+favou?rite\s+[\w ]{1,30}?\s+(?:is|are)\s+", VAL, END)
_IS_FAVOURITE_EN = en(
    r"^(?P<v>[^,.;:!?]{1,40}?)\s+(?:is|are)\s+my\s+(?:absolute\s+|all-time\s+)?favou?rites?\b"
)
_INTERESTED_EN = en(*IM_ADV_NEG, r"(?:very\s+|really\s+)?interested\s+in\s+", LIST_VAL, LIST_END)
_HOBBIES_EN = en(
    r"\bmy\s+(?:hobby|hobbies|interests?|passions?)\s+(?:is|are|include)\s+", LIST_VAL, LIST_END
)
_FAVOURITE_CN = cn(r"我(?:最)?(?:喜欢|爱)的[\u4e00-\u9fff]{0,4}是", CN_VAL, CN_END)
_PREFERENCE_CN = cn(
    r"(?:",
    CN_WE,
    r"|我|但是|但|可是|不过|而且)",  # Chinese drops the subject after "but"
    CN_ADV,
    CN_NEG,
    CN_ADV,
    # 爱上了 is taking something up (an interest, read by the registry's frame).
    r"(?P<verb>更喜欢|更爱|比较喜欢|最喜欢|喜欢|热爱|爱(?!上了)|讨厌|厌恶|受不了|偏好|偏爱)",
    CN_LIST_VAL,
    CN_END,
)
_FAN_CN = cn(CN_ME, CN_ADV, r"是(?:个|一个)?(?P<v>[^，。,.;；!！?？、\s]{1,8}?)迷")
_INTERESTED_CN = cn(
    CN_ME,
    CN_ADV,
    r"对(?P<v>[^，。,.;；!！?？\s]{1,20}?)(?:很|非常|特别|比较|挺|超|有点|有些|也)?(?:感兴趣|有兴趣)",
)
_HOBBIES_CN = cn(r"我的(?:爱好|兴趣爱好|兴趣)(?:是|有|包括)", CN_LIST_VAL, CN_END)

# "The name's Bond": a name in an everyday phrasing.
_NAMES_EN = en(r"(?:^|(?<=[,!]\s))(?:the\s+)?name's\s+", NAME, END)
# --- contact channels, in everyday phrasings -----------------------------------------------
_SHOOT_ME_EN = en(
    r"\b(?:shoot|drop|send|fire\s+off)\s+me\s+(?:an?\s+|a\s+quick\s+)?",
    r"(?P<ch>e-?mail|text|message|line|dm)\b",
    r"(?!\s+(?:on|via|over)\b)",
    r"|\b(?:shoot|drop|send)\s+me\s+(?:an?\s+)?(?:message|note|line|dm)\s+(?:on|via|over)\s+",
    CHANNEL_EN.replace("?P<ch>", "?P<ch2>"),
)
_EASIEST_EN = en(
    r"\bI(?:'m|\s+am)\s+(?:easiest|easier|best|quickest|fastest)\s+(?:to\s+)?(?:reach|contact|"
    r"get\s+hold\s+of)(?:ed)?\s+(?:on|via|by|through|over)\s+",
    CHANNEL_EN,
    r"\b",
)
_WORKS_BETTER_EN = en(
    r"(?:^|(?<=[,;:]\s)|\ba\s+)", CHANNEL_EN, r"\s+(?:works|is)\s+(?:best|better)\b"
)
_RATHER_CHANNEL_CN = cn(
    r"(?:还是|就|改|换成?|直接|最好)(?:用|发|打|走)", CN_CHANNEL, r"(?:吧|好了|比较好|联系|方便)"
)
# --- preferences, in everyday phrasings ----------------------------------------------------
_MY_THING_EN = en(
    r"^(?P<v>[^,.;:!?]{1,40}?)\s+(?:is|are)\s+(?:totally\s+|really\s+|kind\s+of\s+)?my\s+"
    r"(?:thing|jam|jam|favourite\s+thing|favorite\s+thing)\b"
)
_TOPIC_DISLIKE_CN = cn(
    r"^我?(?P<v>[\u4e00-\u9fff]{1,6}?)我(?:是)?(?:真的|实在|真|最|特别|完全)*(?:受不了|讨厌|"
    r"接受不了)"
)
_MOST_LOVE_CN = cn(
    CN_ME, CN_ADV, r"(?:平时|平常)?(?:最爱|最喜欢)(?P<v>[^，。,.;；!！?？\s]{1,20}?)", CN_END
)
_FAVOURITE_MIXED = cn(
    r"我(?:最)?(?:喜欢|爱)的[\u4e00-\u9fffA-Za-z ]{1,12}?是\s*(?P<v>[^，。,.;；!！?？]{1,30}?)",
    CN_END,
)

FACT_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(_NAME_EN, "name", 0.95, 0.8, "name"),
    FactPattern(_CALL_ME, "name", 0.85, 0.8, "name"),
    FactPattern(_IM_NAME, "name", 0.75, 0.8, "name"),
    FactPattern(_NAME_CN, "name", 0.95, 0.8, "cn_name"),
    FactPattern(_CALL_ME_CN, "name", 0.85, 0.8, "cn_name"),
    FactPattern(_CONTACT_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_USE_TO_CONTACT_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_PREFER_CONTACT_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_IMPERATIVE_CONTACT_EN, "contact_channel", 0.8, 0.7, "channel"),
    FactPattern(_USE_CHANNEL_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_BEST_WAY_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_CHANNEL_IS_BEST_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_SEND_TO_MY_EN, "contact_channel", 0.8, 0.7, "channel"),
    FactPattern(_SWITCHED_CHANNEL_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_CONTACT_CN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_GIVE_ME_CN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_CHANNEL_ME_CN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_CHANNEL_IS_BEST_CN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_PREFERENCE_EN, "likes", 0.8, 0.5, "preference", many=True),
    FactPattern(_RATHER_EN, "prefers", 0.7, 0.5, "preference"),
    FactPattern(_WOULD_PREFER_EN, "prefers", 0.75, 0.5, "preference", many=True),
    FactPattern(_KEEN_EN, "likes", 0.75, 0.5, "preference", negated="dislikes", many=True),
    FactPattern(_FAN_EN, "likes", 0.8, 0.5, "preference", negated="dislikes"),
    FactPattern(_INTO_EN, "likes", 0.75, 0.5, "preference", many=True),
    FactPattern(_FAVOURITE_EN, "likes", 0.85, 0.5),
    FactPattern(_IS_FAVOURITE_EN, "likes", 0.8, 0.5, "preference"),
    FactPattern(_INTERESTED_EN, "interests", 0.8, 0.5, "preference", many=True),
    FactPattern(_HOBBIES_EN, "interests", 0.85, 0.5, "preference", many=True),
    FactPattern(_FAVOURITE_CN, "likes", 0.85, 0.5, "cn_object"),
    FactPattern(_PREFERENCE_CN, "likes", 0.8, 0.5, "cn_object", many=True),
    FactPattern(_FAN_CN, "likes", 0.8, 0.5, "cn_object"),
    FactPattern(_INTERESTED_CN, "interests", 0.8, 0.5, "cn_object", many=True),
    FactPattern(_HOBBIES_CN, "interests", 0.85, 0.5, "cn_object", many=True),
    FactPattern(_NAMES_EN, "name", 0.85, 0.8, "name"),
    FactPattern(_SHOOT_ME_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_EASIEST_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_WORKS_BETTER_EN, "contact_channel", 0.8, 0.7, "channel"),
    FactPattern(_RATHER_CHANNEL_CN, "contact_channel", 0.8, 0.7, "channel"),
    FactPattern(_MY_THING_EN, "likes", 0.75, 0.5, "preference"),
    FactPattern(_TOPIC_DISLIKE_CN, "dislikes", 0.8, 0.5, "cn_object"),
    FactPattern(_MOST_LOVE_CN, "likes", 0.8, 0.5, "cn_object"),
    FactPattern(_FAVOURITE_MIXED, "likes", 0.8, 0.5, "cn_object"),
)
PREFERENCE_ATTRIBUTES = frozenset({"likes", "dislikes", "prefers", "interests"})
"""Attributes a more specific pattern over the same words overrides ("I prefer to be
contacted by phone" is a contact channel, not a preference)."""

# Verb -> (attribute, confidence, what a plain negation turns it into).
PREFERENCE_VERBS: dict[str, tuple[str, float, str | None]] = {
    **dict.fromkeys(("like", "enjoy", "喜欢"), ("likes", 0.8, "dislikes")),
    **dict.fromkeys(("love", "adore", "热爱", "最喜欢"), ("likes", 0.85, None)),
    "爱": ("likes", 0.8, None),
    "比较喜欢": ("likes", 0.75, None),
    **dict.fromkeys(("prefer", "更喜欢", "更爱", "偏好", "偏爱"), ("prefers", 0.8, None)),
    **dict.fromkeys(("dislike", "受不了"), ("dislikes", 0.8, None)),
    **dict.fromkeys(
        ("hate", "detest", "loathe", "can't stand", "cannot stand", "讨厌", "厌恶"),
        ("dislikes", 0.85, None),
    ),
}
# Only a plain "don't / no longer / 不" flips a like into a dislike; "used to" or
# "didn't" speak about the past and say nothing about today.
FLIPPING_NEGATIONS = phrases(
    "don't|do not|dont|no longer|never|not|不|不再|不太|不怎么|没那么|并不|从不|从来不"
)

# The channel words live with the value type (one normal form per channel).
CHANNELS = CHANNEL_WORDS


@dataclass(frozen=True, slots=True)
class EventPattern:
    """A decision or commitment cue; the event's value is the whole sentence.

    A ``rest`` group, when present, holds what was promised; "I'll think about it"
    promises nothing and is skipped.
    """

    pattern: re.Pattern[str]
    attribute: str
    confidence: float
    importance: float


_DECIDED_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:finally\s+|just\s+|already\s+)?"
    r"(?:decided|agreed|chose|opted)\b"
)
_LETS_EN = en(r"\blet'?s\s+(?:go\s+with|pick|choose|use|book|take)\b")
_GO_WITH_EN = en(r"\b(?:I|we)(?:'ll|\s+will)\s+go\s+with\b|\bwe(?:'re|\s+are)\s+going\s+with\b")
_DECIDED_CN = cn(
    r"(?:我们|我)(?:已经|最终|最后|还是)?决定|就选|就用|就定|那就选|最终选|定下来|"
    r"(?:最后|最终|还是)选了|选定了?|约好了?|说好了|商量好了"
)
_WILL_EN = en(
    r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\s+(?P<rest>.+)$|\b(?:I|we)\s+promise\s+to\s+(?P<r2>.+)$"
    r"|\bI(?:'m|\s+am)\s+(?:going|planning)\s+to\s+(?P<r3>.+)$"
    r"|\bI\s+(?:plan|intend)\s+to\s+(?P<r4>.+)$"
)
_CN_WHEN = (
    r"(?:明天|后天|今天|今晚|下周[一二三四五六日天]?|下个月|本周|这周|周[一二三四五六日]|月底|"
    r"待会|一会儿|晚点|上午|下午|晚上|早上|之前|以前|前)"
)
# 我会 alone also means "I can" (我会说中文): only a time word makes it a promise.
_WILL_CN = cn(
    r"我们(?:会|将|一定会|保证)(?P<rest>.+)$|我(?:将|保证|答应|承诺)(?P<r2>.+)$|我会(?P<r3>在?",
    r"(?:明天|今天|下周|下个月|本周|周[一二三四五六日]|月底|之前|尽快|马上|稍后|晚点|\d).*)$",
    r"|我",
    CN_ADV,
    r"(?:打算|准备|计划)(?P<r4>.+)$|我",
    _CN_WHEN,
    r"+(?:会|要|就)(?P<r5>.+)$|我",
    _CN_WHEN,
    r"+把(?P<r6>.+)$",
)

EVENT_PATTERNS: tuple[EventPattern, ...] = (
    EventPattern(_DECIDED_EN, "decision", 0.85, 0.8),
    EventPattern(_LETS_EN, "decision", 0.8, 0.8),
    EventPattern(_GO_WITH_EN, "decision", 0.8, 0.8),
    EventPattern(_DECIDED_CN, "decision", 0.85, 0.8),
    EventPattern(_WILL_EN, "commitment", 0.75, 0.7),
    EventPattern(_WILL_CN, "commitment", 0.75, 0.7),
)

# Continuations of "I'll ..." that promise nothing worth keeping.
LOW_INFO_COMMITMENTS = phrases(
    "think about it|be right back|be back|see|try|check|do it|do that|let you know|"
    "get back to you|see you|talk to you later|be there|try it|have a look|take a look|"
    "check it|consider it|think about that"
)

HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|unless|in\s+case|suppose|supposing|imagine|assuming|what\s+if)\b"
    r"|如果|要是|假如|假设|万一|是否",
    _I,
)
HEDGE = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+suppose|maybe|probably|perhaps|possibly|might|not\s+sure)\b"
    r"|可能|好像|大概|也许|应该是|似乎",
    _I,
)
QUESTION_START = re.compile(
    r"^\s*(?:do|does|did|is|are|am|was|were|can|could|should|would|will|shall|may|might|have|"
    r"has|what|where|when|why|how|who|which|whose)\b",
    _I,
)
CN_QUESTION_END = re.compile(r"(?:吗|么|嘛)[?？]?$|[?？]$")
# "people who chew loudly" is a value; "who" or "where" leading one asks a question.
INTERROGATIVE_VALUE = re.compile(r"什么|哪|谁|几|多少|怎么|^(?:what|where|who|which)\b", _I)

REFUND_WORDS = re.compile(r"\brefund(?:ed|s)?\b|退款|退钱|退货", _I)
PAYMENT_WORDS = re.compile(
    r"\b(?:paid|pay|payment|charged|transferred|spent)\b|付款|支付|付了|转账|扣款|花了|扣了|"
    r"被扣|扣费|转了|交了|花(?=\s*[\d¥￥$])",
    _I,
)
ORDER_WORDS = re.compile(
    r"\b(?:order(?:ed)?|bought|purchased?|cost|price)\b|订单|下单|买了|价格|单号", _I
)
