"""Patterns for where the user lives and gets things: ``city``, ``address`` and
``delivery_address`` (English and Chinese), in one module so one place decides them.

* ``city``: "I live in X", 我住在X, and the everyday phrasings ("Home is Leeds these
  days", "I'm based out of Melbourne", 目前人在广州, 我家在南京); a move writes the same
  attribute as "I live in", so it supersedes the old city;
* ``address``: where the user lives, as a street address ("I live at 1600 Walnut
  Avenue", 我家地址是北京市朝阳区建国路88号, 新家在通州区新华大街20号);
* ``delivery_address``: where things are sent ("My shipping address is ...", "Please
  ship it to ...", 收货地址：..., 快递寄到..., 送货地址改为...); a new one supersedes
  the old one like a move does. Someone else's (我妈的收货地址, "my sister's shipping
  address") is none of the user's.

An address value runs to the end of its sentence (English addresses hold commas),
less a trailing "instead" / "please" / ", not my old address"; the value checks in
:mod:`memstrata.extract.values` (``address``, ``cn_address``) keep only what looks
like a street address (a number and a street word, 路 / 号 / 栋 ...). The frames of
:mod:`memstrata.extract.frames` read the registry's cues for the rest (我的收货地址是
北京市朝阳区, 我家住在北京市朝阳区望京).
"""

from __future__ import annotations

from memstrata.attributes.words import CN_OTHERS
from memstrata.extract.patterns import (
    ADV,
    CN_ADV,
    CN_END,
    CN_ME,
    CN_NEG,
    CN_VAL,
    CN_WE,
    END,
    IM_ADV_NEG,
    NEG,
    VAL,
    FactPattern,
    cn,
    en,
)

