"""Small talk: turns that say nothing about the user or the task (English, Chinese).

"Thanks, that's all for today.", "ok 👍", 谢谢，今天就到这里吧, 哈哈 are kept as episodes
(nothing said is lost) but weigh little in ranking: the write path marks them with
the payload flag :data:`SMALL_TALK_FIELD` and the retriever lowers their score
(``RetrievalSettings.small_talk_penalty``), unless the question is itself small talk
or asks how a conversation ended (:func:`asks_about_small_talk`).

The rule is conservative on purpose: a text is small talk only when it is short and
made entirely of phatic phrases (greetings, thanks, goodbyes, acknowledgements,
closings, laughter, fillers), or of nothing but punctuation and emoji. Any other word,
name, number or id makes it content: "Thanks! Also my budget is 5000" is not small
talk, and neither is "Thanks, Caroline!". A bare yes or no (是的, 没有) is not small
talk either: it answers a question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from memstrata.extract.text import normal_form

SMALL_TALK_FIELD = "small_talk"
"""Payload flag of an episode that is small talk (absent: not small talk)."""

MAX_SMALL_TALK_CHARS = 80
"""Longer texts are never small talk: a long turn says something."""

_EN_PHRASES = (
    # greetings and goodbyes
    "hi|hello|hey|hiya|yo|howdy|good morning|good afternoon|good evening|good night|"
    "morning|evening|night|nighty night|bye|goodbye|bye bye|bye now|bye for now|see you|"
    "see ya|see you later|see you soon|see you tomorrow|see you next time|later|"
    "catch you later|talk to you later|talk to you soon|talk to you tomorrow|talk later|"
    "talk soon|speak soon|ttyl|until next time|take care|cheers|have a nice day|"
    "have a good day|have a great day|have a good night|have a good one|have a nice one|"
    "have a good weekend|have a nice weekend|have a great weekend|there|everyone|all|"
    "you too|same to you|"
    # thanks and politeness
    "thanks|thank you|thx|ty|tysm|much appreciated|appreciate it|i appreciate it|"
    "many thanks|thanks a lot|thanks again|so much|very much|a lot|a bunch|"
    "for your help|for the help|for helping|for everything|for that|for this|"
    "you're welcome|you are welcome|welcome|no worries|my pleasure|anytime|please|"
    "sorry|no problem|np|"
    # acknowledgements and reactions
    "ok|okay|k|kk|sure|got it|great|cool|nice|alright|all right|fine|"
    "sounds good|sounds great|perfect|understood|noted|i see|makes sense|"
    "awesome|wow|oh wow|lovely|amazing|wonderful|excellent|exactly|indeed|of course|"
    "absolutely|definitely|totally|fair enough|lol|haha|hahaha|ha|hehe|"
    "lmao|hmm|hm|oh|ah|uh|um|well|sure thing|will do|good|very good|really|"
    "that's great|that's good|that's fine|that's nice|that's cool|that's perfect|"
    "that's helpful|that's very helpful|that helps|that helped|very helpful|helpful|"
    # closings
    "that's all|that is all|that's it|that is it|that's everything|that's all i need|"
    "that's all i needed|nothing else|nothing more|i'm done|i am done|we're done|"
    "we are done|all good|all set|for today|for now|for the day|for tonight|"
    "i'm good|i am good|i think|i guess|then|so|and|anyway|again|too|just|"
    # address words that name nobody in particular
    "man|dude|buddy|friend|mate"
)

_ZH_PHRASES = (
    # greetings and goodbyes
    "你好|您好|嗨|哈喽|哈啰|早上好|早安|午安|下午好|晚上好|晚安|再见|拜拜|拜|回头见|明天见|"
    "下次见|回见|回头聊|下次聊|明天再聊|改天聊|改天再聊|有空再聊|再聊|早|"
    # thanks and politeness
    "谢谢|多谢|感谢|谢啦|谢了|辛苦了|辛苦|非常感谢|太感谢了|感谢你|谢谢你|谢谢您|麻烦你了|"
    "麻烦了|不客气|没关系|不好意思|抱歉|您|你|啦|"
    # acknowledgements and reactions
    "好的|好滴|好哒|好嘞|好|嗯|嗯嗯|哦|哦哦|噢|收到|明白|明白了|知道了|好吧|行|行吧|可以|"
    "没问题|哈哈|哈|呵呵|嘿嘿|嘻嘻|了解|懂了|ok的|太好了|真好|真棒|棒|"
    "厉害|赞|不错|挺好|很好|"
    # closings
    "今天就到这里|就到这里|到这里|先这样|就这样|先这样吧|就这样吧|没事了|没别的了|"
    "没有别的了|没其他的了|今天|先|就|吧|"
    # particles
    "啊|呢|了|呀|哟|嘛|喔"
)

_LEXICON: tuple[str, ...] = tuple(
    sorted(
        {normal_form(p) for words in (_EN_PHRASES, _ZH_PHRASES) for p in words.split("|")},
        key=lambda phrase: -len(phrase),
    )
)
"""Every phrase in comparison form, longest first ("thank you" before "thank")."""


def is_small_talk(text: str, speaker: str | None = None) -> bool:
    """Whether ``text`` is small talk: at most :data:`MAX_SMALL_TALK_CHARS` characters
    made only of phatic phrases, or only of punctuation and emoji.

    A turn stored as "Speaker: text" is judged on its text (``speaker``, when given).
    Greedy longest-phrase matching, linear and without backtracking; an English phrase
    must end on a word boundary ("hi" is not "history").
    """
    if speaker and text.startswith(speaker + ":"):
        text = text[len(speaker) + 1 :]
    norm = normal_form(text)
    if not norm:
        return bool(text.strip())  # emoji or punctuation only
    if len(norm) > MAX_SMALL_TALK_CHARS:
        return False
    position = 0
    while position < len(norm):
        if norm[position] == " ":
            position += 1
            continue
        for phrase in _LEXICON:
            end = position + len(phrase)
            if not norm.startswith(phrase, position):
                continue
            if not phrase.isascii() or end == len(norm) or not norm[end].isalnum():
                position = end
                break
        else:
            return False
    return True


def small_talk_payload(text: str, speaker: str | None = None) -> dict[str, Any]:
    """The payload fields a stored turn gets from :func:`is_small_talk`: the flag when
    it is small talk, nothing otherwise (old points without it are not small talk)."""
    return {SMALL_TALK_FIELD: True} if is_small_talk(text, speaker) else {}


def flagged_small_talk(payload: Mapping[str, Any]) -> bool:
    """Whether a stored point carries the small-talk flag."""
    return payload.get(SMALL_TALK_FIELD) is True


_ABOUT_SMALL_TALK = re.compile(
    r"\b(?:thank(?:s|ed|ing)?|bye|goodbye|farewell|greet(?:ed|ing|ings)?|hello|"
    r"small\s+talk|chit[- ]?chat|sign(?:ed)?\s+off|said\s+goodbye|"
    r"(?:at|in|by)\s+the\s+(?:very\s+)?end|last\s+thing|"
    r"wrap(?:ped)?\s+up|when\s+(?:we|i|you)\s+(?:finished|ended|stopped|left|were\s+done)|"
    r"end(?:ed)?\s+(?:the|our)\s+(?:chat|conversation|session|call)|"
    r"(?:chat|conversation|session|call|talk)\s+end(?:ed|s)?)\b"
    r"|谢|再见|拜拜|告别|道别|打招呼|问好|寒暄|客套|闲聊|晚安|早安|结束|最后.{0,3}说|最后(?:一句|那句)|到这里",
    re.I,
)


def asks_about_small_talk(question: str) -> bool:
    """Whether ``question`` is small talk itself or asks about it (thanks, greetings,
    how a conversation ended: "what did I say when we finished?", 最后说了什么): then
    small talk is ranked like anything else."""
    return is_small_talk(question) or _ABOUT_SMALL_TALK.search(question) is not None
