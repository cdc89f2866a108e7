"""Clauses of one sentence, with the subject the speaker left out put back.

Chinese drops the subject of every clause after the first (我住在杭州，对花生过敏;
我以前是老师，现在是设计师), and so does English after "and" (I left Amazon and joined
Microsoft). Patterns that need "我" / "I" then find nothing, and a fact is lost. So a
Chinese sentence is cut at commas and at conjunctions (但是, 而且, 所以 ...), and a
clause without a subject inherits the previous clause's: the speaker's ("我" is
prepended), or someone else's (我妹妹住在上海，在银行工作: nothing is prepended, and
nothing about the user is read from it). An English sentence whose subject is "I"
gets "I" inserted after an "and" that goes straight on to a verb.

Clauses come in order, so the rules can let a hypothetical ("如果...，") or a hedge in an
earlier clause scope over a later one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memstrata.attributes.words import CN_OTHERS

Subject = Literal["speaker", "mine", "other", "pronoun"]
"""Who a clause is about: the speaker, one of the speaker's people (我女儿...), someone
else, or "he / she / it" (whose clauses the rules skip: 他说他晚点给我打电话 is no
contact preference of the user)."""


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause: its text (with a restored subject) and who it is about."""

    text: str
    subject: Subject


_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")
# Cut at clause punctuation, and before a conjunction that starts a new clause.
_CN_BREAK = re.compile(r"[，,；;：:]|(?=但是|可是|不过|而且|并且|所以|然后|但(?!是))")
_CN_CONJUNCTION = re.compile(r"^(?:但是|可是|不过|而且|并且|所以|然后|但)")
_CN_FILLERS = re.compile(
    r"^(?:不对|其实|对了|嗯|哦|噢|啊|哈哈|好吧|不好意思|抱歉|另外|顺便说一下|顺便|是的|没错|对)*"
)
_CN_SUBJECT = re.compile(
    rf"^(?P<speaker>我们|咱们|我(?!的?{CN_OTHERS})|(?i:I|we)(?=['\s]))|^(?P<you>你们|你|您)"
    r"|^(?P<pronoun>他们|她们|它们|他|她|它)|^(?P<mine>我|(?i:my|our)\s)"
    r"|^(?P<other>大家|别人|有人|人家|谁|这|那|(?i:he|she|they|his|her|their)\b)"
)
_CN_KIN_START = re.compile(rf"^{CN_OTHERS}")
# 我养了一只猫，叫咪咪: the next clause is about the cat, not the speaker.
_CN_INTRODUCES = re.compile(r"(?:养了?|养着|有)(?:一|两|几)?(?:只|条|个|位)[\u4e00-\u9fff]{1,4}$")

_EN_SPEAKER = re.compile(
    r"^(?:(?:actually|well|oh|so|also|btw|hi|hey|hello|sorry|ok|okay|no|yes|yeah|oops|wait|"
    r"honestly|and),?\s+)*I(?:'m|'ve|'d|'ll|\s)",
    re.IGNORECASE,
)
_EN_CARRY = re.compile(
    r"(\b(?:and|but)\s+|,\s+)((?:now|then|also|recently|just|later|still|currently)\s+)?"
    r"(?=(?:joined|work|works|moved|relocated|live|started|switched|became|quit|left|teach|"
    r"prefer|love|hate|enjoy|dislike|have|got)\b)",
    re.IGNORECASE,
)