# --- building blocks: who moves, where a place or an address ends --------------------------
_SUBJECT_EN = (
    r"\b(?:I|we|my\s+(?:family|wife|husband|partner|kids|husband|fianc[eé]e?)\s+and\s+I)"
    r"(?:'ve|\s+have)?\s+"
)
_PLACE_END = (
    r"(?=\s*(?:[,.;:!?。，；！？()\"]|\s-\s|$)|\s+(?:and|but|because|since|so|though|now|"
    r"these\s+days|for|last|this|in|over|during|with|after|a\s+(?:few|couple)|two|three|"
    r"about|almost|nearly|ago|recently)\b)"
)
_CAP_PLACE = r"(?-i:(?P<v>[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3}|[\u4e00-\u9fff]{2,8}))"
_ADDR = r"(?P<v>[^.;!?。；！？]{4,120}?)"
_ADDR_END = (
    r"(?=\s*,?\s*(?:not\s+(?:my|the|to)\b|instead\b|please\b|from\s+now\s+on\b|thanks?\b|"
    r"thank\s+you\b|going\s+forward\b)|\s*(?:[.;!?。；！？]|$))"
)
_CN_ADDR = r"(?P<v>[^。；！？;!?]{4,80}?)"
_CN_ADDR_END = r"(?=(?:吧|哦|啊|呀|就行|就好|就可以|谢谢)?(?:[。；！？;!?]|$))"
_CN_NOT_OTHERS = r"(?<![他她它])(?<!(?<!我)的)"
# --- where the user lives ------------------------------------------------------------------
_LIVE_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+",
    ADV,
    NEG,
    ADV,
    r"(?:been\s+)?(?:live|lived|living|reside|resided|residing)s?\s+in\s+",
    VAL,
    END,
)
_BASED_EN = en(*IM_ADV_NEG, r"(?:living|based|located|settled)\s+in\s+", VAL, END)
_MOVED_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+",
    ADV,
    NEG,
    ADV,
    r"(?:moved|relocated)\s+(?:back\s+)?to\s+",
    VAL,
    END,
)
_MOVED_INTO_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+",
    ADV,
    r"(?:moved|relocated)\s+into\s+(?:a|an|our|my|the)\s+[\w\s-]{1,40}?\s+in\s+",
    VAL,
    END,
)
_LIVE_CN = cn(
    r"(?:",
    CN_WE,
    r"|",
    CN_ME,
    r")",
    CN_ADV,
    CN_NEG,
    CN_ADV,
    r"(?:居住在|定居在|住在|定居|搬家到了|搬家到|搬家去了|搬家去|搬到了|搬到|搬去了|搬去|"
    r"搬回了|搬回|移居到了|移居到|移居|迁居到|迁到了|迁到|住)",
    CN_VAL,
    CN_END,
)
_RETURN_CN = cn(
    CN_ME,
    CN_ADV,
    r"回(?:到)?了?(?:老家)?(?P<v>[^，。,.;；!！?？、\s]{1,12}?)(?:定居|生活|住|安家|发展)",
)
_LIVE_IN_CN = cn(
    CN_ME, CN_ADV, CN_NEG, CN_ADV, r"在(?P<v>[^，。,.;；!！?？、\s]{1,20}?)(?:生活|定居|安家)"
)
# --- where the user lives, in everyday phrasings -------------------------------------------
_BEEN_IN_EN = en(
    r"(?:^|(?<=[,;:]\s)|\b(?:I|we)(?:'ve|\s+have)\s+)(?:been|lived)\s+in\s+",
    _CAP_PLACE,
    r"\s+(?:since|for|my\s+whole\s+life|all\s+my\s+life)\b",
)
_WHERE_WE_LIVE_EN = en(
    r"^", _CAP_PLACE, r"\s+is\s+where\s+(?:I|we)\s+(?:now\s+)?(?:live|are\s+based)\b"
)
_RESIDENTS_EN = en(
    r"\b(?:I(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:now\s+)?(?:an?\s+)?",
    _CAP_PLACE,
    r"\s+residents?\b",
)
_BOUGHT_HOME_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|finally\s+)?(?:bought|rented|found|got|leased)\s+"
    r"(?:a|an|our|my)\s+(?:new\s+)?(?:house|flat|apartment|place|home|condo)\s+in\s+",
    _CAP_PLACE,
    _PLACE_END,
)
_BEEN_LIVING_EN = en(
    r"(?:^|(?<=[,;:]\s))(?:I've\s+|we've\s+)?been\s+(?:living|based)\s+in\s+",
    VAL,
    _PLACE_END,
)
_HOME_IS_EN = en(
    r"(?:^|(?<=[,;:]\s))(?:my\s+|our\s+)?home(?:\s+for\s+(?:me|us))?(?:\s+(?:these\s+days|now|"
    r"nowadays|right\s+now))?\s+(?:is|has\s+been)\s+"
    r"(?:now\s+|still\s+)?(?:in\s+)?",
    _CAP_PLACE,
    _PLACE_END,
)
_IS_HOME_EN = en(
    r"^",
    _CAP_PLACE,
    r"\s+(?:is|has\s+been)\s+(?:now\s+|still\s+)?(?:my|our)?\s*home\b",
)
_CALLED_HOME_EN = en(
    r"\b(?:I|we|(?:our|my)\s+family)(?:'ve|\s+have)?\s+",
    ADV,
    r"(?:call|called|calls)\s+",
    _CAP_PLACE,
    r"\s+home\b",
)
_BASED_OUT_EN = en(
    r"\b(?:I(?:'m|\s+am)|we(?:'re|\s+are))\s+", ADV, r"based\s+(?:out\s+of|in)\s+", VAL, _PLACE_END
)
_SETTLED_EN = en(
    _SUBJECT_EN,
    ADV,
    r"(?:ended\s+up\s+(?:settling|living|staying)|packed\s+up\s+and\s+(?:moved|headed|went)|"
    r"settled|ended\s+up|landed|made\s+the\s+move|"
    r"moved\s+over|relocated\s+over)\s+"
    r"(?:down\s+)?(?:in|to)\s+",
    VAL,
    _PLACE_END,
)
_MADE_MOVE_EN = en(
    r"(?:^|(?<=[,;:]\s)|\b(?:I|we)(?:'ve|\s+have)?\s+)",
    ADV,
    r"(?:made\s+the\s+(?:big\s+)?move|moved|relocated)\s+(?:over\s+|back\s+|out\s+|down\s+|"
    r"up\s+|across\s+)?to\s+",
    VAL,
    _PLACE_END,
)
_NEW_PLACE_EN = en(
    r"\b(?:our|my)\s+new\s+(?:place|flat|apartment|house|home|condo)\s+in\s+",
    _CAP_PLACE,
    _PLACE_END,
)
_IM_IN_NOW_EN = en(
    r"\b(?:I(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:now\s+)?in\s+",
    _CAP_PLACE,
    r"\s+(?:now|these\s+days|for\s+good)\b",
)
_CLEFT_LIVE_EN = en(r"\bit(?:'s|\s+is)\s+", _CAP_PLACE, r"\s+(?:where|that)\s+(?:I|we)\s+live\b")
_LIVE_CN_MORE = cn(
    r"(?:",
    CN_WE,
    r"|",
    CN_ME,
    # 我们一家搬到X, 我们家搬到X; 我们家邻居搬到X is the neighbour's move
    rf")(?:(?!{CN_OTHERS})[^，。,.;；!！?？\s]){{0,6}}?(?:搬来了|搬来|搬回了|搬回|留在了|留在|待在|"
    r"呆在|扎根在|扎根|落户在|落户|定居在了|定居|搬家到了|搬家到|搬到了|搬到|搬去了|搬去)(?:老家)?",
    CN_VAL,
    CN_END,
)
_PERSON_IN_CN = cn(
    r"(?:^|我|[，,])(?:现在|目前|如今)?(?:人|本人|我)在(?P<v>[\u4e00-\u9fff]{2,6}?)(?:$|[，。,.!！]|了|呢|啊)"
)
# 我家在X; a new home announced on its own (搬家总算搞定了，新家在X) is the user's too,
# 他的新家在X is not (的 before it).
_HOME_IN_CN = cn(
    r"(?:(?:我们|我)(?:的)?(?:新)?|(?:^|(?<=[，,。！!；;]))新)家(?:现在|目前)?(?:在|住在|安在)(?P<v>[\u4e00-\u9fff]{2,6}?)(?=$|[，。,.!！；]|了|呢|啊|住)"
)
_STAYED_IN_CN = cn(
    r"(?:",
    CN_WE,
    r"|",
    CN_ME,
    r")",
    CN_ADV,
    r"在(?P<v>[^，。,.;；!！?？、\s]{2,8}?)(?:待了|呆了|漂了|住了|生活了|工作生活|安顿|落脚|扎根|"
    r"买了房|买房|租了房|租房|安家)",
)
_LIVE_WHERE_CN = cn(r"我(?:现在)?住的(?:地方|城市)?是(?P<v>[\u4e00-\u9fff]{2,8}?)", CN_END)
_BASE_CN = cn(r"(?:base|Base|BASE)\s*在(?P<v>[\u4e00-\u9fffA-Za-z]{2,12}?)", CN_END)
_RELOCATE_CN = cn(
    r"(?:relocate|move|moved|relocated)\s*(?:到|去)了?(?P<v>[\u4e00-\u9fffA-Za-z]{2,12}?)", CN_END
)
# --- addresses -----------------------------------------------------------------------------
_LIVE_AT_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+", ADV, r"(?:live|lived|living|reside)\s+at\s+", _ADDR, _ADDR_END
)
_PLACE_AT_EN = en(
    r"\b(?:our|my)\s+(?:place|house|home|flat|apartment)\s+is\s+(?:at\s+)?", _ADDR, _ADDR_END
)
_UPDATE_DELIVERY_EN = en(
    r"\b(?:update|change|set|switch)\s+(?:my|our|the)\s+(?:shipping|delivery|mailing)\s+"
    r"address\s+to\s*:?\s*",
    _ADDR,
    _ADDR_END,
)
_SHIP_TO_EN = en(
    r"(?:^|(?<=[,;:]\s)|(?<=\bplease\s)|(?<=\bjust\s))(?:please\s+)?(?:ship|send|deliver|mail|"
    r"post)\s+(?:it|them|this|that|everything|(?:my|the|all\s+my)\s+(?:orders?|packages?|"
    r"parcels?|stuff|deliveries))?\s*to\s+(?:my\s+\w+\s*:\s*)?",
    _ADDR,
    _ADDR_END,
)
_DELIVER_TO_EN = en(
    r"(?:^|(?<=[,;:]\s))(?:please\s+)?deliver\s+to\s+(?:my\s+\w+\s*:\s*)?", _ADDR, _ADDR_END
)
_FOR_DELIVERIES_EN = en(
    r"\bfor\s+(?:deliveries|shipping|packages|parcels),?\s+(?:please\s+)?use\s+", _ADDR, _ADDR_END
)
_DELIVERY_CN = cn(
    _CN_NOT_OTHERS,
    r"(?<![他她它]\s)(?<!(?<!我)的\s)",
    # The label in English inside a Chinese sentence too (Shipping address 改成X了).
    r"(?:(?:收货|送货|配送|邮寄|快递|寄件|收件)地址|\b(?:[Dd]elivery|[Ss]hipping|[Mm]ailing)\s*"
    r"address)[^，。,\d：:a-zA-Z]{0,8}?(?:是|为|写|填|：|:|成|到)\s*",
    _CN_ADDR,
    r"(?:了)?",
    _CN_ADDR_END,
)
_DELIVERY_TO_CN = cn(
    r"(?:快递|包裹|东西|外卖|货|订单|它|这个|都)?(?:帮我|请|麻烦)?(?:都)?(?:寄|送|发|邮寄|配送)(?:到|去)",
    _CN_ADDR,
    _CN_ADDR_END,
)
_DELIVERY_LATER_CN = cn(
    r"(?:寄|送|发)(?:到|去)[^，。]{0,8}[，,]\s*地址(?:是|为|：|:)\s*", _CN_ADDR, _CN_ADDR_END
)
_HOME_ADDRESS_CN = cn(
    r"(?:我(?:的)?家(?:的|庭)?地址|我(?:的)?(?:家庭)?住址|我住的地方)(?:是|在|为|：|:)\s*",
    _CN_ADDR,
    _CN_ADDR_END,
    r"|(?:我|我们)(?:的)?新家(?:在|是|地址是)\s*",
    _CN_ADDR.replace("?P<v>", "?P<v2>"),
    _CN_ADDR_END,
    r"|(?:我|我们)(?:家)?(?:现在)?住在\s*",
    _CN_ADDR.replace("?P<v>", "?P<v3>"),
    _CN_ADDR_END,
)

