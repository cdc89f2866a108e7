"""Immutable values returned by working-memory reads, and their codecs.

Values holding decoded JSON (``WorkingItem.value``, ``SeriesPoint.value``,
``Preference.value``) are fresh copies made for each read: changing them never
touches the store or another reader.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from memstrata.errors import BackendError, ValidationError
from memstrata.working.backend import NO_EXPIRY
from memstrata.working.keys import canonical_json
from memstrata.working.stepgraph import StepGraph

# Redis allows 512 MiB values; working memory is a cache of tool output, and a
# megabyte-sized entry is a bug upstream (it would blow any token budget anyway).
MAX_VALUE_BYTES = 1 << 20

# Hash fields starting with this are memstrata's bookkeeping, never a caller's field.
META_PREFIX = "@"
STORED_AT_FIELD = META_PREFIX + "stored_at"


@dataclass(frozen=True, slots=True)
class WorkingItem:
    """One L2 value: its key, the decoded value, the TTL left and when it was written."""

    key: str
    value: Any
    ttl_remaining_s: float | None  # None: the key never expires
    stored_at: datetime | None = None  # writer's clock; None for foreign data


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One time-series point; ``timestamp`` is epoch seconds."""

    timestamp: float
    value: Any


@dataclass(frozen=True, slots=True)
class Preference:
    """A structured long-lived user preference (``pref:{user}:<type>``)."""

    user_id: str
    pref_type: str
    value: Any
    confidence: float
    last_updated: datetime


@dataclass(frozen=True, slots=True)
class WorkingKey:
    """A live key of one session, for ``memstrata inspect``."""

    key: str
    kind: str
    ttl_remaining_s: float | None


@dataclass(frozen=True, slots=True)
class StoredPlan:
    """The session's step graph and when it was stored (the origin of estimates)."""

    graph: StepGraph
    stored_at: datetime


def ttl_seconds(ttl_ms: int) -> float | None:
    """PTTL milliseconds to seconds; None for a persistent key."""
    return None if ttl_ms == NO_EXPIRY else max(0, ttl_ms) / 1000


def encode_value(field: str, value: Any) -> str:
    """Canonical JSON of ``value``, rejecting oversized payloads."""
    text = canonical_json(field, value)
    size = len(text.encode("utf-8"))
    if size > MAX_VALUE_BYTES:
        raise ValidationError(field, f"is {size} bytes as JSON, the limit is {MAX_VALUE_BYTES}")
    return text


def decode_value(key: str, text: str) -> Any:
    """Parse stored JSON; a corrupt value is a backend fault, never junk returned.

    orjson first (every L2 read parses a value); it refuses integers beyond 64 bits,
    which the standard encoder writes, so the standard parser gets the last word."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BackendError(f"corrupt JSON stored at {key}") from exc


def check_fields(fields: Any) -> Mapping[str, Any]:
    """A step result's fields: a non-empty mapping of 1-256 char names not starting with '@'."""
    if not isinstance(fields, Mapping):
        raise ValidationError("fields", f"must be a mapping, got {type(fields).__name__}")
    if not fields:
        raise ValidationError("fields", "must not be empty")
    for name in fields:
        if not isinstance(name, str) or not name or len(name) > 256:
            raise ValidationError("fields", f"field names must be 1-256 char strings: {name!r}")
        if name.startswith(META_PREFIX):
            raise ValidationError("fields", f"field names starting with '@' are reserved: {name!r}")
    return fields


def encode_fields(fields: Mapping[str, Any]) -> dict[str, str]:
    """Validate a step result's fields and encode each value as JSON."""
    check_fields(fields)
    out: dict[str, str] = {}
    total = 0
    for name, value in fields.items():
        out[name] = canonical_json(f"fields.{name}", value)
        total += len(name) + len(out[name].encode("utf-8"))
    if total > MAX_VALUE_BYTES:
        raise ValidationError("fields", f"is {total} bytes, the limit is {MAX_VALUE_BYTES}")
    return out


def check_timestamp(field: str, value: Any) -> float:
    """Epoch seconds from a finite number or a timezone-aware datetime."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError(field, "datetime must be timezone-aware")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be a number or datetime, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValidationError(field, "must be finite (NaN and infinity are rejected)")
    return float(value)


def encode_point(
    index: int, point: Any, clean: Callable[[Any], Any] = lambda v: v
) -> tuple[str, float]:
    """A sorted-set member and score for one point (SeriesPoint or (ts, value)).

    ``clean`` (the sanitizing gateway) is applied to the value before encoding.
    """
    field = f"points[{index}]"
    if isinstance(point, SeriesPoint):
        ts, value = point.timestamp, point.value
    elif isinstance(point, tuple) and len(point) == 2:
        ts, value = point
    else:
        raise ValidationError(field, "must be a SeriesPoint or a (timestamp, value) pair")
    score = check_timestamp(f"{field}.timestamp", ts)
    # The timestamp is part of the member so equal values at different times stay
    # distinct points (sorted-set members are unique).
    member = encode_value(f"{field}.value", {"t": score, "v": clean(value)})
    return member, score


def decode_point(key: str, member: str, score: float) -> SeriesPoint:
    """Inverse of :func:`encode_point`."""
    raw = decode_value(key, member)
    if not isinstance(raw, dict) or "v" not in raw:
        raise BackendError(f"corrupt series member stored at {key}")
    return SeriesPoint(timestamp=score, value=raw["v"])


def encode_envelope(value_json: str, stored_at: datetime, ttl_ms: int | None = None) -> str:
    """A string value as stored: the JSON value with its write time and TTL.

    Carrying the TTL lets a read be one plain GET (no MULTI with PTTL): the time
    left is derived from ``stored_at + ttl_ms``; the server still does the expiring.
    """
    ttl = "null" if ttl_ms is None else str(int(ttl_ms))
    # isoformat() is digits, '-', ':', 'T', '.' and '+' only: a JSON string as is.
    return f'{{"stored_at":"{stored_at.isoformat()}","ttl_ms":{ttl},"value":{value_json}}}'


def decode_envelope(key: str, text: str) -> tuple[Any, datetime | None, int | None]:
    """Inverse of :func:`encode_envelope`: (value, stored_at, ttl_ms)."""
    raw = decode_value(key, text)
    if not isinstance(raw, dict) or "value" not in raw:
        raise BackendError(f"corrupt envelope stored at {key}")
    ttl = raw.get("ttl_ms")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int)):
        raise BackendError(f"corrupt ttl stored at {key}")
    return raw["value"], _parse_time(key, raw.get("stored_at")), ttl


def _parse_time(key: str, text: Any) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(str(text))
    except ValueError as exc:
        raise BackendError(f"corrupt timestamp stored at {key}") from exc


def split_meta(key: str, raw: Mapping[str, str]) -> tuple[dict[str, Any], datetime | None]:
    """A stored result hash as (decoded caller fields, stored_at)."""
    fields = {n: decode_value(key, t) for n, t in raw.items() if not n.startswith(META_PREFIX)}
    return fields, _parse_time(key, raw.get(STORED_AT_FIELD))
