"""Compression of older turns into one summary turn that keeps never-compress fields.

The summary is extractive and deterministic (no model call, no I/O): it lists every
protected field of the covered turns verbatim — ids, amounts, dates, decision and constraint
sentences — and, at the ``full`` detail, the key lines (sentences holding a protected
field, and the user's questions). A summary is marked ``summary=True``; it is never
summarized again: :func:`compress_turns` keeps existing summaries as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memstrata.context.protect import (
    FIELD_KINDS,
    SENTENCE_KINDS,
    ProtectedField,
    find_protected,
)
from memstrata.context.values import Turn, TurnRole
from memstrata.errors import ValidationError
from memstrata.extract.text import split_sentences
from memstrata.hashing import sha256_hex

Detail = Literal["full", "fields", "compact"]
DETAILS: tuple[Detail, ...] = ("full", "fields", "compact")
"""From the longest to the shortest: key lines and fields, fields-only lines, and one
compact "kept fields" block (a short header, one line per kind)."""

SUMMARY_ROLE: TurnRole = "system"
_KIND_LABELS = {
    "id": "ids",
    "amount": "amounts",
    "date": "dates",
    "decision": "decisions",
    "constraint": "constraints",
}
_QUESTION_ENDS = ("?", "？")


@dataclass(frozen=True, slots=True)
class TurnDigest:
    """What a summary keeps of one turn: its protected fields and key lines."""

    turn_id: str
    role: str
    fields: tuple[ProtectedField, ...]
    key_lines: tuple[str, ...]


def digest_turn(turn_id: str, turn: Turn) -> TurnDigest:
    """The protected fields and key lines of ``turn`` (computed once, rendered often)."""
    if turn.summary:
        raise ValidationError(
            "turn", f"{turn_id} is a summary; summaries are never summarized again"
        )
    fields = find_protected(turn.content)
    values = [field.value for field in fields if field.kind not in SENTENCE_KINDS]
    listed = {field.value for field in fields if field.kind in SENTENCE_KINDS}
    # Decision and constraint sentences are already listed whole among the fields.
    lines = tuple(
        sentence
        for sentence in split_sentences(turn.content)
        if sentence not in listed
        and (
            any(value in sentence for value in values)
            or (turn.role == "user" and sentence.endswith(_QUESTION_ENDS))
        )
    )
    return TurnDigest(turn_id, turn.role, fields, lines)


def render_summary(digests: Sequence[TurnDigest], detail: Detail = "full") -> str:
    """The summary text for ``digests`` (oldest first).

    Every detail keeps every protected field verbatim; ``full`` adds the key lines,
    ``compact`` shortens only the framing around the fields.
    """
    if not digests:
        raise ValidationError("turns", "there is nothing to summarize")
    if detail not in DETAILS:
        raise ValidationError("detail", f"must be one of {', '.join(DETAILS)}")
    first, last = digests[0].turn_id, digests[-1].turn_id
    span = first if first == last else f"{first} … {last}"
    merged: list[ProtectedField] = []
    for digest in digests:
        merged.extend(field for field in digest.fields if field not in merged)
    if detail == "compact":
        return _render_compact(len(digests), span, merged)
    lines = [
        f"[Summary of {len(digests)} earlier turn(s) ({span}). Values below are verbatim. "
        "This is already a summary: never summarize it again.]"
    ]
    if merged:
        lines.append("Kept verbatim:")
        for kind in FIELD_KINDS:
            values = [field.value for field in merged if field.kind == kind]
            if not values:
                continue
            if kind in SENTENCE_KINDS:
                lines.append(f"- {_KIND_LABELS[kind]}:")
                lines.extend(f"  - {value}" for value in values)
            else:
                lines.append(f"- {_KIND_LABELS[kind]}: " + "; ".join(values))
    if detail == "full":
        key_lines = [f"- {digest.role}: {line}" for digest in digests for line in digest.key_lines]
        if key_lines:
            lines.append("Key lines:")
            lines.extend(key_lines)
    return "\n".join(lines)


def _render_compact(count: int, span: str, merged: Sequence[ProtectedField]) -> str:
    """The shortest form: the turns' wording is gone, their fields stay verbatim."""
    lines = [f"[Kept fields of {count} earlier turn(s) ({span}), verbatim; already a summary]"]
    for kind in FIELD_KINDS:
        values = [field.value for field in merged if field.kind == kind]
        if values:
            lines.append(f"{_KIND_LABELS[kind]}: " + " | ".join(values))
    return "\n".join(lines)


def summary_id(digests: Sequence[TurnDigest]) -> str:
    """A stable id for the summary of exactly these turns."""
    return "summary-" + sha256_hex([[d.turn_id, d.role, d.key_lines] for d in digests])[:16]


def summarize_digests(digests: Sequence[TurnDigest], detail: Detail = "full") -> Turn:
    """The summary turn for ``digests``: role system, ``summary=True``, covering their ids."""
    return Turn(
        SUMMARY_ROLE,
        render_summary(digests, detail),
        id=summary_id(digests),
        summary=True,
        covers=tuple(digest.turn_id for digest in digests),
    )


def turn_ids(turns: Sequence[Turn]) -> tuple[str, ...]:
    """Each turn's id: its own, or ``turn-<content hash>`` when it has none.

    A content id stays the same from one build to the next, so a summary's ``covers``
    keeps naming the same turns; a repeated turn gets ``-2``, ``-3``... appended.
    """
    taken = {turn.id for turn in turns if turn.id is not None}
    ids: list[str] = []
    for turn in turns:
        if turn.id is not None:
            ids.append(turn.id)
            continue
        base = "turn-" + sha256_hex([turn.role, turn.content])[:12]
        candidate, repeat = base, 1
        while candidate in taken:
            repeat += 1
            candidate = f"{base}-{repeat}"
        taken.add(candidate)
        ids.append(candidate)
    return tuple(ids)


def _check_turns(turns: object) -> tuple[Turn, ...]:
    if isinstance(turns, str | bytes) or not isinstance(turns, Sequence):
        raise ValidationError("turns", "must be a sequence of Turn")
    for index, turn in enumerate(turns):
        if not isinstance(turn, Turn):
            raise ValidationError(f"turns[{index}]", f"must be a Turn, got {type(turn).__name__}")
    return tuple(turns)


def compress_turns(turns: Sequence[Turn], *, detail: Detail = "full") -> tuple[Turn, ...]:
    """Replace every non-summary turn with one summary; existing summaries stay as-is.

    The new summary takes the place of the first turn it covers. Compressing a history
    that holds only summaries returns it unchanged.
    """
    checked = _check_turns(turns)
    ids = turn_ids(checked)
    digests = [digest_turn(ids[i], turn) for i, turn in enumerate(checked) if not turn.summary]
    if not digests:
        return checked
    summary = summarize_digests(digests, detail)
    result: list[Turn] = []
    placed = False
    for turn in checked:
        if turn.summary:
            result.append(turn)
        elif not placed:
            result.append(summary)
            placed = True
    return tuple(result)
