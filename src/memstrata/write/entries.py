"""Stage 3 of the write path, its pure part: keys, payload checks and entry codecs.

Nothing here talks to Redis, so every rule (what a valid payload is, how the
content hash is computed, how stream ids compare) is tested without a server.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from memstrata.errors import ValidationError
from memstrata.frozen import freeze
from memstrata.hashing import canonical_json, sha256_hex
from memstrata.validation import check_id

JSON: TypeAlias = "bool | int | float | str | Sequence[JSON] | Mapping[str, JSON] | None"

MAX_PAYLOAD_BYTES = 256 * 1024
# Deeper nesting is almost certainly a bug or an attack, and Python's recursion
# limit would turn it into a RecursionError instead of a ValidationError.
MAX_PAYLOAD_DEPTH = 32
# Bumped when the stored field layout changes, so old entries stay decodable.
ENTRY_FORMAT = "1"

F_FORMAT = "v"
F_KIND = "kind"
F_PAYLOAD = "payload"
F_HASH = "content_hash"
# Dead-letter bookkeeping, prefixed so it never collides with entry fields.
F_DL_SOURCE_ID = "dl_source_id"
F_DL_ERROR = "dl_error"
F_DL_DELIVERIES = "dl_deliveries"
F_DL_AT_MS = "dl_at_ms"
F_DL_REASON = "dl_reason"
DL_FIELDS = frozenset({F_DL_SOURCE_ID, F_DL_ERROR, F_DL_DELIVERIES, F_DL_AT_MS, F_DL_REASON})

StreamId: TypeAlias = tuple[int, int]


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """Every key of one queue, all under the hash tag ``{name}`` (one cluster slot).

    One slot is what makes ``XACK`` + marking done, or ``XADD`` to the dead-letter
    stream + ``XACK``, a single MULTI/EXEC on a Redis Cluster.
    """

    name: str

    def __post_init__(self) -> None:
        check_id("name", self.name)

    @property
    def stream(self) -> str:
        """The work stream read by the consumer group."""
        return f"mq:{{{self.name}}}:stream"

    @property
    def done(self) -> str:
        """Sorted set: content hash -> ms when it was acknowledged (the dedupe window)."""
        return f"mq:{{{self.name}}}:done"

    @property
    def dead(self) -> str:
        """Dead-letter stream: entries that failed ``max_deliveries`` times."""
        return f"mq:{{{self.name}}}:dead"


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One unit of work as handed to a handler.

    ``deliveries`` counts how often the entry was handed out (1 on first delivery);
    above 1 the handler is seeing a retry or a reclaim after a crash.
    """

    entry_id: str
    kind: str
    payload: Mapping[str, JSON]
    content_hash: str
    deliveries: int


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An entry moved to the dead-letter stream, with why it was given up."""

    dead_id: str
    source_id: str
    kind: str
    content_hash: str
    error: str
    deliveries: int
    dead_at_ms: int
    fields: Mapping[str, str]
    reason: str = ""
    """Why it can never be stored, in words (never its content); empty for an entry
    dead-lettered before reasons were recorded (``error`` then says the type)."""

    @property
    def tenant(self) -> str | None:
        """The tenant its payload names (None: a payload that names none)."""
        return _payload_string(self.fields, "tenant")

    @property
    def user(self) -> str | None:
        """The user its payload names (None: a payload that names none)."""
        return _payload_string(self.fields, "user")

    def entry_fields(self) -> dict[str, str]:
        """The original stream fields, as enqueued (what a replay adds again)."""
        return {k: v for k, v in self.fields.items() if k not in DL_FIELDS}


def _payload_string(fields: Mapping[str, str], key: str) -> str | None:
    try:
        payload = json.loads(fields.get(F_PAYLOAD, ""))
    except ValueError:
        return None
    value = payload.get(key) if isinstance(payload, dict) else None
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Counters for metrics: what went in, what is outstanding, what was given up."""

    name: str
    enqueued: int  # entries ever added to the stream (XINFO STREAM entries-added)
    length: int  # entries currently stored (acknowledged ones until trimmed)
    pending: int  # delivered, not yet acknowledged
    lag: int | None  # not yet delivered; None when the server cannot tell
    dead_lettered: int
    consumers: int


class MalformedEntryError(Exception):
    """A stream entry that this version cannot decode (internal; dead-lettered)."""


