"""Hand-written material of the bilingual set, continued: the user's plans, money,
things, schedule and tastes (trip, laptop budget, hobby, purchase, delivery address,
health, gym days, favourite author). Same format as
:mod:`memstrata.eval.bilingual_slots`.
"""

from __future__ import annotations

from memstrata.eval.bilingual_slots import Slot

LIFE_SLOTS: tuple[Slot, ...] = (
    Slot(
        "trip",
        (
            ("云南", "Yunnan"),
            ("日本", "Japan"),
            ("新疆", "Xinjiang"),
            ("泰国", "Thailand"),
            ("冰岛", "Iceland"),
            ("西藏", "Tibet"),
            ("海南", "Hainan"),
            ("新加坡", "Singapore"),
            ("意大利", "Italy"),
            ("土耳其", "Turkey"),
            ("新西兰", "New Zealand"),
            ("越南", "Vietnam"),
        ),
        say={
            "zh": (
                "国庆我打算去{v}玩一趟，已经在看攻略了。",
                "年假准备去{v}，想了好久了。",
                "今年最想去的地方是{v}，计划下个月出发。",
                "我和朋友约好了去{v}旅行。",
            ),
            "en": (
                "I'm planning a trip to {v} for the October holiday.",
                "For my annual leave I want to go to {v}.",
                "{v} is where I'm heading next month.",
                "My friends and I booked a trip to {v}.",
            ),
            "mix": (
                "下个月打算去{v}，itinerary 还没排好。",
                "Planning a trip to {ve}，机票已经在看了。",
            ),
        },
        ask={
            "zh": (
                "我接下来计划去哪儿旅行？",
                "我的旅行目的地是哪里？",
                "我假期要去哪玩？",
                "我准备出去玩的地方是？",
            ),
            "en": (
                "Where am I planning to travel?",
                "What's my next trip's destination?",
                "Where am I going on vacation?",
                "Which place did I plan to visit?",
            ),
            "mix": ("我的 next trip 是去哪里？", "Where am I going 旅行？"),
        },
        part={"zh": "我打算去哪旅行", "en": "where I'm planning to travel"},
        update={
            "zh": (
                "我改主意了，不去{old}了，改去{v}。",
                "{old}的行程取消了，最后决定去{v}。",
                "想了想还是去{v}吧，{old}下次再说。",
                "计划有变：旅行目的地换成{v}了。",
            ),
            "en": (
                "Change of plans - not {old} anymore, I'm going to {v} instead.",
                "I cancelled {old}; we decided on {v} in the end.",
                "On second thought, {v} it is. {old} can wait.",
                "Plans changed: the trip is to {v} now.",
            ),
            "mix": (
                "改主意了，不去{old}了，going to {ve} instead。",
                "Plan 变了，目的地换成{v}了。",
            ),
        },
        ask_now={
            "zh": (
                "我最后决定去哪旅行？",
                "我现在的旅行计划是去哪？",
                "行程改了之后去哪里？",
                "我最终选了哪个目的地？",
            ),
            "en": (
                "Where did I finally decide to travel?",
                "What's the trip destination now?",
                "After changing plans, where am I going?",
                "Which destination did I settle on?",
            ),
            "mix": ("我 final decision 是去哪儿？", "现在的 trip destination 是哪？"),
        },
    ),
    Slot(
        "budget",
        (
            ("五千块", "5,000 yuan"),
            ("八千块", "8,000 yuan"),
            ("一万块", "10,000 yuan"),
            ("三千块", "3,000 yuan"),
            ("一万五", "15,000 yuan"),
            ("六千块", "6,000 yuan"),
            ("两万块", "20,000 yuan"),
            ("四千块", "4,000 yuan"),
        ),
        say={
            "zh": (
                "我打算换台新电脑，预算大概{v}。",
                "买电脑这事我最多花{v}。",
                "新电脑预算我定在{v}左右。",
                "换笔记本的钱我准备了{v}。",
            ),
            "en": (
                "I'm getting a new laptop, budget around {v}.",
                "For the new computer I'll spend at most {v}.",
                "I've set aside {v} for a new laptop.",
                "My laptop budget is {v}, tops.",
            ),
            "mix": ("换 laptop 的预算是{v}。", "New laptop budget 大概{ve}。"),
        },
        ask={
            "zh": (
                "我买电脑准备花多少钱？",
                "我换电脑的预算是多少？",
                "新笔记本我打算花多少？",
                "电脑的钱我准备了多少？",
            ),
            "en": (
                "How much am I willing to spend on a computer?",
                "What's my laptop budget?",
                "How much money did I set aside for the new laptop?",
                "What's the most I'll pay for a computer?",
            ),
            "mix": ("我的 laptop budget 是多少？", "How much money 我打算花在电脑上？"),
        },
        part={"zh": "我换电脑的预算是多少", "en": "what my laptop budget is"},
        update={
            "zh": (
                "电脑预算我调到{v}了，之前{old}不够。",
                "算了下，电脑预算改成{v}。",
                "预算变了，现在最多{v}。",
                "我把买电脑的预算从{old}改成了{v}。",
            ),
            "en": (
                "I raised my laptop budget to {v}; {old} wasn't enough.",
                "Budget update: {v} for the laptop now.",
                "My budget changed, {v} max now.",
                "I changed the computer budget from {old} to {v}.",
            ),
            "mix": ("Laptop 预算改成{v}了。", "Budget changed，现在是{ve}。"),
        },
        ask_now={
            "zh": (
                "我现在买电脑的预算是多少？",
                "电脑预算调整后是多少？",
                "我最新的电脑预算是？",
                "改过之后我准备花多少买电脑？",
            ),
            "en": (
                "What's my laptop budget now?",
                "After the change, how much will I spend on the computer?",
                "What's the updated computer budget?",
                "How much is my current laptop budget?",
            ),
            "mix": ("我现在的 laptop budget 是多少？", "Updated laptop budget 是多少？"),
        },
        never_said_ok=True,
    ),
    Slot(
        "hobby",
        (
            ("攀岩", "rock climbing"),
            ("弹吉他", "playing guitar"),
            ("烘焙", "baking"),
            ("夜跑", "night running"),
            ("钓鱼", "fishing"),
            ("下围棋", "playing Go"),
            ("摄影", "photography"),
            ("瑜伽", "yoga"),
            ("游泳", "swimming"),
            ("画水彩", "watercolor painting"),
            ("打羽毛球", "badminton"),
            ("做陶艺", "pottery"),
        ),
        say={
            "zh": (
                "我最近迷上了{v}，周末基本都在练。",
                "业余时间我喜欢{v}。",
                "下班后我一般去{v}放松。",
                "我报了个{v}的班，学得很起劲。",
            ),
            "en": (
                "I've gotten really into {v} lately.",
                "In my free time I love {v}.",
                "After work I unwind with {v}.",
                "I signed up for a {v} class and I'm hooked.",
            ),
            "mix": ("最近 obsessed with {ve}，周末都在练。", "我的 hobby 是{v}，很解压。"),
        },
        ask={
            "zh": (
                "我平时有什么爱好？",
                "我业余时间喜欢干嘛？",
                "我下班后靠什么放松？",
                "我最近迷上了什么活动？",
            ),
            "en": (
                "What's my hobby?",
                "What do I do in my spare time?",
                "How do I relax after work?",
                "What activity have I been hooked on?",
            ),
            "mix": ("What's 我的 hobby？", "What do I do 业余时间？"),
        },
        part={"zh": "我有什么爱好", "en": "what my hobby is"},
        update={
            "zh": (
                "{old}我不玩了，现在改练{v}。",
                "最近兴趣转移了，开始{v}了，{old}放下了。",
                "我放弃{old}了，新爱好是{v}。",
                "现在周末都在{v}，已经好久没碰{old}了。",
            ),
            "en": (
                "I gave up {old}; I'm into {v} now.",
                "My interests shifted - {v} these days, no more {old}.",
                "New hobby: {v}. {old} is done for me.",
                "Weekends are all {v} now; haven't done {old} in ages.",
            ),
            "mix": ("不玩{old}了，now I'm into {ve}。", "新 hobby 是{v}。"),
        },
        ask_now={
            "zh": (
                "我现在的爱好是什么？",
                "我最新迷上的是什么？",
                "我如今周末在玩什么？",
                "换了爱好之后我在练什么？",
            ),
            "en": (
                "What's my hobby now?",
                "What am I into these days?",
                "What do I do on weekends now?",
                "What did I switch my hobby to?",
            ),
            "mix": ("我 these days 的 hobby 是什么？", "These days 我在玩什么？"),
        },
    ),
    Slot(
        "purchase",
        (
            ("一台索尼相机", "a Sony camera"),
            ("一个扫地机器人", "a robot vacuum"),
            ("一辆电动自行车", "an e-bike"),
            ("一个空气炸锅", "an air fryer"),
            ("一台Kindle", "a Kindle"),
            ("一把机械键盘", "a mechanical keyboard"),
            ("一台投影仪", "a projector"),
            ("一副降噪耳机", "noise-cancelling headphones"),
            ("一台咖啡机", "an espresso machine"),
            ("一块智能手表", "a smartwatch"),
            ("一台跑步机", "a treadmill"),
        ),
        say={
            "zh": (
                "我前两天刚买了{v}，用着挺顺手。",
                "剁手了，入了{v}。",
                "双十一我买了{v}。",
                "终于下单了{v}，纠结了好久。",
            ),
            "en": (
                "I just bought {v} and I love it.",
                "Treated myself to {v} this week.",
                "I finally ordered {v} after weeks of debating.",
                "Picked up {v} on sale.",
            ),
            "mix": ("刚入手了{v}，真的 worth it。", "Just bought {ve}，用着很顺手。"),
        },
        ask={
            "zh": (
                "我最近买了什么东西？",
                "我新入手的是啥？",
                "我前阵子剁手买了什么？",
                "我最近添置了什么家当？",
            ),
            "en": (
                "What did I buy recently?",
                "What's my latest purchase?",
                "What did I treat myself to?",
                "What new gadget did I get?",
            ),
            "mix": ("我最近 buy 了什么 new stuff？", "What did I 剁手买了？"),
        },
        part={"zh": "我最近买了什么", "en": "what I bought recently"},
    ),
    Slot(
        "address",
        (
            ("滨江区江南大道88号", "88 Jiangnan Avenue, Binjiang District"),
            ("朝阳区建国路21号", "21 Jianguo Road, Chaoyang District"),
            ("天河区体育西路103号", "103 Tiyu West Road, Tianhe District"),
            ("南山区科技园路6号", "6 Kejiyuan Road, Nanshan District"),
            ("鼓楼区中山路55号", "55 Zhongshan Road, Gulou District"),
            ("武侯区人民南路17号", "17 Renmin South Road, Wuhou District"),
            ("江北区北滨一路9号", "9 Beibin 1st Road, Jiangbei District"),
            ("思明区湖滨南路300号", "300 Hubin South Road, Siming District"),
        ),
        say={
            "zh": (
                "以后快递帮我寄到{v}。",
                "我的收货地址是{v}。",
                "记一下我的收件地址：{v}。",
                "网购都填{v}，那是我常用的地址。",
            ),
            "en": (
                "Please send packages to {v}.",
                "My delivery address is {v}.",
                "For deliveries, use {v}.",
                "Ship things to {v} - that's where I receive parcels.",
            ),
            "mix": ("Delivery address 是{v}。", "快递寄到 {ve} 就行。"),
        },
        ask={
            "zh": (
                "我的快递应该寄到哪里？",
                "我收包裹用的地址是？",
                "网购时我填哪个地址？",
                "东西寄给我的话寄哪儿？",
            ),
            "en": (
                "Where should my parcels be shipped?",
                "What address do I get deliveries at?",
                "Which address do I use for online orders?",
                "Where do packages for me go?",
            ),
            "mix": ("我的 shipping address 是什么？", "Where should 快递寄给我？"),
        },
        part={"zh": "我的收货地址是哪", "en": "what my delivery address is"},
        update={
            "zh": (
                "收货地址改一下，改成{v}。",
                "我换地址了，新的收件地址是{v}，{old}那个别用了。",
                "以后快递别寄{old}了，寄到{v}。",
                "更新一下收货地址：{v}。",
            ),
            "en": (
                "Update my delivery address to {v}.",
                "New shipping address: {v}. Don't use {old} anymore.",
                "Stop sending parcels to {old}; use {v} from now on.",
                "My address changed - {v} for deliveries.",
            ),
            "mix": ("Shipping address 改成{v}了。", "以后寄到 {ve}，old address 别用了。"),
        },
        ask_now={
            "zh": (
                "我现在的收货地址是哪个？",
                "快递现在该寄到哪？",
                "我最新的收件地址是什么？",
                "改过以后我的地址是？",
            ),
            "en": (
                "What's my delivery address now?",
                "Where do packages go these days?",
                "What's my current shipping address?",
                "Which address did I change to?",
            ),
            "mix": ("我现在的 shipping address 是？", "Current shipping address 是哪个？"),
        },
        never_said_ok=True,
    ),
    Slot(
        "health",
        (
            ("血压有点高", "my blood pressure is a bit high"),
            ("有点缺铁", "I'm a little iron-deficient"),
            ("腰椎间盘突出", "I have a herniated disc"),
            ("胃不太好", "I have a weak stomach"),
            ("膝盖有旧伤", "I have an old knee injury"),
            ("经常偏头痛", "I get migraines a lot"),
            ("颈椎不好", "I have neck problems"),
            ("有轻度贫血", "I have mild anemia"),
        ),
        say={
            "zh": (
                "上次体检医生说我{v}，让我多注意。",
                "最近身体不太行，{v}。",
                "我得跟你说下，我{v}，所以运动不能太猛。",
                "老毛病了，我{v}。",
            ),
            "en": (
                "At my last checkup the doctor said {v}.",
                "Health-wise, {v}, so I take it easy.",
                "Just so you know, {v}.",
                "Old problem: {v}.",
            ),
            "mix": ("体检 report 说我{v}。", "Doctor 说 {ve}，要多注意。"),
        },
        ask={
            "zh": (
                "我身体有什么毛病吗？",
                "医生说我哪里需要注意？",
                "我有什么健康问题？",
                "我体检查出了什么？",
            ),
            "en": (
                "Do I have any health issues?",
                "What did the doctor tell me to watch out for?",
                "What's my health condition?",
                "What came up in my checkup?",
            ),
            "mix": ("我有什么 health issue？", "What did 医生说我的身体？"),
        },
        part={"zh": "我有什么健康问题", "en": "what health issue I have"},
    ),
    Slot(
        "gym",
        (
            ("周二和周四", "Tuesdays and Thursdays"),
            ("每周一三五", "Mondays, Wednesdays and Fridays"),
            ("周末早上", "weekend mornings"),
            ("每周三晚上", "Wednesday evenings"),
            ("周一和周六", "Mondays and Saturdays"),
            ("每天早上六点", "every morning at six"),
        ),
        say={
            "zh": (
                "我固定{v}去健身房。",
                "我的健身时间是{v}，雷打不动。",
                "{v}我都会去撸铁。",
                "我一般安排在{v}锻炼。",
            ),
            "en": (
                "I work out {v}, pretty strictly.",
                "My gym schedule is {v}.",
                "Gym time for me is {v}.",
                "I train at the gym {v}.",
            ),
            "mix": ("我 workout 的时间是{v}。", "Gym 时间固定在 {ve}。"),
        },
        ask={
            "zh": (
                "我一般哪几天去健身？",
                "我的锻炼时间怎么安排的？",
                "我什么时候去健身房？",
                "我撸铁的固定时间是？",
            ),
            "en": (
                "When do I go to the gym?",
                "What's my workout schedule?",
                "Which days do I exercise?",
                "When is my regular training time?",
            ),
            "mix": ("我的 gym schedule 是怎样的？", "When do I 去健身？"),
        },
        part={"zh": "我什么时候去健身", "en": "when I go to the gym"},
        never_said_ok=True,
    ),
    Slot(
        "author",
        (
            ("余华", "Yu Hua"),
            ("村上春树", "Haruki Murakami"),
            ("刘慈欣", "Liu Cixin"),
            ("东野圭吾", "Keigo Higashino"),
            ("张爱玲", "Eileen Chang"),
            ("金庸", "Jin Yong"),
            ("三毛", "Sanmao"),
            ("阿加莎·克里斯蒂", "Agatha Christie"),
            ("王小波", "Wang Xiaobo"),
            ("毛姆", "W. Somerset Maugham"),
        ),
        say={
            "zh": (
                "我最喜欢的作家是{v}，作品我基本都读过。",
                "我是{v}的铁粉。",
                "睡前我总爱翻{v}的书。",
                "要说作家，我最推崇{v}。",
            ),
            "en": (
                "My favorite writer is {v}; I've read almost everything.",
                "I'm a huge {v} fan.",
                "Before bed I usually read {v}.",
                "If you ask me about authors, {v} is the one.",
            ),
            "mix": ("我 favorite author 是{v}。", "{ve} 的书我全都读过。"),
        },
        ask={
            "zh": (
                "我最喜欢哪位作家？",
                "我是谁的书迷？",
                "睡前我爱读谁写的书？",
                "我最推崇的作者是谁？",
            ),
            "en": (
                "Who's my favorite author?",
                "Which writer am I a fan of?",
                "Whose books do I read before bed?",
                "Which author do I admire most?",
            ),
            "mix": ("我 favorite writer 是谁？", "Who is 我最喜欢的作家？"),
        },
        part={"zh": "我最喜欢哪个作家", "en": "who my favorite author is"},
    ),
)
