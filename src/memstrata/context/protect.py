"""Never-compress fields: ids, amounts, dates, decisions and constraints, found verbatim.

A summary may shorten everything else, but these must survive it unchanged
(``¥1,280.50`` stays ``¥1,280.50``; docs/architecture.md, "Context budget and
compression"). Ids, amounts and dates reuse the write pipeline's finder
(``extract.verbatim.find_extras``) plus a few id and timestamp shapes it does not need;
decisions are whole sentences that match the extractor's decision cues or a decision
word; constraints are whole sentences that set a limit, a requirement or a prohibition
("must not exceed ¥500", "我对花生过敏", "最晚3月24日").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memstrata.errors import ValidationError
from memstrata.extract.patterns import EVENT_PATTERNS
from memstrata.extract.text import split_sentences
from memstrata.extract.verbatim import find_extras

FieldKind = Literal["id", "amount", "date", "decision", "constraint"]
FIELD_KINDS: tuple[FieldKind, ...] = ("id", "amount", "date", "decision", "constraint")
SENTENCE_KINDS: frozenset[FieldKind] = frozenset({"decision", "constraint"})
"""Kinds kept as whole sentences (the others are values inside a sentence)."""

_EXTRA_KIND: dict[str, FieldKind] = {
    "order_id": "id",
    "id": "id",
    "amount": "amount",
    "date": "date",
}
_MIN_ID_DIGITS = 3  # like find_extras: GPT-4 or COVID-19 are names, not ids
_ID_RES = (
    re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    # u_789, sess_abc123, step-7-result-0042, D123, INV88812
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+\b"),
    re.compile(r"\b[A-Za-z]{1,10}[0-9]{3,}[A-Za-z0-9]*\b"),
)
_TIMESTAMP_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
_DECISION_PATTERNS = tuple(rule.pattern for rule in EVENT_PATTERNS if rule.attribute == "decision")
_DECISION_WORDS = re.compile(
    r"\b(?:decided|decides|decision|agreed|approved|confirmed|chose|chosen|selected|"
    r"settled\s+on|go(?:ing)?\s+with)\b|决定|决策|确定|同意|批准|确认|选定|定了|就选|就用",
    re.IGNORECASE,
)


_CONSTRAINT_WORDS = re.compile(
    r"\b(?:must(?:n't| not)?|never|cannot|can't|at (?:most|least)|no (?:more|later|earlier) "
    r"than|(?:not |never )?exceed(?:s|ed|ing)?|maximum|minimum|required|requirement|"
    r"deadline|budget|limit|allerg(?:y|ic|ies))\b"
    r"|必须|务必|不能|不可以|不要|禁止|不得|只能|至少|最多|最晚|最迟|不超过|截止|预算|上限|下限|过敏",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ProtectedField:
    """One value that must survive compression exactly as written."""

    kind: FieldKind
    value: str


def is_decision(sentence: str) -> bool:
    """Whether ``sentence`` states a decision (English or Chinese)."""
    return bool(_DECISION_WORDS.search(sentence)) or any(
        pattern.search(sentence) for pattern in _DECISION_PATTERNS
    )


def is_constraint(sentence: str) -> bool:
    """Whether ``sentence`` sets a limit, a requirement or a prohibition (English or
    Chinese)."""
    return bool(_CONSTRAINT_WORDS.search(sentence))


def _values(text: str) -> list[ProtectedField]:
    found = [ProtectedField(_EXTRA_KIND[label], value) for label, value in find_extras(text)]
    found.extend(ProtectedField("date", m.group()) for m in _TIMESTAMP_RE.finditer(text))
    for pattern in _ID_RES:
        for match in pattern.finditer(text):
            value = match.group()
            if sum(char.isdigit() for char in value) >= _MIN_ID_DIGITS:
                found.append(ProtectedField("id", value))
    # A value inside a longer one (2024-03-05 in 2024-03-05T08:00Z, ORD-2024 in
    # ORD-2024-000123) is already kept by keeping the longer one.
    values = {field.value for field in found}
    return [
        field
        for field in found
        if not any(field.value != other and field.value in other for other in values)
    ]


def find_protected(text: str) -> tuple[ProtectedField, ...]:
    """Ids, amounts, dates, decision and constraint sentences of ``text``, verbatim,
    each once.

    Ids, amounts and dates come first (in kind order, then as found), then decisions,
    then constraints (a sentence that is both is listed once, as a decision).
    """
    if not isinstance(text, str):
        raise ValidationError("text", f"must be a string, got {type(text).__name__}")
    fields = _values(text)
    ordered: list[ProtectedField] = []
    for kind in ("id", "amount", "date"):
        for field in fields:
            if field.kind == kind and field not in ordered:
                ordered.append(field)
    sentences = split_sentences(text)
    for sentence in sentences:
        decision = ProtectedField("decision", sentence)
        if is_decision(sentence) and decision not in ordered:
            ordered.append(decision)
    decided = {field.value for field in ordered if field.kind == "decision"}
    for sentence in sentences:
        constraint = ProtectedField("constraint", sentence)
        if sentence not in decided and is_constraint(sentence) and constraint not in ordered:
            ordered.append(constraint)
    return tuple(ordered)
