"""Explicit corrections and removals, in English and Chinese (used by the rule extractor).

* A *correction marker* ("Sorry, I got that wrong", "I meant", "Correction:", "scratch
  that", 不对，我记错了, 说错了, 更正一下) makes every fact of its sentence and of the
  sentences after it in the turn a ``correct`` candidate: the write path lets it
  replace what the slot holds, even a value it would otherwise call a near duplicate
  ("May 3" / "June 3"), and a set-valued slot takes the corrected values instead of
  adding them. A sentence that adds ("also", "too", 还, 也) stays a plain statement,
  and so does one that names the wrong value too ("Sorry, I got that wrong: I speak
  Italian, not French" swaps one item and keeps the rest of the set).
* A *removal* takes a value out of a set-valued slot: "I'm allergic to shellfish, not
  peanuts", "I'm no longer allergic to peanuts", "take aspirin off my allergy list",
  我不再对花生过敏, 我对海鲜过敏，不是花生, 把花生去掉. (What is disliked leaves the
  likes: the write path does that for every ``dislikes`` fact.) A removal naming
  no attribute (把花生去掉) is one removal per set-valued attribute it may concern; the
  write path drops those whose slot does not hold the value.

Questions, hypotheticals and other people's facts give nothing (the patterns need the
speaker: "I'm", 我).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from memstrata.extract.candidates import Candidate
from memstrata.extract.patterns import HYPOTHETICAL
from memstrata.extract.sets import set_facts
from memstrata.extract.values import split_items, strip_tail

__all__ = [
    "REMOVABLE",
    "adds_only",
    "corrected",
    "correction_at",
    "removals",
    "swapped",
    "with_corrections",
]

_I = re.IGNORECASE
_STOP = r"[^,.;!?，。；！？、\n]"
"""A value runs to the next punctuation."""

_CORRECTION = re.compile(
    r"\bI\s+(?:got|had)\s+(?:that|it|this)\s+(?:wrong|mixed\s+up)\b"
    r"|\bI\s+was\s+wrong\b|\bI\s+made\s+a\s+mistake\b|\bmy\s+(?:mistake|bad)\b"
    r"|\bI\s+(?:misspoke|mistyped|misremembered)\b|\bI\s+meant\b|\bwhat\s+I\s+meant\b"
    r"|\bcorrection\s*[:,\-]|\blet\s+me\s+correct\b|\bto\s+correct\s+(?:that|myself)\b"
    r"|\bscratch\s+that\b|\bthat'?s\s+(?:not\s+right|wrong|incorrect)\b"
    r"|^\s*actually\s*[,:]?\s+(?:it'?s|it\s+is|it\s+was)\b"
    r"|(?:^|[，,。.!！\s])不对(?=[，,。.!！:：\s]|$)|记错了|说错了|搞错了|弄错了|写错了|打错了"
    r"|更正一下|更正[：:，,]|纠正一下|我的意思是",
    _I,
)
_ADDS = re.compile(r"\b(?:also|too|as\s+well|another)\b|还|也", _I)

REMOVABLE: tuple[str, ...] = (
    "allergies",
    "dislikes",
    "likes",
    "avoids",
    "interests",
    "health",
    "languages_spoken",
    "contact_channels",
)
"""The set-valued attributes a removal naming none ("take X off the list") may concern."""

# Every removal pattern holds one of these: most sentences are passed over in one scan.
_CUES = re.compile(
    r"allerg|\bremove\b|\boff\b|\bnot\b|过敏|不是|去掉|删掉|删除|拿掉|划掉|去除|去了", _I
)
_ALLERGY_CUE = re.compile(r"allerg|过敏", _I)
_LIKE_CUE = re.compile(r"\b(?:like|love|enjoy)s?\b|喜欢|爱", _I)
_DISLIKE_CUE = re.compile(r"\b(?:dislike|hate)s?\b|讨厌|不喜欢", _I)

_EN_SELF = r"\b(?:I'?m|I\s+am)\s+(?:now\s+|actually\s+|really\s+)?"
# "I'm no longer allergic to dogs", "I'm not allergic to soy anymore"
_EN_NOT_ALLERGIC = re.compile(
    _EN_SELF + r"(?:no\s+longer|not)\s+(?:really\s+|actually\s+)?allergic\s+to\s+"
    rf"(?P<v>{_STOP}+)",
    _I,
)
# "I outgrew my peanut allergy", "I don't have an allergy to X anymore"
_EN_OUTGREW = re.compile(
    r"\bI\s+(?:outgrew|grew\s+out\s+of)\s+(?:my|the)\s+(?P<v>" + _STOP + r"+?)\s+allerg(?:y|ies)\b"
    r"|\bI\s+(?:don'?t|do\s+not)\s+have\s+an?\s+allergy\s+to\s+(?P<v2>" + _STOP + r"+)",
    _I,
)
# "take aspirin off my allergy list", "remove X from my allergies"
_EN_TAKE_OFF = re.compile(
    r"\b(?:take|took|cross|strike)\s+(?P<v>" + _STOP + r"+?)\s+off\s+(?:my|the)\s+"
    r"(?P<cue>allergy\s+list|allergies|allergy|list)\b"
    r"|\bremove\s+(?P<v2>" + _STOP + r"+?)\s+from\s+(?:my|the)\s+"
    r"(?P<cue2>allergy\s+list|allergies|allergy|list)\b",
    _I,
)
# "..., not peanuts" / "..., but not peanuts" closing a sentence that states a set value
_EN_NOT_TAIL = re.compile(
    r",\s*(?:but\s+|and\s+)?not\s+(?:to\s+)?(?P<v>" + _STOP + r"+?)\s*(?:after\s+all)?\s*[.!]?\s*$",
    _I,
)
# 我不再对花生过敏, 我不对芒果过敏
_ZH_NO_LONGER = re.compile(r"我[^，。,；;！!？?]{0,4}?(?:不再|不)对(?P<v>" + _STOP + r"+?)过敏")
# 我对牛奶已经不过敏了, 我现在对牛奶已经不过敏了, 我对虾不过敏
_ZH_NOT_ALLERGIC = re.compile(
    r"我[^，。,；;！!？?]{0,4}?对(?P<v>" + _STOP + r"+?)"
    r"(?:已经|早就|现在|其实|根本|并|都|也)*(?:不再|不|没有|没)过敏"
)
# 牛奶我现在已经不过敏了
_ZH_TOPIC = re.compile(
    r"(?:^|[，,。；;！!])\s*(?P<v>[^，。,；;！!？?我对]{1,12}?)我"
    r"(?:现在|已经|早就|其实|根本)*(?:不再|不|没有|没)过敏"
)
# 把花生去掉, 把阿司匹林从过敏清单里删掉, 去掉花生
_ZH_TAKE_OFF = re.compile(
    r"把(?P<v>" + _STOP + r"+?)(?:从[^，。,；;！!？?]*?(?:里|中|上))?"
    r"(?:去掉|删掉|删除|拿掉|划掉|去除|去了)"
    r"|(?:去掉|删掉|删除|划掉)(?P<v2>" + _STOP + r"+)"
)
# 我对海鲜过敏，不是花生 / 我是对狗毛过敏，不是猫毛 / 而不是花生
_ZH_NOT_TAIL = re.compile(r"[，,]\s*(?:而)?不是(?:对)?(?P<v>" + _STOP + r"+?)\s*[。！!]?\s*$")

_EN_TRAILERS = re.compile(
    r"\s+(?:any\s*more|after\s+all|now|either|at\s+all|these\s+days)\s*$"
    r"|\s*-\s.*$|\s+(?:the|my)\s+(?:shots?|test|doctor|allergist)\b.*$",
    _I,
)
_ZH_TRAILERS = re.compile(r"(?:了|啦|吧|呢|啊|的)+$")
_ZH_LEAD = re.compile(r"^(?:对|吃|喝)")


def correction_at(sentence: str) -> bool:
    """Whether ``sentence`` holds an explicit correction marker."""
    return _CORRECTION.search(sentence) is not None


def adds_only(sentence: str) -> bool:
    """Whether ``sentence`` adds to what was said ("also", 还, 也) rather than correcting."""
    return _ADDS.search(sentence) is not None


def corrected(facts: Iterable[Candidate]) -> list[Candidate]:
    """``facts`` as corrections (events and removals unchanged)."""
    return [
        replace(f, change="correct") if f.kind == "fact" and f.change != "remove" else f
        for f in facts
    ]


def swapped(facts: Sequence[Candidate], multi_valued: frozenset[str]) -> list[Candidate]:
    """``facts`` (one sentence's) with a correction of a set that also names the wrong
    value made an addition: "Sorry, I got that wrong: I speak Italian, not French"
    swaps French for Italian and keeps the rest of the set."""
    named = {f.attribute for f in facts if f.kind == "fact" and f.change == "remove"}
    return [
        replace(f, change="state")
        if f.change == "correct" and f.attribute in named and f.attribute in multi_valued
        else f
        for f in facts
    ]


def _values(raw: str) -> list[str]:
    text = raw.strip()
    if text.isascii():
        text = _EN_TRAILERS.sub("", text).strip()
        text = re.sub(r"^(?:to|the|my)\s+", "", text, flags=_I)
    else:
        text = _ZH_TRAILERS.sub("", text).strip()
        text = _ZH_LEAD.sub("", text)
    text = strip_tail(text)
    if not text:
        return []
    items = [item for item in split_items(text) if item]
    return [item for item in items if len(item) <= 60]


def _attributes(sentence: str, cue: str | None) -> tuple[str, ...]:
    if cue and "allerg" in cue.casefold():
        return ("allergies",)
    if _ALLERGY_CUE.search(sentence):
        return ("allergies",)
    if _DISLIKE_CUE.search(sentence):
        return ("dislikes",)
    if _LIKE_CUE.search(sentence):
        return ("likes",)
    return REMOVABLE


def removals(
    sentence: str, facts: Sequence[Candidate], multi_valued: frozenset[str]
) -> list[Candidate]:
    """The removals ``sentence`` states (``facts``: the facts found in it;
    ``multi_valued``: the set-valued attributes)."""
    if not _CUES.search(sentence) or HYPOTHETICAL.search(sentence):
        return []
    found: list[tuple[str, str]] = []
    for pattern in (_EN_NOT_ALLERGIC, _ZH_NO_LONGER, _ZH_NOT_ALLERGIC, _ZH_TOPIC):
        for match in pattern.finditer(sentence):
            found += [("allergies", v) for v in _values(match.group("v"))]
    for match in _EN_OUTGREW.finditer(sentence):
        found += [("allergies", v) for v in _values(match.group("v") or match.group("v2"))]
    for pattern in (_EN_TAKE_OFF, _ZH_TAKE_OFF):
        for match in pattern.finditer(sentence):
            groups = match.groupdict()
            raw = groups.get("v") or groups.get("v2") or ""
            attributes = _attributes(sentence, groups.get("cue") or groups.get("cue2"))
            found += [(a, v) for v in _values(raw) for a in attributes]
    stated = [
        f
        for f in facts
        if f.kind == "fact" and f.change != "remove" and f.attribute in multi_valued
    ]
    if stated:
        for pattern in (_EN_NOT_TAIL, _ZH_NOT_TAIL):
            tail = pattern.search(sentence)
            if tail is not None:
                attribute = stated[-1].attribute
                found += [(attribute, v) for v in _values(tail.group("v"))]
    kept = {(f.attribute, f.value.casefold()) for f in facts if f.kind == "fact"}
    made: list[Candidate] = []
    seen: set[tuple[str, str]] = set()
    for attribute, value in found:
        key = (attribute, value.casefold())
        if key in seen or key in kept:
            continue  # "I'm allergic to X, not X" states X; it removes nothing
        seen.add(key)
        made.append(
            Candidate(
                subject="user",
                attribute=attribute,
                value=value,
                kind="fact",
                confidence=0.9,
                importance=0.7,
                change="remove",
            )
        )
    return made


def with_corrections(
    sentences: Sequence[str], found: Sequence[Candidate], multi_valued: frozenset[str]
) -> tuple[Candidate, ...]:
    """``found`` (the candidates another extractor - an LLM - read in a turn cut into
    ``sentences``) as the rules read corrections and removals: when the turn corrects
    (a marker, and no sentence only adds) its facts become ``correct`` candidates, and
    the removals the turn states are added."""
    correcting = any(correction_at(s) for s in sentences) and not any(
        adds_only(s) for s in sentences
    )
    made = corrected(found) if correcting else list(found)
    facts = [c for c in made if c.kind == "fact" and c.change != "remove"]
    taken = {(c.attribute, c.value.casefold()) for c in made if c.change == "remove"}
    for sentence in sentences:
        # The languages and channels taken back ("I don't speak French anymore", 别打
        # 电话了) are read as the rules read them.
        asked = sentence.rstrip().endswith(("?", "？"))
        said = [] if asked else set_facts(sentence, facts)
        taken_back = [c for c in said if c.change == "remove"]
        for removal in removals(sentence, facts, multi_valued) + taken_back:
            if (removal.attribute, removal.value.casefold()) not in taken:
                taken.add((removal.attribute, removal.value.casefold()))
                made.append(removal)
    return tuple(made)
