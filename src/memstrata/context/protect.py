"""Never-compress fields: ids, amounts, dates and decisions, found verbatim.

A summary may shorten everything else, but these must survive it unchanged
(``¥1,280.50`` stays ``¥1,280.50``; docs/architecture.md, "Context budget and
compression"). Ids, amounts and dates reuse the write pipeline's finder
(``extract.verbatim.find_extras``) plus a few id and timestamp shapes it does not need;
decisions are whole sentences that match the extractor's decision cues or a decision
word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memstrata.errors import ValidationError
from memstrata.extract.patterns import EVENT_PATTERNS
from memstrata.extract.text import split_sentences
from memstrata.extract.verbatim import find_extras

FieldKind = Literal["id", "amount", "date", "decision"]
FIELD_KINDS: tuple[FieldKind, ...] = ("id", "amount", "date", "decision")

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
    """Ids, amounts, dates and decision sentences of ``text``, verbatim, each once.

    Ids, amounts and dates come first (in kind order, then as found), then decisions.
    """
    if not isinstance(text, str):
        raise ValidationError("text", f"must be a string, got {type(text).__name__}")
    fields = _values(text)
    ordered: list[ProtectedField] = []
    for kind in ("id", "amount", "date"):
        for field in fields:
            if field.kind == kind and field not in ordered:
                ordered.append(field)
    for sentence in split_sentences(text):
        decision = ProtectedField("decision", sentence)
        if is_decision(sentence) and decision not in ordered:
            ordered.append(decision)
    return tuple(ordered)
