"""The attribute registry: the one place a fact's attribute is described.

Each :class:`Attribute` says what the engine knows about one property of a user:
its value type (how values are parsed, normalized and compared: :mod:`.values`),
whether it holds one value or a set, the words a question asking its current value
uses (``asks``) and the words an episode stating it uses (``states``), its names in
both languages (``labels``: what a reply or a Chinese statement calls it), and the
verbs that change or remove a value. :data:`NEEDS` says which standing attributes a
question implies without naming them (a question about eating needs the allergies,
the diet and where the user lives).

Extraction, corrections, the reply check, denials, retrieval's currency cues, intent
entities and the LLM prompt read this module; adding an attribute is one entry here
plus its tests (docs/architecture.md, "The attribute registry").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "ATTRIBUTES",
    "MULTI_VALUED",
    "NEEDS",
    "Attribute",
    "Need",
    "asked",
    "by_name",
    "needed",
    "plans",
]

_I = re.IGNORECASE
_NEVER = re.compile(r"(?!x)x")
"""A pattern that matches nothing (an attribute no question asks directly)."""


@dataclass(frozen=True, slots=True)
class Attribute:
    """One property of a user (or of the assistant's commitments)."""

    name: str
    value_type: str
    """How values are read and compared: place, address, amount, date, person, food,
    condition, diet, language, channel, count, job, org, marital, id, text."""
    multi_valued: bool = False
    labels: tuple[str, ...] = ()
    """The attribute's own names in English and Chinese (budget / 预算)."""
    asks: re.Pattern[str] = _NEVER
    """A question asking the attribute's current value (first person)."""
    states: re.Pattern[str] = _NEVER
    """Words an episode stating the attribute uses."""
    aliases: tuple[str, ...] = ()
    """Other attribute names the same property is stored under (a Chinese name an
    LLM extractor may pick)."""
    removal_verbs: tuple[str, ...] = field(default=())
    """Words that take a value out of the attribute (sets) or retract it."""
    asked_with: tuple[str, ...] = ()
    """Attributes a question asking this one asks too ("where do I live" asks the
    city and the street address; "where do I work" the employer and the job)."""


_HOME_WORDS = re.compile(
    r"\b(?:live[sd]?|living|moved|move|moving|relocat\w*|based|home|reside[sd]?|residing|"
    r"settled|apartment|flat|house|place)\b|住|搬|定居|安家|家在|生活|房子|房租|租房|base",
    _I,
)
_WORK_WORDS = re.compile(
    r"\b(?:work\w*|job|employ\w*|hired|joined|career)\b|工作|上班|入职|跳槽|公司|做", _I
)
_EAT_WORDS = re.compile(
    r"\b(?:vegan|vegetarian|diet|eat\w*|ate|keto|halal|meat|food|dairy|gluten)\b|吃|饮食|素|荤",
    _I,
)

ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "city",
        "place",
        labels=("city", "live", "home", "城市", "住", "家"),
        asks=re.compile(
            r"\bwhere\b.{0,20}\b(?:live|living|based|stay|home)\b|\b(?:which|what)\s+(?:city|"
            r"town|place|country)\b.{0,30}\b(?:live|living|based|home)\b|\b(?:near|around|close\s+"
            r"to|next\s+to|by)\s+(?:my\s+(?:home|place|house|apartment|flat)|where\s+I\s+live)\b|"
            r"(?:我家|我住的地方|我住处)(?:附近|旁边|周边|周围)|离我家|\bmy\s+(?:home\s+)?"
            r"(?:city|town)\b|住(?:在)?(?:哪|什么地方)|在哪(?:个城市|里|儿)?(?:住|生活|定居|安家)|"
            r"家在哪|住的(?:城市|地方)|住处|住所",
            _I,
        ),
        states=_HOME_WORDS,
        asked_with=("address",),
    ),
    Attribute(
        "address",
        "address",
        labels=("address", "home address", "地址", "住址", "家庭地址"),
        asks=re.compile(r"\bmy\s+(?:home\s+)?address\b|家庭?地址|住址", _I),
        states=_HOME_WORDS,
    ),
    Attribute(
        "delivery_address",
        "address",
        labels=("delivery address", "shipping address", "收货地址", "送货地址", "快递地址"),
        asks=re.compile(
            r"\b(?:shipping|delivery|mailing)\s+address\b|(?:收货|送货|收件|寄件|快递)地址|寄到哪",
            _I,
        ),
        states=re.compile(r"\b(?:ship|deliver|send|address)\w*\b|收货|送货|寄|快递|外卖|地址", _I),
    ),
    Attribute("hometown", "place", labels=("hometown", "老家", "家乡")),
    Attribute(
        "budget",
        "amount",
        labels=("budget", "预算"),
        asks=re.compile(r"\bbudget\b|\bafford\b|\bhow\s+much\s+can\s+I\s+spend\b|预算", _I),
        states=re.compile(r"\b(?:budget|spend|afford|under|up\s+to)\b|预算|花|以内|不超过", _I),
    ),
    Attribute(
        "employer",
        "org",
        labels=("employer", "company", "公司", "单位"),
        asks=re.compile(
            r"\bwhere\s+do\s+I\s+work\b|\bmy\s+(?:job|employer|company|profession)\b|"
            r"\bwhat\s+do\s+I\s+do\s+for\s+(?:a\s+)?(?:living|work)\b|\bwho\s+do\s+I\s+work\b|"
            r"\b(?:current|new|present)\s+(?:job|role|position|employer|occupation)\b|"
            r"在哪(?:里|儿|家公司)?(?:工作|上班)|做什么工作|什么工作|"
            r"(?:我的(?:工作|职业)|职业)(?!规划|生涯|发展|培训|技能|压力)",
            _I,
        ),
        states=_WORK_WORDS,
        asked_with=("job",),
    ),
    Attribute("job", "job", labels=("job", "occupation", "工作", "职业"), states=_WORK_WORDS),
    Attribute(
        "diet",
        "diet",
        labels=("diet", "饮食"),
        asks=re.compile(
            r"\bwhat\s+(?:do|can|should|don't)\s+I\s+eat\b|\bmy\s+diet\b|\bam\s+I\s+(?:a\s+)?"
            r"(?:vegan|vegetarian)\b|我(?:能|可以|不)?吃什么|饮食|我吃素吗",
            _I,
        ),
        states=_EAT_WORDS,
        removal_verbs=("not vegetarian anymore", "no longer vegan", "不吃素了", "开始吃肉"),
    ),
    Attribute(
        "contact_channel",
        "channel",
        labels=("contact", "联系方式"),
        asks=re.compile(
            r"\b(?:contact|reach)\s+me\b|\bhow\s+should\s+(?:you|I\s+be)\b.{0,20}contact|"
            r"怎么联系我|联系方式|联系我",
            _I,
        ),
        states=re.compile(
            r"\b(?:e-?mail|text|call|phone|reach|contact|message|ping)\w*\b|微信|电话|邮件|"
            r"短信|联系",
            _I,
        ),
    ),
    Attribute(
        "birthday",
        "date",
        labels=("birthday", "生日"),
        asks=re.compile(
            r"(?:\bmy|我的?)\s*(?:(?:real|actual|true|correct|exact)\s+)?(?:birthday|date\s+of\s+"
            r"birth|bday)\b|\bwhen\s+was\s+I\s+born\b|我的?(?:真正的?|真实的?|实际的?)?生日|"
            r"我(?:是)?(?:哪天|什么时候|几月几号)出生",
            _I,
        ),
        states=re.compile(r"\b(?:birthday|born|bday)\b|生日|出生", _I),
    ),
    Attribute(
        "allergies",
        "food",
        multi_valued=True,
        labels=("allergy", "allergies", "allergic", "过敏"),
        asks=re.compile(
            r"\b(?:am\s+I|I'?m)\s+(?:still\s+)?allergic\b|\bmy\s+allerg(?:y|ies)\b|"
            r"\ballergic\s+to\b.{0,20}\?|我对.{0,8}过敏|我的过敏|过敏源|我.{0,4}过敏吗",
            _I,
        ),
        states=re.compile(r"\ballerg\w*\b|过敏", _I),
        aliases=("过敏",),
        removal_verbs=("can eat now", "no longer allergic", "不再对过敏", "能吃了", "去掉"),
    ),
    Attribute(
        "language",
        "language",
        labels=("language", "语言"),
        asks=re.compile(r"\bwhich\s+language\b|\bwhat\s+language\b|什么语言|哪种语言", _I),
        states=re.compile(
            r"\b(?:english|chinese|french|spanish|language|reply|answer)\b|中文|英文|英语", _I
        ),
    ),
    Attribute("name", "person", labels=("name", "名字")),
    Attribute("age", "count", labels=("age", "年龄", "岁")),
    Attribute("spouse", "person", labels=("spouse", "wife", "husband", "老婆", "老公", "爱人")),
    Attribute("marital_status", "marital", labels=("married", "婚")),
    Attribute("children", "person", multi_valued=True, labels=("child", "kid", "孩子")),
    Attribute("children_count", "count", labels=("children", "孩子")),
    Attribute("pets", "text", multi_valued=True, labels=("pet", "宠物")),
    Attribute(
        "likes",
        "text",
        multi_valued=True,
        labels=("like", "love", "喜欢", "爱"),
        aliases=("喜欢",),
    ),
    Attribute(
        "dislikes",
        "text",
        multi_valued=True,
        labels=("dislike", "hate", "不喜欢", "讨厌"),
        aliases=("不喜欢",),
    ),
    Attribute("prefers", "text", labels=("prefer", "更喜欢", "偏好")),
    Attribute("interests", "text", multi_valued=True, labels=("hobby", "爱好"), aliases=("爱好",)),
    Attribute("health", "condition", multi_valued=True, labels=("health", "健康", "病")),
    Attribute(
        "avoids",
        "food",
        multi_valued=True,
        labels=("avoid", "don't eat", "不吃", "忌口"),
        states=_EAT_WORDS,
    ),
    Attribute("languages_spoken", "language", multi_valued=True, labels=("speak", "会说")),
    Attribute("contact_channels", "channel", multi_valued=True, labels=("contact", "联系")),
    Attribute("schedule", "text", labels=("schedule", "shift", "时间", "有空")),
)

