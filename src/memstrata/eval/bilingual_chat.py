"""Hand-written material of the bilingual set: everything around the facts.

Recurring events (what a user did or planned on a day, what the assistant
recommended that day: the evidence of date questions), chit-chat between the
facts, greetings and farewells, the assistant's acknowledgements, the personas,
questions about things never said, and the two-fact question frames. Keys ``zh``,
``en``, ``mix`` as in :mod:`memstrata.eval.bilingual_slots`; the dev split draws
the even-indexed entries of each list and the test split the odd-indexed ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstrata.eval.bilingual_slots import Templates


@dataclass(frozen=True)
class Event:
    """Something that happens on one day. ``ask`` is the user's opening turn when the
    assistant's answer carries the event (a recommendation: ``by`` = assistant);
    placeholders ``{v}`` / ``{ve}`` (one value) or ``{a}`` ``{b}`` (two titles)."""

    key: str
    by: str  # "user" | "assistant"
    values: tuple[tuple[str, str], ...]
    say: Templates
    question: Templates  # "{when}" is the day as the question names it
    ask: Templates | None = None


_TITLE_ZH = "《{}》"

EVENTS: tuple[Event, ...] = (
    Event(
        "plan",
        "user",
        (
            ("去湖边骑车", "ride a bike around the lake"),
            ("整理衣柜", "sort out my wardrobe"),
            ("去看牙医", "see the dentist"),
            ("带爸妈去喝早茶", "take my parents out for dim sum"),
            ("去图书馆自习", "study at the library"),
            ("参加同学聚会", "go to a class reunion"),
            ("去宜家买书架", "buy a bookshelf at IKEA"),
            ("学做红烧肉", "learn to cook braised pork"),
            ("去爬山", "go hiking"),
            ("去银行办卡", "open a bank account"),
            ("给阳台的花换盆", "repot the plants on the balcony"),
            ("做一次大扫除", "give the flat a deep clean"),
            ("去理发", "get a haircut"),
            ("陪朋友看房", "help a friend look at apartments"),
        ),
        say={
            "zh": (
                "今天的安排是{v}。",
                "我今天打算{v}。",
                "今天计划{v}，希望别下雨。",
                "待会儿准备{v}。",
            ),
            "en": (
                "My plan for today is to {v}.",
                "Today I'm going to {v}.",
                "Later today I'll {v}.",
                "Today's agenda: {v}.",
            ),
            "mix": ("今天的 plan 是{v}。", "Today 打算{v}。"),
        },
        question={
            "zh": (
                "{when}我打算干什么？",
                "{when}我有什么安排来着？",
                "我{when}计划做什么？",
                "{when}那天我准备去做啥？",
            ),
            "en": (
                "What did I plan to do {when}?",
                "What was on my agenda {when}?",
                "{when}, what was I going to do?",
                "What plans did I mention {when}?",
            ),
            "mix": ("{when}我有什么 plans for the day？", "What was 我{when}的 schedule？"),
        },
    ),
    Event(
        "outing",
        "user",
        (
            ("灵隐寺", "Lingyin Temple"),
            ("城市美术馆", "the city art museum"),
            ("海洋馆", "the aquarium"),
            ("植物园", "the botanical garden"),
            ("夜市", "the night market"),
            ("动物园", "the zoo"),
            ("古镇", "the old water town"),
            ("科技馆", "the science museum"),
            ("湿地公园", "the wetland park"),
            ("一家猫咖", "a cat cafe"),
            ("奥特莱斯", "the outlet mall"),
            ("江边的步道", "the riverside trail"),
        ),
        say={
            "zh": (
                "今天去了{v}，人超多。",
                "刚从{v}回来，走得腿都酸了。",
                "下午逛了{v}。",
                "今天跑去{v}玩了一圈。",
            ),
            "en": (
                "I went to {v} today.",
                "Just got back from {v}.",
                "Spent the afternoon at {v}.",
                "Took a trip out to {v} today.",
            ),
            "mix": ("今天去了{v}，super crowded。", "Just came back from {ve}，好累。"),
        },
        question={
            "zh": (
                "{when}我去了哪里？",
                "{when}我跑去哪儿玩了？",
                "我{when}去逛了什么地方？",
                "{when}我出门去了哪？",
            ),
            "en": (
                "Where did I go {when}?",
                "Which place did I visit {when}?",
                "{when}, where did I spend the afternoon?",
                "Where was I {when}?",
            ),
            "mix": ("{when}我 went to 哪个地方？", "我{when} hang out 在哪里？"),
        },
    ),
    Event(
        "movie",
        "assistant",
        (
            ("霸王别姬", "Farewell My Concubine"),
            ("千与千寻", "Spirited Away"),
            ("星际穿越", "Interstellar"),
            ("你好，李焕英", "Hi, Mom"),
            ("海上钢琴师", "The Legend of 1900"),
            ("让子弹飞", "Let the Bullets Fly"),
            ("寻梦环游记", "Coco"),
            ("肖申克的救赎", "The Shawshank Redemption"),
            ("流浪地球", "The Wandering Earth"),
            ("饮食男女", "Eat Drink Man Woman"),
            ("花样年华", "In the Mood for Love"),
            ("疯狂动物城", "Zootopia"),
            ("盗梦空间", "Inception"),
            ("阿甘正传", "Forrest Gump"),
        ),
        ask={
            "zh": ("最近有什么好看的电影推荐吗？", "周末想看电影，有推荐吗？"),
            "en": ("Any movie recommendations?", "Got a good film for tonight?"),
            "mix": ("有什么 movie 推荐吗？", "今晚想看个 film，推荐一下？"),
        },
        say={
            "zh": (
                "可以看看{a}和{b}，都挺适合周末看的。",
                "推荐{a}，还有{b}，口碑都不错。",
            ),
            "en": (
                "Try {a} and {b} - both great for a weekend.",
                "I'd suggest {a}, and also {b}.",
            ),
            "mix": ("推荐{a}和{b}，both are great。", "可以看 {a} 或者 {b}，很 classic。"),
        },
        question={
            "zh": (
                "{when}你给我推荐了哪些电影？",
                "{when}你说我可以看哪几部片子？",
                "你{when}安利给我的电影是哪些？",
                "{when}推荐的电影叫什么来着？",
            ),
            "en": (
                "Which movies did you recommend to me {when}?",
                "What films did you suggest {when}?",
                "{when}, what did you tell me to watch?",
                "What were the movie picks you gave me {when}?",
            ),
            "mix": ("{when}你 recommend 的 movies 是哪些？", "你{when} recommend 了哪些 films？"),
        },
    ),
    Event(
        "book",
        "assistant",
        (
            ("活着", "To Live"),
            ("百年孤独", "One Hundred Years of Solitude"),
            ("三体", "The Three-Body Problem"),
            ("小王子", "The Little Prince"),
            ("人类简史", "Sapiens"),
            ("围城", "Fortress Besieged"),
            ("解忧杂货店", "The Miracles of the Namiya General Store"),
            ("挪威的森林", "Norwegian Wood"),
            ("月亮与六便士", "The Moon and Sixpence"),
            ("边城", "Border Town"),
            ("追风筝的人", "The Kite Runner"),
            ("平凡的世界", "Ordinary World"),
        ),
        ask={
            "zh": ("有什么书推荐吗？睡前想读点东西。", "最近书荒了，给我推荐两本吧。"),
            "en": ("Can you recommend a book?", "I need something new to read - ideas?"),
            "mix": ("推荐几本 book 给我吧？", "最近想读点 novel，有推荐吗？"),
        },
        say={
            "zh": ("可以读读{a}，或者{b}。", "我推荐{a}和{b}，都很耐读。"),
            "en": ("How about {a} or {b}?", "You might enjoy {a}, and {b} too."),
            "mix": ("推荐{a}和{b}，very readable。", "Try {a} 或者 {b}，都很好看。"),
        },
        question={
            "zh": (
                "{when}你推荐我读什么书？",
                "{when}你给我推荐的书是哪几本？",
                "你{when}建议我看哪些书？",
                "{when}说的那两本书叫啥？",
            ),
            "en": (
                "What books did you recommend {when}?",
                "Which books did you suggest to me {when}?",
                "{when}, what did you say I should read?",
                "What were the two books you mentioned {when}?",
            ),
            "mix": ("{when}你 recommend 的 books 是哪些？", "你{when} suggest 我读哪些 books？"),
        },
    ),
    Event(
        "meal",
        "user",
        (
            ("酸辣粉", "hot and sour noodles"),
            ("黄焖鸡米饭", "braised chicken rice"),
            ("烤串", "barbecue skewers"),
            ("饺子", "dumplings"),
            ("牛肉面", "beef noodles"),
            ("披萨", "pizza"),
            ("沙拉", "a salad"),
            ("煲仔饭", "claypot rice"),
            ("炸鸡", "fried chicken"),
            ("寿喜烧", "sukiyaki"),
            ("羊肉泡馍", "lamb soup with bread"),
            ("韩式拌饭", "bibimbap"),
        ),
        say={
            "zh": (
                "晚饭吃了{v}，撑死了。",
                "今天中午吃了{v}。",
                "刚吃完{v}，很满足。",
                "今晚点了{v}外卖。",
            ),
            "en": (
                "Had {v} for dinner tonight.",
                "Lunch today was {v}.",
                "Just finished some {v}, so good.",
                "Ordered {v} for delivery tonight.",
            ),
            "mix": ("晚饭吃了{v}，so full。", "Dinner 是 {ve}，很满足。"),
        },
        question={
            "zh": (
                "{when}我吃了什么？",
                "{when}我吃的是什么？",
                "我{when}那顿饭吃了啥？",
                "{when}我点的什么吃的？",
            ),
            "en": (
                "What did I eat {when}?",
                "What was my meal {when}?",
                "{when}, what did I have to eat?",
                "What food did I mention having {when}?",
            ),
            "mix": ("{when}我 had 什么 for dinner？", "我{when}的 dinner menu 是啥？"),
        },
    ),
)

EVENT_BY_KEY = {event.key: event for event in EVENTS}

FILLERS: dict[str, tuple[tuple[str, str], ...]] = {
    "zh": (
        ("今天好冷啊，出门差点冻僵。", "注意保暖呀，出门多穿一件。"),
        ("下班路上堵了一个小时，好烦。", "辛苦了，回家先好好歇一下吧。"),
        ("刚看完一集综艺，笑死我了。", "哈哈，能让你开心就好。"),
        ("今天有点累，不太想说话。", "那就放松一下，我陪你随便聊聊。"),
        ("外面下大雨了，幸好带了伞。", "还好有准备，路上小心地滑。"),
        ("楼下新开了一家奶茶店，排队的人好多。", "新店开张都这样，过几天再去就好啦。"),
        ("周末什么都没干，就在家躺着。", "偶尔躺平一下也挺好的，充充电。"),
        ("今天被夸了一句，开心。", "太棒了！努力被看见的感觉真好。"),
        ("手机屏幕摔裂了，心疼。", "哎呀，先贴个膜凑合一下吧。"),
        ("今天阳光特别好，心情也跟着变好了。", "好天气就是最好的礼物。"),
        ("你说人为什么总是拖延？", "可能是任务太大了，拆成小步骤会好很多。"),
        ("刚刚在地铁上看到一只导盲犬，好乖。", "导盲犬真的很厉害，训练很不容易。"),
        ("今天喝了三杯咖啡，还是困。", "咖啡喝多了反而更累，试试午睡十分钟？"),
        ("晚上想早点睡，明天要早起。", "好主意，早点休息。"),
        ("朋友圈里大家都在晒照片，好热闹。", "看别人的生活也挺有意思的。"),
        ("今天心情一般般。", "有什么想吐槽的都可以跟我说。"),
        ("隔壁在装修，电钻声吵了一整天。", "太折磨了，戴个耳塞试试？"),
        ("我发现自己最近话变少了。", "可能只是累了，别给自己太大压力。"),
        ("今天的晚霞好美，拍了好几张。", "真想看看，晚霞总是让人觉得温柔。"),
        ("你觉得人应该多存钱还是多享受？", "两者平衡最好，留一点给未来，也留一点给现在。"),
        ("电梯坏了，爬了十二楼。", "就当今天的运动量完成了！"),
        ("又到月底了，时间过得好快。", "是啊，这个月也辛苦了。"),
        ("刚刚收到老同学的消息，好久没联系了。", "老朋友的问候总是很暖心。"),
        ("今天的会开得我头都大了。", "开会确实耗神，喝口水缓一缓。"),
        ("最近在追一部剧，停不下来。", "好剧就是有这种魔力，别熬太晚哦。"),
        ("今天路过花店，买了一束向日葵。", "向日葵看着就让人开心。"),
        ("刚刚做了个奇怪的梦。", "梦见什么了？听起来挺有意思的。"),
        ("好想放个长假。", "再坚持一下，假期总会来的。"),
        ("今天忘带钥匙，在门口等了半小时。", "好惨，以后可以在包里多放一把备用的。"),
        ("刚刚学会了一个新词：松弛感。", "这个词挺好，希望你也越来越松弛。"),
    ),
    "en": (
        ("Long day. I'm exhausted.", "Sounds rough - take it easy tonight."),
        ("It's pouring outside.", "Stay dry! Perfect weather for staying in."),
        ("I binge-watched a show until 2 a.m.", "Worth it? Maybe an early night today."),
        ("My phone battery died on the way home.", "Annoying! A power bank might help."),
        ("Traffic was terrible this morning.", "Ugh, a commute like that drains you."),
        ("The sunset tonight was unreal.", "I love that you noticed it. Little moments matter."),
        ("I keep procrastinating on everything.", "Start with a five-minute task; it helps."),
        ("The neighbors were loud all night.", "That's tough on sleep. Earplugs, maybe?"),
        ("Had way too much coffee today.", "Maybe switch to water for the rest of the day."),
        ("I feel kind of unmotivated lately.", "That happens. Be gentle with yourself."),
        ("Ran into an old classmate at the mall.", "Nice coincidence! Did you catch up?"),
        ("The elevator in my building broke again.", "Stairs as free cardio, I guess!"),
        ("Nothing much happened today.", "Quiet days are nice too."),
        ("I burned my toast this morning.", "Happens to the best of us."),
        ("I finally cleaned my desk.", "A clear desk feels great, enjoy it."),
        ("My inbox is a disaster.", "One folder at a time - you'll get there."),
    ),
    "mix": (
        ("今天 super tired，感觉被掏空。", "辛苦啦，早点 rest 吧。"),
        ("Meeting 一个接一个，根本没时间吃饭。", "记得 grab 点东西吃，别饿着。"),
        ("外面在下雨，mood 有点低。", "雨天适合窝在家里 chill 一下。"),
        ("刚刚看了个 TED talk，很有 inspiration。", "不错呀，可以跟我 share 一下讲了什么。"),
        ("Deadline 快到了，好焦虑。", "先把任务拆小，one step at a time。"),
        ("周末想 stay home，什么都不干。", "Sounds like a plan，好好充电。"),
        ("今天 coffee 喝太多了，手都在抖。", "下午就别再喝了，多喝点 water。"),
        ("我发现 weekend 总是过得特别快。", "Time flies when you're having fun 嘛。"),
        ("今天 WiFi 一直断，崩溃。", "试试 restart 一下路由器？"),
        ("最近 screen time 太长了。", "可以设个 limit，晚上少看手机。"),
        ("Traffic 太堵了，迟到了十分钟。", "没事，safe 最重要。"),
        ("今天 vibe 很好，想出去走走。", "Go for it，出去透透气。"),
    ),
}

GREETINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "zh": (
        ("晚上好呀。", "晚上好，{name}！今天过得怎么样？"),
        ("我来啦。", "在的，{name}，想聊点什么？"),
        ("在吗？", "嗨{name}，欢迎回来。"),
        ("嗨，又是我。", "{name}，今天有什么新鲜事吗？"),
    ),
    "en": (
        ("Hey, it's me again.", "Hi {name}! How was your day?"),
        ("Hi there!", "Welcome back, {name}. What's new?"),
        ("Evening!", "Hey {name}, good to hear from you."),
        ("Hello, got a minute?", "Evening, {name}! What's on your mind?"),
    ),
    "mix": (
        ("Hi，我来啦。", "Hi {name}，今天怎么样？"),
        ("Hello，在吗？", "在的 {name}，what's up？"),
    ),
}

FAREWELLS: dict[str, tuple[tuple[str, str], ...]] = {
    "zh": (
        ("好啦，我去睡了。", "晚安，好梦！"),
        ("先不聊了，明天见。", "明天见～"),
        ("我去洗澡了，拜拜。", "好的，早点休息。"),
        ("今天就到这吧。", "好，有事随时找我。"),
    ),
    "en": (
        ("Okay, I'm heading to bed.", "Good night, sleep well!"),
        ("Gotta go, talk tomorrow.", "Talk soon!"),
    ),
    "mix": (
        ("好了，I'm going to bed。", "Good night，好梦！"),
        ("先这样，see you。", "Bye，明天聊！"),
    ),
}

ACKS: dict[str, tuple[str, ...]] = {
    "zh": (
        "好的，记住啦。",
        "明白了，谢谢你告诉我。",
        "原来是这样，了解。",
        "嗯嗯，我记下了。",
        "听起来不错呢。",
        "收到！",
    ),
    "en": (
        "Got it, thanks for telling me.",
        "Noted!",
        "Good to know.",
        "Thanks, I'll keep that in mind.",
    ),
    "mix": ("OK，记下了。", "Got it，我记住了。", "了解，thanks for sharing！", "Noted，收到。"),
}

UPDATE_ACKS: dict[str, tuple[str, ...]] = {
    "zh": ("好的，已经更新啦。", "明白，以新的为准。", "收到，之前那个作废。", "好，我改过来了。"),
    "en": ("Updated - thanks for letting me know.", "Got it, I'll go with the new one."),
    "mix": ("OK，已经 update 了。", "Got it，以新的为准。"),
}

EVENT_ACKS: dict[str, tuple[str, ...]] = {
    "zh": ("听起来挺充实的！", "不错呀，玩得开心。", "真好，记得劳逸结合。", "哈哈，享受生活。"),
    "en": ("Sounds like a nice day!", "Enjoy it!", "That sounds fun.", "Nice, have a good time."),
    "mix": ("Sounds fun，玩得开心！", "不错哦，enjoy！"),
}

# (Chinese name, name as written in English); dev and test never share a persona.
PERSONAS: dict[str, tuple[tuple[str, str], ...]] = {
    "dev": (
        ("林晓", "Lin Xiao"),
        ("王磊", "Wang Lei"),
        ("陈静", "Chen Jing"),
        ("刘洋", "Liu Yang"),
        ("赵敏", "Zhao Min"),
        ("孙浩", "Sun Hao"),
        ("周婷", "Zhou Ting"),
        ("吴凡", "Wu Fan"),
        ("郑雪", "Zheng Xue"),
        ("何川", "He Chuan"),
    ),
    "test": (
        ("张悦", "Zhang Yue"),
        ("李想", "Li Xiang"),
        ("杨帆", "Yang Fan"),
        ("黄蕾", "Huang Lei"),
        ("徐明", "Xu Ming"),
        ("马丽", "Ma Li"),
        ("朱涛", "Zhu Tao"),
        ("胡佳", "Hu Jia"),
        ("郭峰", "Guo Feng"),
        ("罗琳", "Luo Lin"),
        ("高远", "Gao Yuan"),
        ("梁晨", "Liang Chen"),
        ("宋雨", "Song Yu"),
        ("唐宁", "Tang Ning"),
    ),
}

# Questions about things no conversation of the set ever mentions.
NEVER_SAID: dict[str, tuple[str, ...]] = {
    "zh": (
        "我开的是什么牌子的车？",
        "我的血型是什么？",
        "我支持哪支足球队？",
        "我的结婚纪念日是哪天？",
        "我小学班主任叫什么？",
        "我的鞋码是多少？",
        "火星上的天气怎么样？",
        "我女儿在哪所学校上学？",
        "我身上纹了什么图案？",
        "我最喜欢什么颜色？",
        "我上个月买了哪只股票？",
        "我爸爸会弹什么乐器？",
        "我的护照什么时候到期？",
        "我大学学的是什么专业？",
        "我第一份实习在哪家公司？",
        "我的车牌号是多少？",
    ),
    "en": (
        "What car do I drive?",
        "What's my blood type?",
        "Which football team do I support?",
        "When is my wedding anniversary?",
        "What was my first grade teacher's name?",
        "What size shoes do I wear?",
        "What's the weather like on Mars?",
        "Which school does my daughter go to?",
        "What tattoo do I have?",
        "What's my favorite color?",
        "Which stock did I buy last month?",
        "What instrument does my dad play?",
        "When does my passport expire?",
        "What did I major in at university?",
        "Where was my first internship?",
        "What's my license plate number?",
    ),
    "mix": (
        "我开的是什么 brand 的 car？",
        "我的 blood type 是什么？",
        "我 support 哪个 football team？",
        "我的 wedding anniversary 是哪天？",
        "我大学的 major 是什么 subject？",
        "我的 passport 什么时候 expire？",
        "我女儿的 school 叫什么 name？",
        "我的 favorite color 是什么？",
    ),
}

# Two-fact questions: "{a}" and "{b}" are slots' ``part`` clauses; a ``mix`` frame
# takes a Chinese ``{a}`` and an English ``{b}``.
TWO_FACTS: dict[str, tuple[str, ...]] = {
    "zh": (
        "你还记得{a}，还有{b}吗？",
        "帮我回忆两件事：{a}？{b}？",
        "{a}？另外，{b}？",
        "我想确认一下{a}，以及{b}。",
    ),
    "en": (
        "Do you remember {a} and {b}?",
        "Remind me {a}, and also {b}.",
        "Two quick things: {a}, and {b}?",
        "Can you tell me {a} as well as {b}?",
    ),
    "mix": ("Quick check：{a}？还有 {b}？", "帮我 recall 一下：{a}，and {b}。"),
}

WEEKDAYS_ZH = ("一", "二", "三", "四", "五", "六", "日")
WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS_EN = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
TITLE_ZH = _TITLE_ZH
