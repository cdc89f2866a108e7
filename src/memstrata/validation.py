"""Input checks written once and shared by every public entry point.

Each check raises :class:`~memstrata.errors.ValidationError` naming the field.
"""

from __future__ import annotations

import re
from typing import Any

from memstrata.errors import ValidationError

# Ids end up inside Redis keys and Qdrant payloads: keep them to a safe alphabet
# (no braces, which would break the cluster hash tag, no colons, no spaces).
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-@]{0,127}$")

MAX_TEXT_CHARS = 32_000


def check_id(field: str, value: Any) -> str:
    """Return ``value`` if it is a well-formed identifier."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value:
        raise ValidationError(field, "must not be empty")
    if not _ID_RE.fullmatch(value):
        raise ValidationError(
            field,
            "must be 1-128 chars of letters, digits, '_', '-', '.', '@' and start with "
            "a letter or digit",
        )
    return value


def check_text(field: str, value: Any, *, max_chars: int = MAX_TEXT_CHARS) -> str:
    """Return ``value`` if it is a non-blank string no longer than ``max_chars``."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
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
