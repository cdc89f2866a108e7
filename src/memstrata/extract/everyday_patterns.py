"""Patterns for facts said in everyday phrasings (English and Chinese).

The patterns of :mod:`memstrata.extract.patterns` and
:mod:`memstrata.extract.profile_patterns` read the plain forms ("I live in X",
我住在X); people more often say "Home is Leeds these days", "I'm based out of
Melbourne", 目前人在广州, 我家在南京, "Shoot me an email", 还是发微信吧. This module
adds those, and the attributes the others lack:

* ``address``: where the user lives, as a street address ("I live at 1600 Walnut
  Avenue", 我家地址是北京市朝阳区建国路88号, 新家在通州区新华大街20号);
* ``delivery_address``: where things are sent ("My shipping address is ...", "Please
  ship it to ...", 收货地址：..., 快递寄到..., 送货地址改为...); a new one supersedes
  the old one like a move does. Someone else's (我妈的收货地址, "my sister's shipping
  address") is none of the user's;
* ``language``: the language the user wants answers in ("Please reply in English",
  用中文回答, 跟我说英语就好);
* ``schedule``: when the user works or is free ("I work the night shift", 我上夜班,
  我只有周末有空).

An address value runs to the end of its sentence (English addresses hold commas),
less a trailing "instead" / "please" / ", not my old address"; the value checks in
:mod:`memstrata.extract.values` (``address``, ``cn_address``) keep only what looks
like a street address (a number and a street word, 路 / 号 / 栋 ...).
"""

from __future__ import annotations

from memstrata.extract.lexicon import DIETS
from memstrata.extract.patterns import (
    ADV,
    CHANNEL_EN,
    CN_ADV,
    CN_CHANNEL,
    CN_END,
    CN_ME,
    CN_OTHERS,
    CN_VAL,
    CN_WE,
    END,
    LIST_END,
    LIST_VAL,
    NAME,
    VAL,
    FactPattern,
    alternation,
    cn,
    en,
)
from memstrata.extract.verbatim import AMOUNT_PATTERN

_WE_I = r"\b(?:I|we)(?:'ve|\s+have)?\s+"
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

# --- where the user lives ---------------------------------------------------------------
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