def _check_json(field: str, value: Any, depth: int) -> Any:
    """Return a plain-JSON copy of ``value`` or raise naming the offending path."""
    if depth > MAX_PAYLOAD_DEPTH:
        raise ValidationError(field, f"is nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(field, "must be a finite number (JSON has no NaN/Infinity)")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(field, f"has a non-string key {key!r}")
            out[key] = _check_json(f"{field}.{key}", item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_check_json(f"{field}[{i}]", item, depth + 1) for i, item in enumerate(value)]
    raise ValidationError(field, f"is a {type(value).__name__}, which is not JSON")


def check_payload(payload: Any, *, field: str = "payload") -> dict[str, Any]:
    """Return ``payload`` as a plain JSON object, or raise ValidationError naming the field."""
    if not isinstance(payload, Mapping):
        raise ValidationError(field, f"must be a mapping, got {type(payload).__name__}")
    plain: dict[str, Any] = _check_json(field, payload, 0)
    return plain


def content_hash(kind: str, payload: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of ``{"kind", "payload"}``: key order never matters."""
    return sha256_hex({"kind": kind, "payload": payload})


def encode_entry(kind: Any, payload: Any) -> dict[str, str]:
    """Validate and build the stream fields of a new entry."""
    checked_kind = check_id("kind", kind)
    plain = check_payload(payload)
    text = canonical_json(plain)
    size = len(text.encode())
    if size > MAX_PAYLOAD_BYTES:
        raise ValidationError(
            "payload", f"is {size} bytes of JSON, the limit is {MAX_PAYLOAD_BYTES}"
        )
    return {
        F_FORMAT: ENTRY_FORMAT,
        F_KIND: checked_kind,
        F_PAYLOAD: text,
        F_HASH: content_hash(checked_kind, plain),
    }


def decode_entry(entry_id: str, fields: Mapping[str, str], deliveries: int) -> QueueEntry:
    """Rebuild a :class:`QueueEntry`; raise MalformedEntryError if it cannot be trusted."""
    if fields.get(F_FORMAT) != ENTRY_FORMAT:
        raise MalformedEntryError(f"unknown entry format {fields.get(F_FORMAT)!r}")
    kind, text, digest = fields.get(F_KIND), fields.get(F_PAYLOAD), fields.get(F_HASH)
    if kind is None or text is None or digest is None:
        raise MalformedEntryError("missing fields")
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise MalformedEntryError("payload is not JSON") from exc
    if not isinstance(payload, dict):
        raise MalformedEntryError("payload is not a JSON object")
    # Recomputing the hash catches entries written by hand or by a buggy producer:
    # dedupe by a hash that does not match the content would silently drop work.
    if content_hash(kind, payload) != digest:
        raise MalformedEntryError("content hash does not match the payload")
    return QueueEntry(entry_id, kind, freeze(payload), digest, deliveries)


def dead_letter_fields(
    entry_id: str,
    fields: Mapping[str, str],
    error: str,
    deliveries: int,
    now_ms: int,
    reason: str = "",
) -> dict[str, str]:
    """The original fields plus why and when the entry was given up."""
    return {
        **fields,
        F_DL_SOURCE_ID: entry_id,
        F_DL_ERROR: error,
        F_DL_DELIVERIES: str(deliveries),
        F_DL_AT_MS: str(now_ms),
        F_DL_REASON: reason,
    }


def decode_dead_letter(dead_id: str, fields: Mapping[str, str]) -> DeadLetter:
    """Read back one dead-letter stream entry."""
    return DeadLetter(
        dead_id=dead_id,
        source_id=fields.get(F_DL_SOURCE_ID, ""),
        kind=fields.get(F_KIND, ""),
        content_hash=fields.get(F_HASH, ""),
        error=fields.get(F_DL_ERROR, ""),
        deliveries=int(fields.get(F_DL_DELIVERIES, "0")),
        dead_at_ms=int(fields.get(F_DL_AT_MS, "0")),
        fields=freeze(dict(fields)),
        reason=fields.get(F_DL_REASON, ""),
    )


def parse_stream_id(value: str) -> StreamId:
    """``"<ms>-<seq>"`` as a tuple that compares the way the server orders ids."""
    ms, _, seq = value.partition("-")
    try:
        return int(ms), int(seq or 0)
    except ValueError as exc:
        raise ValueError(f"not a stream id: {value!r}") from exc


def format_stream_id(value: StreamId) -> str:
    """The inverse of :func:`parse_stream_id`."""
    return f"{value[0]}-{value[1]}"


def next_stream_id(value: StreamId) -> StreamId:
    """The smallest id greater than ``value`` (XTRIM MINID keeps ids >= its argument)."""
    return value[0], value[1] + 1


def safe_trim_floor(last_delivered: StreamId, oldest_pending: StreamId | None) -> StreamId:
    """The lowest id a group may still need: everything below it is acknowledged.

    Undelivered entries lie above ``last_delivered``; delivered but unacknowledged
    ones are in the PEL, the oldest of which is ``oldest_pending``. The floor only
    ever moves up (ids are delivered in order and nothing re-enters the PEL), so
    trimming to a floor read a moment ago can never drop work.
    """
    floor = next_stream_id(last_delivered)
    if oldest_pending is not None and oldest_pending < floor:
        return oldest_pending
    return floor


def _as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def entry_owner(fields: Mapping[Any, Any]) -> tuple[str, str] | None:
    """``(tenant, user)`` named by a stream entry's JSON payload (None when it names
    none or is not JSON: nothing says whose it is)."""
    raw = next((v for k, v in fields.items() if _as_text(k) == F_PAYLOAD), None)
    if raw is None:
        return None
    try:
        payload = json.loads(_as_text(raw))
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    tenant, user = payload.get("tenant"), payload.get("user")
    if not isinstance(tenant, str) or not isinstance(user, str):
        return None
    return tenant, user
