"""Single-valued facts a reply restates with another value, read by rule for the reply
check (:mod:`memstrata.decision.consistency`), in English and Chinese.

Each slot is a frame the memories and the reply state alike: where the user works
("I work at Deloitte", 我在网易工作, ``user employer: Deloitte``), their hometown
("My hometown is Changchun", 我老家在长春), the car they drive (我开的是比亚迪),
and their blood type (O型血, "blood type is A"). A reply giving the slot another
value ("你在腾讯工作", "your blood type is A") is a conflict.

Values in one script are compared by name (one containing the other agrees);
across scripts through the glossary's cities and organisations
(:mod:`memstrata.attributes.glossary`): a value the glossary does not know is not
judged, so that an unknown name is never a false alarm.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memstrata.attributes import glossary

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_H = rf"[{_CJK}]"
_FACT = re.compile(r"^(?P<subject>\S+) (?P<attribute>[^:]+): (?P<value>.+)$", re.S)
_NAME_EN = r"(?P<x>[A-Z][\w&.-]*(?:\s(?:&\s)?[A-Z][\w&.-]*){0,3})"
_NAME_MIXED = rf"(?P<x>[A-Za-z][\w&.-]*|{_H}{{2,6}}?)"
_BLOOD = r"(?P<x>AB|A|B|O)"
# A person's given name; the next word must not start a sentence of its own.
_PERSON = r"(?P<x>[A-Z][a-z]+)(?!\s+[a-z]+'s\b)\b"
_DIET_WORD = r"(?P<x>[A-Za-z-]+)"
# Diets one cannot keep together (vegan and keto); vegan is kept by a vegetarian too.
_EXCLUSIVE_DIETS = frozenset({"vegetarian", "vegan", "pescatarian", "keto"})
_COMPATIBLE_DIETS = (frozenset({"vegetarian", "vegan"}), frozenset({"vegetarian", "pescatarian"}))
# Family members whose names facts hold (English, Chinese forms).
_RELATIONS = (
    ("son", "儿子"),
    ("daughter", "女儿"),
    ("wife", "老婆|妻子|太太|爱人"),
    ("husband", "老公|丈夫|先生|爱人"),
)


@dataclass(frozen=True, slots=True)
class Slot:
    """One single-valued fact: how the memories and a reply state it."""

    name: str
    held: tuple[re.Pattern[str], ...]
    said: tuple[re.Pattern[str], ...]
    kinds: frozenset[str]
    """The glossary kinds its values are compared through across scripts (none: a
    closed set of values, compared exactly)."""
    facts: tuple[str, ...] = ()
    """Fact attributes (``user employer: X``) that hold it."""


SLOTS = (
    Slot(
        "employer",
        (
            re.compile(r"\bI\s+(?:now\s+)?work\s+(?:at|for)\s+" + _NAME_EN),
            re.compile(rf"我(?:现在)?在{_NAME_MIXED}(?:工作|上班|任职)"),
        ),
        (
            re.compile(r"\b[Yy]ou\s+(?:now\s+)?work\s+(?:at|for)\s+" + _NAME_EN),
            re.compile(rf"你(?:现在)?在{_NAME_MIXED}(?:工作|上班|任职|做)"),
        ),
        frozenset({"org"}),
        ("employer", "company"),
    ),
    Slot(
        "hometown",
        (
            re.compile(r"\b[Mm]y\s+hometown\s+is\s+" + _NAME_EN),
            re.compile(rf"我(?:的)?(?:老家|家乡)(?:在|是)(?P<x>{_H}{{2,4}}?)(?=[，。,.！!]|$|人)"),
        ),
        (
            re.compile(r"\b[Yy]our\s+hometown\s+is\s+" + _NAME_EN),
            re.compile(rf"你(?:的)?(?:老家|家乡)(?:在|是)(?P<x>{_H}{{2,4}}?)(?=[，。,.！!]|$|人)"),
        ),
        frozenset({"city"}),
        ("hometown",),
    ),
    Slot(
        "car",
        (
            re.compile(r"\b[Mm]y\s+car\s+is\s+an?\s+" + _NAME_EN),
            re.compile(
                rf"我(?:的车是|开的是|开)(?P<x>[A-Za-z][\w-]*|{_H}{{2,4}}?)(?=[，。,.！!]|$|\s)"
            ),
        ),
        (
            re.compile(r"\b[Yy]ou\s+drive\s+an?\s+" + _NAME_EN),
            re.compile(
                rf"你(?:的车是|开的是)(?P<x>[A-Za-z][\w-]*|{_H}{{2,4}}?)(?=[，。,.！!]|$|\s)"
            ),
        ),
        frozenset({"org"}),
        ("car",),
    ),
    Slot(
        "blood type",
        (
            re.compile(r"\b[Bb]lood\s+type\s+is\s+" + _BLOOD + r"\b"),
            re.compile(r"\btype\s+" + _BLOOD + r"\s+blood\b"),
            re.compile(rf"(?<![A-Za-z]){_BLOOD}型血"),
        ),
        (
            re.compile(r"\b[Yy]our\s+blood\s+type\s+is\s+" + _BLOOD + r"\b"),
            re.compile(r"\b[Yy]ou(?:'re|\s+are)\s+type\s+" + _BLOOD + r"\b"),
            re.compile(rf"你(?:的血型)?是{_BLOOD}型血?"),
        ),
        frozenset(),
        ("blood_type", "blood type"),
    ),
    Slot(
        "diet",
        (
            re.compile(r"\bI(?:'m|\s+am)\s+(?:a\s+|on\s+(?:a\s+)?|strictly\s+)?" + _DIET_WORD),
            re.compile(rf"我(?:是|吃)(?P<x>{_H}{{1,6}}?|[A-Za-z-]+)(?=饮食|者|主义|[，。,.！!]|$)"),
        ),
        (
            re.compile(
                r"\b[Yy]ou(?:'re|\s+are)\s+(?:a\s+|on\s+(?:a\s+)?|strictly\s+)?" + _DIET_WORD
            ),
            re.compile(rf"你(?:是|吃)(?P<x>{_H}{{1,6}}?|[A-Za-z-]+)(?=饮食|者|主义|[，。,.！!]|$)"),
        ),
        frozenset({"diet"}),
        ("diet",),
    ),
    *(
        Slot(
            f"{relation[0]}'s name",
            (
                re.compile(
                    rf"\b[Mm]y\s+{relation[0]}(?:'s\s+name\s+is|\s+is\s+called|\s+is\s+named|,)?\s+"
                    + _PERSON
                ),
                re.compile(
                    rf"我(?:的)?(?:{relation[1]})(?:叫|名叫|的名字是)(?P<x>[A-Z][a-z]+|{_H}{{2,3}})"
                ),
            ),
            (
                re.compile(
                    rf"\b[Yy]our\s+{relation[0]}(?:'s\s+name\s+is|\s+is\s+called|,)?\s+" + _PERSON
                ),
                re.compile(rf"你(?:的)?(?:{relation[1]})(?:叫|名叫)(?P<x>{_H}{{2,3}})"),
                re.compile(rf"你(?:的)?(?:{relation[1]})(?:叫)?\s?(?P<x>[A-Z][a-z]+)"),
            ),
            frozenset(),
        )
        for relation in _RELATIONS
    ),
)


def held_slots(memories: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The value each slot holds in ``memories`` (as stated, or a fact's value)."""
    out: dict[str, list[str]] = {}
    for text in memories:
        fact = _FACT.match(text.strip())
        for slot in SLOTS:
            if fact and fact["attribute"].strip().casefold() in slot.facts:
                out.setdefault(slot.name, []).append(fact["value"].strip())
                continue
            for pattern in slot.held:
                for m in pattern.finditer(text):
                    out.setdefault(slot.name, []).append(m["x"].strip())
    return {name: tuple(dict.fromkeys(values)) for name, values in out.items()}