# --- addresses --------------------------------------------------------------------------
_ADDR = r"(?P<v>[^.;!?。；！？]{4,120}?)"
_ADDR_END = (
    r"(?=\s*,?\s*(?:not\s+(?:my|the|to)\b|instead\b|please\b|from\s+now\s+on\b|thanks?\b|"
    r"thank\s+you\b|going\s+forward\b)|\s*(?:[.;!?。；！？]|$))"
)
_MY_ADDRESS_EN = en(
    r"\b(?:my|our)\s+(?:new\s+|current\s+)?(?:home\s+|street\s+|residential\s+)?address\s+"
    r"(?:is|is\s+now|has\s+changed\s+to|changed\s+to)\s*:?\s*",
    _ADDR,
    _ADDR_END,
)
_LIVE_AT_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+", ADV, r"(?:live|lived|living|reside)\s+at\s+", _ADDR, _ADDR_END
)
_PLACE_AT_EN = en(
    r"\b(?:our|my)\s+(?:place|house|home|flat|apartment)\s+is\s+(?:at\s+)?", _ADDR, _ADDR_END
)
_MY_DELIVERY_EN = en(
    r"\b(?:my|our)\s+(?:new\s+|current\s+|default\s+)?(?:shipping|delivery|mailing|postal)\s+"
    r"address\s+(?:is|is\s+now|has\s+changed\s+to|changed\s+to)\s*:?\s*",
    _ADDR,
    _ADDR_END,
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
_CN_ADDR = r"(?P<v>[^。；！？;!?]{4,80}?)"
_CN_ADDR_END = r"(?=(?:吧|哦|啊|呀|就行|就好|就可以|谢谢)?(?:[。；！？;!?]|$))"
_CN_NOT_OTHERS = r"(?<![他她它])(?<!(?<!我)的)"
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

# --- work, diet, health, family -----------------------------------------------------------
_ORG = r"(?P<v>(?:[^,.;:!?()\"]|\.(?=\s?\w)){1,60}?)"
_DO_FOR_EN = en(r"\bI\s+", ADV, r"do\s+(?P<v>[\w-]+(?:\s+[\w-]+)?)\s+(?:for|at)\s+(?-i:[A-Z])")
_DO_FOR_ORG_EN = en(r"\bI\s+", ADV, r"do\s+[\w-]+(?:\s+[\w-]+)?\s+(?:for|at)\s+", _ORG, END)
_WORKING_AS_EN = en(r"\bI(?:'m|\s+am)\s+", ADV, r"working\s+as\s+(?:an?\s+|the\s+)?", VAL, END)
_WORKING_AT_EN = en(
    r"\bI(?:'m|\s+am)\s+", ADV, r"working\s+(?:as\s+[\w\s'-]{1,40}?\s+)?(?:at|for)\s+", _ORG, END
)
_GOT_HIRED_EN = en(
    r"\bI\s+",
    ADV,
    r"(?:got|was|just\s+got)\s+(?:hired|employed|taken\s+on)\s+(?:by|at)\s+",
    _ORG,
    END,
)
_NOW_AT_EN = en(
    r"\bI\s+(?:left|quit)\b[^.;!?]{1,60}?,?\s+(?:and\s+)?(?:I'm\s+|am\s+)?now\s+(?:at|with|"
    r"working\s+(?:at|for))\s+",
    _ORG,
    END,
)
_BY_DAY_EN = en(
    r"\b(?:by\s+day|during\s+the\s+day|for\s+a\s+living|professionally),?\s+I(?:'m|\s+am)\s+"
    r"(?:an?\s+)?",
    VAL,
    END,
)
_DO_JOB_CN = cn(
    CN_ME, CN_ADV, r"(?:是)?(?:做|搞|干)(?P<v>[\u4e00-\u9fffA-Za-z]{1,6}?)的(?=$|[，。,.!！]|啊|呢)"
)
_DO_AS_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:在[^，。,.;；!！?？、\s]{1,20}?)?(?:做|当|担任|干)(?:一名|一个|个)?",
    r"(?P<v>[\u4e00-\u9fffA-Za-z]{1,8}?)",
    CN_END,
)
_SWITCHED_JOB_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:转行|改行|转岗)(?:去)?(?:做|当|干)了?(?P<v>[\u4e00-\u9fffA-Za-z]{1,8}?)",
    CN_END,
)
_DIET_EN_MORE = en(
    r"\bI\s+",
    ADV,
    r"(?:follow|do|eat|keep)\s+(?:a\s+|an\s+)?(?:strict\s+)?(?P<v>[\w-]+(?:\s+[\w-]+)?)\s+diet\b",
    r"|\bI\s+",
    ADV,
    r"(?:only\s+)?eat\s+(?:only\s+)?(?P<v2>halal|kosher|vegan|vegetarian|organic|plant-based)\b",
    r"|\bI(?:'ve|\s+have)?\s+(?:gone|went|turned|become|switched\s+to)\s+(?:fully\s+|completely\s+|"
    r"totally\s+|strictly\s+|100%\s+)?(?P<v3>",
    alternation(DIETS),
    r")(?![\w-])",
)
_DIET_CN_MORE = cn(
    CN_ME,
    CN_ADV,
    r"(?:是)?(?:一直|只)?(?P<v>吃素|吃斋|吃全素)的",
    r"|我",
    CN_ADV,
    r"(?:只|只能)吃(?P<v2>清真|素|素食)(?:的|食品|菜)?(?=$|[，。,.!！])",
    r"|我",
    CN_ADV,
    r"(?:在|开始|改成了?|改为|换成了?|坚持|执行|采用)?(?:吃|搞|做)?",
    r"(?P<v3>[\u4e00-\u9fff]{2,6}饮食)",
    r"|我(?:是|是个|是一个)\s*(?P<v4>",
    alternation(DIETS),
    r")",
)
_ALLERGY_ADJ_EN = en(
    r"\bI(?:'ve|\s+have)?\s+(?:got\s+|have\s+)?(?:an?\s+)?(?:(?:pretty|really|very|quite|"
    r"super|bad|severe|serious|terrible|awful|nasty|mild|slight|strong|major|minor|"
    r"life-threatening)\s+){1,3}allerg(?:y|ies)\s+to\s+",
    LIST_VAL,
    LIST_END,
)
_NO_GO_EN = en(
    r"^(?P<v>[\w\s-]{1,30}?)\s+(?:are|is)\s+(?:a\s+)?(?:no-go|off-limits|off\s+limits|"
    r"a\s+no\s+go)\b[^.]*?\bI(?:'m|\s+am)\s+allergic\b(?!\s+to)"
)
_ALLERGY_TRIGGER_CN = cn(
    CN_ME,
    r"(?:一|只要)(?:吃|喝|碰|闻到?|接触|用)(?P<v>[\u4e00-\u9fff]{1,8}?)就(?:会)?(?:过敏|起疹子)",
)
_GOT_CONDITION_EN = en(r"\bI(?:'ve|\s+have)\s+got\s+(?P<how>)", VAL, END)
_BODY_CN = cn(
    r"我(?:的)?(?P<v>(?:腰椎间盘|颈椎间盘|腰椎|颈椎|腰|膝盖|半月板|韧带|肩周|胃|肝|肾|心脏)",
    r"(?:突出|劳损|炎|受过伤|不好|有问题|骨折|撕裂))",
)
_MARRIED_EN = en(
    r"\b(?:I|we|and\s+I)(?:'ve|\s+have)\s+been\s+(?P<v>married)\b",
)
_MARRIED_CN = cn(
    r"我(?:和|跟)(?:我的?)?(?:老公|老婆|丈夫|妻子|爱人|先生|太太|媳妇)?",
    r"(?P<v>结婚)(?:[\d一二两三四五六七八九十几多]+年|好多年|很多年|了)",
    r"|我(?P<v2>结婚)(?:[\d一二两三四五六七八九十几多]+年)",
)
_COUNT = r"(?P<v>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)"
_KIDS_GOT_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+got\s+", _COUNT, r"\s+(?:kids|children|sons|daughters)\b"
)
_CHILD_LITTLE_EN = en(
    r"\bmy\s+(?:little|baby|eldest|oldest|youngest|older|younger|big|teenage|teenaged)\s+"
    r"(?:son|daughter|boy|girl)\s+(?-i:(?P<v>[A-Z][a-z]+))\b(?!')"
)
_CHILDREN_NAMED_EN = en(
    r"\b(?:I|we)\s+(?:have|'ve\s+got|have\s+got)\s+(?:twin|two|three|identical\s+twin)\s+"
    r"(?:daughters|sons|kids|boys|girls|children),?\s+(?:named\s+|called\s+)?",
    r"(?-i:(?P<v>[A-Z][a-z]+(?:\s*(?:,|and)\s*[A-Z][a-z]+)+))",
)
_PET_GOT_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+got\s+an?\s+(?:[\w-]+\s+){0,2}?(?:cat|dog|puppy|kitten|beagle|"
    r"corgi|poodle|terrier|retriever|labrador|husky|parrot|rabbit|hamster|pug|spaniel|collie)"
    r"\s+(?:named|called)\s+",
    NAME,
    END,
)
_NAMES_EN = en(r"(?:^|(?<=[,!]\s))(?:the\s+)?name's\s+", NAME, END)
_TURNED_CN = cn(
    CN_ME, CN_ADV, r"(?:刚|已经)?满(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})(?:周)?岁"
)

