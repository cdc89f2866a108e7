"""Frames: facts read by composing the registry's words, not by one pattern a sentence.

A frame is who + an attribute's cue + a copula or change verb + a value the value type
accepts, each part taken from :mod:`memstrata.attributes.registry`:

* **cue frames**: "my shipping address is X", "budget should be X", 我的收货地址是X,
  预算应该是X, 把预算改成X, "change my budget to X" - for every attribute with
  ``cues``, with :data:`~memstrata.attributes.registry.COPULA_EN` /
  :data:`~memstrata.attributes.registry.COPULA_ZH` between cue and value;
* **state frames**: an attribute's ``state_frames`` ("I avoid X", "I can't have X",
  我家住在X, "I teach X");
* **change frames**: an attribute's ``change_verbs`` with what comes along ("joined
  ByteDance as a product manager" states the employer and the job, 加入字节跳动做产品
  经理 too);
* **removal frames**: an attribute's ``removal_frames`` ("I can eat X now",
  我现在能吃X了, "I'm not vegetarian anymore", 我不吃素了, "I left X"): ``remove``
  candidates, one per surface form of the value (:func:`memstrata.attributes.values.
  variants`); the write path keeps those its slot holds, and closes a single-valued
  slot whose value is removed (the old value stays in history).

Frames run after the patterns of :mod:`.patterns`, :mod:`.profile_patterns` and
:mod:`.everyday_patterns`: a frame's fact is kept when no pattern found its attribute
in the sentence, or when it is the cleaner reading of a pattern's value (a pattern's
employer 字节跳动做产品经理 gives way to the frame's 字节跳动).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memstrata.attributes.registry import (
    ATTRIBUTES,
    COPULA_EN,
    COPULA_ZH,
    MULTI_VALUED,
    SET_VERB_EN,
    SET_VERB_ZH,
    WHO_EN,
    WHO_ZH,
    Attribute,
)
from memstrata.attributes.values import DIET_CLASSES, diet_class, food_object, variants
from memstrata.extract.candidates import Candidate
from memstrata.extract.clauses import Clause
from memstrata.extract.lexicon import DIETS
from memstrata.extract.patterns import (
    ADV,
    CN_ADV,
    HEDGE,
    HYPOTHETICAL,
    LATIN_SPACE,
    LIST_END,
    LIST_VAL,
    alternation,
)
from memstrata.extract.values import check_value, is_food, split_items

__all__ = ["frame_facts", "frame_removals", "normalized", "only_now"]

_I = re.IGNORECASE
_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")

# Where a value ends: a clause boundary, or a word that starts the next part.
_EN_END = (
    r"(?=\s*(?:[,.;:!?()\"]|\s-\s|$)|\s+(?:and|but|because|since|so|though|although|if|when|"
    r"while|which|who|where|now|these\s+days|nowadays|anymore|any\s+more|instead|please|"
    r"from\s+now\s+on|going\s+forward|for\s+(?:now|the\s+trip|this|that)|max|tops)\b)"
)
_ZH_END = (
    r"(?=(?:了|啦|呀|啊|吧|呢|哦|喔|就行|就好|左右|以内|上下)*"
    r"(?:[，。,.;；!！?？、]|\s(?![A-Za-z])|$))"
)
_EN_VALUE = r"(?P<v>[^,.;:!?()\"]{1,80}?)"
_EN_ADDRESS = r"(?P<v>[^.;!?]{4,120}?)"
_EN_ADDRESS_END = (
    r"(?=\s*,?\s*(?:not\s+(?:my|the|to)\b|instead\b|please\b|from\s+now\s+on\b|thanks?\b|"
    r"going\s+forward\b)|\s*(?:[.;!?]|$))"
)
_EN_MONEY = (
    r"(?P<v>(?:[$¥￥€£]\s*)?\d[\d,.]*\s*(?:k|K)?(?:\s*(?:dollars?|bucks|USD|usd|RMB|rmb|yuan|"
    r"euros?|pounds?|quid))?)"
)
_ZH_VALUE = rf"(?P<v>(?:[^，。,.;；!！?？、\s]|{LATIN_SPACE}){{1,40}}?)"
_ZH_LIST = rf"(?P<v>(?:[^，。,.;；!！?？\s]|{LATIN_SPACE}){{1,40}}?)"
_DIETS = alternation(tuple({*DIETS, *(f for forms in DIET_CLASSES.values() for f in forms)}))
# A diet is a closed list of words, in either language (我不再是vegetarian了).
_DIET_VALUE = rf"(?P<v>{_DIETS})(?![\w-])"
_ZH_DIET_VALUE = rf"(?P<v>{_DIETS})(?![A-Za-z-])"
_EN_MANY_SPLIT = re.compile(r"\s+(?:or|nor)\s+", _I)
_CONFIDENCE = {"cue": 0.9, "state": 0.8, "change": 0.8, "remove": 0.9}
_IMPORTANCE = 0.7
# A template tail that may match nothing ("(?:的工作)?"): where the value ends is not
# said, so the value type's end is added after it.
_OPTIONAL = re.compile(r"(?:\(\?:[^()]*\)\?)*")
# "my budget for the trip is ...": what the value is for, between the cue and the copula
_EN_QUALIFIER = r"(?:\s+(?:for|on)\s+(?:the\s+|this\s+|my\s+|our\s+)?[\w'-]+(?:\s+[\w'-]+)?)?"
_COLON = re.compile(r"[：:]")
_TEMPLATE_SLOT = re.compile(r"\{v(?::(?P<kind>\w+))?\}")


@dataclass(frozen=True, slots=True)
class _Frame:
    """One compiled frame: what it reads, and how its value is checked."""

    attribute: Attribute
    pattern: re.Pattern[str]
    origin: str
    """cue, state, change or remove: how the frame was composed."""
    check: str | None = None
    """A check kind overriding the attribute's (a template's ``{v:kind}``)."""
    many: bool = False


def _cue_alternation(cues: Sequence[str], chinese: bool) -> str:
    """The cues a frame of one language reads: every cue of the attribute, the other
    language's too (我的 budget 改成8000了, "My 收货地址 is ..."), when the attribute has
    a cue in the frame's language."""
    own = tuple(c for c in cues if bool(_HAS_CJK.search(c)) == chinese)
    if not own:
        return ""
    words = alternation(tuple(cues))
    return words.replace(r"\ ", r"\s+")


