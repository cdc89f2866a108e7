"""Patterns for the rest of a user's profile: age, birthday, hometown, health
(allergies, conditions, diet, things given up), family and budget, in the plain forms
and the everyday phrasings ("I follow a paleo diet", 我一吃芒果就过敏, 我们准备了两万块).

Built from the blocks of :mod:`memstrata.extract.patterns`; the value checks that
decide what a capture is (a condition or a pet, a city or an employer) live in
:mod:`memstrata.extract.values`. Attribute names (``allergies``, ``health``, ``avoids``,
``children``, ``pets`` accumulate as sets downstream; the others supersede):

* ``age`` / ``children_count``: digits; ``birthday``: the date as written;
* ``hometown``, ``budget``, ``spouse``, ``diet``, ``marital_status``;
* ``avoids``: what the user no longer or never does ("I no longer eat meat" -> meat,
  我戒烟了 -> 烟; a food is read as the food by :mod:`memstrata.extract.frames`): a
  retraction is its own fact, so it survives next to the older habit instead of
  silently deleting it.
"""

from __future__ import annotations

from memstrata.extract.lexicon import (
    ANIMALS,
    CN_ANIMALS,
    CN_CONDITION_STATES,
    DIETS,
    HEALTH_STATES,
)
from memstrata.extract.patterns import (
    ADV,
    CN_ADV,
    CN_CLAUSE_END,
    CN_END,
    CN_ME,
    CN_NAME_END,
    CN_VAL,
    END,
    I_ADV_NEG,
    IM_ADV_NEG,
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

_AMOUNT = rf"(?P<v>{AMOUNT_PATTERN})"
_CN_NUMBER = r"[\d.,]+\s*(?:万|千|百|k|K)?|[一二两三四五六七八九十百千万]+"
_CN_AMOUNT = rf"(?P<v>{AMOUNT_PATTERN}|(?:{_CN_NUMBER})(?=左右|以内|以下|上下|之内|$|[，。,.!！]))"
_COUNT = r"(?P<v>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)"
_CN_COUNT = r"(?P<v>\d{1,2}|[两二三四五六七八九十])"
_ANIMAL = alternation(ANIMALS)
# A code-switched pet is named in English (养了一只cat, 有个golden retriever).
_CN_ANIMAL = f"(?:{alternation(CN_ANIMALS)}|(?i:(?:[a-z]+ )?(?:{alternation(ANIMALS)})))"
# How many: "a", "two", "a couple of" (a count is no part of the animal).
_PET_COUNT = r"(?:an?|one|two|three|four|five|a\s+couple\s+of|a\s+few|some|several|\d+)"
# Who keeps it in Chinese: the speaker, the household (家里养了...), or nobody named at a
# clause start (the sentence's speaker goes on: 我今年45，离婚了，养了两条狗).
_CN_KEEPER = r"(?:(?:我们|我)(?:家里?)?|(?:^|(?<=[，,]))(?:家里|家中)?)"
_DIET = alternation(DIETS)
_HEALTH_STATE = alternation(HEALTH_STATES)
_NOT_NAMED = r"(?!\s+(?:named|called)\b)"
_TIME_TAIL = (
    r"(?=\s+(?:last|this|next|yesterday|today|recently|ago|in\s+\d{4}|two|three|a\s+(?:few|"
    r"couple)|\d+\s+(?:years?|months?|weeks?|days?))\b|\s*(?:[,.;:!?]|$)|\s+and\b|\s+but\b)"
)

# --- age, birthday, hometown ------------------------------------------------------------
_AGE_EN = en(
    r"\bI(?:'m|\s+am)\s+(?P<neg>not\s+)?(?:now\s+|just\s+|only\s+|actually\s+)?(?P<v>\d{1,3})"
    r"(?:\s+years?\s+old|\s*(?:yo|y/o|yrs\s+old))?"
    r"(?=\s*(?:[,.;!?]|$)|\s+(?:and|but|now|this|next|so|not|years?)\b)"
)
_TURNED_EN = en(r"\bI(?:'ve)?\s+(?:just\s+|recently\s+)?turned\s+(?P<v>\d{1,3})\b")
_BORN_EN = en(r"\bI\s+was\s+born\s+(?:on|in)\s+", VAL, END)
_FROM_EN = en(r"\bI(?:'m|\s+am)\s+(?P<neg>not\s+)?(?:originally\s+)?from\s+", VAL, END)
_GREW_UP_EN = en(r"\bI\s+(?:grew\s+up|was\s+raised|was\s+born\s+and\s+raised)\s+in\s+", VAL, END)
_AGE_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<neg>不是|并不是)?(?:是)?(?:今年)?(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})(?:周)?岁",
)
_BORN_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:是)?(?P<v>\d{4}年(?:\d{1,2}月(?:\d{1,2}[日号])?)?|\d{1,2}月\d{1,2}[日号])(?:出生|生)",
    r"|我(?:出生于|生于)(?P<v2>\d{4}年(?:\d{1,2}月(?:\d{1,2}[日号])?)?)",
)
_HOMETOWN_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<neg>不)?是(?P<v>[\u4e00-\u9fff]{2,6}?)人(?=[，。,.!！；;]|$|了|啊|呢)",
    r"|我(?:的)?老家(?:是|在)(?P<v2>[^，。,.;；!！?？、\s的]{2,10}?)(?:的)?",
    CN_CLAUSE_END,
    r"|",
    CN_ME,
    CN_ADV,
    r"(?:是)?在(?P<v3>[^，。,.;；!！?？、\s]{2,10}?)长大|",
    CN_ME,
    CN_ADV,
    r"来自(?P<v4>[^，。,.;；!！?？、\s]{2,10}?)",
    CN_END,
)


