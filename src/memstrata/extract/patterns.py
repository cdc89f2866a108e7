"""Regular expressions for the rule-based extractor (English and Chinese).

Every fact pattern has an optional ``neg`` group: the rules read it to turn
"I don't like X" into a dislike and to drop "I don't live in X anymore" instead of
storing it as a positive fact. Values are captured as ``v`` and end at a clause
boundary, so one sentence can hold several facts ("I live in Hangzhou and I work as...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE

# --- English building blocks ----------------------------------------------------------
_ADV = (
    r"(?:(?:really|also|just|actually|now|currently|still|truly|absolutely|definitely|"
    r"totally|kind\s+of|kinda|sort\s+of|recently|finally|already|only|mostly|generally|"
    r"usually|personally|honestly|do|always|even|then|so|probably|maybe|perhaps)\s+){0,4}"
)
_NEG = (
    r"(?P<neg>(?:don't|do\s+not|dont|no\s+longer|never|didn't|did\s+not|used\s+to|"
    r"won't|will\s+not|wouldn't|can't|cannot|haven't|have\s+not|'ve\s+not|not)\s+)?"
)
_VAL = r"(?P<v>[^,.;:!?。，；！？()\"]{1,120}?)"
_END = (
    r"(?=\s*(?:[,.;:!?。，；！？()\"]|\s-\s|$)|\s+(?:and|but|because|since|so|though|"
    r"although|if|when|while|which|who|where|as\s+long\s+as)\b)"
)
_NAME = r"(?P<v>[^\W\d_][\w'-]{0,40}(?:\s+[^\W\d_][\w'-]{0,40}){0,3}?)"
_CHANNEL_EN = (
    r"(?P<ch>e-?mail|mail|phone|telephone|call|text(?:\s+message)?|sms|wechat|whatsapp|"
    r"telegram|slack|signal)"
)

# --- Chinese building blocks ----------------------------------------------------------
_CN_ADV = (
    r"(?:现在|目前|已经|刚刚|刚|也|一直|其实|就|还|最近|今年|真的|特别|非常|很|挺|都|却|"
    r"可能|大概|好像|应该|也许){0,4}"
)
_CN_NEG = r"(?P<neg>从来不|从不|并不|不再|不太|不怎么|没那么|已经不|以前|曾经|没有|没|不)?"
_CN_END = (
    r"(?=(?:了|啦|呀|啊|吧|呢|哦|喔)*(?:[，。,.;；!！?？、\s]|$)|但|可是|不过|而且|因为|所以|"
    r"并且|然后|和我|工作|生活|上班|附近|这边|那边|一带)"
)
_CN_VAL = r"(?P<v>[^，。,.;；!！?？、\s]{1,30}?)"
_CN_CHANNEL = r"(?P<ch>微信|电子邮件|邮件|邮箱|电话|短信|手机|钉钉|飞书|QQ)"


@dataclass(frozen=True, slots=True)
class FactPattern:
    """One pattern for a fact about the user.

    ``negated`` names the attribute a negated match becomes (``None``: drop it);
    ``check`` picks the value test the rules apply ("place", "job", "name", ...).
    """

    pattern: re.Pattern[str]
    attribute: str
    confidence: float
    importance: float
    check: str = "object"
    negated: str | None = None


def phrases(text: str) -> frozenset[str]:
    """A set of phrases written as one ``|``-separated string (keeps tables short)."""
    return frozenset(text.split("|"))


def _en(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts), _I)


def _cn(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts))


_I_ADV_NEG = (r"\bI\s+", _ADV, _NEG, _ADV)
_IM_ADV_NEG = (r"\bI(?:'m|\s+am)\s+", _ADV, _NEG, _ADV)
_CN_I = ("我", _CN_ADV, _CN_NEG, _CN_ADV)

_NAME_EN = _en(r"\bmy\s+(?:full\s+|first\s+)?name(?:\s+is|'s)\s+(?P<neg>not\s+)?", _NAME, _END)
_CALL_ME = _en(r"\b(?:you\s+can|please|just)\s+call\s+me\s+", _NAME, _END)
_NAME_CN = _cn(
    r"(?:我(?P<neg>不)?叫|我的名字(?:是|叫)|我名字叫)(?P<v>[\u4e00-\u9fffA-Za-z·]{1,12}?)", _CN_END
)
_LIVE_EN = _en(*_I_ADV_NEG, r"(?:live|reside)s?\s+in\s+", _VAL, _END)
_BASED_EN = _en(*_IM_ADV_NEG, r"(?:living|based|located|staying|settled)\s+in\s+", _VAL, _END)
_MOVED_EN = _en(
    r"\bI(?:'ve|\s+have)?\s+",
    _ADV,
    _NEG,
    _ADV,
    r"(?:moved|relocated)\s+(?:back\s+)?to\s+",
    _VAL,
    _END,
)
_LIVE_CN = _cn(
    *_CN_I,
    r"(?:居住在|定居在|住在|定居|搬家到了|搬家到|搬到了|搬到|搬去了|搬去|搬回了|搬回|住)",
    _CN_VAL,
    _CN_END,
)
_WORK_IN_CN = _cn(*_CN_I, r"在(?P<v>[^，。,.;；!！?？、\s]{1,20}?)(?:工作|生活|上班|定居)")
_WORK_AS_EN = _en(*_I_ADV_NEG, r"work(?:s|ing)?\s+as\s+(?:an?\s+|the\s+)?", _VAL, _END)
_MY_JOB_EN = _en(r"\bmy\s+(?:job|profession|occupation)\s+is\s+(?:an?\s+)?(?!to\b)", _VAL, _END)
_I_AM_A_EN = _en(
    r"\bI(?:'m|\s+am)\s+(?P<neg>not\s+|no\s+longer\s+)?(?:now\s+|currently\s+|also\s+|"
    r"actually\s+)?an?\s+",
    _VAL,
    _END,
)
_JOB_CN = _cn("我", _CN_ADV, r"(?P<neg>不|并不)?是一?(?:名|位)", _CN_VAL, _CN_END)
_MY_JOB_CN = _cn(r"我的(?:工作|职业)(?P<neg>不)?是", _CN_VAL, _CN_END)
_CONTACT_EN = _en(
    r"\b(?P<neg>(?:please\s+)?(?:don't|do\s+not|never)\s+)?(?:contact|reach|message|ping|"
    r"notify)\s+me\s+(?:only\s+)?(?:by|via|through|on|over|using|with)\s+(?:an?\s+|the\s+)?",
    _CHANNEL_EN,
    r"\b",
)
_USE_TO_CONTACT_EN = _en(
    r"\b(?P<neg>(?:don't|do\s+not)\s+)?use\s+", _CHANNEL_EN, r"\s+to\s+(?:contact|reach)\s+me\b"
)
_PREFER_CONTACT_EN = _en(
    r"\bI\s+prefer\s+(?:to\s+be\s+|being\s+)contacted\s+(?:by|via|through|over)\s+",
    _CHANNEL_EN,
    r"\b",
)
_CONTACT_CN = _cn(
    r"(?P<neg>别|不要|不用|请勿|不再)?(?:以后|之后|今后|请|还是|改成|改)*(?:用|通过|走|发|打)",
    _CN_CHANNEL,
    r"(?:来|和|跟)?(?:联系|联络|找|通知)",
)
_PREFERENCE_EN = _en(
    *_I_ADV_NEG,
    r"(?P<verb>like|love|enjoy|adore|prefer|dislike|hate|detest|loathe|can't\s+stand|"
    r"cannot\s+stand)s?\s+",
    _VAL,
    _END,
)
_RATHER_EN = _en(
    r"\bI(?:'d|\s+would)\s+(?:much\s+)?rather\s+(?!not\b)(?P<v>[^,.;:!?。，；！？()\"]+?)"
    r"(?=\s+than\b|\s*[,.;:!?。，；！？()\"]|$)"
)
_FAN_EN = _en(
    r"\bI(?:'m|\s+am)\s+(?P<neg>not\s+)?(?:an?\s+)?(?:big\s+|huge\s+|great\s+|real\s+)?fan\s+of\s+",
    _VAL,
    _END,
)
_FAVOURITE_EN = _en(r"\bmy\s+favou?rite\s+[\w ]{1,30}?\s+(?:is|are)\s+", _VAL, _END)
_FAVOURITE_CN = _cn(r"我最喜欢的[\u4e00-\u9fff]{0,4}是", _CN_VAL, _CN_END)
_PREFERENCE_CN = _cn(
    r"(?:我|但是|但|可是|不过|而且)",  # Chinese drops the subject after "but"
    _CN_ADV,
    _CN_NEG,
    _CN_ADV,
    r"(?P<verb>更喜欢|更爱|比较喜欢|最喜欢|喜欢|热爱|爱|讨厌|厌恶|受不了|偏好|偏爱)",
    _CN_VAL,
    _CN_END,
)

FACT_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(_NAME_EN, "name", 0.95, 0.8, "name"),
    FactPattern(_CALL_ME, "name", 0.85, 0.8, "name"),
    FactPattern(_NAME_CN, "name", 0.95, 0.8, "cn_name"),
    # A move writes the same attribute as "I live in", so it supersedes the old city.
    FactPattern(_LIVE_EN, "city", 0.9, 0.7, "place"),
    FactPattern(_BASED_EN, "city", 0.9, 0.7, "place"),
    FactPattern(_MOVED_EN, "city", 0.9, 0.7, "place"),
    FactPattern(_LIVE_CN, "city", 0.9, 0.7, "cn_place"),
    FactPattern(_WORK_IN_CN, "city", 0.7, 0.6, "cn_place"),  # 在阿里工作 is not a city
    FactPattern(_WORK_AS_EN, "job", 0.9, 0.6, "job"),
    FactPattern(_MY_JOB_EN, "job", 0.85, 0.6, "job"),
    FactPattern(_I_AM_A_EN, "job", 0.7, 0.6, "job_noun"),
    FactPattern(_JOB_CN, "job", 0.85, 0.6, "cn_object"),
    FactPattern(_MY_JOB_CN, "job", 0.9, 0.6, "cn_object"),
    FactPattern(_CONTACT_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_USE_TO_CONTACT_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_PREFER_CONTACT_EN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_CONTACT_CN, "contact_channel", 0.9, 0.7, "channel"),
    FactPattern(_PREFERENCE_EN, "likes", 0.8, 0.5),
    FactPattern(_RATHER_EN, "prefers", 0.7, 0.5),
    FactPattern(_FAN_EN, "likes", 0.8, 0.5, negated="dislikes"),
    FactPattern(_FAVOURITE_EN, "likes", 0.85, 0.5),
    FactPattern(_FAVOURITE_CN, "likes", 0.85, 0.5, "cn_object"),
    FactPattern(_PREFERENCE_CN, "likes", 0.8, 0.5, "cn_object"),
)

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

_CHANNEL_WORDS = {
    "email": "email|e-mail|mail|邮件|电子邮件|邮箱",
    "phone": "phone|telephone|call|电话|手机",
    "sms": "text|text message|sms|短信",
    "wechat": "wechat|微信",
    "dingtalk": "钉钉",
    "feishu": "飞书",
    "qq": "qq",
    "whatsapp": "whatsapp",
    "telegram": "telegram",
    "slack": "slack",
    "signal": "signal",
}
CHANNELS: dict[str, str] = {
    word: channel for channel, words in _CHANNEL_WORDS.items() for word in words.split("|")
}


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


_DECIDED_EN = _en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:finally\s+|just\s+|already\s+)?"
    r"(?:decided|agreed|chose|opted)\b"
)
_LETS_EN = _en(r"\blet'?s\s+(?:go\s+with|pick|choose|use|book|take)\b")
_GO_WITH_EN = _en(r"\b(?:I|we)(?:'ll|\s+will)\s+go\s+with\b|\bwe(?:'re|\s+are)\s+going\s+with\b")
_DECIDED_CN = _cn(r"(?:我们|我)(?:已经|最终|最后|还是)?决定|就选|就用|就定|那就选|最终选|定下来")
_WILL_EN = _en(
    r"\b(?:I|we)(?:'ll|\s+will|\s+shall)\s+(?P<rest>.+)$|\b(?:I|we)\s+promise\s+to\s+(?P<r2>.+)$"
)
# 我会 alone also means "I can" (我会说中文): only a time word makes it a promise.
_WILL_CN = _cn(
    r"我们(?:会|将|一定会|保证)(?P<rest>.+)$|我(?:将|保证|答应|承诺)(?P<r2>.+)$|我会(?P<r3>在?",
    r"(?:明天|今天|下周|下个月|本周|周[一二三四五六日]|月底|之前|尽快|马上|稍后|晚点|\d).*)$",
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

HYPOTHETICAL = re.compile(r"\b(?:if|whether|unless|in\s+case)\b|如果|要是|假如|是否", _I)
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
INTERROGATIVE_VALUE = re.compile(r"什么|哪|谁|几|多少|怎么|\b(?:what|where|who|which)\b", _I)

REFUND_WORDS = re.compile(r"\brefund(?:ed|s)?\b|退款|退钱|退货", _I)
PAYMENT_WORDS = re.compile(
    r"\b(?:paid|pay|payment|charged|transferred|spent)\b|付款|支付|付了|转账|扣款|花了", _I
)
ORDER_WORDS = re.compile(
    r"\b(?:order(?:ed)?|bought|purchased?|cost|price)\b|订单|下单|买了|价格|单号", _I
)