# --- contact ----------------------------------------------------------------------------
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

# --- language and schedule ---------------------------------------------------------------
_LANGUAGES_EN = (
    r"English|Chinese|Mandarin|Cantonese|French|Spanish|German|Japanese|Korean|Italian|"
    r"Portuguese|Russian|Arabic|Dutch|Hindi|Vietnamese|Thai"
)
_LANGUAGES_CN = r"中文|汉语|普通话|粤语|英文|英语|日语|日文|韩语|韩文|法语|德语|西班牙语|俄语"
_REPLY_IN_EN = en(
    r"\b(?:reply|respond|answer|talk|speak|write|chat|text)\s+(?:to\s+me\s+|back\s+)?"
    r"(?:only\s+)?in\s+(?P<v>",
    _LANGUAGES_EN,
    r")\b",
    r"|\bI\s+(?:prefer|'d\s+prefer|would\s+prefer|'d\s+rather|like)\s+(?:to\s+(?:chat|talk|"
    r"speak|write)\s+)?in\s+(?P<v2>",
    _LANGUAGES_EN,
    r")\b",
)
_REPLY_IN_CN = cn(
    r"(?:用|说)(?P<v>",
    _LANGUAGES_CN,
    r")(?:来)?(?:跟我|和我|给我)?(?:回答|回复|答复|聊天?|交流|沟通|说|讲|写)",
    r"|(?:跟|和)我(?:说|讲|聊)(?P<v2>",
    _LANGUAGES_CN,
    r")(?:就好|就行|吧|就可以)",
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
_SHIFT_CN = cn(CN_ME, CN_ADV, r"(?:上|值|倒)(?P<v>夜班|白班|早班|晚班|中班|三班)")
_FREE_CN = cn(
    CN_ME,
    r"(?:只有|只在|一般|通常|平时|基本)?(?P<v>周末|工作日|晚上|下午|上午|早上|",
    r"周[一二三四五六日天](?:和周[一二三四五六日天])?)(?:才)?(?:有空|有时间|方便|空闲)",
)

# --- budget -----------------------------------------------------------------------------
_CN_NUM = r"(?:\d[\d,.]*|[一二两三四五六七八九十百千万]+)(?:\s*(?:万|千|百|k|K))?"
_CN_MONEY = (
    rf"(?P<v>{AMOUNT_PATTERN}|{_CN_NUM}(?:块钱?|元|美元|刀|欧元|英镑|港币|日元)?)"
    r"(?=左右|以内|以下|上下|之内|吧|就行|就好|$|[，。,.!！])"
)
_STAY_UNDER_EN = en(
    r"\b(?:stay|keep\s+(?:it|things|costs|the\s+cost|the\s+price)|be)\s+(?:well\s+)?(?:under|below|"
    r"within)\s+(?P<v>",
    AMOUNT_PATTERN,
    r")",
    r"|\bnothing\s+(?:over|above|more\s+than)\s+(?P<v2>",
    AMOUNT_PATTERN,
    r")",
    r"|\b(?:I|we)\s+can\s+(?:go|spend|do|afford)\s+(?:up\s+to|at\s+most|about|around)\s+(?P<v3>",
    AMOUNT_PATTERN,
    r")",
    r"|\b(?:I|we)(?:'ve|\s+have)?\s+(?:set\s+aside|put\s+aside|saved\s+up|earmarked)\s+(?P<v4>",
    AMOUNT_PATTERN,
    r")",
    r"|\b(?:raise|increase|bump|up|lower|cut|reduce|drop)\s+(?:the|my|our)\s+budget\s+to\s+(?P<v5>",
    AMOUNT_PATTERN,
    r")",
)
_BUDGET_CN_MORE = cn(
    r"(?:预算|budget)(?:是|有|在|大概|大约|差不多|只有|为|改成|改为|调到|提高到|加到|降到|一共|总共|最多|"
    r"不超过|不能超过|别超过|控制在|就|\s)*",
    _CN_MONEY,
    r"|(?:我们|我)(?:这次|一共)?(?:准备|预留|留|拿出|存)了(?P<v2>",
    _CN_NUM,
    r"(?:块钱?|元)?)(?=左右|$|[，。,.!！])",
    r"|^(?:[\u4e00-\u9fff]{1,6}的话[，,]\s*)?(?P<v3>",
    _CN_NUM,
    r"(?:块钱?|元))(?:左右|以内|上下)",
)

# --- preferences ------------------------------------------------------------------------
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

EVERYDAY_PATTERNS: tuple[FactPattern, ...] = (
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
    FactPattern(_MY_ADDRESS_EN, "address", 0.9, 0.7, "address"),
    FactPattern(_LIVE_AT_EN, "address", 0.85, 0.7, "address"),
    FactPattern(_PLACE_AT_EN, "address", 0.8, 0.7, "address"),
    FactPattern(_MY_DELIVERY_EN, "delivery_address", 0.9, 0.7, "address", sentence=True),
    FactPattern(_UPDATE_DELIVERY_EN, "delivery_address", 0.9, 0.7, "address", sentence=True),
    FactPattern(_SHIP_TO_EN, "delivery_address", 0.85, 0.7, "address", sentence=True),
    FactPattern(_DELIVER_TO_EN, "delivery_address", 0.85, 0.7, "address", sentence=True),
    FactPattern(_FOR_DELIVERIES_EN, "delivery_address", 0.85, 0.7, "address", sentence=True),
    FactPattern(_DELIVERY_CN, "delivery_address", 0.9, 0.7, "cn_address", sentence=True),
    FactPattern(_DELIVERY_TO_CN, "delivery_address", 0.8, 0.7, "cn_address", sentence=True),
    FactPattern(_DELIVERY_LATER_CN, "delivery_address", 0.85, 0.7, "cn_address", sentence=True),
    FactPattern(_HOME_ADDRESS_CN, "address", 0.85, 0.7, "cn_address", sentence=True),
    FactPattern(_DO_FOR_EN, "job", 0.7, 0.6, "job"),
    FactPattern(_DO_FOR_ORG_EN, "employer", 0.75, 0.6, "org_proper"),
    FactPattern(_WORKING_AS_EN, "job", 0.85, 0.6, "job"),
    FactPattern(_WORKING_AT_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_GOT_HIRED_EN, "employer", 0.85, 0.6, "org_proper"),
    FactPattern(_NOW_AT_EN, "employer", 0.8, 0.6, "org_proper"),
    FactPattern(_BY_DAY_EN, "job", 0.8, 0.6, "job_noun"),
    FactPattern(_DO_JOB_CN, "job", 0.75, 0.6, "cn_job_noun"),
    FactPattern(_DO_AS_CN, "job", 0.8, 0.6, "cn_job_noun"),
    FactPattern(_SWITCHED_JOB_CN, "job", 0.85, 0.6, "cn_job_noun"),
    FactPattern(_DIET_EN_MORE, "diet", 0.85, 0.7, "diet"),
    FactPattern(_DIET_CN_MORE, "diet", 0.85, 0.7, "cn_object"),
    FactPattern(_ALLERGY_ADJ_EN, "allergies", 0.9, 0.9, "allergen", many=True),
    FactPattern(_NO_GO_EN, "allergies", 0.8, 0.9, "allergen"),
    FactPattern(_ALLERGY_TRIGGER_CN, "allergies", 0.85, 0.9, "cn_allergen"),
    FactPattern(_GOT_CONDITION_EN, "health", 0.8, 0.85, "condition"),
    FactPattern(_BODY_CN, "health", 0.8, 0.85, "cn_object"),
    FactPattern(_MARRIED_EN, "marital_status", 0.85, 0.6, "marital"),
    FactPattern(_MARRIED_CN, "marital_status", 0.85, 0.6, "marital"),
    FactPattern(_KIDS_GOT_EN, "children_count", 0.85, 0.6, "count"),
    FactPattern(_CHILD_LITTLE_EN, "children", 0.8, 0.7, "name"),
    FactPattern(_CHILDREN_NAMED_EN, "children", 0.85, 0.7, "name", many=True),
    FactPattern(_PET_GOT_EN, "pets", 0.85, 0.5, "name"),
    FactPattern(_NAMES_EN, "name", 0.85, 0.8, "name"),
    FactPattern(_TURNED_CN, "age", 0.85, 0.6, "age"),
    FactPattern(_SHOOT_ME_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_EASIEST_EN, "contact_channel", 0.85, 0.7, "channel"),
    FactPattern(_WORKS_BETTER_EN, "contact_channel", 0.8, 0.7, "channel"),
    FactPattern(_RATHER_CHANNEL_CN, "contact_channel", 0.8, 0.7, "channel"),
    FactPattern(_REPLY_IN_EN, "language", 0.85, 0.6, "language"),
    FactPattern(_REPLY_IN_CN, "language", 0.85, 0.6, "language"),
    FactPattern(_SHIFT_EN, "schedule", 0.8, 0.5, "object"),
    FactPattern(_FREE_ON_EN, "schedule", 0.8, 0.5, "object"),
    FactPattern(_SHIFT_CN, "schedule", 0.8, 0.5, "cn_object"),
    FactPattern(_FREE_CN, "schedule", 0.8, 0.5, "cn_object"),
    FactPattern(_STAY_UNDER_EN, "budget", 0.8, 0.7, "amount"),
    FactPattern(_BUDGET_CN_MORE, "budget", 0.8, 0.7, "amount"),
    FactPattern(_MY_THING_EN, "likes", 0.75, 0.5, "preference"),
    FactPattern(_TOPIC_DISLIKE_CN, "dislikes", 0.8, 0.5, "cn_object"),
    FactPattern(_MOST_LOVE_CN, "likes", 0.8, 0.5, "cn_object"),
    FactPattern(_FAVOURITE_MIXED, "likes", 0.8, 0.5, "cn_object"),
)
"""Appended to the rule extractor's patterns; an exact duplicate of another pattern's
candidate is dropped by the extractor."""