# --- health -----------------------------------------------------------------------------
_ALLERGIC_EN = en(
    *IM_ADV_NEG,
    r"(?:also\s+|severely\s+|very\s+|highly\s+|mildly\s+|deathly\s+|slightly\s+)?"
    r"allergic\s+to\s+",
    LIST_VAL,
    LIST_END,
)
_ALLERGY_EN = en(
    r"\bI\s+",
    ADV,
    r"(?:have|'ve\s+got|have\s+got|got)\s+(?:an?\s+)?(?:severe\s+|mild\s+|serious\s+|bad\s+|"
    r"slight\s+|life-threatening\s+|deadly\s+)?(?P<v>[\w-]+(?:\s+[\w-]+)?)\s+allerg(?:y|ies)\b"
    r"|\bI\s+(?:have|'ve\s+got)\s+(?:an?\s+)?allerg(?:y|ies)\s+to\s+",
    LIST_VAL.replace("?P<v>", "?P<v2>"),
    LIST_END,
)
_MY_ALLERGY_EN = en(r"\bmy\s+allerg(?:y|ies)\s+(?:is|are|include)\s+(?:to\s+)?", LIST_VAL, LIST_END)
_REACTION_EN = en(
    r"^(?P<v>[\w\s-]{1,30}?)\s+(?:makes?|gives?)\s+me\s+(?:break\s+out\s+in\s+hives|hives|"
    r"a\s+rash|an\s+allergic\s+reaction|swell\s+up)\b"
)
_CONDITION_EN = en(
    *I_ADV_NEG,
    r"(?P<how>have|'ve\s+got|have\s+got|get|got|suffer\s+from|struggle\s+with|live\s+with|"
    r"was\s+diagnosed\s+with|got\s+diagnosed\s+with|have\s+been\s+diagnosed\s+with|"
    r"'ve\s+been\s+diagnosed\s+with)\s+",
    VAL,
    END,
)
_HEALTH_STATE_EN = en(
    *IM_ADV_NEG,
    r"(?:an?\s+)?(?P<v>(?:type\s+[12]\s+)?",
    _HEALTH_STATE,
    r"|[\w-]+\s+intolerant)(?![\w-])",
)
_DIET_EN = en(
    *IM_ADV_NEG,
    r"(?:an?\s+)?(?:strict\s+)?(?P<v>",
    _DIET,
    r")(?![\w-])(?!\s+(?:food|restaurant|place|option|dish|recipe)s?\b)",
    r"|\bI(?:'ve|\s+have)\s+been\s+(?:an?\s+)?(?:strict\s+)?(?P<v3>",
    _DIET,
    r")(?![\w-])",
    r"|\bI(?:'m|\s+am)\s+(?:now\s+|currently\s+|also\s+)?on\s+an?\s+(?:strict\s+)?",
    r"(?P<v2>[\w-]+(?:\s+[\w-]+)?)\s+diet\b",
)
_DIET_SWITCH_EN = en(
    r"\b(?:I|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|now\s+)?(?:switched|moved|changed|"
    r"gone|went|turned)\s+(?:over\s+)?(?:to\s+)?(?:an?\s+)?(?:strict\s+)?(?P<v>",
    _DIET,
    r")(?![\w-])",
)
_AVOID_EN = en(
    r"\bI\s+",
    ADV,
    r"(?:no\s+longer|don't|do\s+not|dont|never|can't|cannot|can\s+not)\s+",
    ADV,
    r"(?P<v>(?:eat|drink|smoke|vape|consume|touch)\b[^,.;:!?()\"]{0,60}?)",
    END,
)
_QUIT_EN = en(
    r"\bI(?:'ve|\s+have)?\s+",
    ADV,
    r"(?:quit|gave\s+up|given\s+up|stopped|cut\s+out|kicked|ditched)\s+",
    VAL,
    _TIME_TAIL,
)
_ALLERGY_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<neg>不|没有|并不)?(?:是)?(?:对|有)?(?P<v>[^，。,.;；!！?？\s对]{1,24}?)",
    r"(?:也|都|有点|有些|很|特别|非常|严重|会)*过敏",
)
_CONDITION_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<neg>没有|没|不)?(?P<how>有|患有|患了|得了|得过|查出了|查出|确诊了|确诊|被诊断为|被诊断出|被诊断有)",
    CN_VAL,
    CN_END,
)
_CONDITION_STATE_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:经常|常常|总是|老是|一直|有点|有些|会)?(?P<v>",
    alternation(CN_CONDITION_STATES),
    r")",
)
_BLOOD_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?P<v>(?:血压|血糖|血脂|胆固醇|尿酸)(?:偏|有点|比较|很)?(?:高|低))",
    r"|我",
    CN_ADV,
    r"(?:有)?(?P<v2>[\u4e00-\u9fff]{1,6}?不耐受)",
)
_DIET_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:改|开始)?(?P<v>吃素|吃全素|吃斋)|我",
    CN_ADV,
    r"是(?:一个|一名|个)?(?P<v2>素食主义者|纯素食者|素食者|素食主义)",
)
_AVOID_CN = cn(
    CN_ME,
    CN_ADV,
    r"(?:不再|已经不|再也不|从来不|从不|不)(?P<v>(?:吃|喝|抽|碰)[^，。,.;；!！?？\s了]{1,12}?)",
    CN_END,
)
_QUIT_CN = cn(
    CN_ME,
    CN_ADV,
    r"戒(?:掉)?(?:了)?(?P<v>[^，。,.;；!！?？、\s了]{1,8}?)",
    r"(?=了|掉|已经|(?:[一二两三四五六七八九十几半\d]+)(?:个)?(?:年|月|周|天|星期|礼拜)|好久|很久|",
    r"[，。,.;；!！?？、\s]|$)",
)

