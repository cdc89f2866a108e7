"""Value types: how an attribute's values are normalized and told equal.

An :class:`~memstrata.attributes.registry.Attribute` names its value type; this module
says, per type, the one normal form two values are compared in (:func:`normal`) and
the surface forms a value may be stored under (:func:`variants`: a removal of
"vegetarian" must find a slot holding 吃素). The checks that decide whether a captured
phrase is a value at all are named by the registry entry (``checks``) and live with the
extractor (:mod:`memstrata.extract.values`), which reads captures, not stored values.

Pure functions over strings; no word list here is about one sentence.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "CHANNEL_WORDS",
    "DIET_CLASSES",
    "VALUE_TYPES",
    "diet_class",
    "food_object",
    "normal",
    "same",
    "variants",
]

_I = re.IGNORECASE

VALUE_TYPES: frozenset[str] = frozenset(
    [
        "place",
        "address",
        "amount",
        "date",
        "person",
        "food",
        "condition",
        "diet",
        "language",
        "channel",
        "count",
        "job",
        "org",
        "marital",
        "id",
        "text",
    ]
)
"""Every value type an attribute may name."""

# A food is what is eaten, not the eating: "eat pork" and 吃猪肉 are the food pork / 猪肉.
_EN_EAT = re.compile(
    r"^(?:eat(?:ing)?|drink(?:ing)?|have|having|consum(?:e|ing)|touch(?:ing)?|ate|drank)\s+"
    r"(?!(?:out|in|much|less|more|well|healthy|late|early|anything|something|it|that|this)\b)",
    _I,
)
# The object may be code-switched English (吃pork, 喝alcohol).
_ZH_OBJECT = r"(?=(?:[\u4e00-\u9fff]{1,10}|[A-Za-z][A-Za-z ]{0,30})$)"
_ZH_EAT = re.compile(rf"^(?:吃|喝|碰|食用|饮用){_ZH_OBJECT}")
_ZH_DOING = re.compile(rf"^(?:吃|喝|玩|看|听){_ZH_OBJECT}")
# Eating itself named by a diet word is no food (吃素 is a diet, not 素).
_ZH_DIET_EATING = frozenset({"吃素", "吃斋", "吃全素", "吃荤"})

_CHANNEL_WORDS = {
    "email": "email|e-mail|emails|e-mails|mail|邮件|电子邮件|邮箱|电邮",
    "phone": "phone|phone call|phone calls|telephone|call|calls|ring|电话|手机",
    "sms": "text|texts|text message|text messages|sms|短信",
    "wechat": "wechat|微信",
    "dingtalk": "钉钉",
    "feishu": "飞书",
    "qq": "qq",
    "whatsapp": "whatsapp",
    "telegram": "telegram",
    "slack": "slack",
    "signal": "signal",
}
CHANNEL_WORDS: dict[str, str] = {
    word: channel for channel, words in _CHANNEL_WORDS.items() for word in words.split("|")
}
"""Every word naming a contact channel, English and Chinese, to its canonical name
(微信 -> "wechat", 短信 -> "sms")."""


DIET_CLASSES: dict[str, tuple[str, ...]] = {
    "vegetarian": (
        "vegetarian",
        "veggie",
        "a vegetarian",
        "吃素",
        "吃斋",
        "素食",
        "素",
        "素食者",
        "素食主义",
        "素食主义者",
    ),
    "vegan": (
        "vegan",
        "a vegan",
        "plant-based",
        "raw vegan",
        "吃全素",
        "全素",
        "纯素",
        "纯素食者",
        "纯素食",
    ),
    "pescatarian": ("pescatarian", "pescetarian", "a pescatarian", "鱼素", "海鲜素"),
    "keto": ("keto", "生酮", "生酮饮食"),
    "halal": ("halal", "清真"),
    "kosher": ("kosher", "洁食"),
    "gluten-free": ("gluten-free", "gluten free", "无麸质", "无麸质饮食"),
    "low-carb": ("low-carb", "low carb", "低碳水", "低碳", "低碳水饮食"),
}
"""The forms of one diet, English and Chinese (the first is the canonical one)."""
_DIET_OF = {_key: name for name, forms in DIET_CLASSES.items() for _key in forms}


def _key(value: str) -> str:
    text = unicodedata.normalize("NFKC", value).casefold()
    return " ".join(text.split()).strip(" .,;:!?。，；！？")


def food_object(value: str) -> str:
    """The food ``value`` names ("eat pork" -> "pork", 吃猪肉 -> 猪肉, 吃素 stays)."""
    text = value.strip()
    if text.isascii():
        return _EN_EAT.sub("", text).strip() or text
    if text in _ZH_DIET_EATING:
        return text
    return _ZH_EAT.sub("", text) or text


def diet_class(value: str) -> str | None:
    """The canonical diet ``value`` is a form of (吃素 -> "vegetarian"), or None."""
    key = _key(value)
    return _DIET_OF.get(key) or _DIET_OF.get(re.sub(r"^(?:a|an|strict)\s+", "", key))


def normal(value_type: str, value: str) -> str:
    """The form values of ``value_type`` are compared in (case, spacing and, per
    type, what does not change the value: the eating verb of a food, the language of
    a diet)."""
    if value_type == "food":
        return _key(food_object(value))
    if value_type == "diet":
        return diet_class(value) or _key(value)
    if value_type == "channel":
        return CHANNEL_WORDS.get(_key(value), _key(value))  # 微信 is wechat
    if value_type == "text" and _ZH_DOING.match(value.strip()):
        return _key(_ZH_DOING.sub("", value.strip()))  # 喜欢吃辣 likes 辣
    return _key(value)


def same(value_type: str, one: str, other: str) -> bool:
    """Whether two values of ``value_type`` are the same value."""
    return normal(value_type, one) == normal(value_type, other)


def variants(value_type: str, value: str) -> tuple[str, ...]:
    """The surface forms a stored value equal to ``value`` may have, ``value`` first
    (a removal names each, and the write path keeps those its slot holds)."""
    found = [value.strip()]
    if value_type == "diet":
        name = diet_class(value)
        if name is not None:
            found += list(DIET_CLASSES[name])
    elif value_type == "text" and _ZH_DOING.match(value):
        found.append(_ZH_DOING.sub("", value))  # 喝咖啡 may be held as 咖啡
    elif value_type == "food":
        obj = food_object(value)
        found.append(obj)
        # A value stored before foods were read as the food ("eat meat", 吃肉).
        found.append(f"eat {obj}" if obj.isascii() else f"吃{obj}")
    return tuple(dict.fromkeys(v for v in found if v))