# Notes and chat drop the English subject too ("Started at Stripe two weeks ago",
# "Vegetarian, allergic to peanuts", "born and raised in Cork"): a sentence or a
# continuation that starts with a word only a self-description starts with gets its
# subject back, in the form the word needs (I / I'm / I've / I was).
_EN_DROPPED = (
    r"(?P<i>started|joined|moved|relocated|switched|grew\s+up|gave\s+up|adopted|quit|"
    r"work(?=\s+(?:at|for|as|in)\b)|live(?=\s+in\b))"
    r"|(?P<im>allergic|(?:vegetarian|vegan|pescatarian|single|married|divorced|widowed)"
    r"(?=\s*[,.;!]|\s+(?:with|to|and|now|since|for)\b|\s*$)|based\s+in|"
    r"originally(?=\s+from\b)|lactose|gluten\s+intolerant)"
    r"|(?P<ive>been(?=\s+\w+ing\b))|(?P<was>born)"
)
_EN_DROPPED_START = re.compile(
    r"^(?P<lead>(?:(?:well|oh|so|also|btw|hi|hey|honestly|ok|okay|yeah|and|just),?\s+)*)"
    rf"(?=(?:{_EN_DROPPED})\b)",
    re.IGNORECASE,
)
_EN_DROPPED_NEXT = re.compile(
    r"(?P<lead>(?:,|\band)\s+(?:and\s+)?)" rf"(?=(?:{_EN_DROPPED})\b)", re.IGNORECASE
)
_SUBJECT_FOR = {"i": "I ", "im": "I'm ", "ive": "I've ", "was": "I was "}


def _subject(match: re.Match[str]) -> str:
    """The subject the dropped-subject word at ``match``'s end needs."""
    rest = match.string[match.end() :]
    word = re.match(_EN_DROPPED, rest, re.IGNORECASE)
    kind = next(k for k, v in word.groupdict().items() if v) if word else "i"
    return match.group("lead") + _SUBJECT_FOR[kind]


def _english(sentence: str) -> tuple[Clause, ...]:
    text = sentence
    start = _EN_DROPPED_START.match(sentence)
    dropped = start is not None
    if start is not None:
        # The word was capitalized as the sentence's first ("Vegan, ..."), not as a name.
        rest = sentence[start.end() :]
        text = _subject(start) + rest[:1].lower() + rest[1:]
    if dropped or _EN_SPEAKER.match(sentence):
        text = _EN_CARRY.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}I ", text)
        text = _EN_DROPPED_NEXT.sub(_subject, text)
    return (Clause(text, "speaker"),)


def _chinese(sentence: str) -> tuple[Clause, ...]:
    found: list[Clause] = []
    carried: Subject = "speaker"
    start = 0
    pieces: list[str] = []
    for match in _CN_BREAK.finditer(sentence):
        pieces.append(sentence[start : match.start()])
        start = match.end()
    pieces.append(sentence[start:])
    for piece in pieces:
        body = _CN_CONJUNCTION.sub("", piece.strip())
        if not body:
            continue
        rest = _CN_FILLERS.sub("", body)
        said = _CN_SUBJECT.match(rest)
        text = body
        subject: Subject
        if said is None:
            # No subject: the previous one goes on. 儿子叫乐乐 after 我女儿叫朵朵 is the
            # speaker's son ("我" is put back); 今年7岁 after 我儿子叫乐乐 is the son's age.
            kin = _CN_KIN_START.match(rest) is not None
            subject = carried
            if carried == "speaker" or (carried == "mine" and kin):
                text = "我" + body
                subject = "mine" if kin else "speaker"
        elif said.group("speaker") or said.group("you"):
            subject = "speaker" if said.group("speaker") else "other"
        elif said.group("pronoun"):
            subject = "pronoun"
        elif said.group("mine"):
            subject = "mine"
        else:
            subject = "other"
        found.append(Clause(text, subject))
        if _CN_INTRODUCES.search(body):
            carried = "other"
        elif said is not None and said.group("you"):
            carried = "speaker"  # 你可以加我微信，... : the speaker goes on
        else:
            carried = subject
    return tuple(found)


def split_clauses(sentence: str) -> tuple[Clause, ...]:
    """The clauses of ``sentence`` in order (one for English, with "I" carried)."""
    if _HAS_CJK.search(sentence):
        return _chinese(sentence)
    return _english(sentence)