# --- family -----------------------------------------------------------------------------
_IS_CALLED = r"(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|\s+goes\s+by|\s+is)\s+"
_SPOUSE_EN = en(r"\bmy\s+(?:wife|husband|spouse)", _IS_CALLED, NAME, END)
_SPOUSE_APPOS_EN = en(r"\bmy\s+(?:wife|husband|spouse)\s+(?-i:(?P<v>[A-Z][a-z]+))\b(?!')")
_MARITAL_EN = en(
    *IM_ADV_NEG,
    r"(?P<v>married|single|divorced|engaged|widowed|separated)(?![\w-])",
    r"|\bI\s+(?:just\s+|recently\s+|finally\s+)?got\s+(?P<v2>married|divorced|engaged)\b",
)
_CHILD_NAME_EN = en(
    r"\bmy\s+(?:son|daughter|kid|child|boy|girl|oldest|youngest|eldest)", _IS_CALLED, NAME, END
)
_CHILD_APPOS_EN = en(r"\bmy\s+(?:son|daughter|boy|girl)\s+(?-i:(?P<v>[A-Z][a-z]+))\b(?!')")
_CHILDREN_EN = en(
    r"\b(?:I|we)\s+(?:have|'ve\s+got|have\s+got)\s+(?P<v>(?:an?|one)\s+(?:son|daughter)"
    r"(?:\s*(?:,|and)\s*(?:an?|one)\s+(?:son|daughter))*)\b",
    _NOT_NAMED,
)
_CHILD_NAMED_EN = en(
    r"\b(?:I|we)\s+(?:have|'ve\s+got)\s+an?\s+(?:son|daughter|kid|boy|girl)\s+(?:named|called)\s+",
    NAME,
    END,
)
_CHILD_COUNT_EN = en(
    r"\b(?:(?:I|we)\s+(?:have|'ve\s+got|have\s+got)|I(?:'m|\s+am)\s+\w+\s+with)\s+",
    _COUNT,
    r"\s+(?:kids|children|sons|daughters|boys|girls)\b",
)
_PET_EN = en(
    r"\b(?:I|we)(?:'ve)?\s+",
    ADV,
    r"(?:have|'ve\s+got|have\s+got|own|got|adopted)\s+",
    _PET_COUNT,
    r"\s+(?P<v>(?:[\w-]+\s+){0,2}?(?:",
    _ANIMAL,
    r")(?:e?s)?)(?![\w-])",
    _NOT_NAMED,
    r"(?!\s+(?:allerg|hair|food|bed|toy|sitter|person)\w*)",
)
_PET_NAMED_EN = en(
    r"\b(?:I|we)\s+",
    ADV,
    r"(?:have|'ve\s+got|own|got|adopted)\s+an?\s+(?:[\w-]+\s+){0,2}?",
    _ANIMAL,
    r"\s+(?:named|called)\s+",
    NAME,
    END,
)
_PET_MY_EN = en(
    r"\bmy\s+", _ANIMAL, r"(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named)\s+", NAME, END
)
_CN_PET_NAME = r"(?P<v>[\u4e00-\u9fffA-Za-z]{1,6}?)"
_SPOUSE_CN = cn(
    r"我(?:的)?(?:老婆|妻子|太太|爱人|媳妇|老公|丈夫|先生)(?:的名字)?(?P<how>叫|名叫|是)",
    r"(?P<v>[\u4e00-\u9fffA-Za-z·]{1,6}?)",
    CN_NAME_END,
)
_MARITAL_CN = cn(
    CN_ME, CN_ADV, r"(?P<v>已婚|结婚了|结过婚了|结过婚|单身|离婚了|离婚|离异|订婚了|订婚|丧偶)"
)
_CHILD_NAME_CN = cn(
    r"我(?:的)?(?:大|小|二)?(?:儿子|女儿|孩子|闺女)(?:的名字)?(?:叫|名叫)",
    r"(?P<v>[\u4e00-\u9fffA-Za-z·]{1,6}?)",
    CN_NAME_END,
)
_CHILDREN_CN = cn(
    r"(?:我们|",
    CN_ME,
    r")",
    CN_ADV,
    r"(?:有|生了)(?P<v>(?:一个|一|个)?(?:儿子|女儿)(?:(?:和|、|跟)(?:一个|一)?(?:儿子|女儿))*)",
    r"(?![，,]?(?:叫|名叫))",
)
_CHILD_COUNT_CN = cn(
    r"(?:我们|", CN_ME, r")", CN_ADV, r"有", _CN_COUNT, r"个(?:孩子|小孩|娃|儿子|女儿)"
)
_PET_CN = cn(
    _CN_KEEPER,
    CN_ADV,
    r"(?:养了|养着|养|有)(?:一|两|三|几)?(?:只|条|个)?(?P<v>",
    _CN_ANIMAL,
    r")(?![，,]?(?:它|他|她)?(?:叫|名叫|名字叫))",
)
_PET_NAMED_CN = cn(
    r"(?:我们|我)(?:家)?",
    CN_ADV,
    r"(?:养了|养着|养|有)(?:一|两|几)?(?:只|条|个)?",
    _CN_ANIMAL,
    r"[，,]?(?:它|他|她)?(?:叫|名叫|名字叫)",
    _CN_PET_NAME,
    CN_NAME_END,
)

