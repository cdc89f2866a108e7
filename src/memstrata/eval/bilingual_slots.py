"""Hand-written material of the bilingual set: the facts a user tells a companion.

Each :class:`Slot` is one kind of fact (where the user lives, a pet, an allergy...):
its values in Chinese and English, how a user says it (``say``), how a user later
asks about it (``ask``, worded apart from ``say``: other verbs, synonyms, 口语), a
short clause for two-fact questions (``part``) and, for facts that change, how the
change is told (``update``: a move, a change of mind, a correction) and asked
(``ask_now``). Templates are keyed by the language they are written in: ``zh``,
``en``, or ``mix`` (Chinese and English within one sentence).

Placeholders: ``{v}`` the value in the template's language (Chinese for ``mix``),
``{ve}`` the English value, ``{old}`` / ``{olde}`` the value being replaced.
This module holds who the user is; :mod:`memstrata.eval.bilingual_life` the rest.
Read by :mod:`memstrata.eval.bilingual_data`; the dev split draws the even-indexed
templates of each list and the test split the odd-indexed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Templates = dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class Slot:
    """One kind of fact, with its values and its phrasings per language."""

    key: str
    values: tuple[tuple[str, str], ...]
    say: Templates
    ask: Templates
    part: dict[str, str]
    update: Templates = field(default_factory=dict)
    ask_now: Templates = field(default_factory=dict)
    never_said_ok: bool = False
    """Whether "asked but never told" makes a fair unanswerable question (the
    chit-chat and the recurring events never touch this topic)."""


CITIES = (
    ("杭州", "Hangzhou"),
    ("成都", "Chengdu"),
    ("深圳", "Shenzhen"),
    ("南京", "Nanjing"),
    ("西安", "Xi'an"),
    ("厦门", "Xiamen"),
    ("武汉", "Wuhan"),
    ("青岛", "Qingdao"),
    ("苏州", "Suzhou"),
    ("长沙", "Changsha"),
    ("重庆", "Chongqing"),
    ("大连", "Dalian"),
    ("昆明", "Kunming"),
    ("天津", "Tianjin"),
)

PERSON_SLOTS: tuple[Slot, ...] = (
    Slot(
        "home_city",
        CITIES,
        say={
            "zh": (
                "我在{v}住了快五年了，已经习惯这边的节奏了。",
                "我家在{v}，每天早上挤地铁上班。",
                "说起来我现在定居在{v}，离老家挺远的。",
                "我是一个人在{v}生活，租了个小公寓。",
            ),
            "en": (
                "I've been living in {v} for almost five years now.",
                "Home for me is {v} these days, a small flat near the metro.",
                "I live in {v}, and honestly the food there is the best part.",
                "My apartment is in {v}; I moved there right after college.",
            ),
            "mix": (
                "我现在 based in {ve}，commute 还挺方便的。",
                "住在{v}的好处是 weekend 可以随便出去逛逛。",
            ),
        },
        ask={
            "zh": (
                "我住在哪个城市来着？",
                "你还记得我家在哪吗？",
                "我平时生活在哪座城市？",
                "我是在哪儿安家的？",
            ),
            "en": (
                "Which city do I live in?",
                "Where is my home these days?",
                "Remind me what city I'm based in?",
                "Where do I stay, city-wise?",
            ),
            "mix": ("我 live 在哪个 city 来着？", "Remind me 我住在哪个城市？"),
        },
        part={"zh": "我住在哪个城市", "en": "which city I live in"},
        update={
            "zh": (
                "跟你说个大消息，我上周正式搬到{v}了，再见了{old}！",
                "我已经从{old}搬走了，现在在{v}安顿下来了。",
                "搬家总算搞定了，新家在{v}，比{old}暖和多了。",
                "公司把我调到{v}了，所以我离开{old}了。",
            ),
            "en": (
                "Big news: I finally moved to {v} last week, goodbye {old}!",
                "I've left {old} behind; my new place is in {v}.",
                "The move is done - I'm settled in {v} now instead of {old}.",
                "Work relocated me, so I'm living in {v} now, not {old}.",
            ),
            "mix": (
                "终于 moved to {ve} 了，{old}的房子也退了。",
                "新家在{v}，much better than {olde}。",
            ),
        },
        ask_now={
            "zh": (
                "我现在住在哪儿？",
                "我搬家以后住在哪个城市？",
                "我目前的住处在哪座城市？",
                "我最新的常住城市是哪里？",
            ),
            "en": (
                "Where do I live now?",
                "After the move, which city am I in?",
                "What's my current city?",
                "Where did I end up moving to?",
            ),
            "mix": ("我现在 live in which city？", "搬家之后 my new city 是哪个？"),
        },
    ),
    Slot(
        "job",
        (
            ("产品经理", "product manager"),
            ("小学老师", "primary school teacher"),
            ("护士", "nurse"),
            ("前端工程师", "front-end engineer"),
            ("会计", "accountant"),
            ("摄影师", "photographer"),
            ("律师", "lawyer"),
            ("平面设计师", "graphic designer"),
            ("数据分析师", "data analyst"),
            ("餐厅厨师", "restaurant chef"),
            ("销售经理", "sales manager"),
            ("记者", "journalist"),
        ),
        say={
            "zh": (
                "我是做{v}的，最近项目特别多。",
                "我的工作是{v}，干了三年了。",
                "我在一家公司当{v}，压力不小。",
                "作为一个{v}，我每天都要跟很多人打交道。",
            ),
            "en": (
                "I work as a {v}, and this month has been hectic.",
                "My job? I'm a {v}, three years in.",
                "Being a {v} means long days, but I like it.",
                "I'm a {v} at a mid-sized company.",
            ),
            "mix": (
                "我是一个{v}，每天 meeting 开不完。",
                "做 {ve} 这行，work-life balance 很难。",
            ),
        },
        ask={
            "zh": (
                "我是做什么工作的？",
                "我的职业是什么来着？",
                "我靠什么谋生？",
                "你知道我是干哪一行的吗？",
            ),
            "en": (
                "What do I do for a living?",
                "What's my profession?",
                "Remind me what my job is?",
                "What line of work am I in?",
            ),
            "mix": ("我的 job title 是什么来着？", "What do I do for work，你还记得吗？"),
        },
        part={"zh": "我是做什么工作的", "en": "what I do for work"},
        update={
            "zh": (
                "我辞职了！下周开始去新公司当{v}，不再做{old}了。",
                "换工作了，现在是{v}，以前做{old}太累了。",
                "跟你说，我转行当{v}了。",
                "新工作定了：{v}，之前那份{old}的工作已经交接完了。",
            ),
            "en": (
                "I quit! Starting next week I'm a {v}, no more {old} work.",
                "Career change: I'm a {v} now.",
                "New job confirmed - {v}. I've handed over my old {old} role.",
                "I switched jobs; these days I work as a {v}.",
            ),
            "mix": (
                "我换工作了，现在是 {ve}，再也不用做{old}了。",
                "New job！现在当{v}了。",
            ),
        },
        ask_now={
            "zh": (
                "我现在做什么工作？",
                "我换工作后是什么职位？",
                "我目前的职业是什么？",
                "我新工作是干嘛的？",
            ),
            "en": (
                "What's my job now?",
                "What position did I switch to?",
                "What do I currently do for work?",
                "What's my new role?",
            ),
            "mix": ("我 current job 是什么 role？", "我 new job 是干什么的？"),
        },
        never_said_ok=True,
    ),
    Slot(
        "pet",
        (
            ("一只叫豆豆的柯基", "a corgi named Doudou"),
            ("一只叫年糕的橘猫", "an orange cat named Niangao"),
            ("一只叫可乐的金毛", "a golden retriever named Cola"),
            ("一只叫团子的布偶猫", "a ragdoll cat named Tuanzi"),
            ("一只叫旺财的柴犬", "a shiba inu named Wangcai"),
            ("一只叫芝麻的仓鼠", "a hamster named Zhima"),
            ("一只叫小白的萨摩耶", "a samoyed named Xiaobai"),
            ("一只叫咪咪的英短", "a British shorthair named Mimi"),
            ("一只叫球球的泰迪", "a poodle named Qiuqiu"),
            ("一只叫布丁的边牧", "a border collie named Pudding"),
        ),
        say={
            "zh": (
                "我家里养了{v}，每天回家它都在门口等我。",
                "我有{v}，是我最好的伙伴。",
                "去年我领养了{v}。",
                "家里还有{v}，特别黏人。",
            ),
            "en": (
                "I have {v} at home; it waits by the door every evening.",
                "Last year I adopted {v}.",
                "My best buddy is {v}.",
                "There's also {v} living with me, very clingy.",
            ),
            "mix": (
                "我家有{v}，超级 cute 的。",
                "我养了 {ve}，每天都要陪它 play 一会儿。",
            ),
        },
        ask={
            "zh": (
                "我养的宠物是什么？",
                "我家那个小家伙叫什么名字？",
                "我养了什么小动物？",
                "我的毛孩子叫啥？",
            ),
            "en": (
                "What pet do I have?",
                "What's my pet's name?",
                "What animal lives with me?",
                "Tell me about my furry friend - what is it called?",
            ),
            "mix": ("我的 pet 叫什么 name？", "What's the name of 我家宠物？"),
        },
        part={"zh": "我养的宠物叫什么", "en": "what my pet is called"},
        never_said_ok=True,
    ),
    Slot(
        "allergy",
        (
            ("花生", "peanuts"),
            ("海鲜", "seafood"),
            ("芒果", "mango"),
            ("牛奶", "milk"),
            ("猫毛", "cat hair"),
            ("花粉", "pollen"),
            ("青霉素", "penicillin"),
            ("虾", "shrimp"),
            ("鸡蛋", "eggs"),
            ("坚果", "tree nuts"),
            ("小麦", "wheat"),
            ("尘螨", "dust mites"),
        ),
        say={
            "zh": (
                "提醒一下，我对{v}过敏，碰一点就起疹子。",
                "我从小就对{v}过敏。",
                "医生说我对{v}严重过敏，要随身带药。",
                "我不能接触{v}，一碰就过敏。",
            ),
            "en": (
                "Heads up, I'm allergic to {v} - even a little gives me hives.",
                "I've been allergic to {v} since I was a kid.",
                "My doctor confirmed a serious {v} allergy, so I carry meds.",
                "I can't go near {v}; I react badly.",
            ),
            "mix": (
                "我对{v}过敏，所以 menu 上有的话一定要避开。",
                "I'm allergic to {ve}，这个你要帮我记住。",
            ),
        },
        ask={
            "zh": (
                "我有什么过敏的东西吗？",
                "哪些东西我碰不得？",
                "我的过敏原是什么？",
                "点菜的时候我要注意避开什么？",
            ),
            "en": (
                "What am I allergic to?",
                "Is there anything I have to avoid because of allergies?",
                "What triggers my allergy?",
                "Which thing gives me an allergic reaction?",
            ),
            "mix": ("我 allergic to 什么来着？", "我的 food allergy 是什么？"),
        },
        part={"zh": "我对什么过敏", "en": "what I'm allergic to"},
        never_said_ok=True,
    ),
    Slot(
        "fav_food",
        (
            ("火锅", "hotpot"),
            ("寿司", "sushi"),
            ("小龙虾", "crayfish"),
            ("螺蛳粉", "river snail rice noodles"),
            ("烤鸭", "roast duck"),
            ("煎饼果子", "jianbing"),
            ("意大利面", "pasta"),
            ("麻辣烫", "malatang"),
            ("生煎包", "pan-fried buns"),
            ("泰式咖喱", "Thai curry"),
            ("兰州拉面", "Lanzhou noodles"),
            ("酸菜鱼", "pickled cabbage fish"),
        ),
        say={
            "zh": (
                "我最爱吃{v}，一周不吃就想。",
                "要说吃的，我的心头好是{v}。",
                "心情不好的时候我就去吃{v}。",
                "我可以天天吃{v}都不腻。",
            ),
            "en": (
                "My absolute favorite food is {v}.",
                "If I could eat one thing forever, it'd be {v}.",
                "Whenever I'm down I go get {v}.",
                "Nothing beats {v} for me.",
            ),
            "mix": (
                "我最爱的 comfort food 就是{v}。",
                "{ve} is my favorite，一周至少吃一次。",
            ),
        },
        ask={
            "zh": (
                "我最喜欢吃什么？",
                "我嘴馋的时候最想吃哪样？",
                "我的心头好美食是啥？",
                "哪种吃的我百吃不厌？",
            ),
            "en": (
                "What's my favorite food?",
                "What do I crave most?",
                "Which dish do I never get tired of?",
                "What do I eat when I'm feeling low?",
            ),
            "mix": ("我的 favorite food 是什么？", "What do I love eating most，你记得吗？"),
        },
        part={"zh": "我最爱吃什么", "en": "what my favorite food is"},
    ),
    Slot(
        "sister_city",
        CITIES,
        say={
            "zh": (
                "我姐姐一家住在{v}，我们一年见两三次。",
                "我姐在{v}工作，前阵子刚升职。",
                "我亲姐姐嫁到{v}去了。",
                "我姐姐一直在{v}生活。",
            ),
            "en": (
                "My older sister lives in {v} with her family.",
                "My sister works in {v}; she just got promoted.",
                "My sister married and settled in {v}.",
                "My sister has always lived in {v}.",
            ),
            "mix": (
                "我姐姐住在{v}，我们经常 video call。",
                "My sister 在{v}，离我挺远的。",
            ),
        },
        ask={
            "zh": (
                "我姐姐住在哪里？",
                "我姐在哪个城市？",
                "我姐姐一家安家在哪儿？",
                "我老姐现在人在哪？",
            ),
            "en": (
                "Where does my sister live?",
                "Which city is my sister in?",
                "Where did my sister settle down?",
                "What city is my older sister based in?",
            ),
            "mix": ("我 sister 住在哪个 city？", "Where does 我姐姐 live？"),
        },
        part={"zh": "我姐姐住在哪", "en": "where my sister lives"},
        never_said_ok=True,
    ),
    Slot(
        "birthday",
        (
            ("3月12号", "March 12"),
            ("7月8号", "July 8"),
            ("11月23号", "November 23"),
            ("1月30号", "January 30"),
            ("9月15号", "September 15"),
            ("12月2号", "December 2"),
            ("4月19号", "April 19"),
            ("6月27号", "June 27"),
            ("10月5号", "October 5"),
            ("2月14号", "February 14"),
        ),
        say={
            "zh": (
                "我的生日是{v}，记得提醒我订蛋糕哈。",
                "{v}是我生日。",
                "我是{v}出生的。",
                "每年{v}我都会给自己放一天假，那天是我生日。",
            ),
            "en": (
                "My birthday is on {v}.",
                "I was born on {v}.",
                "{v} is my birthday, don't forget!",
                "Every {v} I take a day off - it's my birthday.",
            ),
            "mix": ("我 birthday 是{v}，别忘了哦。", "My birthday 在{v}。"),
        },
        ask={
            "zh": (
                "我哪天过生日？",
                "我的生日是几月几号？",
                "我是哪天出生的？",
                "我生日在什么时候？",
            ),
            "en": (
                "When is my birthday?",
                "What's my date of birth?",
                "Which day do I celebrate my birthday?",
                "What day was I born?",
            ),
            "mix": ("When is 我的 birthday？", "When is 我的生日？"),
        },
        part={"zh": "我生日是哪天", "en": "when my birthday is"},
        update={
            "zh": (
                "刚才说错了，我生日其实是{v}，不是{old}。",
                "更正一下，我的生日是{v}，之前说的{old}是我妈的生日。",
                "不好意思记混了，我生日是{v}。",
                "纠正一下：我是{v}生的，不是{old}。",
            ),
            "en": (
                "Correction: my birthday is actually {v}, not {old}.",
                "Sorry, I mixed it up - {old} is my mom's birthday, mine is {v}.",
                "Let me fix that: I was born on {v}.",
                "Wait, I told you wrong. My birthday is {v}.",
            ),
            "mix": (
                "Correction 一下，我生日是{v}，不是{old}。",
                "我记错了，my birthday is actually {ve}。",
            ),
        },
        ask_now={
            "zh": (
                "我的生日到底是哪天？",
                "我更正后的生日是几号？",
                "我真正的生日是什么时候？",
                "所以我生日到底是几月几号？",
            ),
            "en": (
                "So when is my birthday really?",
                "What's my actual birthday?",
                "After the correction, when is my birthday?",
                "Which day is my real birthday?",
            ),
            "mix": ("我的 real birthday 是哪天？", "So my real birthday 到底是哪天？"),
        },
        never_said_ok=True,
    ),
)
"""Who the user is: home, work, pet, allergy, food, family, birthday."""
