"""Set-valued facts about languages and contact channels (used by the rule extractor).

* ``languages_spoken``: the languages the user speaks, a set ("I speak English and
  French", "I also speak Spanish", "I'm fluent in German", 我会说中文和英语, 我还会说一点
  日语). It is not ``language``, the one language the user wants replies in.
  Removals: "I don't speak French anymore", "I no longer speak French", 我不会说法语了;
  "I speak Italian, not French" and 把法语去掉 go through :mod:`.corrections`.
* ``contact_channels``: every channel the user can be reached by, a set, stated when a
  sentence names more than one ("You can reach me by email or phone"). The single
  ``contact_channel`` (the preferred one, which a new preference supersedes) is kept.
  Removals ("don't call me by phone anymore", "not by phone", 别打电话了, 不要用短信联系
  我) take the channel out of both: the write path drops a removal whose slot does not
  hold the value.

Only the speaker's own statements count ("my wife speaks French" gives nothing);
questions are dropped before this module is asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memstrata.extract.candidates import Candidate
from memstrata.extract.lexicon import LANGUAGES_CN, LANGUAGES_EN
from memstrata.extract.patterns import CHANNELS, HYPOTHETICAL

__all__ = ["CONTACT_CHANNELS", "LANGUAGES_SPOKEN", "set_facts"]

LANGUAGES_SPOKEN = "languages_spoken"
CONTACT_CHANNELS = "contact_channels"

_I = re.IGNORECASE
_LANG_EN = LANGUAGES_EN
_LANG_CN = LANGUAGES_CN
# Latin-letter bounds, not \b: a CJK character is a word character (讲Mandarin还有).
_LANG_EN_RE = re.compile(rf"(?<![A-Za-z])(?:{_LANG_EN})(?![A-Za-z])", _I)
_LANG_CN_RE = re.compile(_LANG_CN)
_CN_CANON = {"汉语": "中文", "英文": "英语", "日文": "日语", "韩文": "韩语", "法文": "法语"}
_CN_CANON["德文"] = "德语"

# "I speak English and French", "I also speak a little Spanish", "I can speak ...",
# "I'm fluent in German", "I'm a native Mandarin speaker"
_SPEAK_EN = re.compile(
    r"\bI\s+(?:also\s+|now\s+|still\s+|actually\s+|only\s+)?(?:can\s+(?:also\s+)?)?"
    r"speak\s+(?P<v>[^.;!?]+)"
    r"|\bI(?:'m|\s+am)\s+(?:also\s+|now\s+)?(?:fluent|conversational|bilingual|native)\s+in\s+"
    r"(?P<v2>[^.;!?]+)"
    r"|\bI(?:'m|\s+am)\s+(?:also\s+)?a\s+native\s+(?P<v3>" + _LANG_EN + r")\s+speaker\b",
    _I,
)
# "I don't speak French anymore", "I no longer speak French", "I can't speak French now"
_NOT_SPEAK_EN = re.compile(
    r"\bI\s+(?:don'?t|do\s+not|no\s+longer|can'?t|cannot|can\s+no\s+longer)\s+"
    r"(?:really\s+)?speak\s+(?P<v>[^.;!?]+)",
    _I,
)
# 我会说中文和英语, 我还会说一点日语, 我会讲粤语, 我能说法语, 我的母语是中文
_SPEAK_CN = re.compile(
    r"我(?:也|还|现在)?(?:会|能|可以)(?:说|讲|用)(?P<v>[^。！!？?；;]+)"
    r"|我(?:的)?母语是(?P<v2>[^。！!？?；;，,]+)"
    r"|我(?:也|还)?(?:说|讲)(?P<v3>[^。！!？?；;]+?)(?:说|讲)得?(?:很|挺|还|比较)?(?:流利|好|不错)"
)
# "Not French." on its own, answering what was listed; 不是法语。
_NOT_ALONE = re.compile(
    r"^\s*(?:and\s+|but\s+|oh,?\s+)?(?:not|no\s+longer)\s+(?P<v>(?:" + _LANG_EN + r")"
    r"(?:\s*(?:,|and|or)\s*(?:" + _LANG_EN + r"))*)\s*(?:any\s*more)?\s*[.!]?\s*$"
    r"|^\s*(?:不是|去掉|不要)(?P<v2>(?:" + _LANG_CN + r")(?:和|、|或)?)+\s*(?:了)?\s*[。！!]?\s*$",
    _I,
)
# 我不会说法语了, 我已经不会讲法语了, 我不再说法语了
_NOT_SPEAK_CN = re.compile(r"我(?:已经|现在)?(?:不会|不能|不再)(?:说|讲)(?P<v>[^。！!？?；;]+)")

_MULTI_CHANNEL_EN = re.compile(
    r"\b(?:reach|contact|call|text|email|find|message)\s+me\s+(?:by|via|through|on|over)\s+"
    r"(?P<v>[^.;!?]+)"
    r"|\bI(?:'m|\s+am)\s+(?:reachable|available|contactable)\s+(?:by|via|through|on|over)\s+"
    r"(?P<v2>[^.;!?]+)",
    _I,
)
_MULTI_CHANNEL_CN = re.compile(r"(?:可以)?(?:用|通过|打)(?P<v>[^。！!？?；;]+?)(?:联系|找)我")
# "don't call me (by phone) anymore", "don't text me", "stop emailing me", "no more calls"
_STOP_VERB_EN = re.compile(
    r"\b(?:don'?t|do\s+not|please\s+don'?t|stop|never|no\s+longer)\s+"
    r"(?:(?P<verb>call(?:ing)?|phon(?:e|ing)|text(?:ing)?|email(?:ing)?|e-mail(?:ing)?|"
    r"messag(?:e|ing)|ring(?:ing)?)\s+me\b(?:\s+(?:by|via|on|over)\s+(?P<ch>[\w-]+(?:\s+calls?)?))?"
    r"|(?:contact(?:ing)?|reach(?:ing)?)\s+me\s+(?:by|via|on|over)\s+(?P<ch2>[\w-]+(?:\s+calls?)?))",
    _I,
)
# "email is fine, not by phone" / "not by phone anymore" / "no phone calls"
_NOT_BY_EN = re.compile(
    r"(?:^|[,;]\s*|\s-\s)(?:but\s+|and\s+)?(?:just\s+)?not\s+(?:by|via|on|over)\s+"
    r"(?P<ch>[\w-]+(?:\s+calls?)?)"
    r"|\bno\s+(?:more\s+)?(?P<ch2>phone\s+calls|calls|texts|emails|sms)\b",
    _I,
)
# 别打电话了, 不要打电话, 不要用短信联系我, 别发短信了, 别再发邮件了, 不用打我电话
_STOP_CN = re.compile(
    r"(?:别|不要|不用|不必|请勿|不想)(?:再)?(?:给我)?"
    r"(?:打(?:我)?(?P<c1>电话|手机)|发(?P<c2>短信|邮件|微信)|用(?P<c3>[^。！!？?；;，,]{1,6}?)"
    r"(?:联系|找|打扰)我?)"
)
_VERB_CHANNEL = {
    "call": "phone",
    "phone": "phone",
    "ring": "phone",
    "text": "sms",
    "email": "email",
    "e-mail": "email",
}
_OTHERS = re.compile(
    r"\b(?:my|our|his|her|their)\s+\w+\s+(?:speaks?|is\s+fluent)\b|\b(?:he|she|they)\s+"
    r"|我(?:的)?(?:老婆|老公|妻子|丈夫|太太|先生|孩子|儿子|女儿|妈妈|爸爸|朋友|同事)",
    _I,
)


def _languages(text: str) -> list[str]:
    """The languages named in ``text``, in order, canonical spelling, no duplicates."""
    found: list[tuple[int, str]] = []
    for match in _LANG_EN_RE.finditer(text):
        found.append((match.start(), match.group(0).capitalize()))
    for match in _LANG_CN_RE.finditer(text):
        found.append((match.start(), _CN_CANON.get(match.group(0), match.group(0))))
    seen: dict[str, str] = {}
    for _, name in sorted(found):
        seen.setdefault(name.casefold(), name)
    return list(seen.values())


_CHANNEL_RE = re.compile(
    "|".join(sorted((re.escape(w) for w in CHANNELS if w), key=len, reverse=True)), _I
)


def _channels(text: str) -> list[str]:
    """The channels named in ``text``, in order, no duplicates."""
    seen: dict[str, None] = {}
    for match in _CHANNEL_RE.finditer(text):
        word = match.group(0)
        if word.isascii():
            start, end = match.span()
            if (start > 0 and text[start - 1].isalnum()) or (
                end < len(text) and text[end].isalnum()
            ):
                continue
        channel = CHANNELS.get(" ".join(word.casefold().split()))
        if channel is not None:
            seen.setdefault(channel, None)
    return list(seen)


# What may stand before "don't call me" / 别打电话 in its clause: the user telling us,
# not "You never call me", "She said don't call me", 他不想用微信联系我, 我妈说别打电话了.
_LEAD_EN = re.compile(r"(?:(?:please|so|and|but|just|oh|also|then|ok|okay)\s*)*", _I)
_LEAD_CN = re.compile(r"(?:请|你|你们|以后|今后|之后|就|那就|所以|也|都|还是|千万)*")


def _told(sentence: str, start: int) -> bool:
    """Whether the match at ``start`` opens its clause (after at most a softener)."""
    lead = re.split(r"[,.;:!?，。；：！？、\-]", sentence[:start])[-1].strip()
    pattern = _LEAD_EN if lead.isascii() else _LEAD_CN
    return pattern.fullmatch(lead) is not None


def _fact(attribute: str, value: str, *, remove: bool = False) -> Candidate:
    return Candidate(
        subject="user",
        attribute=attribute,
        value=value,
        kind="fact",
        confidence=0.9 if remove else 0.85,
        importance=0.6,
        change="remove" if remove else "state",
    )


def _cut_negated(text: str) -> str:
    """``text`` up to a ", not ..." tail (:mod:`.corrections` reads that tail)."""
    return re.split(r"[,，]\s*(?:but\s+|and\s+|而)?(?:not\b|不是)", text, maxsplit=1, flags=_I)[0]


# A spoken list ends where the sentence turns to something else ("..., and please keep
# replies in English", 不过回复用中文就好): the reply language is no spoken one.
_LIST_TURN = re.compile(
    r"(?:[,，;；]\s*|\s+)(?:and\s+|but\s+)?(?:please|but|so|though|however)\b|"
    r"[,，;；]?\s*(?:不过|但是|但|可是|所以|而且)|[,，]\s*(?:请|以后|回复|回答)",
    _I,
)


def _spoken_list(text: str) -> str:
    """The languages part of a spoken list: up to a ", not" tail or a turn."""
    return _LIST_TURN.split(_cut_negated(text), maxsplit=1)[0]


def set_facts(sentence: str, facts: Sequence[Candidate]) -> list[Candidate]:
    """The ``languages_spoken`` and ``contact_channels`` facts and removals ``sentence``
    (the user's own, not a question) states; ``facts``: what other patterns found in it."""
    if HYPOTHETICAL.search(sentence):
        return []
    made: list[Candidate] = []
    removed_languages: set[str] = set()
    for pattern in (_NOT_SPEAK_EN, _NOT_SPEAK_CN, _NOT_ALONE):
        for match in pattern.finditer(sentence):
            raw = match.group(0) if pattern is _NOT_ALONE else _cut_negated(match.group("v"))
            for lang in _languages(raw):
                removed_languages.add(lang.casefold())
                made.append(_fact(LANGUAGES_SPOKEN, lang, remove=True))
    # "I speak English, but my husband speaks French": only what precedes the other person.
    other = _OTHERS.search(sentence)
    own = sentence[: other.start()] if other else sentence
    for pattern in (_SPEAK_EN, _SPEAK_CN):
        for match in pattern.finditer(own):
            raw = next(v for v in match.groupdict().values() if v)
            for lang in _languages(_spoken_list(raw)):
                if lang.casefold() not in removed_languages:
                    made.append(_fact(LANGUAGES_SPOKEN, lang))
    removed_channels: list[str] = []
    for match in _STOP_VERB_EN.finditer(sentence):
        if not _told(sentence, match.start()):
            continue
        if match.group("ch") or match.group("ch2"):
            removed_channels += _channels(match.group("ch") or match.group("ch2"))
        elif match.group("verb"):
            verb = re.sub(r"(?:ing|e)$", "", match.group("verb").casefold())
            channel = _VERB_CHANNEL.get(verb) or _VERB_CHANNEL.get(verb + "e")
            if channel is None and verb.startswith("phon"):
                channel = "phone"
            if channel is not None:
                removed_channels.append(channel)
    for match in _NOT_BY_EN.finditer(sentence):
        if match.group("ch2") and not _told(sentence, match.start()):
            continue  # "I got no texts from you"
        removed_channels += _channels(match.group("ch") or match.group("ch2"))
    for match in _STOP_CN.finditer(sentence):
        if not _told(sentence, match.start()):
            continue
        removed_channels += _channels(match.group("c1") or match.group("c2") or match.group("c3"))
    for channel in dict.fromkeys(removed_channels):
        made.append(_fact(CONTACT_CHANNELS, channel, remove=True))
        made.append(_fact("contact_channel", channel, remove=True))
    if not removed_channels:
        for pattern in (_MULTI_CHANNEL_EN, _MULTI_CHANNEL_CN):
            for match in pattern.finditer(sentence):
                raw = next(v for v in match.groupdict().values() if v)
                channels = _channels(_cut_negated(raw))
                if len(channels) > 1:
                    made += [_fact(CONTACT_CHANNELS, c) for c in channels]
    kept = {(f.attribute, f.value.casefold(), f.change) for f in facts}
    out: list[Candidate] = []
    for candidate in made:
        key = (candidate.attribute, candidate.value.casefold(), candidate.change)
        if key not in kept:
            kept.add(key)
            out.append(candidate)
    return out