# --- budget -----------------------------------------------------------------------------
_BUDGET_EN = en(
    r"(?:\b(?:my|our)\s+(?:[\w-]+\s+){0,2}?|^(?:the\s+)?(?:[\w-]+\s+)?)budget"
    r"(?:\s+(?:for|on)\s+[\w\s'-]{1,30}?)?\s+(?:is|was\s+raised\s+to|has\s+gone\s+up\s+to)\s+"
    r"(?:now\s+|about\s+|around\s+|roughly\s+|only\s+|actually\s+|approximately\s+|up\s+to\s+|"
    r"under\s+|max\s+|at\s+most\s+)*",
    _AMOUNT,
)
_BUDGET_HAVE_EN = en(
    r"\bI\s+(?:have|'ve\s+got)\s+a\s+(?:[\w-]+\s+)?budget\s+of\s+(?:about\s+|around\s+|"
    r"roughly\s+|only\s+|up\s+to\s+)?",
    _AMOUNT,
)
_SPEND_EN = en(
    r"\bI\s+(?:can|could|'d\s+like\s+to|want\s+to|plan\s+to)\s+(?:only\s+)?(?:spend|afford|pay)\s+"
    r"(?:up\s+to\s+|at\s+most\s+|no\s+more\s+than\s+|about\s+|around\s+|roughly\s+)?",
    _AMOUNT,
    r"|\bI\s+(?:don't|do\s+not)\s+want\s+to\s+(?:spend|pay)\s+(?:more\s+than|over|above)\s+",
    _AMOUNT.replace("?P<v>", "?P<v2>"),
    r"|(?:^|(?<=,\s)|(?<=\bplease\s))keep\s+it\s+(?:under|below|within|to|around)\s+",
    _AMOUNT.replace("?P<v>", "?P<v3>"),
)
_BUDGET_CN = cn(
    r"(?:(?:我们|我)(?:的)?[\u4e00-\u9fff]{0,6}?|^(?:这次|这回|本次)?(?:[^\s，。我你他她们的]{1,4}的?)?)预算(?:是|有|在|大概|大约|差不多|只有|为|"
    r"改成|改为|调到|提高到|降到|一共|总共|最多)*",
    _CN_AMOUNT,
)
_SPEND_CN = cn(
    r"(?:最多|顶多|最高)(?:只能|只)?花",
    _CN_AMOUNT,
    r"|不想花(?:超过|多于)?",
    _CN_AMOUNT.replace("?P<v>", "?P<v2>"),
    r"|控制在",
    _CN_AMOUNT.replace("?P<v>", "?P<v3>"),
    r"(?:以内|之内|以下)",
)