def _value(attribute: Attribute, chinese: bool) -> tuple[str, str]:
    """The value group and where it ends, for ``attribute``'s value type."""
    kind = attribute.value_type
    if kind == "diet":
        return (_ZH_DIET_VALUE if chinese else _DIET_VALUE), ""
    if kind == "amount" and not chinese:
        return _EN_MONEY, r"(?![\d,])"
    if kind == "address" and not chinese:
        return _EN_ADDRESS, _EN_ADDRESS_END
    if attribute.multi_valued:
        return (_ZH_LIST, _ZH_END) if chinese else (LIST_VAL, LIST_END)
    return (_ZH_VALUE, _ZH_END) if chinese else (_EN_VALUE, _EN_END)


def _cue_frames(attribute: Attribute) -> list[_Frame]:
    made: list[_Frame] = []
    english = _cue_alternation(attribute.cues, chinese=False)
    if english:
        value, end = _value(attribute, chinese=False)
        made.append(
            _Frame(
                attribute,
                re.compile(
                    rf"(?:{WHO_EN}){english}{_EN_QUALIFIER}(?:{COPULA_EN}){value}{end}"
                    rf"|{SET_VERB_EN}{english}\s+to\s+{value.replace('?P<v>', '?P<v2>')}{end}",
                    _I,
                ),
                "cue",
            )
        )
    chinese = _cue_alternation(attribute.cues, chinese=True)
    if chinese:
        value, end = _value(attribute, chinese=True)
        made.append(
            _Frame(
                attribute,
                re.compile(
                    rf"(?:{WHO_ZH})\s*{chinese}\s*(?:{COPULA_ZH}){value}{end}"
                    rf"|{SET_VERB_ZH}{chinese}(?:改|换|更新|调整|调|设)(?:成|为|到)"
                    rf"{value.replace('?P<v>', '?P<v2>')}{end}"
                ),
                "cue",
            )
        )
    return made


