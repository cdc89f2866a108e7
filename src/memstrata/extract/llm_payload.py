"""Pure request building and tolerant answer parsing for the LLM extractor.

Nothing here does I/O, so every odd answer a model can give (fences, prose around the
JSON, trailing commas, a bare object, a ``{"memories": [...]}`` wrapper) is tested
without a server. Each candidate in an answer is validated on its own: a bad one is
reported in :attr:`ParsedAnswer.dropped` and never becomes a :class:`Candidate`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memstrata.attributes import ATTRIBUTES
from memstrata.errors import ValidationError
from memstrata.extract.candidates import Candidate, Turn, UnitKind


def _attribute_list() -> str:
    """The registry's attributes as the prompt names them: name, set or single, labels."""
    lines = []
    for attribute in ATTRIBUTES:
        kind = "a set, one memory per item" if attribute.multi_valued else "one value"
        labels = " / ".join(attribute.labels[:4])
        lines.append(f"- {attribute.name} ({attribute.value_type}, {kind}): {labels}")
    return "\n".join(lines)


_PROMPT_HEAD = """\
You extract long-term memories from one message of a conversation between a user and an \
assistant. Return only information worth remembering across sessions: stable facts about \
the user (name, city, job, contact channel, preferences such as likes / dislikes / \
prefers) and events (decisions, commitments, orders, payments, refunds). Ignore \
greetings, thanks, acknowledgements, questions without new information and anything \
hypothetical or negated ("I don't live in X anymore" is not a fact about X).

Each memory has: subject (usually "user"), attribute (a short snake_case name such as \
"city", "job", "name", "contact_channel", "likes", "dislikes", "prefers", "decision", \
"commitment", "order", "payment", "refund"), value (the fact, or a one-sentence \
description of the event), kind ("fact" for stable attributes, "event" for things that \
happened once), confidence and importance (numbers from 0 to 1), extras (order ids, \
amounts and dates copied verbatim from the message, as label/value pairs with labels \
"order_id", "id", "amount" or "date") and valid_from (ISO 8601 date when the message \
says when it started or happened, else null). Use the same attribute for a new value of \
the same property (a move to a new city is attribute "city"). The languages the user \
speaks are attribute "languages_spoken", one memory per language ("language" is the one \
the user wants replies in); when the user names several ways to be reached, each is a \
"contact_channels" memory. Write values in the \
language of the message. Reply with JSON only: {"memories": [...]}; an empty list when \
nothing is worth remembering."""
SYSTEM_PROMPT = (
    _PROMPT_HEAD
    + "\n\nThe user's attributes (use these names; a removal or retraction is no memory):\n"
    + _attribute_list()
)
"""The extraction instructions; the attribute list is read from the registry
(:mod:`memstrata.attributes`), so a new attribute reaches the prompt with its entry."""

_EXTRA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"label": {"type": "string"}, "value": {"type": "string"}},
    "required": ["label", "value"],
    "additionalProperties": False,
}
_CANDIDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "subject": {"type": "string"},
        "attribute": {"type": "string"},
        "value": {"type": "string"},
        "kind": {"type": "string", "enum": ["fact", "event"]},
        "confidence": {"type": "number", "description": "0 to 1"},
        "importance": {"type": "number", "description": "0 to 1"},
        "extras": {"type": "array", "items": _EXTRA_SCHEMA},
        "valid_from": {"type": ["string", "null"], "description": "ISO 8601 or null"},
    },
    "required": [
        "subject",
        "attribute",
        "value",
        "kind",
        "confidence",
        "importance",
        "extras",
        "valid_from",
    ],
    "additionalProperties": False,
}
# OpenAI's strict mode needs an object at the top, hence the "memories" wrapper.
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "memory_candidates",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"memories": {"type": "array", "items": _CANDIDATE_SCHEMA}},
            "required": ["memories"],
            "additionalProperties": False,
        },
    },
}

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_WRAPPER_KEYS = ("memories", "candidates", "items", "facts", "results", "data")
_MAX_START_TRIES = 8
MAX_ANSWER_CHARS = 256_000
"""Candidates for one turn fit in a few kilobytes; more is a runaway generation."""
_DECODER = json.JSONDecoder()


class UnusableAnswerError(ValueError):
    """The endpoint answered, but not with anything a candidate list can be read from."""


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """A candidate the model returned that failed validation (no values, for logs)."""

    index: int
    field: str
    reason: str


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """Valid candidates in answer order, and what was dropped."""

    candidates: tuple[Candidate, ...]
    dropped: tuple[DroppedItem, ...]


def build_request_body(model: str, turn: Turn) -> dict[str, Any]:
    """The ``/chat/completions`` request for ``turn`` (temperature 0: repeatable)."""
    user_message = (
        f"Speaker role: {turn.role}\n"
        f"Observed at: {turn.observed_at.isoformat()}\n\n"
        f"Message:\n{turn.text}"
    )
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_message},
        ],
        "temperature": 0,
        "response_format": RESPONSE_FORMAT,
    }


def message_content(body: bytes) -> str:
    """The assistant message text of a chat-completions response body."""
    try:
        data = json.loads(body)
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise UnusableAnswerError("response is not a chat completion") from exc
    if not isinstance(message, dict):
        raise UnusableAnswerError("response message is not an object")
    if message.get("refusal"):
        raise UnusableAnswerError("the model refused")
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str) or not content.strip():
        raise UnusableAnswerError("response message has no text content")
    return content