def slot_conflicts(reply: str, held: dict[str, tuple[str, ...]]) -> Iterator[str]:
    """Why ``reply`` gives a slot another value than ``held`` (one line per finding)."""
    for slot in SLOTS:
        values = held.get(slot.name)
        if not values:
            continue
        for pattern in slot.said:
            for m in pattern.finditer(reply):
                said = m["x"].strip()
                verdicts = [_differs(said, value, slot.kinds) for value in values]
                if verdicts and all(v is True for v in verdicts):
                    yield f"gives {slot.name} {said!r}; the memories hold {values[0]!r}"


def _differs(said: str, held: str, kinds: frozenset[str]) -> bool | None:
    """Whether two values differ: by name in one script, through the glossary across
    scripts; None when it cannot be told (a name the glossary does not know, or a
    city where an employer was expected)."""
    if not kinds:
        # A closed set (blood types) or a person's name: exact, in one script
        # (Tingting and 婷婷 may be one person).
        return None if _cjk(said) != _cjk(held) else said.casefold() != held.casefold()
    a_terms = {t.key for _, _, t in glossary.find(said, kinds)}
    b_terms = {t.key for _, _, t in glossary.find(held, kinds)}
    if kinds == {"diet"}:
        # Only diets that exclude each other are judged (vegan and gluten-free agree).
        a_terms, b_terms = a_terms & _EXCLUSIVE_DIETS, b_terms & _EXCLUSIVE_DIETS
        if not a_terms or not b_terms:
            return None
        pairs = {frozenset({a, b}) for a in a_terms for b in b_terms}
        return all(len(p) == 2 and p not in _COMPATIBLE_DIETS for p in pairs)
    if a_terms and b_terms:
        return not (a_terms & b_terms)
    if _cjk(said) != _cjk(held):
        return None
    if "org" in kinds and any(True for _ in glossary.find(said, frozenset({"city"}))):
        return None  # 你在上海工作: a place, not an employer
    a, b = said.casefold(), held.casefold()
    return not (a in b or b in a)


def _cjk(text: str) -> bool:
    return re.search(_H, text) is not None