def _template_frames(attribute: Attribute, templates: Sequence[str], origin: str) -> list[_Frame]:
    made: list[_Frame] = []
    for template in templates:
        chinese = bool(_HAS_CJK.search(template))
        slot = _TEMPLATE_SLOT.search(template)
        if slot is None:
            continue
        value, end = _value(attribute, chinese)
        tail = template[slot.end() :]
        if attribute.value_type == "diet" or not _OPTIONAL.fullmatch(tail):
            end = ""  # the value is a closed list, or the template says what follows it
        pattern = template[: slot.start()] + value + tail + end
        made.append(
            _Frame(
                attribute,
                re.compile(pattern, _I),
                origin,
                check=slot.group("kind"),
                many=attribute.multi_valued,
            )
        )
    return made


def _change_frames(attribute: Attribute) -> list[_Frame]:
    """'I joined X as a Y' / 我加入X做Y: the change verb's value, and the job with it."""
    english = [v for v in attribute.change_verbs if not _HAS_CJK.search(v)]
    chinese = [v for v in attribute.change_verbs if _HAS_CJK.search(v)]
    made: list[_Frame] = []
    if english:
        made.append(
            _Frame(
                attribute,
                re.compile(
                    rf"\bI(?:'ve|\s+have)?\s+{ADV}(?:{'|'.join(english)})\s+"
                    r"(?P<v>(?:[^,.;:!?()\"]|\.(?=\s?\w)){1,60}?)\s+as\s+(?:an?\s+|the\s+|our\s+)?"
                    rf"(?P<job>[^,.;:!?()\"]{{1,60}}?){_EN_END}",
                    _I,
                ),
                "change",
            )
        )
    if chinese:
        made.append(
            _Frame(
                attribute,
                re.compile(
                    rf"我{CN_ADV}(?:从[^，。,；;！!？?]{{1,20}}?)?(?:{'|'.join(chinese)})"
                    r"(?P<v>[^，。,.;；!！?？、\s]{1,20}?)(?:做|当|担任|任)(?:一名|一个|个)?"
                    rf"(?P<job>[^，。,.;；!！?？、\s]{{1,12}}?){_ZH_END}"
                ),
                "change",
            )
        )
    return made


def _compile() -> tuple[tuple[_Frame, ...], tuple[_Frame, ...]]:
    stating: list[_Frame] = []
    removing: list[_Frame] = []
    for attribute in ATTRIBUTES:
        stating += _change_frames(attribute)
        stating += _cue_frames(attribute)
        stating += _template_frames(attribute, attribute.state_frames, "state")
        removing += _template_frames(attribute, attribute.removal_frames, "remove")
    return tuple(stating), tuple(removing)


_STATING, _REMOVING = _compile()
_JOB = next(a for a in ATTRIBUTES if a.name == "job")


def _checked(frame: _Frame, raw: str, groups: dict[str, str | None]) -> list[str]:
    """The values ``raw`` holds for ``frame`` (one per list item), each checked."""
    chinese = bool(_HAS_CJK.search(raw))
    kind = frame.check or frame.attribute.checks[1 if chinese else 0]
    items = [raw]
    if frame.many:
        items = [i for part in split_items(raw) for i in _EN_MANY_SPLIT.split(part) if i]
    values: list[str] = []
    for position, item in enumerate(items):
        checked = check_value(kind, item, groups)
        if checked is None and position == 0:
            return []  # the head says what the list is about
        if checked is not None:
            values.append(checked[0])
    return values


def _fact(attribute: str, value: str, confidence: float, extras: Extras) -> Candidate:
    return Candidate(
        subject="user",
        attribute=attribute,
        value=value,
        kind="fact",
        confidence=round(confidence, 4),
        importance=_IMPORTANCE,
        extras=extras(),
    )


Extras = Callable[[], tuple[tuple[str, str], ...]]


