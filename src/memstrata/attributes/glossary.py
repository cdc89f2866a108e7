"""Terms across languages: the common allergens, foods, diets, cities, languages and the
nouns facts are stated about, each with its English and Chinese forms, so that
"peanuts" and 花生, "shellfish" and 海鲜, "Shanghai" and 上海, "dentist appointment"
and 牙医预约 are read as the same thing (the reply check, :mod:`memstrata.decision`).

A term may *cover* narrower ones (shellfish covers shrimp, crab and lobster; dairy
covers milk and cheese): an allergy to shellfish is an allergy to shrimp. The
attribute registry's labels in both languages (budget / 预算, birthday / 生日) are
terms too, read from :mod:`.registry`, so an attribute is named in one place.

Matching is by whole word in English (a plural ``s``/``es`` agrees; ``peanut-free``
names no peanut) and by the longest form in Chinese (龙虾 is lobster, not 虾).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memstrata.attributes.registry import ATTRIBUTES

__all__ = ["TERMS", "Term", "concepts", "english_stems", "find", "related", "same_city"]


@dataclass(frozen=True, slots=True)
class Term:
    """One thing, named in English and Chinese."""

    key: str
    """Its English name (what the term is called in findings)."""
    kind: str
    """food, diet, city, language, topic (a noun facts are stated about), verb, or
    attribute (a registry entry's labels)."""
    en: tuple[str, ...]
    zh: tuple[str, ...]
    covers: tuple[str, ...] = ()
    """Keys of the narrower terms it includes."""


def _t(key: str, kind: str, en: str, zh: str, covers: str = "") -> Term:
    """A term from ``|``-separated forms (keeps the table short); the key is a form."""
    forms = tuple(f for f in (key, *en.split("|")) if f)
    return Term(
        key,
        kind,
        tuple(dict.fromkeys(forms)),
        tuple(f for f in zh.split("|") if f),
        tuple(c for c in covers.split("|") if c),
    )


_FOODS = (
    _t("nut", "food", "nuts", "坚果", "tree nut|peanut"),
    _t(
        "tree nut",
        "food",
        "tree nuts",
        "树坚果",
        "walnut|almond|cashew|pistachio|hazelnut|pecan|macadamia",
    ),
    _t("peanut", "food", "groundnut|peanut butter", "花生|花生米|花生酱"),
    _t("walnut", "food", "", "核桃"),
    _t("almond", "food", "", "杏仁|巴旦木"),
    _t("cashew", "food", "", "腰果"),
    _t("pistachio", "food", "", "开心果"),
    _t("hazelnut", "food", "", "榛子"),
    _t("pecan", "food", "", "碧根果"),
    _t("macadamia", "food", "", "夏威夷果"),
    _t("seafood", "food", "sea food", "海鲜|海产|海产品", "shellfish|fish"),
    _t(
        "shellfish",
        "food",
        "crustacean|crustaceans|mollusc|molluscs",
        "贝类|甲壳类|贝壳类",
        "shrimp|crab|lobster|clam|oyster|mussel|scallop|crayfish",
    ),
    _t("shrimp", "food", "prawn|prawns|shrimps", "虾|虾仁|大虾|对虾|基围虾"),
    _t("crab", "food", "", "螃蟹|蟹|大闸蟹"),
    _t("lobster", "food", "", "龙虾"),
    _t("crayfish", "food", "crawfish", "小龙虾"),
    _t("clam", "food", "", "蛤蜊|花甲"),
    _t("oyster", "food", "", "生蚝|牡蛎|蚝"),
    _t("mussel", "food", "", "青口|贻贝"),
    _t("scallop", "food", "", "扇贝"),
    _t("fish", "food", "", "鱼|鱼类|鱼肉", "salmon|tuna|cod"),
    _t("salmon", "food", "", "三文鱼|鲑鱼"),
    _t("tuna", "food", "", "金枪鱼"),
    _t("cod", "food", "", "鳕鱼"),
    _t("egg", "food", "", "鸡蛋|蛋|蛋类"),
    _t("cake", "food", "", "蛋糕"),
    _t(
        "dairy",
        "food",
        "dairy products|milk products",
        "乳制品|奶制品",
        "milk|cheese|butter|yogurt|cream|ice cream",
    ),
    _t("milk", "food", "", "牛奶|奶"),
    _t("cheese", "food", "", "奶酪|芝士|干酪"),
    _t("butter", "food", "", "黄油"),
    _t("yogurt", "food", "yoghurt", "酸奶"),
    _t("cream", "food", "", "奶油"),
    _t("ice cream", "food", "", "冰淇淋|雪糕"),
    # Lactose intolerance rules out the dairy foods.
    _t("lactose", "food", "", "乳糖", "dairy|milk|cheese|butter|yogurt|cream|ice cream"),
    _t("gluten", "food", "", "麸质|谷蛋白|面筋", "wheat|bread|pasta|flour"),
    _t("gluten-free", "diet", "gluten free", "无麸质"),
    _t("wheat", "food", "", "小麦"),
    _t("bread", "food", "", "面包"),
    _t("pasta", "food", "spaghetti", "意面|意大利面"),
    _t("flour", "food", "", "面粉"),
    _t("soy", "food", "soya|soybean|soybeans", "大豆|黄豆", "tofu|soy sauce|soy milk"),
    _t("tofu", "food", "bean curd", "豆腐"),
    _t("soy sauce", "food", "", "酱油"),
    _t("soy milk", "food", "soymilk", "豆浆"),
    _t("sesame", "food", "", "芝麻"),
    _t("mango", "food", "mangoes", "芒果"),
    _t("strawberry", "food", "strawberries", "草莓"),
    _t("kiwi", "food", "kiwifruit", "猕猴桃|奇异果"),
    _t("pineapple", "food", "", "菠萝|凤梨"),
    _t("banana", "food", "", "香蕉"),
    _t("apple", "food", "", "苹果"),
    _t("peach", "food", "peaches", "桃子|水蜜桃"),
    _t("tomato", "food", "tomatoes", "番茄|西红柿"),
    _t("cilantro", "food", "coriander", "香菜|芫荽"),
    _t("garlic", "food", "", "大蒜|蒜"),
    _t("onion", "food", "", "洋葱"),
    _t("celery", "food", "", "芹菜"),
    _t("mushroom", "food", "", "蘑菇"),
    _t("eggplant", "food", "aubergine", "茄子"),
    _t("bitter melon", "food", "bitter gourd", "苦瓜"),
    _t("durian", "food", "", "榴莲"),
    _t("chili", "food", "chilli|chilies|chillies|hot pepper", "辣椒"),
    _t("coffee", "food", "", "咖啡"),
    _t("tea", "food", "", "茶"),
    _t("alcohol", "food", "liquor", "酒精|白酒|烈酒", "beer|wine"),
    _t("beer", "food", "", "啤酒"),
    _t("wine", "food", "red wine", "红酒|葡萄酒"),
    _t("chocolate", "food", "", "巧克力"),
    _t("meat", "food", "", "肉|肉类|荤", "pork|beef|chicken|lamb|duck"),
    _t("pork", "food", "", "猪肉"),
    _t("beef", "food", "steak", "牛肉|牛排"),
    _t("chicken", "food", "", "鸡肉"),
    _t("lamb", "food", "mutton", "羊肉"),
    _t("duck", "food", "", "鸭肉|烤鸭"),
    _t("rice", "food", "", "米饭|大米"),
    _t("noodle", "food", "noodles", "面条"),
    _t("penicillin", "food", "", "青霉素|盘尼西林"),
    _t("antibiotic", "food", "antibiotics", "抗生素", "penicillin"),
    _t("aspirin", "food", "", "阿司匹林"),
    _t("ibuprofen", "food", "", "布洛芬"),
    _t("sulfa", "food", "sulfa drugs|sulfonamides", "磺胺"),
    _t("latex", "food", "", "乳胶"),
    _t("pollen", "food", "", "花粉"),
    _t("dust mite", "food", "dust mites", "尘螨"),
    _t("cat hair", "food", "cat dander", "猫毛"),
)
_DIETS = (
    _t("vegetarian", "diet", "veggie|vegetarians", "素食|吃素|素食者|素食主义者|素食主义"),
    _t("vegan", "diet", "vegans", "纯素|严格素食|纯素食|纯素食者"),
    _t("pescatarian", "diet", "pescetarian", "鱼素|海鲜素"),
    _t("halal", "diet", "", "清真"),
    _t("kosher", "diet", "", "犹太洁食"),
    _t("keto", "diet", "ketogenic", "生酮|生酮饮食"),
    _t("low-carb", "diet", "low carb", "低碳水|低碳"),
)
_CITIES = tuple(
    _t(en.split("|")[0], "city", "|".join(en.split("|")[1:]), zh)
    for en, zh in (
        ("beijing|peking", "北京"),
        ("shanghai", "上海"),
        ("guangzhou|canton", "广州"),
        ("shenzhen", "深圳"),
        ("hangzhou", "杭州"),
        ("chengdu", "成都"),
        ("chongqing", "重庆"),
        ("wuhan", "武汉"),
        ("nanjing", "南京"),
        ("xi'an|xian", "西安"),
        ("tianjin", "天津"),
        ("suzhou", "苏州"),
        ("xiamen", "厦门"),
        ("qingdao", "青岛"),
        ("changsha", "长沙"),
        ("kunming", "昆明"),
        ("dalian", "大连"),
        ("harbin", "哈尔滨"),
        ("changchun", "长春"),
        ("taiyuan", "太原"),
        ("nanchang", "南昌"),
        ("guiyang", "贵阳"),
        ("lanzhou", "兰州"),
        ("urumqi", "乌鲁木齐"),
        ("shenyang", "沈阳"),
        ("zhengzhou", "郑州"),
        ("hefei", "合肥"),
        ("fuzhou", "福州"),
        ("jinan", "济南"),
        ("ningbo", "宁波"),
        ("sanya", "三亚"),
        ("hong kong|hongkong", "香港"),
        ("macau|macao", "澳门"),
        ("taipei", "台北"),
        ("singapore", "新加坡"),
        ("tokyo", "东京"),
        ("osaka", "大阪"),
        ("kyoto", "京都"),
        ("seoul", "首尔"),
        ("bangkok", "曼谷"),
        ("kuala lumpur", "吉隆坡"),
        ("hanoi", "河内"),
        ("london", "伦敦"),
        ("paris", "巴黎"),
        ("berlin", "柏林"),
        ("munich", "慕尼黑"),
        ("frankfurt", "法兰克福"),
        ("rome", "罗马"),
        ("milan", "米兰"),
        ("madrid", "马德里"),
        ("barcelona", "巴塞罗那"),
        ("amsterdam", "阿姆斯特丹"),
        ("zurich", "苏黎世"),
        ("vienna", "维也纳"),
        ("moscow", "莫斯科"),
        ("dubai", "迪拜"),
        ("new york|nyc", "纽约"),
        ("los angeles", "洛杉矶"),
        ("san francisco", "旧金山|三藩市"),
        ("seattle", "西雅图"),
        ("boston", "波士顿"),
        ("chicago", "芝加哥"),
        ("washington", "华盛顿"),
        ("vancouver", "温哥华"),
        ("toronto", "多伦多"),
        ("montreal", "蒙特利尔"),
        ("sydney", "悉尼"),
        ("melbourne", "墨尔本"),
        ("auckland", "奥克兰"),
    )
)
_LANGUAGES = tuple(
    _t(en.split("|")[0], "language", "|".join(en.split("|")[1:]), zh)
    for en, zh in (
        ("english", "英语|英文"),
        ("chinese", "中文|汉语|华语"),
        ("mandarin", "普通话"),
        ("cantonese", "粤语|广东话"),
        ("japanese", "日语|日文"),
        ("korean", "韩语|韩文"),
        ("french", "法语|法文"),
        ("german", "德语|德文"),
        ("spanish", "西班牙语"),
        ("russian", "俄语"),
        ("italian", "意大利语"),
        ("portuguese", "葡萄牙语"),
        ("arabic", "阿拉伯语"),
        ("thai", "泰语"),
        ("vietnamese", "越南语"),
    )
)
# Nouns facts with amounts and dates are stated about (topics of the reply check).
_TOPICS = (
    _t("rent", "topic", "", "房租|租金"),
    _t("salary", "topic", "wage|wages|paycheck", "工资|薪水|月薪|年薪|薪资|薪"),
    _t("body weight", "topic", "weight", "体重"),
    _t("flight", "topic", "", "航班|班机"),
    _t("order", "topic", "", "订单"),
    _t("discount", "topic", "", "折扣"),
    _t("loan", "topic", "", "贷款|贷"),
    _t("mortgage", "topic", "", "房贷"),
    _t("savings", "topic", "", "存款|积蓄"),
    _t("tip", "topic", "", "小费"),
    _t("appointment", "topic", "appt", "预约"),
    _t("lease", "topic", "", "租约"),
    _t("contract", "topic", "", "合同"),
    _t("dentist", "topic", "", "牙医|看牙"),
    _t("doctor", "topic", "", "医生|看病"),
    _t("meeting", "topic", "", "会议|开会"),
    _t("interview", "topic", "", "面试"),
    _t("wedding", "topic", "", "婚礼"),
    _t("anniversary", "topic", "", "纪念日"),
    _t("hotel", "topic", "", "酒店|宾馆"),
    _t("deposit", "topic", "", "押金|定金"),
    _t("tuition", "topic", "", "学费"),
    _t("surgery", "topic", "", "手术"),
    _t("checkup", "topic", "check-up", "体检"),
    _t("visa", "topic", "", "签证"),
    _t("passport", "topic", "", "护照"),
    _t("expiry", "topic", "expire|expires|expiring|expired|expiration", "到期|过期"),
    _t("job start", "topic", "new job|start date|first day at work", "入职"),
    _t("due date", "topic", "deadline", "截止日期|截止"),
    _t("exam", "topic", "", "考试"),
    _t("vacation", "topic", "holiday", "度假|假期"),
    _t("trip", "topic", "", "旅行|旅游|出行"),
    _t("concert", "topic", "", "演唱会|音乐会"),
    _t("party", "topic", "", "派对|聚会"),
    # What an amount is set aside for: a ceiling or a fund is the budget said otherwise.
    _t("budget", "topic", "ceiling|spending limit|spending cap|fund|funds", "预算|预算上限"),
    _t("daughter", "topic", "", "女儿"),
    _t("son", "topic", "", "儿子"),
    _t("birthday", "topic", "", "生日|大寿|寿辰"),
    _t("phone", "topic", "phone number|mobile|cell", "手机号|手机号码|电话|电话号码"),
    _t("membership card", "topic", "member card", "会员卡"),
    _t("parent-teacher meeting", "topic", "parent-teacher conference", "家长会"),
    _t("tax filing", "topic", "tax return|taxes", "报税"),
    _t("ielts", "topic", "", "雅思"),
    _t("renovation", "topic", "remodel|remodeling", "装修"),
    _t("insurance", "topic", "premium", "保险|保费"),
    _t("pet", "topic", "", "宠物"),
)
# Verbs a denied statement turns on (read only to match a statement across languages).
_VERBS = (
    _t("live", "verb", "lives|living|based|reside|resides|residing", "住|居住|生活|定居"),
    _t("like", "verb", "likes|love|loves|enjoy|enjoys", "喜欢|爱"),
    _t("eat", "verb", "eats|eating", "吃"),
    _t("speak", "verb", "speaks|speaking", "说|讲|会说"),
    _t("allergic", "verb", "allergy|allergies", "过敏"),
)


def _attribute_terms() -> Iterator[Term]:
    """The registry's attributes as terms: their English and Chinese labels."""
    for attribute in ATTRIBUTES:
        en = tuple(label for label in attribute.labels if label.isascii())
        zh = tuple(label for label in attribute.labels if not label.isascii() and len(label) > 1)
        if en and zh:
            # Keyed by its first English label: what an English topic calls it.
            yield Term(en[0], "attribute", en, zh)


# Employers and makes facts name (an employer, a car), read across languages.
_ORGS = tuple(
    _t(en.split("|")[0], "org", "|".join(en.split("|")[1:]), zh)
    for en, zh in (
        ("tencent", "腾讯"),
        ("netease", "网易"),
        ("alibaba|alibaba group", "阿里巴巴|阿里"),
        ("baidu", "百度"),
        ("bytedance", "字节跳动|字节"),
        ("huawei", "华为"),
        ("xiaomi", "小米"),
        ("meituan", "美团"),
        ("jd|jd.com", "京东"),
        ("microsoft", "微软"),
        ("google", "谷歌"),
        ("amazon", "亚马逊"),
        ("deloitte", "德勤"),
        ("kpmg", "毕马威"),
        ("pwc|pricewaterhousecoopers", "普华永道"),
        ("ey|ernst & young", "安永"),
        ("tesla", "特斯拉"),
        ("byd", "比亚迪"),
        ("toyota", "丰田"),
        ("honda", "本田"),
        ("volkswagen|vw", "大众"),
        ("bmw", "宝马"),
        ("mercedes|mercedes-benz|benz", "奔驰"),
        ("audi", "奥迪"),
        ("nio", "蔚来"),
    )
)

TERMS: tuple[Term, ...] = (
    *_FOODS,
    *_DIETS,
    *_CITIES,
    *_LANGUAGES,
    *_TOPICS,
    *_VERBS,
    *_ORGS,
    *_attribute_terms(),
)

_EN_FORMS: dict[str, Term] = {}
_ZH_FORMS: dict[str, Term] = {}
for _term in TERMS:
    for _form in _term.en:
        _EN_FORMS.setdefault(_form.casefold(), _term)
    for _form in _term.zh:
        _ZH_FORMS.setdefault(_form, _term)
_BY_KEY = {t.key: t for t in TERMS}


def _alternation(forms: Iterator[str]) -> str:
    return "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))


_EN = re.compile(
    rf"(?<![\w'-])(?P<f>{_alternation(iter(_EN_FORMS))})(?:e?s)?(?![\w'])(?![-\s]free\b)", re.I
)
_ZH = re.compile(_alternation(iter(_ZH_FORMS)))


def _narrower() -> dict[str, frozenset[str]]:
    """Each key's narrower keys, followed through (seafood covers shrimp)."""
    out: dict[str, frozenset[str]] = {}
    for term in TERMS:
        seen: set[str] = set()
        todo = list(term.covers)
        while todo:
            key = todo.pop()
            if key not in seen:
                seen.add(key)
                todo.extend(_BY_KEY[key].covers if key in _BY_KEY else ())
        out[term.key] = frozenset(seen)
    return out


_NARROWER = _narrower()


def find(text: str, kinds: frozenset[str] | None = None) -> Iterator[tuple[int, int, Term]]:
    """Each term ``text`` names, with where it stands (English and Chinese), of the
    given kinds (all without ``kinds``)."""
    for m in _EN.finditer(text):
        term = _EN_FORMS[m["f"].casefold()]
        if kinds is None or term.kind in kinds:
            yield m.start(), m.end(), term
    for m in _ZH.finditer(text):
        term = _ZH_FORMS[m[0]]
        if kinds is None or term.kind in kinds:
            yield m.start(), m.end(), term


def concepts(text: str, kinds: frozenset[str] | None = None) -> frozenset[str]:
    """The keys of the terms ``text`` names (``peanuts`` and 花生 both ``peanut``)."""
    return frozenset(term.key for _, _, term in find(text, kinds))


def related(a: str, b: str) -> bool:
    """Whether two keys name the same thing or one covers the other (shellfish,
    shrimp); two narrower things of one kind (shrimp, crab) are not related."""
    return a == b or b in _NARROWER.get(a, ()) or a in _NARROWER.get(b, ())


def english_stems(term: Term) -> frozenset[str]:
    """The words a topic keeps for ``term``: its key's words cut to five letters (what
    :func:`memstrata.decision.claims.topic_words` keeps of an English word), so 预约,
    "appointment" and "appt" give one word."""
    return frozenset(w[:5] for w in re.split(r"[\s_-]+", term.key.casefold()) if len(w) > 1)


def same_city(a: str, b: str) -> bool | None:
    """Whether two place names are one city (Shanghai, 上海); None when either is not
    a city the glossary knows."""
    left, right = concepts(a, _CITY), concepts(b, _CITY)
    if not left or not right:
        return None
    return bool(left & right)


_CITY = frozenset({"city"})