def parse_answer(content: str) -> ParsedAnswer:
    """Candidates from the model's text, tolerating the usual formatting slips.

    Raises :class:`UnusableAnswerError` when no candidate list can be read, or when the
    list is not empty but none of its items is a valid candidate.
    """
    items = _items(_load_tolerant(content))
    candidates: list[Candidate] = []
    dropped: list[DroppedItem] = []
    for index, item in enumerate(items):
        try:
            candidates.append(candidate_from_json(item))
        except ValidationError as exc:
            dropped.append(DroppedItem(index, exc.field, exc.reason))
    if items and not candidates:
        # Nothing usable at all is a broken answer, not "nothing to remember".
        raise UnusableAnswerError(f"none of the {len(items)} candidates is valid")
    return ParsedAnswer(tuple(candidates), tuple(dropped))


def candidate_from_json(item: Any) -> Candidate:
    """One validated candidate from one decoded JSON item (ValidationError if bad)."""
    if not isinstance(item, dict):
        raise ValidationError("item", "must be an object")
    return Candidate(
        subject=_text(item, "subject"),
        attribute=_text(item, "attribute"),
        value=_text(item, "value", numbers=True),
        kind=_kind(item),
        confidence=_fraction(item, "confidence"),
        importance=_fraction(item, "importance"),
        extras=_extras(item.get("extras")),
        valid_from=_datetime(item.get("valid_from")),
    )


def _text(item: dict[str, Any], field: str, *, numbers: bool = False) -> str:
    value = item.get(field)
    if numbers and isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, "must be a non-empty string")
    return value.strip()


def _kind(item: dict[str, Any]) -> UnitKind:
    kind = _text(item, "kind").casefold()
    if kind == "fact":
        return "fact"
    if kind == "event":
        return "event"
    raise ValidationError("kind", "must be 'fact' or 'event'")


def _fraction(item: dict[str, Any], field: str) -> float:
    """A 0..1 number; absent means "no opinion" (0.5), anything else must be valid."""
    value = item.get(field)
    if value is None:
        return 0.5
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValidationError(field, "must be a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, "must be a finite number")
    return float(value)  # the range is checked by Candidate, never clamped


def _extras(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, dict):
        value = list(value.items())
    if not isinstance(value, list):
        raise ValidationError("extras", "must be a list of label/value pairs")
    pairs: list[tuple[str, str]] = []
    for entry in value:
        if isinstance(entry, dict):
            label, text = entry.get("label"), entry.get("value")
        elif isinstance(entry, list | tuple) and len(entry) == 2:
            label, text = entry
        else:
            raise ValidationError("extras", "each entry must be a label/value pair")
        if not isinstance(label, str) or not isinstance(text, str | int | float):
            raise ValidationError("extras", "labels and values must be strings")
        pairs.append((label.strip(), str(text).strip()))
    return tuple(pairs)


def _datetime(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValidationError("valid_from", "must be an ISO 8601 string or null")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValidationError("valid_from", "is not an ISO 8601 date") from None
    # A bare date has no zone; UTC is the least surprising reading.
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in _WRAPPER_KEYS:
            inner = data.get(key)
            if isinstance(inner, list):
                return inner
            if isinstance(inner, dict):
                return [inner]
        if "attribute" in data or "value" in data:
            return [data]  # a single candidate without a list around it
    raise UnusableAnswerError("answer holds no candidate list")


def _load_tolerant(content: str) -> Any:
    """Decode the first JSON array or object in ``content``, repairing common slips."""
    text = content.strip()
    if len(text) > MAX_ANSWER_CHARS:
        raise UnusableAnswerError(f"answer is longer than {MAX_ANSWER_CHARS} characters")
    fence = _FENCE.search(text)
    if fence is not None:
        text = fence.group(1).strip()
    starts = [index for index, char in enumerate(text) if char in "[{"][:_MAX_START_TRIES]
    # Start by start, each as written then repaired: trying every start as written
    # first would let an inner ``"extras": []`` win over a repairable outer list.
    for start in starts:
        for transform in (_identity, _repair):
            try:
                value, _end = _DECODER.raw_decode(transform(text[start:]))
            except (ValueError, RecursionError):  # RecursionError: absurd nesting
                continue
            if isinstance(value, list | dict):
                return value
    raise UnusableAnswerError("answer holds no JSON array or object")


def _identity(text: str) -> str:
    return text


def _repair(text: str) -> str:
    """Drop trailing commas, map Python literals and close what was left open.

    A string-aware scan, so commas and words inside JSON strings are never touched.
    """
    out: list[str] = []
    closers: list[str] = []
    in_string = escaped = False
    index = 0
    while index < len(text):
        char = text[index]
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            index += 1
            continue
        if char == '"':
            in_string = True
        elif char in "[{":
            closers.append("]" if char == "[" else "}")
        elif char in "]}":
            while out and out[-1] in " \t\r\n,":
                out.pop()  # trailing comma before a closer
            if closers:
                closers.pop()
            out.append(char)
            index += 1
            if not closers:
                break  # the first complete value is all we read
            continue
        else:
            for word, replacement in (("True", "true"), ("False", "false"), ("None", "null")):
                if (
                    text.startswith(word, index)
                    and not text[index + len(word) : index + len(word) + 1].isalnum()
                ):
                    out.append(replacement)
                    index += len(word)
                    break
            else:
                out.append(char)
                index += 1
            continue
        out.append(char)
        index += 1
    if in_string:
        out.append('"')
    while out and out[-1] in " \t\r\n,":
        out.pop()
    out.extend(reversed(closers))
    return "".join(out)