def _read(
    frame: _Frame, match: re.Match[str], confidence: float, extras: Extras
) -> list[Candidate]:
    groups = match.groupdict()
    raw = groups.get("v") or groups.get("v2")
    if not raw:
        return []
    values = _checked(frame, raw, groups)
    made = [_fact(frame.attribute.name, v, confidence, extras) for v in values]
    job = groups.get("job")
    if made and job:
        # "joined X as Y" is read as a pair: without a job ("as a beginner") it is not
        # this frame's reading at all.
        chinese = bool(_HAS_CJK.search(job))
        checked = check_value(_JOB.checks[1 if chinese else 0], job, groups)
        if checked is None:
            return []
        made.append(_fact("job", checked[0], confidence, extras))
    if frame.origin == "change":
        # A change verb says the value is the new one: it replaces the slot's value
        # even where the write path would call the two near duplicates (后端工程师 /
        # 产品经理 embed close).
        made = [replace(c, change="correct") for c in made]
    return made


def _inside(value: str, longer: str) -> bool:
    """Whether ``value`` stands in ``longer`` as a whole (not "$1" in "$1,200")."""
    at = longer.find(value)
    if at < 0:
        return False
    after = longer[at + len(value) : at + len(value) + 1]
    before = longer[at - 1 : at] if at else ""
    return not (after and (after in ",." or (after.isascii() and after.isalnum()))) and not (
        before and before.isascii() and before.isalnum()
    )


def frame_facts(
    sentence: str,
    clauses: Sequence[Clause],
    found: Sequence[Candidate],
    extras: Extras,
    *,
    hedge_factor: float,
    correcting: bool,
) -> list[Candidate]:
    """``found`` (the patterns' facts of ``sentence``, cut into ``clauses``) with the
    facts the frames read where the patterns read none of that attribute; a frame's
    value found inside a pattern's value of the same single-valued attribute replaces
    it ("字节跳动做产品经理" -> "字节跳动", "now 5 Elm Street" -> "5 Elm Street")."""
    framed: list[Candidate] = []
    # 我的地址：上海市...: the clauses are cut at the colon, the cue and its value apart.
    whole = [Clause(sentence, "speaker")] if _COLON.search(sentence) and clauses else []
    if whole and clauses[0].subject != "speaker":
        whole = []
    for clause in [*clauses, *whole]:
        # "My 收货地址 is ..." reads as one of the speaker's (``mine``); a cue frame needs
        # the cue right after my / 我的, so "my sister's address" is never read.
        if clause.subject not in ("speaker", "mine"):
            continue
        cue_only = clause.subject == "mine"
        hedge = HEDGE.search(clause.text)
        hypothetical = HYPOTHETICAL.search(clause.text)
        for frame in _STATING:
            if cue_only and frame.origin != "cue":
                continue
            for match in frame.pattern.finditer(clause.text):
                if hypothetical is not None and hypothetical.start() <= match.start():
                    continue
                # "应该是" after 不对 corrects; it hedges nowhere else.
                hedged = hedge is not None and hedge.end() <= match.end() and not correcting
                confidence = _CONFIDENCE[frame.origin] * (hedge_factor if hedged else 1.0)
                framed += _read(frame, match, confidence, extras)
    kept = list(found)
    stated = {c.attribute for c in found if c.kind == "fact"}
    seen = {(c.attribute, c.value.casefold()) for c in found}
    for candidate in framed:
        key = (candidate.attribute, candidate.value.casefold())
        if key in seen:
            continue
        longer = [
            i
            for i, c in enumerate(kept)
            if c.attribute == candidate.attribute
            and c.value != candidate.value
            and candidate.attribute not in MULTI_VALUED
            and _inside(candidate.value, c.value)
        ]
        # A set takes every item a frame reads (我不能吃辣，也不喝酒); a single value
        # is the patterns' unless the frame's is the cleaner reading of it.
        if candidate.attribute in stated and not longer and candidate.attribute not in MULTI_VALUED:
            continue
        for i in reversed(longer):
            del kept[i]
        seen.add(key)
        kept.append(candidate)
    # A district read as an address (我们家住在成都市武侯区) is no city as well.
    addresses = {c.value for c in kept if c.attribute in ("address", "delivery_address")}
    return [c for c in kept if not (c.attribute == "city" and c.value in addresses)]


