"""Which memories a read sees: the reader's rules over payload types and time.

By default a read of ``memories`` sees what was said (episodes) and the current facts
and events: never ``history`` (superseded versions) nor ``pending`` (a version being
committed). ``include_history`` adds the superseded versions; reading ``as_of`` an
instant needs them too, and keeps what was valid then
(:func:`memstrata.memory.versioning.valid_at`, the one as-of rule).
"""

from __future__ import annotations

from datetime import datetime

from memstrata.errors import ValidationError

ACTIVE_MEMORY_TYPES: tuple[str, ...] = ("episode", "fact", "event", "preference", "profile")
"""Payload types of memories a read sees by default."""
HISTORY_MEMORY_TYPES: tuple[str, ...] = (*ACTIVE_MEMORY_TYPES, "history")
"""Every version too: what ``include_history`` and ``as_of`` read."""


def memory_types(*, include_history: bool, as_of: datetime | None) -> tuple[str, ...]:
    """The payload types a read of ``memories`` sees; ValidationError names a bad
    ``include_history`` or ``as_of``."""
    if not isinstance(include_history, bool):
        raise ValidationError("include_history", "must be a bool")
    check_as_of(as_of)
    return HISTORY_MEMORY_TYPES if include_history or as_of is not None else ACTIVE_MEMORY_TYPES


def check_as_of(as_of: datetime | None) -> datetime | None:
    """``as_of`` when it is None or a timezone-aware datetime (ValidationError otherwise)."""
    if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
        raise ValidationError("as_of", "must be a timezone-aware datetime")
    return as_of
