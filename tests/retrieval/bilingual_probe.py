"""A small bilingual probe set: one user's memories in Chinese and in English, and
questions in both languages - related ones (with the memory that answers them, in the
same or the other language) and unrelated ones (nothing answers them).

Written for the multilingual route's tests and to choose its fusion weights and
calibration knots before the bilingual evaluation set existed (docs/benchmarks.md,
"Languages"); ``tune_languages.py`` next to it prints the numbers.
"""

from __future__ import annotations

MEMORIES: tuple[str, ...] = (
    "我对花生过敏",
    "我住在杭州",
    "我喜欢看科幻电影，最喜欢《星际穿越》",
    "我的妹妹在银行工作",
    "我每天早上六点起床跑步",
    "我的猫叫小白，今年三岁",
    "下个月我要去日本出差",
    "我在学弹吉他，每周上一次课",
    "My brother plays the violin in an orchestra",
    "I work as a nurse at the city hospital",
    "I am vegetarian and never eat meat",
    "My favorite color is green",
    "We are planning a trip to Iceland in August",
    "My daughter starts primary school in September",
    "我用 iPhone 拍照，最近在学 Lightroom 修图",
    "I drink two cups of 龙井 tea every afternoon",
)

# (question, the memory that answers it)
RELATED: tuple[tuple[str, str], ...] = (
    ("我对什么过敏？", "我对花生过敏"),
    ("我住在哪个城市？", "我住在杭州"),
    ("我喜欢什么电影？", "我喜欢看科幻电影，最喜欢《星际穿越》"),
    ("我妹妹做什么工作？", "我的妹妹在银行工作"),
    ("我早上几点起床？", "我每天早上六点起床跑步"),
    ("我的猫叫什么名字？", "我的猫叫小白，今年三岁"),
    ("我下个月去哪里出差？", "下个月我要去日本出差"),
    ("我在学什么乐器？", "我在学弹吉他，每周上一次课"),
    ("What am I allergic to?", "我对花生过敏"),
    ("Which city do I live in?", "我住在杭州"),
    ("What is my cat's name?", "我的猫叫小白，今年三岁"),
    ("Where am I going on a business trip next month?", "下个月我要去日本出差"),
    ("我哥哥会什么乐器？", "My brother plays the violin in an orchestra"),
    ("我是做什么工作的？", "I work as a nurse at the city hospital"),
    ("我吃肉吗？", "I am vegetarian and never eat meat"),
    ("我们八月份去哪里旅行？", "We are planning a trip to Iceland in August"),
    ("What instrument does my brother play?", "My brother plays the violin in an orchestra"),
    ("What is my job?", "I work as a nurse at the city hospital"),
    ("What color do I like best?", "My favorite color is green"),
    ("When does my daughter start school?", "My daughter starts primary school in September"),
    ("我用什么软件修图？", "我用 iPhone 拍照，最近在学 Lightroom 修图"),
    ("What tea do I drink?", "I drink two cups of 龙井 tea every afternoon"),
)

UNRELATED: tuple[str, ...] = (
    "火星上的天气怎么样？",
    "量子计算机的原理是什么？",
    "明天股市会涨吗？",
    "恐龙是什么时候灭绝的？",
    "帮我写一首关于秋天的诗",
    "What is the weather on Mars?",
    "How do quantum computers work?",
    "Who won the football world cup in 1998?",
    "Explain how a diesel engine works",
    "What is the capital of Australia?",
)