def frame_removals(
    clauses: Sequence[Clause], found: Sequence[Candidate], multi_valued: frozenset[str]
) -> list[Candidate]:
    """The ``remove`` candidates the removal frames read in ``clauses`` (``found``: the
    sentence's other candidates; a value it states is not removed). A removed value
    names each of its surface forms; a food removed is removed from every food-typed
    set attribute that frames it (allergies and avoids both read "I can eat X now");
    ``multi_valued``: the set-valued attributes (a single value the sentence states
    anew is not also removed)."""
    stated = {(c.attribute, c.value.casefold()) for c in found if c.change != "remove"}
    # "I no longer live in Berlin, I moved to Paris": the new value supersedes the old
    # one; a removal of a single value the sentence replaces says nothing more.
    replaced = {a for a, _ in stated if a not in multi_valued}
    made: list[Candidate] = []
    seen = set(stated) | {(c.attribute, c.value.casefold()) for c in found}
    for clause in clauses:
        if clause.subject != "speaker":
            continue
        hypothetical = HYPOTHETICAL.search(clause.text)
        for frame in _REMOVING:
            if frame.attribute.name in replaced:
                continue
            for match in frame.pattern.finditer(clause.text):
                if hypothetical is not None and hypothetical.start() <= match.start():
                    continue
                raw = match.group("v")
                for value in _checked(frame, raw, match.groupdict()):
                    for form in variants(frame.attribute.value_type, value):
                        key = (frame.attribute.name, form.casefold())
                        if key in seen:
                            continue
                        seen.add(key)
                        made.append(
                            Candidate(
                                subject="user",
                                attribute=frame.attribute.name,
                                value=form,
                                kind="fact",
                                confidence=_CONFIDENCE["remove"],
                                importance=_IMPORTANCE,
                                change="remove",
                            )
                        )
    return made


# "I can't eat anymore, I'm full", "I can't eat another bite": eating, no food avoided.
_NO_FOOD = re.compile(
    r"^(?:eat|吃)$|^(?:eat|drink|have)\s+(?:another|more|much|a\s+lot|any\s+more|"
    r"a\s+thing|a\s+bite)\b|^(?:another|more|much)\b",
    _I,
)
_ONLY_NOW = re.compile(
    r"\bonly\b.*\b(?:now|anymore|any\s+more|these\s+days)\b|现在只|只.*了$|现在.*只", _I
)


def only_now(
    sentence: str, found: Sequence[Candidate], multi_valued: frozenset[str]
) -> list[Candidate]:
    """``found`` with a set stated as "only ... now" (我现在只对花生过敏了) made a
    correction: the set is what the sentence names, the rest goes."""
    if not _ONLY_NOW.search(sentence.rstrip("。.!！ ")):
        return list(found)
    return [
        replace(c, change="correct")
        if c.kind == "fact" and c.change == "state" and c.attribute in multi_valued
        else c
        for c in found
    ]


def normalized(found: Sequence[Candidate]) -> list[Candidate]:
    """``found`` with each food-typed value read as the food ("eat pork" -> pork, 吃猪肉
    -> 猪肉), and an ``avoids`` that names a diet (我不吃素了: 吃素) dropped: giving up a
    diet is the diet's removal, not something avoided."""
    out: list[Candidate] = []
    for candidate in found:
        if candidate.attribute == "allergies" and candidate.kind == "fact":
            # 我吃虾会过敏: the allergy is to shrimp, not to eating it
            food = food_object(candidate.value)
            out.append(replace(candidate, value=food) if food != candidate.value else candidate)
            continue
        if candidate.attribute != "avoids" or candidate.kind != "fact":
            out.append(candidate)
            continue
        if diet_class(candidate.value) is not None or _NO_FOOD.match(candidate.value):
            continue
        food = food_object(candidate.value)
        # "eat pork or beef", 猪肉和牛肉: one food each, when each is a food
        items = [i for part in split_items(food) for i in _EN_MANY_SPLIT.split(part) if i]
        if len(items) > 1 and all(is_food(i) for i in items):
            out += [replace(candidate, value=food_object(i)) for i in items]
        else:
            out.append(replace(candidate, value=food))
    return out