_BY_NAME = {a.name: a for a in ATTRIBUTES}

MULTI_VALUED: frozenset[str] = frozenset(
    {a.name for a in ATTRIBUTES if a.multi_valued}
    | {alias for a in ATTRIBUTES if a.multi_valued for alias in a.aliases}
)
"""Attribute names whose values accumulate as a set (aliases included)."""


def by_name(name: str) -> Attribute | None:
    """The attribute called ``name`` (casefolded; an alias finds its attribute)."""
    key = name.strip().casefold()
    found = _BY_NAME.get(key)
    if found is not None:
        return found
    return next((a for a in ATTRIBUTES if key in a.aliases), None)


_FIRST_PERSON = re.compile(r"\b(?:I|me|my|we|our|us)\b|我", _I)


def asked(question: str) -> tuple[str, ...]:
    """The attributes whose current value ``question`` asks, in registry order; none
    unless it speaks in the first person."""
    if not _FIRST_PERSON.search(question):
        return ()
    found: list[str] = []
    for attribute in ATTRIBUTES:
        if attribute.asks.search(question):
            found.extend(a for a in (attribute.name, *attribute.asked_with) if a not in found)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Need:
    """Standing attributes a kind of question bears on without naming them."""

    topic: str
    cues: re.Pattern[str]
    attributes: tuple[str, ...]