HOME_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(_LIVE_EN, "city", 0.9, 0.7, "place"),
    FactPattern(_BASED_EN, "city", 0.9, 0.7, "place"),
    FactPattern(_MOVED_EN, "city", 0.9, 0.7, "place"),
    FactPattern(_MOVED_INTO_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_LIVE_CN, "city", 0.9, 0.7, "cn_place"),
    FactPattern(_RETURN_CN, "city", 0.85, 0.7, "cn_place"),
    FactPattern(_LIVE_IN_CN, "city", 0.85, 0.7, "cn_place"),
    FactPattern(_BEEN_IN_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_WHERE_WE_LIVE_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_RESIDENTS_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_BOUGHT_HOME_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_BEEN_LIVING_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_HOME_IS_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_IS_HOME_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_CALLED_HOME_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_BASED_OUT_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_SETTLED_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_MADE_MOVE_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_NEW_PLACE_EN, "city", 0.8, 0.7, "place"),
    FactPattern(_IM_IN_NOW_EN, "city", 0.75, 0.7, "place"),
    FactPattern(_CLEFT_LIVE_EN, "city", 0.85, 0.7, "place"),
    FactPattern(_LIVE_CN_MORE, "city", 0.85, 0.7, "cn_place"),
    FactPattern(_PERSON_IN_CN, "city", 0.75, 0.7, "cn_known_place"),
    FactPattern(_HOME_IN_CN, "city", 0.8, 0.7, "cn_place"),
    FactPattern(_STAYED_IN_CN, "city", 0.8, 0.7, "cn_known_place"),
    FactPattern(_LIVE_WHERE_CN, "city", 0.85, 0.7, "cn_place"),
    FactPattern(_BASE_CN, "city", 0.8, 0.7, "cn_place"),
    FactPattern(_RELOCATE_CN, "city", 0.8, 0.7, "cn_place"),
    FactPattern(_LIVE_AT_EN, "address", 0.85, 0.7, "address"),
    FactPattern(_PLACE_AT_EN, "address", 0.8, 0.7, "address"),
    FactPattern(_UPDATE_DELIVERY_EN, "delivery_address", 0.9, 0.7, "address", sentence=True),
    FactPattern(_SHIP_TO_EN, "delivery_address", 0.85, 0.7, "address", sentence=True),
    FactPattern(_DELIVER_TO_EN, "delivery_address", 0.85, 0.7, "address", sentence=True),
    FactPattern(_FOR_DELIVERIES_EN, "delivery_address", 0.85, 0.7, "address", sentence=True),
    FactPattern(_DELIVERY_CN, "delivery_address", 0.9, 0.7, "cn_address", sentence=True),
    FactPattern(_DELIVERY_TO_CN, "delivery_address", 0.8, 0.7, "cn_address", sentence=True),
    FactPattern(_DELIVERY_LATER_CN, "delivery_address", 0.85, 0.7, "cn_address", sentence=True),
    FactPattern(_HOME_ADDRESS_CN, "address", 0.85, 0.7, "cn_address", sentence=True),
)
