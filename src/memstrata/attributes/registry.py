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

from memstrata.attributes.values import normal

__all__ = [
    "ATTRIBUTES",
    "MULTI_VALUED",
    "NEEDS",
    "Attribute",
    "Need",
    "asked",
    "by_name",
    "first_person",
    "needed",
    "normal_value",
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
    cues: tuple[str, ...] = ()
    """The attribute's nouns as a statement names it before its value, both languages
    ("shipping address", 收货地址): the frame "my <cue> is / 改成 / 应该是 <value>"
    reads them (:mod:`memstrata.extract.frames`)."""
    checks: tuple[str, str] = ("object", "cn_object")
    """The value checks (by name, :mod:`memstrata.extract.values`) a value captured
    after a cue must pass, for English and for Chinese text."""
    removal_frames: tuple[str, ...] = ()
    """Regex templates of sentences that take a value out ("I can eat {v} now",
    我现在能吃{v}了); ``{v}`` is where the value stands, read by the value type."""
    state_frames: tuple[str, ...] = ()
    """Regex templates of sentences that state a value without naming the attribute
    ("I avoid {v}", 我家住在{v}); the value passes ``checks``."""
    change_verbs: tuple[str, ...] = ()
    """Verbs that make a value the new current one ("joined", 跳槽到); a change frame
    reads "I <verb> <value>" and what comes with it ("as a product manager")."""


_HOME_WORDS = re.compile(
    r"\b(?:live[sd]?|living|moved|move|moving|relocat\w*|based|home|reside[sd]?|residing|"
    r"settled|apartment|flat|house|place)\b|住|搬|定居|安家|家在|生活|房子|房租|租房|base",
    _I,
)
_WORK_WORDS = re.compile(
    r"\b(?:work\w*|jobs?|employ\w*|hired|joined|careers?)\b|工作|上班|入职|跳槽|公司|做", _I
)
_EAT_WORDS = re.compile(
    r"\b(?:vegan|vegetarian|diet|eat\w*|ate|keto|halal|meat|food|dairy|gluten)\b|吃|饮食|素|荤",
    _I,
)

# --- the words frames are composed of (read by memstrata.extract.frames) ---------------
WHO_EN = (
    r"(?:\b(?:my|our)\s+(?:(?:current|new|present|actual|real|correct|default)\s+)?|"
    r"(?:^|(?<=[,;:]\s))(?:the\s+)?)"
)
"""Who a cue belongs to in English: my / our, or nobody named at the clause start."""
WHO_ZH = r"(?:我们的|我们家的?|我家的?|我的|我|^)(?:(?:新|现在的|目前的|真正的|正确的|默认)的?)?"
"""Who a cue belongs to in Chinese: 我 / 我的 / 我家 / 我们, or the clause start."""
COPULA_EN = (
    r"(?:\s+(?:is|are)\s+(?:now\s+|actually\s+|still\s+|officially\s+)*|'s\s+|\s+should\s+"
    r"(?:be|have\s+been)\s+|\s+(?:has|have)\s+(?:been\s+)?(?:changed|updated|moved|gone\s+up|"
    r"gone\s+down|risen|dropped)\s+to\s+|\s+(?:changed|moved|went\s+up|went\s+down)\s+to\s+|"
    r"\s+is\s+(?:changing|going)\s+to\s+|\s+will\s+be\s+|\s+became\s+|\s*:\s*|\s+now\s+"
    r"(?:is\s+)?)(?:now\s+)?(?:about\s+|around\s+|roughly\s+|approximately\s+)?"
)
"""Copulas and change verbs between an English cue and its value (is, 's, changed to,
should be, now)."""
COPULA_ZH = (
    r"(?:现在|目前|如今|已经|其实|实际上|应该|应当|最新的?|也就|大概|大约|差不多|就)*"
    r"(?:是|为|在|：|:|改成了?|改为|改到|换成了?|换到|变成了?|变为|调整为|调整到|调到|更新为|更新成|"
    r"设为|设成|定为|定在|写成)(?:了)?\s*"
)
"""Copulas and change verbs between a Chinese cue and its value (是, 为, ：, 应该是,
改成, 换成, 现在是)."""
SET_VERB_EN = r"\b(?:change|update|set|switch|make)\s+my\s+"
"""An English imperative naming the new value of a cue ("change my budget to ...")."""
SET_VERB_ZH = r"把(?:我的?|我们的?)?"
"""A Chinese 把-frame naming the new value of a cue (把预算改成...)."""

# "I can eat eggs now", 我现在能吃鸡蛋了: what could not be eaten can be.
_CAN_EAT_AGAIN = (
    r"\bI\s+can\s+(?:now\s+|finally\s+|actually\s+)?(?:eat|have|drink|tolerate)\s+{v}"
    r"\s+(?:now|again|these\s+days)\b",
    r"\bI(?:'m|\s+am)\s+(?:now\s+)?(?:fine|ok|okay|able\s+to\s+eat)\s+(?:with\s+)?{v}\s+"
    r"(?:now|again)\b",
    r"我(?:现在|已经|终于|又|其实)*(?:能|可以|敢)(?:吃|喝|碰)(?:得了)?{v}了",
    r"^{v}\s+(?:is|are)\s+(?:fine|ok|okay|safe|no\s+problem)\s+(?:for\s+me\s+)?(?:now|again)\b",
    # 鸡蛋我现在可以吃了: the food first (the clause reads 我鸡蛋我..., its subject put back)
    r"^我?{v}我(?:现在|已经|终于|又|其实|也)*(?:能|可以|敢)(?:吃|喝|碰)了",
    r"我(?:现在|已经|终于|又|其实)*(?:吃|喝){v}(?:也|都)?没(?:有)?(?:问题|事)了",
)
# 我对篮球没兴趣了: what was liked or an interest is no more.
_LOST_INTEREST_ZH = r"我(?:现在|已经)*对{v}(?:已经)?(?:没|没有|不)(?:什么)?(?:兴趣|感觉)了"
_OFF_THE_LIST = (
    r"^{v}\s+(?:is|are)\s+(?:now\s+)?off\s+(?:my|the)\s+(?:list|allergy\s+list|allergies|"
    r"no-go\s+list)\b"
)
_REMOVAL_ZH_FOOD = (r"把{v}(?:从[^，。,；;！!？?]*?(?:里|中|上))?(?:去掉|删掉|删除|拿掉|划掉)",)

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
        cues=("home city", "current city", "city", "所在城市", "城市", "所在地"),
        checks=("place", "cn_place"),
        # 我现在在深圳: only a known place (我现在在开会 is no city)
        state_frames=(r"我(?:现在|目前|如今)(?:人)?在{v:cn_known_place}",),
        removal_frames=(
            r"\bI\s+(?:don't|do\s+not|no\s+longer)\s+live\s+in\s+{v}(?:\s+any\s*more)?\b",
            r"\bI(?:'ve|\s+have)?\s+moved\s+(?:away\s+from|out\s+of)\s+{v}\b",
            r"我(?:现在|已经|早就)*(?:不再|不)(?:住|生活)在{v}了",
            r"我(?:现在|已经|早就)*搬离了?{v}",
        ),
    ),
    Attribute(
        "address",
        "address",
        labels=("address", "home address", "地址", "住址", "家庭地址"),
        asks=re.compile(r"\bmy\s+(?:home\s+)?address\b|家庭?地址|住址", _I),
        states=re.compile(
            _HOME_WORDS.pattern + r"|\b(?:home\s+)?address\b(?<!delivery address)|家庭地址|住址", _I
        ),
        cues=(
            "home address",
            "street address",
            "address",
            "家庭地址",
            "家庭住址",
            "家的地址",
            "家地址",
            "住址",
            "地址",
        ),
        checks=("address", "cn_region_address"),
        state_frames=(
            r"我(?:们)?家(?:现在|目前)?(?:住在|住|在){v}",
            # 我们刚搬到了上海市徐汇区漕溪北路88号 / "We just moved to 42 Elm Street"
            r"我(?:们)?(?:刚|刚刚|已经|最近|上个月)*(?:搬到了?|搬去了?|搬进了?|住进了?){v}",
            r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?:moved|relocated)\s+(?:in)?to\s+{v}",
        ),
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
        cues=(
            "shipping address",
            "delivery address",
            "mailing address",
            "postal address",
            "收货地址",
            "送货地址",
            "快递地址",
            "收件地址",
            "配送地址",
            "邮寄地址",
        ),
        checks=("address", "cn_region_address"),
    ),
    Attribute(
        "hometown",
        "place",
        labels=("hometown", "老家", "家乡"),
        cues=("hometown", "home town", "老家", "家乡"),
        checks=("place", "cn_place"),
    ),
    Attribute(
        "budget",
        "amount",
        labels=("budget", "预算"),
        asks=re.compile(r"\bbudget\b|\bafford\b|\bhow\s+much\s+can\s+I\s+spend\b|预算", _I),
        states=re.compile(r"\b(?:budget|spend|afford|under|up\s+to)\b|预算|花|以内|不超过", _I),
        cues=("total budget", "budget", "预算上限", "总预算", "预算"),
        checks=("money", "money"),
    ),
    Attribute(
        "employer",
        "org",
        labels=("employer", "company", "公司", "单位"),
        asks=re.compile(
            r"\bwhere\s+do\s+I\s+work\b|\bmy\s+(?:job|employer|company|profession)\b|"
            r"\bwhat\s+do\s+I\s+do\s+for\s+(?:a\s+)?(?:living|work)\b|\bwho\s+do\s+I\s+work\b|"
            r"\b(?:current|new|present)\s+(?:job|role|position|employer|occupation)\b|"
            r"\bwhich\s+(?:company|firm|employer)\b|"
            r"在哪(?:里|儿|家\s*(?:公司|company|单位))?\s*(?:工作|上班)|做什么工作|什么工作|"
            r"(?:我的(?:工作|职业)|职业)(?!规划|生涯|发展|培训|技能|压力)",
            _I,
        ),
        states=_WORK_WORDS,
        asked_with=("job",),
        cues=("employer", "company", "公司", "单位", "东家"),
        state_frames=(
            r"\bI(?:'ve)?\s+(?:just\s+|finally\s+|recently\s+)?(?:got|landed|found|took|accepted)\s+"
            r"(?:a\s+|an\s+)?(?:new\s+)?(?:job|position|role|offer)\s+(?:as\s+(?:an?\s+)?"
            r"[\w\s'-]{1,40}?\s+)?(?:at|with|from)\s+{v}",
            # A move or a start made for a job names its employer ("moved to Denver for a
            # job at X"); so does the work itself done for one ("been driving for X").
            r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?:moved|relocated|came)\b[^,.;!?]{0,40}?"
            r"\bfor\s+(?:a|the|my)\s+(?:new\s+)?(?:job|position|role)\s+(?:at|with)\s+{v}",
            r"\bI(?:'ve|\s+have)?\s+been\s+(?:working|driving|delivering|nursing|teaching|coding|"
            r"consulting|contracting|writing|designing|engineering|cooking|flying)\s+for\s+{v}",
        ),
        change_verbs=(
            r"joined",
            r"started\s+(?:working\s+)?(?:at|with|for)",
            r"went\s+to\s+work\s+(?:at|for)",
            r"加入了?",
            r"入职了?",
            r"跳槽(?:到|去)了?",
            r"换到了?",
            r"去了",
        ),
        checks=("org_proper", "cn_org"),
        removal_frames=(
            r"\bI(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:left|quit)\s+"
            r"(?:my\s+job\s+at\s+)?{v}(?=\s+(?:and|to|for|last|this|in|after|a)\b|\s*[,.;!?]|$)",
            r"\bI\s+(?:no\s+longer|don't|do\s+not)\s+work\s+(?:at|for)\s+{v}(?:\s+any\s*more)?\b",
            r"我(?:已经|刚|刚刚|上个月|去年)*从{v}(?:离职|辞职|出来|跳槽)",
            r"我(?:已经|刚|刚刚|上个月|去年)*(?:离开了|辞掉了){v}(?:的工作)?",
            r"我(?:已经|现在)*不(?:再)?在{v}(?:工作|上班)了",
        ),
    ),
    Attribute(
        "job",
        "job",
        labels=("job", "occupation", "工作", "职业"),
        states=_WORK_WORDS,
        cues=(
            "job title",
            "job",
            "occupation",
            "profession",
            "role",
            "position",
            "职业",
            "职位",
            "岗位",
            "工作",
        ),
        checks=("job_noun", "cn_job_noun"),
        state_frames=(
            r"\bI(?:'ve)?\s+(?:just\s+|finally\s+|recently\s+)?(?:got|landed|found|started|took|"
            r"accepted)\s+(?:a\s+|an\s+|my\s+)?(?:new\s+)?(?:job|position|role|gig|offer)\s+as\s+"
            r"(?:an?\s+|the\s+)?{v}",
            r"我(?:刚|刚刚|已经|最近|终于)*(?:找到了|找了|换了|得到了|拿到了)(?:一份|份)?{v}的(?:新)?"
            r"(?:工作|offer|职位)",
            r"\bI\s+(?:now\s+|currently\s+|still\s+)?teach\s+{v:taught}(?=\s+(?:at|in|for|to)\b|\s+these"
            r"\s+days|\s+now|\s*[,.;!?]|$)",
            r"我(?:现在|目前)?(?:在[^，。,；;！!？?]{1,12}?)?教{v:taught}",
        ),
        removal_frames=(
            r"\bI(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(?:an?\s+)?{v}\s+any\s*more\b",
            r"\bI(?:'m|\s+am)\s+no\s+longer\s+(?:an?\s+)?{v}\b",
            r"\bI\s+(?:stopped|quit)\s+(?:working\s+as|being)\s+(?:an?\s+)?{v}\b",
            r"我(?:现在|已经)*(?:不再|不)(?:是|当|做)(?:一名|一个|个)?{v}了",
        ),
    ),
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
        cues=("diet", "饮食", "饮食习惯"),
        checks=("diet_word", "diet_word"),
        state_frames=(
            r"\bI(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:doing|on|trying)\s+(?:the\s+|a\s+)?{v}",
            r"我(?:现在|最近|一直|开始|改)*(?:在|是|成了|为)?(?:吃|搞|做|坚持)?{v}",
        ),
        removal_frames=(
            r"\bI(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(?:an?\s+)?(?:strict\s+)?{v}\b",
            r"\bI\s+(?:stopped|quit)\s+being\s+(?:an?\s+)?{v}\b",
            r"\bI(?:'ve|\s+have)?\s+(?:stopped|quit|given\s+up|gave\s+up)\s+(?:being\s+|my\s+|the\s+)?"
            r"{v}(?:\s+diet)?\b",
            r"\bI\s+(?:don't|do\s+not|no\s+longer)\s+(?:eat\s+|follow\s+(?:an?\s+)?|keep\s+)?{v}"
            r"(?:\s+diet)?\s+any\s*more\b",
            r"\bI\s+no\s+longer\s+(?:eat\s+|follow\s+(?:an?\s+)?|keep\s+)?{v}(?:\s+diet)?\b",
            r"我(?:现在|已经|早就|也)*(?:不再|不)(?:是)?(?:一个|一名|个)?{v}了",
            r"我(?:现在|已经|早就|也)*不再(?:是)?(?:一个|一名|个)?{v}",
        ),
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
        cues=("date of birth", "birthday", "bday", "出生日期", "生日"),
        checks=("date", "date"),
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
        state_frames=(r"我(?:现在|目前|其实)*只对{v}过敏",),
        removal_frames=(*_CAN_EAT_AGAIN, _OFF_THE_LIST),
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
    Attribute(
        "name",
        "person",
        labels=("name", "名字"),
        cues=("full name", "first name", "name", "名字", "姓名"),
        checks=("name", "cn_name"),
    ),
    Attribute(
        "age", "count", labels=("age", "年龄", "岁"), cues=("age", "年龄"), checks=("age", "age")
    ),
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
        removal_frames=(
            r"\bI(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(?:really\s+|so\s+)?(?:into|keen\s+on|crazy\s+"
            r"about|obsessed\s+with|hooked\s+on)\s+{v}(?=\s+any\s*more\b|\s*[,.;!?]|$)",
            r"\bI\s+(?:don't|do\s+not|no\s+longer)\s+(?:really\s+)?(?:enjoy|love)\s+{v}\s+any\s*more\b",
            r"\bI(?:'m|\s+am)\s+(?:over|done\s+with|kind\s+of\s+over)\s+{v}(?=\s+now\b|\s*[,.;!?]|$)",
            r"我(?:现在|已经)*(?:不再|不|没那么)(?:爱|迷|热衷于?|沉迷于?){v}了",
            _LOST_INTEREST_ZH,
        ),
    ),
    Attribute(
        "dislikes",
        "text",
        multi_valued=True,
        labels=("dislike", "hate", "不喜欢", "讨厌"),
        aliases=("不喜欢",),
    ),
    Attribute("prefers", "text", labels=("prefer", "更喜欢", "偏好")),
    Attribute(
        "interests",
        "text",
        multi_valued=True,
        labels=("hobby", "爱好"),
        aliases=("爱好",),
        # Taking up a pastime (迷上了钓鱼) makes it an interest.
        state_frames=(
            r"我(?:最近|现在|今年|开始|也)*(?:迷上了|爱上了|沉迷于|痴迷于|热衷于)(?:玩|打|学)?{v}",
        ),
        removal_frames=(
            r"\bI(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(?:really\s+)?interested\s+in\s+{v}"
            r"(?=\s+any\s*more\b|\s*[,.;!?]|$)",
            _LOST_INTEREST_ZH,
        ),
    ),
    Attribute("health", "condition", multi_valued=True, labels=("health", "健康", "病")),
    Attribute(
        "avoids",
        "food",
        multi_valued=True,
        labels=("avoid", "don't eat", "不吃", "忌口"),
        asks=re.compile(
            r"\b(?:do|should|must)\s+I\s+(?:need\s+to\s+|have\s+to\s+)?(?:avoid|stay\s+away)\b|"
            r"\bI\s+(?:need|have)\s+to\s+avoid\b|\bwhat\s+can't\s+I\s+eat\b|"
            r"我不能吃什么|我(?:有)?什么忌口|我忌口|我不吃什么",
            _I,
        ),
        asked_with=("allergies",),
        states=_EAT_WORDS,
        checks=("food", "food"),
        state_frames=(
            r"\bI\s+(?:try\s+to\s+|always\s+|generally\s+|strictly\s+)?(?:avoid|stay\s+away\s+from|"
            r"steer\s+clear\s+of|keep\s+away\s+from)\s+{v}",
            r"\bI\s+(?:can't|cannot|can\s+not|shouldn't|mustn't|am\s+not\s+allowed\s+to|"
            r"(?:don't|do\s+not|no\s+longer)\s+(?:eat|drink|have|touch))\s+(?:have|eat|drink|tolerate|"
            r"handle|digest)?\s*{v}",
            r"我(?:现在|平时|一直|也|还|都|已经|根本|从来)*(?:不能|不可以|不敢|不宜|吃不了|喝不了|忌口|"
            r"不碰)(?:吃|喝)?{v}",
        ),
        removal_frames=(
            *_CAN_EAT_AGAIN,
            r"\bI(?:'ve|\s+have)?\s+(?:re)?(?:started|begun|began)\s+(?:eating|drinking)\s+{v}"
            r"(?=\s+again\b|\s*[,.;!?]|$)",
            r"\bI\s+(?:eat|drink)\s+{v}\s+again\b",
            r"\bI(?:'m|\s+am)\s+(?:eating|drinking)\s+{v}\s+again\b",
            r"我(?:现在|已经|又|重新)*开始(?:吃|喝){v}了",
            r"我(?:现在|已经)*又(?:吃|喝|开始吃|开始喝){v}了",
            *_REMOVAL_ZH_FOOD,
        ),
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


def first_person(question: str) -> bool:
    """Whether ``question`` speaks of the user (I, my, we, 我...): only then does it ask
    about the user's own attributes."""
    return bool(_FIRST_PERSON.search(question))


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
            r"baking|potluck)\b|吃|餐厅|饭|菜|外卖|零食|食谱|做饭|点餐|馆子|早餐|午餐|晚餐|夜宵|聚餐|"
            r"三餐|饮食|甜品|餐",
            _I,
        ),
        ("allergies", "diet", "avoids", "health", "city"),
    ),
    Need(
        "travel",
        re.compile(
            r"\b(?:trip|travel\w*|flights?|fly|flying|hotels?|vacation|holiday|book(?:ing)?\s+a|"
            r"itinerary|ticket|airport|commute|getaway|get\s+to)\b|"
            r"出行|旅行|旅游|机票|航班|酒店|出差|订票|行程|度假|高铁|机场|通勤|打车",
            _I,
        ),
        ("budget", "city", "schedule"),
    ),
    # Going out where the user lives: what their body allows and who comes along.
    Need(
        "outing",
        re.compile(
            r"\b(?:tour|outing|day\s+out|things\s+to\s+do|go\s+out|weekend|hike|hiking|"
            r"near\s+me|nearby|around\s+here)\b|"
            r"去哪玩|出去玩|哪里玩|带家人|带孩子|周末|逛|附近|爬山",
            _I,
        ),
        ("health", "allergies", "children_count", "children", "city"),
    ),
    # Exercise fits the user's body and hours (a night shift, a bad knee).
    Need(
        "fitness",
        re.compile(
            r"\b(?:gym|workout|fitness|yoga|pilates|exercise|training)\b|健身|锻炼|瑜伽|运动", _I
        ),
        ("health", "job", "schedule", "city"),
    ),
    # A home to rent or buy: what it may cost, where the user lives and works.
    Need(
        "housing",
        re.compile(
            r"\b(?:rent(?:al)?|apartment|flat\s+to|house\s+hunting|place\s+to\s+live|"
            r"move\s+house|lease)\b|租房|房子|租个|找房|公寓|搬家",
            _I,
        ),
        ("budget", "city", "employer"),
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


def normal_value(attribute: str, value: str) -> str:
    """``value`` in the normal form of ``attribute``'s value type ("eat pork" and
    "pork" are one avoided food; an attribute not in the registry compares as text)."""
    found = by_name(attribute)
    return normal(found.value_type if found is not None else "text", value)


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
