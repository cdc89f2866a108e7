"""Negated and contradicted facts, read by rule for the reply check
(:mod:`memstrata.decision.consistency`), in English and Chinese.

The memories are read as affirmative statements: episodes as said, facts rewritten
as a statement (``user allergies: peanuts`` reads as "I'm allergic to peanuts. 我对
peanuts过敏。"). A reply contradicts them when it

* denies an allergy the memories hold ("you have no allergies", "you aren't allergic
  to shellfish", "你没有过敏", "你对海鲜不过敏");
* calls a held allergen safe ("peanuts are fine for you", "you can take penicillin",
  "花生没问题", "可以放心使用青霉素");
* denies something the memories affirm ("you don't live in Berlin", "you don't have
  any pets" with a dog held, "你不是素食者", "你没有糖尿病");
* says the user likes what they hate, or the reverse ("you love cilantro");
* places the user in another city than the one held ("since you live in Munich").

A statement the memories themselves negate ("I don't eat pork") is never affirmed,
so a reply repeating it agrees.

Foods, diets, cities and languages are compared across languages through the glossary
(:mod:`memstrata.attributes.glossary`): "You can eat peanuts" contradicts 我对花生过敏,
"你可以吃虾" an allergy to shellfish (shellfish covers shrimp), "Since you live in
Beijing" a home in 上海, "你不是素食者" "I'm vegetarian".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memstrata.attributes import by_name, glossary
from memstrata.cer import content_words

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_H = rf"[{_CJK}]"
_FACT = re.compile(r"^(?P<subject>\S+) (?P<attribute>[^:]+): (?P<value>.+)$", re.S)
_CLAUSE = re.compile(r"[,;.!?，。；！？、\n]|\s(?:so|but|and|because|while)\s", re.I)
_END = r"(?=[,;.!?，。；！？、\n]|\s(?:so|but|because|while|without|except|for|since)\s|$)"
_PHRASE = r"(?P<x>[^,;.!?，。；！？\n]{1,60}?)"
_NEGATOR_EN = re.compile(r"\b(?:not|no|never|none|nothing|without)\b|n't\b", re.I)
_NEGATOR_ZH = re.compile("不|没|别|无|非|勿|未")
_ZH_NEGATED_BEFORE = ("不", "没", "没有", "别", "无", "未", "不再")

# Facts rewritten as the statements they stand for, one per value.
_FACT_STATEMENTS = {
    "allergies": ("I'm allergic to {v}.", "我对{v}过敏。"),
    "allergy": ("I'm allergic to {v}.", "我对{v}过敏。"),
    "city": ("I live in {v}.", "我住在{v}。"),
    "location": ("I live in {v}.", "我住在{v}。"),
    "dislikes": ("I hate {v}.", "我讨厌{v}。"),
    "likes": ("I like {v}.", "我喜欢{v}。"),
    "pets": ("I have {v}.", "我养了{v}。"),
    "diet": ("I'm {v}.", "我是{v}。"),
    "languages_spoken": ("I speak {v}.", "我会说{v}。"),
}
# A general word and the things it covers ("you have no pets" with a dog held).
_COVERS = {
    "pet": ("dog", "cat", "puppy", "kitten", "parrot", "hamster", "rabbit", "fish"),
    "kid": ("child", "children", "son", "daughter", "baby"),
    "child": ("kid", "son", "daughter", "baby"),
    "宠物": ("猫", "狗", "鹦鹉", "仓鼠", "兔"),
    "孩子": ("儿子", "女儿", "小孩", "宝宝"),
}
_FILLER_EN = frozenset("any anything food known real sort kind".split())  # noqa: SIM905
_FILLER_ZH = re.compile("^(?:任何|什么|食物|养|有|是|再|在)+")
# "You don't need to...", "you haven't told me your budget": about the conversation,
# not a fact.
_SKIP_EN = re.compile(
    r"^(?:to|need|have to|worry|mind|forget|hesitate|know|see|think|told|said|mentioned"
    r"|given|shared|asked|specified|decided|say|tell|mention)\b",
    re.I,
)
_SKIP_ZH = re.compile("^(?:用|需要|必|要|会|能|可以|知道|担心|清楚|确定|告诉|说|提到|提过)")
_FOODS = frozenset({"food", "diet"})
_VERB = frozenset({"verb"})
_ZH_AVOID_FILLER = re.compile("^(?:我|一点|一口|任何)+")
_ZH_FILLER_CHARS = re.compile("[在了的是有再任何什么一个种些]")

_ALLERGY_MEMORY = (
    re.compile(rf"allergic to (?P<x>[\w' -]+?){_END}", re.I),
    re.compile(r"\b(?P<x>[A-Za-z]+) allerg(?:y|ies)\b", re.I),
    re.compile(rf"对(?P<x>{_H}{{1,10}}?)过敏"),
)
_ALLERGY_DENIAL_ANY = (
    re.compile(
        r"\byou(?:'ve|\s+have|\s+do\s+not\s+have|\s+don't\s+have|\s+haven't\s+got)\s+"
        r"(?:no|any)?\s*(?:known\s+|food\s+|real\s+)?allerg(?:y|ies)\b"
        r"(?!\s+to\b)",
        re.I,
    ),
    re.compile(r"\bno\s+(?:known\s+|food\s+)?allerg(?:y|ies)\b(?!\s+to\b)", re.I),
    re.compile(r"你(?:并|也|从来)?(?:没有|没|不|不会)(?:任何|什么)?(?:食物)?过敏"),
)
_ALLERGY_DENIAL_OF = (
    re.compile(
        r"\byou(?:'re|\s+are)?\s*(?:not|n't|aren't|are\s+not|no\s+longer|never)\s+allergic"
        rf"(?:\s+to\s+(?P<x>[\w' -]+?))?{_END}",
        re.I,
    ),
    re.compile(r"\byou\s+aren't\s+allergic" + rf"(?:\s+to\s+(?P<x>[\w' -]+?))?{_END}", re.I),
    re.compile(rf"对(?P<x>{_H}{{1,8}}?)(?:并|也)?(?:不|没有|不会)过敏"),
    re.compile(rf"(?:并|也)?(?:不|没有|不会)对(?P<x>{_H}{{1,8}}?)过敏"),
)
# What the user keeps away from besides allergens: "I don't drink alcohol", a diet
# free of it (gluten-free), an intolerance, 一点辣都不能吃, 我不吃猪肉.
_AVOIDED_MEMORY = (
    re.compile(
        r"\bI\s+(?:don't|do\s+not|never|can't|cannot|can\s+not)\s+(?:eat|drink|have|take|touch)"
        rf"\s+(?:any\s+)?(?P<x>[\w' -]+?)(?:\s+at\s+all)?{_END}",
        re.I,
    ),
    re.compile(r"\b(?P<x>[A-Za-z]+)[- ]free\b", re.I),
    re.compile(r"\b(?P<x>[A-Za-z]+)\s+intoleran(?:t|ce)\b", re.I),
    re.compile(rf"(?:一点|一口)?(?P<x>{_H}{{1,4}}?)(?:都|也)(?:不能|不敢|不)(?:吃|喝|碰)"),
    re.compile(rf"我(?:从来)?(?:不能|不敢|不)(?:吃|喝|碰)(?P<x>{_H}{{1,6}})"),
)
# A reply treating what is avoided as fine: "you're fine with gluten", "you handle
# dairy fine", "since you drink alcohol".
_FINE_WITH = (
    re.compile(
        r"\byou(?:'re|\s+are)\s+(?:totally\s+|perfectly\s+)?(?:fine|ok|okay|good)\s+with\s+"
        rf"(?P<x>[\w' -]+?){_END}",
        re.I,
    ),
    re.compile(
        r"\byou\s+(?:handle|tolerate|digest)\s+(?P<x>[\w' -]+?)\s+(?:fine|well|ok|okay)\b", re.I
    ),
    re.compile(
        r"\b(?:since|as|because)\s+you\s+(?:eat|drink|like|love|enjoy)\s+"
        rf"(?P<x>[\w' -]+?){_END}",
        re.I,
    ),
)
_SAFE = (
    re.compile(
        r"(?:^|\b)(?P<x>[A-Za-z][\w' -]{0,30}?)\s+(?:is|are|'s|'re)\s+"
        r"(?:totally\s+|perfectly\s+|completely\s+)?(?:fine|safe|ok|okay|alright|no problem)\b",
        re.I,
    ),
    re.compile(
        r"\byou\s+can\s+(?:safely\s+|still\s+)?(?:eat|take|have|drink|use|order|enjoy)\s+"
        rf"(?P<x>[\w' -]+?){_END}",
        re.I,
    ),
    re.compile(
        rf"(?P<x>{_H}{{1,8}}?)(?:对你)?(?:来说)?(?:都|也)?(?:没问题|没事|是安全的|很安全|安全)"
    ),
    re.compile(rf"(?:可以|能)(?:放心|随便)?(?:吃|使用|用|服用|喝|点)(?P<x>{_H}{{1,8}})"),
    re.compile(rf"(?:放心|随便)(?:吃|使用|用|服用|喝)(?P<x>{_H}{{1,8}})"),
    re.compile(rf"(?P<x>{_H}{{1,8}}?)(?:可以|随便|放心)+(?:吃|用|喝|点)"),
)
_DENIAL_EN = (
    re.compile(
        r"\byou\s+(?:do\s+not|don't|dont|did\s+not|didn't|never|no\s+longer)\s+"
        r"(?:have\s+(?:any\s+|an?\s+)?|own\s+(?:any\s+|an?\s+)?)?" + _PHRASE + _END,
        re.I,
    ),
    re.compile(
        r"\byou(?:'re|\s+are)\s+(?:not|no\s+longer|never)\s+(?:an?\s+)?" + _PHRASE + _END, re.I
    ),
    re.compile(r"\byou\s+aren't\s+(?:an?\s+)?" + _PHRASE + _END, re.I),
    re.compile(
        r"\byou(?:'ve|\s+have)\s+(?:no|not\s+got|never\s+had)\s+(?:any\s+)?" + _PHRASE + _END,
        re.I,
    ),
    re.compile(r"\byou\s+haven't\s+(?:got\s+|had\s+)?(?:any\s+|an?\s+)?" + _PHRASE + _END, re.I),
)
_DENIAL_ZH = re.compile(
    rf"你(?:并|也|还|从来)?(?:没有|不是|不再|从不|从没|没|不)(?P<x>{_H}[{_CJK}A-Za-z]{{0,11}})"
)
_LIKE = {
    "like": (
        re.compile(rf"\bI\s+(?:really\s+)?(?:love|like|enjoy|adore)\s+(?P<x>[\w' -]+?){_END}"),
        re.compile(rf"我(?:很|最|特别)?(?:喜欢|爱吃|爱喝|爱)(?P<x>{_H}{{1,8}})"),
    ),
    "dislike": (
        re.compile(
            r"\bI\s+(?:really\s+)?(?:hate|dislike|can't\s+stand|don't\s+like|do\s+not\s+like)\s+"
            rf"(?P<x>[\w' -]+?){_END}"
        ),
        re.compile(rf"我(?:很|最|特别)?(?:讨厌|不喜欢|不爱吃|受不了)(?P<x>{_H}{{1,8}})"),
    ),
}
_REPLY_LIKE = {
    "like": (
        re.compile(
            r"\byou\s+(?:really\s+)?(?:love|like|enjoy|adore)\s+" + rf"(?P<x>[\w' -]+?){_END}",
            re.I,
        ),
        re.compile(rf"你(?:很|最|特别)?(?:喜欢|爱吃|爱喝|爱)(?P<x>{_H}{{1,8}})"),
    ),
    "dislike": (
        re.compile(
            r"\byou\s+(?:really\s+)?(?:hate|dislike|can't\s+stand|don't\s+like|do\s+not\s+like)"
            rf"\s+(?P<x>[\w' -]+?){_END}",
            re.I,
        ),
        re.compile(rf"你(?:很|最|特别)?(?:讨厌|不喜欢|不爱吃|受不了)(?P<x>{_H}{{1,8}})"),
    ),
}
_PLACE_EN = r"(?P<x>[A-Z][\w-]+(?:\s[A-Z][\w-]+)*)"
_RESIDENCE_MEMORY = (
    re.compile(
        r"\bI(?:'m|\s+am)?\s+(?:now\s+)?(?:live|living|based|located|reside|residing)\s+in\s+"
        + _PLACE_EN
    ),
    re.compile(r"\bI(?:'ve|\s+have)?\s+(?:just\s+)?moved\s+to\s+" + _PLACE_EN),
    re.compile(rf"我(?:现在)?(?:住在|定居在|生活在|搬到了|搬到)(?P<x>{_H}{{2,8}})"),
)
_RESIDENCE_REPLY = (
    re.compile(
        r"\byou(?:'re|\s+are|\s+now)?\s+(?:now\s+)?(?:live|living|based|located|reside|residing)"
        r"\s+in\s+" + _PLACE_EN,
        re.I,
    ),
    re.compile(rf"你(?:现在)?(?:住在|定居在|生活在)(?P<x>{_H}{{2,8}})"),
)


@dataclass(frozen=True, slots=True)
class Held:
    """What the memories affirm, read once per check."""

    statements: tuple[str, ...]
    """Affirmative clauses (no negator in them)."""
    allergies: tuple[str, ...]
    likes: tuple[str, ...]
    dislikes: tuple[str, ...]
    residences: tuple[str, ...]
    avoided: tuple[str, ...] = ()
    """What the user keeps away from besides allergens (alcohol, gluten, 辣)."""


def read_held(memories: Iterable[str]) -> Held:
    """The statements, allergens, likes, dislikes and cities ``memories`` hold."""
    texts = [s for text in memories for s in as_statements(text)]
    clauses = [c.strip() for t in texts for c in _CLAUSE.split(t) if c and c.strip()]
    # A Chinese clause is judged where the phrase stands (不 inside 不耐受 negates
    # nothing); an English one with a negator affirms nothing.
    affirmative = tuple(c for c in clauses if _cjk(c) or not _NEGATOR_EN.search(c))
    return Held(
        statements=affirmative,
        allergies=_objects(texts, _ALLERGY_MEMORY),
        likes=_objects(texts, _LIKE["like"]),
        dislikes=_objects(texts, _LIKE["dislike"]),
        residences=_objects(texts, _RESIDENCE_MEMORY),
        avoided=tuple(_ZH_AVOID_FILLER.sub("", x) or x for x in _objects(texts, _AVOIDED_MEMORY)),
    )


def as_statements(text: str) -> tuple[str, ...]:
    """A memory as the statements it makes: a fact of a known attribute becomes one
    statement per value (``;``-separated), in both languages."""
    match = _FACT.match(text.strip())
    if match:
        name = match["attribute"].strip().casefold()
        attribute = by_name(name)  # an alias (过敏, 喜欢) names its attribute
        templates = _FACT_STATEMENTS.get(attribute.name if attribute else name)
        if templates:
            values = [v.strip() for v in match["value"].split(";") if v.strip()]
            return tuple(t.format(v=v) for v in values for t in templates)
    return (text,)


def contradictions(reply: str, held: Held) -> Iterator[str]:
    """Why ``reply`` contradicts what ``held`` affirms (one line per finding)."""
    for clause in (c for c in _CLAUSE.split(reply) if c and c.strip()):
        yield from _in_clause(clause.strip(), held)


def _in_clause(clause: str, held: Held) -> Iterator[str]:
    if held.allergies:
        if any(p.search(clause) for p in _ALLERGY_DENIAL_ANY):
            yield f"says {clause!r}; the memories hold an allergy to {held.allergies[0]!r}"
        for pattern in _ALLERGY_DENIAL_OF:
            for m in pattern.finditer(clause):
                target = m.group("x") or "anything"
                allergen = _matching(target, held.allergies, any_word=True)
                if allergen:
                    yield f"says {clause!r}; the memories hold an allergy to {allergen!r}"
        if not _negated(re.sub("没问题|没事", "", clause)):
            for pattern in _SAFE:
                for m in pattern.finditer(clause):
                    allergen = _matching(_cut(m["x"]), held.allergies)
                    if allergen:
                        yield f"says {clause!r}; the memories hold an allergy to {allergen!r}"
    if held.avoided and not _negated(re.sub("没问题|没事", "", clause)):
        for pattern in (*_SAFE, *_FINE_WITH):
            for m in pattern.finditer(clause):
                avoided = _matching(_cut(m["x"]), held.avoided)
                if avoided:
                    yield f"says {clause!r}; the memories say the user avoids {avoided!r}"
    if held.allergies and not _negated(clause):
        for pattern in _FINE_WITH:
            for m in pattern.finditer(clause):
                allergen = _matching(_cut(m["x"]), held.allergies)
                if allergen:
                    yield f"says {clause!r}; the memories hold an allergy to {allergen!r}"
    for phrase in _denied(clause):
        statement = _affirmed(phrase, held.statements)
        if statement:
            yield f"says {clause!r}; the memories say {statement!r}"
    for kind, other in (("like", held.dislikes), ("dislike", held.likes)):
        for pattern in _REPLY_LIKE[kind]:
            for m in pattern.finditer(clause):
                found = _matching(m["x"], other)
                if found and not (kind == "like" and _negated(clause)):
                    yield f"says {clause!r}; the memories say the opposite about {found!r}"
    if held.residences:
        for pattern in _RESIDENCE_REPLY:
            for m in pattern.finditer(clause):
                elsewhere = _elsewhere(m["x"], held.residences)
                if elsewhere:
                    yield f"says {clause!r}; the memories place the user in {elsewhere!r}"


def _denied(clause: str) -> Iterator[str]:
    """The phrases a "you" clause denies (allergies are read apart)."""
    for pattern in _DENIAL_EN:
        for m in pattern.finditer(clause):
            phrase = m["x"].strip()
            if not _SKIP_EN.match(phrase) and "allerg" not in phrase.casefold():
                yield phrase
    for m in _DENIAL_ZH.finditer(clause):
        phrase = m["x"]
        if not _SKIP_ZH.match(phrase) and "过敏" not in phrase:
            yield phrase


def _elsewhere(place: str, residences: tuple[str, ...]) -> str | None:
    """The held residence a reply's ``place`` is not, when no held one is it: in the
    same script by name, across scripts through the glossary's cities (a city it does
    not know is not judged)."""
    verdicts: list[tuple[bool, str]] = []
    for residence in residences:
        if _cjk(residence) == _cjk(place):
            verdicts.append((_same_place(place, residence), residence))
        else:
            same = glossary.same_city(place, residence)
            if same is not None:
                verdicts.append((same, residence))
    if not verdicts or any(same for same, _ in verdicts):
        return None
    return verdicts[0][1]


def _affirmed(phrase: str, statements: tuple[str, ...]) -> str | None:
    """The memory statement that affirms ``phrase``, if any (in its words, or across
    languages in the glossary's terms)."""
    return _affirmed_in_words(phrase, statements) or _affirmed_in_terms(phrase, statements)


def _affirmed_in_terms(phrase: str, statements: tuple[str, ...]) -> str | None:
    """The statement naming every term ``phrase`` names ("live in Shanghai", 住在上海),
    when the phrase says little else (one word at most) and names a thing, not only a
    verb; a negated Chinese statement affirms nothing."""
    found = list(glossary.find(phrase))
    named = frozenset(term.key for _, _, term in found)
    if not named or not any(term.kind != "verb" for _, _, term in found):
        return None
    rest = phrase
    for start, end, _ in sorted(found, key=lambda f: f[0], reverse=True):
        rest = rest[:start] + " " + rest[end:]
    left = len(_words(rest) - _FILLER_EN) + len(
        _ZH_FILLER_CHARS.sub("", re.sub(rf"[^{_CJK}]", "", rest))
    )
    if left > 1:
        return None
    for statement in statements:
        if _cjk(statement) and _NEGATOR_ZH.search(statement):
            continue
        if named <= glossary.concepts(statement):
            return statement
    return None


def _affirmed_in_words(phrase: str, statements: tuple[str, ...]) -> str | None:
    """The memory statement that affirms ``phrase`` in its own words, if any."""
    if _cjk(phrase):
        candidates = {phrase, _FILLER_ZH.sub("", phrase)}
        for general, covered in _COVERS.items():
            if general in phrase:
                candidates.update(covered)
        for statement in statements:
            for candidate in candidates:
                if (len(candidate) >= 2 or candidate in _all_covered()) and _zh_affirms(
                    statement, candidate
                ):
                    return statement
        return None
    wanted = _words(phrase) - _FILLER_EN
    if not wanted:
        return None
    for statement in statements:
        have = _words(statement)
        shared = sum(1 for w in wanted if w in have or _covered(w, have))
        if shared / len(wanted) >= 0.5:
            return statement
    return None


def _zh_affirms(statement: str, candidate: str) -> bool:
    at = statement.find(candidate)
    while at >= 0:
        before = statement[max(0, at - 2) : at]
        if not any(before.endswith(n) for n in _ZH_NEGATED_BEFORE):
            return True
        at = statement.find(candidate, at + 1)
    return False


def _matching(target: str, held: tuple[str, ...], *, any_word: bool = False) -> str | None:
    """The held item ``target`` names (``anything`` names each, when ``any_word``)."""
    if not target.strip():
        return None
    if any_word and target.strip().casefold() in ("anything", "any", "任何东西"):
        return held[0] if held else None
    wanted = glossary.concepts(target, _FOODS)
    for item in held:
        # Across languages and kinds: peanuts / 花生, shrimp / shellfish.
        if wanted and any(
            glossary.related(a, b) for a in wanted for b in glossary.concepts(item, _FOODS)
        ):
            return item
        if _cjk(item) or _cjk(target):
            if item in target or (len(target) >= 2 and target in item):
                return item
            continue
        words, have = _words(target), _words(item)
        if words & have:
            return item
    return None


def _objects(texts: Iterable[str], patterns: Iterable[re.Pattern[str]]) -> tuple[str, ...]:
    found: list[str] = []
    for text in texts:
        for pattern in patterns:
            for m in pattern.finditer(text):
                for part in re.split(r",|\band\b|\bor\b|、|和|与|及", m["x"]):
                    part = part.strip(" '")
                    if part and not _NEGATOR_EN.search(part):
                        found.append(part)
    return tuple(dict.fromkeys(found))


def _cut(phrase: str) -> str:
    """A "you can eat X" object without what follows it ("except peanuts")."""
    return re.split(r"\b(?:except|other than|apart from|but)\b", phrase, maxsplit=1)[0]


def _negated(text: str) -> bool:
    return bool(_NEGATOR_EN.search(text) or _NEGATOR_ZH.search(text))


def _words(text: str) -> frozenset[str]:
    return frozenset(w[:5] for w in content_words(text) if len(w) > 1)


def _covered(word: str, have: frozenset[str]) -> bool:
    return any(c[:5] in have for c in _COVERS.get(word, ()))


def _all_covered() -> frozenset[str]:
    return frozenset(c for covered in _COVERS.values() for c in covered)


def _cjk(text: str) -> bool:
    return re.search(_H, text) is not None


def _same_place(a: str, b: str) -> bool:
    a, b = a.casefold().strip(), b.casefold().strip()
    return a in b or b in a
