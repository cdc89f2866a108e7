"""Checks of a reply against the context it was built from (docs/architecture.md,
"Decisions and feedback", "Health and metrics").

* Consistency: the reply's key conclusions must not contradict the memories used. A
  reply that states a value the context marks as replaced; an amount (with its unit
  or currency), a date or an id other than the one held for the same topic
  (:mod:`memstrata.decision.claims`); or that denies or contradicts a held fact ("you
  have no allergies", "peanuts are fine for you", "你不住在上海",
  :mod:`memstrata.decision.denials`) is a conflict: the caller regenerates, the card
  is flagged, and the step is not effective.
* Context effectiveness (CER, :mod:`memstrata.cer`): a step's context
  was *loaded* when its L2 evidence is present and unexpired and its L3 evidence
  reaches the confidence threshold, and *used* when the reply reflects it (a held
  value, or a sentence of an item's text).

Both are rules over text: deterministic, no model. A configured model may replace
the consistency rules (:mod:`memstrata.decision.model_judge`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import memstrata.cer as cer
from memstrata.decision.claims import (
    COUNTED,
    MONEY,
    Amount,
    Date,
    bare_id,
    covers,
    id_shape,
    read_claims,
    same_topic,
)
from memstrata.decision.denials import contradictions, read_held
from memstrata.decision.slots import held_slots, slot_conflicts
from memstrata.feedback.events import MEMORY_TYPES
from memstrata.frozen import thaw
from memstrata.router.bundle import ContextBundle, ContextItem

_LABELED = re.compile(r"^(?P<label>[\w .-]{1,60}): \S")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_FACT_TEXT = re.compile(r"^(?P<subject>\S+) (?P<attribute>[^:]+): (?P<value>.+)$", re.S)
_CAPITALIZED = re.compile(r"\b[A-Z][a-zA-Z-]{2,}\b")


@dataclass(frozen=True, slots=True)
class ReplyCheck:
    """What the reply check found."""

    consistent: bool
    conflicts: tuple[str, ...]
    context_loaded: bool
    context_used: bool

    @property
    def regenerate(self) -> bool:
        """The reply contradicts the memories used: make it again."""
        return not self.consistent

    @property
    def effective(self) -> bool:
        """CER's numerator: context loaded and used by a reply that does not contradict
        it (a conflicting reply never counts)."""
        return self.consistent and self.context_loaded and self.context_used

    def as_dict(self) -> dict[str, Any]:
        return {
            "consistent": self.consistent,
            "regenerate": self.regenerate,
            "conflicts": list(self.conflicts),
            "context_loaded": self.context_loaded,
            "context_used": self.context_used,
            "effective": self.effective,
        }


def held_values(items: Iterable[ContextItem]) -> tuple[tuple[str, str], ...]:
    """(label, value) pairs the items hold: L2 fields and L3 facts (``subject
    attribute: value``)."""
    out: list[tuple[str, str]] = []
    for item in items:
        content = thaw(item.content)
        if item.provenance.layer == "L3":
            if isinstance(content, dict) and content.get("type") == "fact":
                match = _FACT_TEXT.match(str(content.get("text", "")))
                if match:
                    out.append((match["attribute"].strip(), match["value"].strip()))
            continue
        out.extend(_scalars(item.name, content))
    return tuple(out)


def _scalars(label: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _scalars(label if key == "value" else str(key), inner)
    elif isinstance(value, list):
        for inner in value[:20]:
            yield from _scalars(label, inner)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float | str) and str(value).strip():
        yield label, str(value).strip()


def stale_values(items: Iterable[ContextItem]) -> tuple[tuple[str, str], ...]:
    """(old value, what replaced it) for every episode a newer fact replaced."""
    out = []
    for item in items:
        content = thaw(item.content)
        if not isinstance(content, dict) or not content.get("replaced_by"):
            continue
        replaced_by = str(content["replaced_by"])
        match = _FACT_TEXT.match(replaced_by)
        current = match["value"].strip() if match else replaced_by
        for word in _CAPITALIZED.findall(str(content.get("text", ""))):
            if word.casefold() not in replaced_by.casefold():
                out.append((word, current))
    return tuple(dict.fromkeys(out))


def memory_texts(items: Iterable[ContextItem]) -> tuple[str, ...]:
    """The memories the reply is compared with, as text: L3 facts and episodes (an
    episode a newer fact replaced stands for that fact, not for its old values), and
    L2 fields as ``label: value``. Session bookkeeping (L1) is left out."""
    out: list[str] = []
    for item in items:
        layer = item.provenance.layer
        if layer == "L1":
            continue
        content = thaw(item.content)
        if layer == "L3":
            if isinstance(content, dict):
                text = content.get("replaced_by") or content.get("text")
                if text:
                    out.append(str(text))
            continue
        out.extend(f"{label}: {value}" for label, value in _scalars(item.name, content))
    return tuple(dict.fromkeys(out))


def conflicts(reply: str, items: Sequence[ContextItem]) -> tuple[str, ...]:
    """The reply's statements that contradict the items (rules, deterministic): a value
    the context marks as replaced; an amount, date or id other than the one held for
    the same topic; a negated or contradicted fact (:mod:`memstrata.decision.denials`)."""
    found: list[str] = []
    folded = reply.casefold()
    for old, current in stale_values(items):
        if _mentions(folded, old) and not _mentions(folded, current):
            found.append(f"states {old!r}, which the context marks as replaced by {current!r}")
    found.extend(text_conflicts(reply, memory_texts(items)))
    return tuple(dict.fromkeys(found))


def text_conflicts(reply: str, memories: Sequence[str]) -> tuple[str, ...]:
    """The conflicts of ``reply`` with ``memories`` given as text (what :func:`conflicts`
    compares once the items are read; ``memstrata eval replycheck`` scores it)."""
    found: list[str] = []
    held = [read_claims(text) for text in memories]
    said = read_claims(reply)
    amounts = [(_label(text), a) for text, c in zip(memories, held, strict=True) for a in c.amounts]
    # What each clause of the reply states, so that a clause giving the held value
    # beside others ("VAT of 19% after your 15% discount") agrees.
    values: dict[int, set[float]] = {}
    for stated in said.amounts:
        values.setdefault(stated.clause, set()).add(round(stated.value, 6))
    for amount in said.amounts:
        same = [(label, m) for label, m in amounts if _comparable(amount, m)]
        near = values[amount.clause]
        if same and not any(round(m.value, 6) in near or amount.admits(m.value) for _, m in same):
            label, first = same[0]
            what = f"{label} as {amount.text}" if label else repr(amount.text)
            found.append(f"gives {what}; the context holds {first.text}")
    dates = [d for c in held for d in c.dates]
    days: dict[int, dict[tuple[int, int], set[int]]] = {}
    for stated_date in said.dates:
        for day in stated_date.days():
            days.setdefault(stated_date.clause, {}).setdefault(day, set()).add(stated_date.year)
    for date in said.dates:
        same_dates = [d for d in dates if same_topic(date.topic, d.topic)]
        near_days = days[date.clause]
        if same_dates and not any(_said_on(d, near_days) for d in same_dates):
            found.append(f"gives {date.text!r}; the memories hold {same_dates[0].text!r}")
    # A weekly day (yoga on Tuesdays) said as another day for the same topic; a
    # clause naming the held day beside others agrees.
    weekdays = [w for c in held for w in c.weekdays]
    stated_days: dict[int, set[int]] = {}
    for said_day in said.weekdays:
        stated_days.setdefault(said_day.clause, set()).add(said_day.day)
    for said_day in said.weekdays:
        same_days = [w for w in weekdays if same_topic(said_day.topic, w.topic)]
        if same_days and not any(w.day in stated_days[said_day.clause] for w in same_days):
            found.append(f"gives {said_day.text!r}; the memories hold {same_days[0].text!r}")
    ids = {bare_id(i) for c in held for i in c.ids}
    # A reply that gives the held id may name others of its shape (a connecting flight).
    given = {id_shape(i) for i in said.ids if bare_id(i) in ids}
    for token in said.ids:
        bare = bare_id(token)
        if bare in ids or id_shape(bare) in given:
            continue
        like = sorted(i for i in ids if _one_off(i, bare))
        if like:
            found.append(f"gives {token!r}; the memories hold {like[0]!r}")
    found.extend(contradictions(reply, read_held(memories)))
    found.extend(slot_conflicts(reply, held_slots(memories)))
    return tuple(dict.fromkeys(found))


def _label(memory: str) -> str:
    """The label of a ``label: value`` memory (an L2 field, a fact's attribute)."""
    match = _LABELED.match(memory)
    return match["label"].removeprefix("user ").strip() if match else ""


def _said_on(held: Date, days: dict[tuple[int, int], set[int]]) -> bool:
    """Whether the clause states ``held``'s day (a year said on one side only agrees)."""
    for day in held.days():
        years = days.get(day)
        if years is not None and (not held.year or 0 in years or held.year in years):
            return True
    return False


def _one_off(held: str, said: str) -> bool:
    """Whether ``said`` is ``held`` with its digits or its letters changed (A1243 for
    A1234, CA1234 for MU1234), not an id of another family that only shares the shape
    (X9000 beside order A1234)."""
    if id_shape(held) != id_shape(said):
        return False
    if held.isdigit():
        # A long number (phone, card) with a digit or two wrong or swapped; another
        # number of its length is another thing.
        return sum(a != b for a, b in zip(held, said, strict=True)) <= 2
    letters = [re.sub(r"\d", "", t) for t in (held, said)]
    digits = [re.sub(r"\D", "", t) for t in (held, said)]
    return letters[0] == letters[1] or digits[0] == digits[1]


def _comparable(said: Amount, held: Amount) -> bool:
    """Whether a said amount is about a held one: the same unit and topic; a held bare
    number whose label the reply names; a said amount written with a multiplier but
    no unit (8k, 五千) about held money; or a said amount that is all its sentence says
    ("九千元。", an answer to whatever was asked) against held ones of its unit."""
    if held.unit and held.unit == said.unit:
        return said.alone or held.unit in COUNTED or same_topic(said.topic, held.topic)
    if not held.unit:
        return covers(held.topic, said.topic)
    if not said.unit and said.scaled and held.unit in MONEY:
        return said.alone or same_topic(said.topic, held.topic)
    return False


def context_loaded(
    bundle: ContextBundle, evidence: Sequence[ContextItem], *, threshold: float
) -> bool:
    """CER's "correctly loaded" (:func:`memstrata.cer.context_loaded`): every
    L2 item the step asked for is present and unexpired, and its L3 evidence, if any,
    reaches ``threshold``."""
    if not evidence:
        return False
    l2 = [item for item in evidence if item.provenance.layer != "L3"]
    l3 = [item.provenance.relevance for item in evidence if item.provenance.layer == "L3"]
    missing = {m.ref for m in bundle.missing if m.layer == "L2"}
    return cer.context_loaded(
        required_l2_keys={item.provenance.ref for item in l2} | missing,
        present_l2_keys={item.provenance.ref for item in l2},
        l3_confidences=l3 or None,
        threshold=threshold,
    )


def context_used(reply: str, evidence: Sequence[ContextItem]) -> bool:
    """CER's "used" (:func:`memstrata.cer.context_used`): the reply reflects
    a value an item holds, or one sentence of an item's text."""
    pieces = [value for _, value in held_values(evidence)]
    for item in evidence:
        content = thaw(item.content)
        text = content.get("text", "") if isinstance(content, dict) else ""
        pieces.extend(s for s in _SENTENCE.split(str(text)) if s.strip())
    return cer.context_used(pieces, reply)


def check_reply(
    reply: str, bundle: ContextBundle, evidence: Sequence[ContextItem], *, threshold: float
) -> ReplyCheck:
    """Consistency and effectiveness of ``reply`` for a step built from ``bundle``;
    ``threshold`` is the L3 confidence a loaded step needs."""
    found = conflicts(reply, bundle.items)
    return ReplyCheck(
        consistent=not found,
        conflicts=found,
        context_loaded=context_loaded(bundle, evidence, threshold=threshold),
        context_used=context_used(reply, evidence),
    )


def _mentions(folded_text: str, value: str) -> bool:
    needle = value.casefold().strip()
    if not needle:
        return False
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", folded_text) is not None


def used_in_reply(reply: str, items: Iterable[ContextItem]) -> tuple[str, ...]:
    """The L3 memories and episodes among ``items`` that ``reply`` reflects, each judged
    on its own by the CER matcher (a value it holds, or a sentence of its text): what a
    feedback event counts as used when the caller does not say."""
    used: list[str] = []
    for item in items:
        content = thaw(item.content)
        kind = content.get("type") if isinstance(content, dict) else None
        if item.provenance.layer == "L3" and kind in MEMORY_TYPES and context_used(reply, [item]):
            used.append(item.provenance.ref)
    return tuple(dict.fromkeys(used))
