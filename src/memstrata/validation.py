"""Input checks written once and shared by every public entry point.

Each check raises :class:`~memstrata.errors.ValidationError` naming the field.
"""

from __future__ import annotations

import re
from typing import Any

from memstrata.errors import ValidationError

# The patterns below are also the wire's (the service's JSON schema states them, so a
# request the schema accepts is one these checks accept): each is written so that
# Python's re, ECMA-262 (JSON Schema) and pydantic's Rust regex read it alike.

ID_MAX_CHARS = 128
# Ids end up inside Redis keys and Qdrant payloads: keep them to a safe alphabet
# (no braces, which would break the cluster hash tag, no colons, no spaces).
ID_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9_.\-@]{{0,{ID_MAX_CHARS - 1}}}$"
ID_REASON = (
    f"must be 1-{ID_MAX_CHARS} chars of letters, digits, '_', '-', '.', '@' and start with "
    "a letter or digit"
)
_ID_RE = re.compile(ID_PATTERN)

NAME_MAX_CHARS = 40
# Tenants and agents are a stricter id: no '@', which the service uses to put a session
# id in its tenant's namespace.
NAME_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9_.\-]{{0,{NAME_MAX_CHARS - 1}}}$"
NAME_REASON = (
    f"must be 1-{NAME_MAX_CHARS} letters, digits, '_', '-', '.', starting with a letter or digit"
)

# What ``str.isspace`` calls whitespace (a test checks the two agree), spelled out: the
# regex flavours disagree on ``\s`` (ECMA's includes U+FEFF, Python's U+001C-U+001F).
_BLANK_CLASS = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NONBLANK_PATTERN = f"[^{_BLANK_CLASS}]"
"""Holds a character that is not whitespace (searched, not anchored)."""
_NONBLANK_RE = re.compile(NONBLANK_PATTERN)

UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
"""A UUID in its hyphenated form (``uuid.UUID`` reads it; a test checks it does)."""

STORE_LABEL_MAX_CHARS = 256
STORE_LABEL_PATTERN = r"^[^.]*$"
"""A label of an item-store namespace: no '.' (labels are joined with it)."""

MAX_DOCUMENT_NAME_CHARS = 512
DOCUMENT_NAME_PATTERN = rf"^[^/\\\x00-\x1f\x7f-\x9f{_BLANK_CLASS}][^\x00-\x1f\x7f-\x9f]*$"
"""A document's name: no control character, not starting with '/', '\\' or whitespace
(``knowledge.documents.check_document_name`` also refuses a '..' segment)."""
PAGE_PATTERN = r"^[0-9]{1,17}~[^~]{1,256}$"
"""A memory list's page marker: the last item's instant (microseconds since the epoch)
and its id (``memstrata.memory.listing``)."""
SLOT_SOURCE_PATTERN = r"^(?:l1|l2|given)\."
"""A slot's source: ``l1.<field>``, ``l2.<item>[.<key>]`` or ``given.<name>``."""

DURATION_PATTERN = r"^[1-9][0-9]{0,5}[smhdw]$"
"""A positive duration such as ``30m``, ``24h``, ``7d`` or ``2w`` (``s`` too), at most six
digits (a timedelta holds it)."""
DURATION_REASON = "must be a positive duration such as 30m, 24h or 7d (at most 6 digits)"

MAX_TEXT_CHARS = 32_000
MAX_CORRECTION_CHARS = 4_000
"""A feedback event's correction."""
MAX_REPLY_CHARS = 20_000
"""A reply the decision layer checks."""
MAX_SPEAKER_CHARS = 128
"""A turn's speaker name."""


def check_id(field: str, value: Any) -> str:
    """Return ``value`` if it is a well-formed identifier."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value:
        raise ValidationError(field, "must not be empty")
    if not _ID_RE.fullmatch(value):
        raise ValidationError(field, ID_REASON)
    return value


def is_blank(value: str) -> bool:
    """Whether ``value`` is empty or whitespace only (``not value.strip()``)."""
    return _NONBLANK_RE.search(value) is None


def check_text(field: str, value: Any, *, max_chars: int = MAX_TEXT_CHARS) -> str:
    """Return ``value`` if it is a non-blank string no longer than ``max_chars``."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if is_blank(value):
        raise ValidationError(field, "must not be empty")
    if len(value) > max_chars:
        raise ValidationError(field, f"is {len(value)} chars, the limit is {max_chars}")
    return value


def check_positive_int(field: str, value: Any, *, maximum: int | None = None) -> int:
    """Return ``value`` if it is an int > 0 (bools rejected) and within ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    if value <= 0:
        raise ValidationError(field, "must be > 0")
    if maximum is not None and value > maximum:
        raise ValidationError(field, f"must be <= {maximum}")
    return value


def check_non_negative_int(field: str, value: Any) -> int:
    """Return ``value`` if it is an int >= 0 (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    if value < 0:
        raise ValidationError(field, "must be >= 0")
    return value


def check_positive_float(field: str, value: Any) -> float:
    """Return ``value`` as float if it is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be a number, got {type(value).__name__}")
    number = float(value)
    if not number > 0 or number == float("inf"):
        raise ValidationError(field, "must be a finite number > 0")
    return number