NEEDS: tuple[Need, ...] = (
    Need(
        "eating",
        re.compile(
            r"\b(?:eat|eating|dinner|lunch|breakfast|brunch|meal|restaurant|food|snack\w*|"
            r"recipe|cook\w*|takeout|take-out|order\s+in|dish(?:es)?|menu|grocer\w*|bake|"
            r"baking)\b|吃|餐厅|饭|菜|外卖|零食|食谱|做饭|点餐|馆子|早餐|午餐|晚餐|夜宵|聚餐",
            _I,
        ),
        ("allergies", "diet", "avoids", "city"),
    ),
    Need(
        "travel",
        re.compile(
            r"\b(?:trip|travel\w*|flight|fly|flying|hotel|vacation|holiday|book(?:ing)?\s+a|"
            r"itinerary|ticket)\b|出行|旅行|旅游|机票|航班|酒店|出差|订票|行程|度假|高铁",
            _I,
        ),
        ("budget", "city", "schedule"),
    ),
    Need(
        "shopping",
        re.compile(
            r"\b(?:buy|purchase|shop\w*|gift|order)\b|买|购物|礼物|下单|选购",
            _I,
        ),
        ("budget", "delivery_address"),
    ),
)


def needed(question: str) -> tuple[str, ...]:
    """The standing attributes ``question`` implies (eating -> allergies, diet, city),
    in the order the needs list them, without repeats."""
    found: list[str] = []
    for need in NEEDS:
        if need.cues.search(question):
            found.extend(a for a in need.attributes if a not in found)
    return tuple(found)


def names(attributes: Iterable[Attribute] = ATTRIBUTES) -> tuple[str, ...]:
    """The attributes' names (for prompts and docs)."""
    return tuple(a.name for a in attributes)


_PLANS = re.compile(
    r"\b(?:should\s+(?:I|we)|shall\s+(?:I|we)|can\s+I|could\s+I|where\s+(?:to|can|could)|"
    r"recommend\w*|suggest\w*|help\s+me|plan\s+(?:my|our|a)|book\s+(?:me|a|us)|find\s+me|"
    r"any\s+ideas?|what's\s+good)\b|"
    r"帮我|给我|推荐|建议|去哪|哪里好|哪儿好|怎么安排|安排一下|订|吃什么好|吃点什么|该|可以去",
    _I,
)


def plans(question: str) -> bool:
    """Whether ``question`` asks for a plan or a recommendation ("Where should I eat
    tonight?", 帮我订机票) rather than what was said: the standing facts it
    :func:`needed` come first in its context."""
    return bool(_PLANS.search(question))