# --- everyday phrasings: budget, diet, health, family, age ---------------------------------
_CN_NUM = r"(?:\d[\d,.]*|[一二两三四五六七八九十百千万]+)(?:\s*(?:万|千|百|k|K))?"
_CN_MONEY = (
    rf"(?P<v>{AMOUNT_PATTERN}|{_CN_NUM}(?:块钱?|元|美元|刀|欧元|英镑|港币|日元)?)"
    r"(?=左右|以内|以下|上下|之内|吧|就行|就好|$|[，。,.!！])"
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
_TURNED_CN = cn(
    CN_ME, CN_ADV, r"(?:刚|已经)?满(?P<v>\d{1,3}|[一二两三四五六七八九十]{1,3})(?:周)?岁"
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

PROFILE_PATTERNS: tuple[FactPattern, ...] = (
    FactPattern(_AGE_EN, "age", 0.85, 0.6, "age"),
    FactPattern(_TURNED_EN, "age", 0.85, 0.6, "age"),
    FactPattern(_AGE_CN, "age", 0.85, 0.6, "age"),
    FactPattern(_BORN_EN, "birthday", 0.85, 0.7, "born"),
    FactPattern(_BORN_CN, "birthday", 0.85, 0.7, "date"),
    FactPattern(_FROM_EN, "hometown", 0.8, 0.6, "place"),
    FactPattern(_GREW_UP_EN, "hometown", 0.85, 0.6, "place"),
    FactPattern(_HOMETOWN_CN, "hometown", 0.85, 0.6, "cn_hometown"),
    FactPattern(_ALLERGIC_EN, "allergies", 0.9, 0.9, "allergen", many=True),
    FactPattern(_ALLERGY_EN, "allergies", 0.9, 0.9, "allergen", many=True),
    FactPattern(_MY_ALLERGY_EN, "allergies", 0.9, 0.9, "allergen", many=True),
    FactPattern(_REACTION_EN, "allergies", 0.7, 0.9, "allergen"),
    FactPattern(_CONDITION_EN, "health", 0.8, 0.85, "condition"),
    FactPattern(_HEALTH_STATE_EN, "health", 0.85, 0.85, "object"),
    FactPattern(_DIET_EN, "diet", 0.85, 0.7, "diet"),
    FactPattern(_DIET_SWITCH_EN, "diet", 0.85, 0.7, "diet"),
    FactPattern(_AVOID_EN, "avoids", 0.8, 0.6, "avoid"),
    FactPattern(_QUIT_EN, "avoids", 0.8, 0.6, "quit"),
    FactPattern(_ALLERGY_CN, "allergies", 0.9, 0.9, "cn_allergen", many=True),
    FactPattern(_CONDITION_CN, "health", 0.8, 0.85, "cn_condition"),
    FactPattern(_CONDITION_STATE_CN, "health", 0.75, 0.85, "cn_object"),
    FactPattern(_BLOOD_CN, "health", 0.8, 0.85, "cn_object"),
    FactPattern(_DIET_CN, "diet", 0.85, 0.7, "cn_object"),
    FactPattern(_AVOID_CN, "avoids", 0.8, 0.6, "cn_object"),
    FactPattern(_QUIT_CN, "avoids", 0.8, 0.6, "cn_object"),
    FactPattern(_SPOUSE_EN, "spouse", 0.85, 0.7, "name"),
    FactPattern(_SPOUSE_APPOS_EN, "spouse", 0.75, 0.7, "name"),
    FactPattern(_MARITAL_EN, "marital_status", 0.85, 0.6, "marital"),
    FactPattern(_CHILD_NAME_EN, "children", 0.85, 0.7, "name"),
    FactPattern(_CHILD_APPOS_EN, "children", 0.75, 0.7, "name"),
    FactPattern(_CHILDREN_EN, "children", 0.8, 0.7, "kin", many=True),
    FactPattern(_CHILD_NAMED_EN, "children", 0.85, 0.7, "name"),
    FactPattern(_CHILD_COUNT_EN, "children_count", 0.85, 0.6, "count"),
    FactPattern(_PET_EN, "pets", 0.8, 0.5, "kin"),
    FactPattern(_PET_NAMED_EN, "pets", 0.85, 0.5, "name"),
    FactPattern(_PET_MY_EN, "pets", 0.85, 0.5, "name"),
    FactPattern(_SPOUSE_CN, "spouse", 0.85, 0.7, "cn_spouse"),
    FactPattern(_MARITAL_CN, "marital_status", 0.85, 0.6, "marital"),
    FactPattern(_CHILD_NAME_CN, "children", 0.85, 0.7, "cn_name"),
    FactPattern(_CHILDREN_CN, "children", 0.8, 0.7, "kin", many=True),
    FactPattern(_CHILD_COUNT_CN, "children_count", 0.85, 0.6, "count"),
    FactPattern(_PET_CN, "pets", 0.8, 0.5, "cn_object", sentence=True),
    FactPattern(_PET_NAMED_CN, "pets", 0.85, 0.5, "cn_name", sentence=True),
    FactPattern(_BUDGET_EN, "budget", 0.85, 0.7, "amount"),
    FactPattern(_BUDGET_HAVE_EN, "budget", 0.85, 0.7, "amount"),
    FactPattern(_SPEND_EN, "budget", 0.8, 0.7, "amount"),
    FactPattern(_BUDGET_CN, "budget", 0.85, 0.7, "amount"),
    FactPattern(_SPEND_CN, "budget", 0.8, 0.7, "amount"),
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
    FactPattern(_TURNED_CN, "age", 0.85, 0.6, "age"),
    FactPattern(_STAY_UNDER_EN, "budget", 0.8, 0.7, "amount"),
    FactPattern(_BUDGET_CN_MORE, "budget", 0.8, 0.7, "amount"),
)
