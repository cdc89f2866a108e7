"""Pure mapping between :class:`MemoryUnit` and L3 points of ``memories``.

Every unit field is a flat payload field (timestamps twice: ISO for people,
epoch seconds for range filters), plus ``slot`` (a stable string of the
normalized (user, subject, attribute)), ``content_hash``, ``kind`` and
``active``. The payload ``type`` is the unit's kind while it is active and
``history`` otherwise, so a plain hybrid search with ``types=("fact", "event")``
never sees superseded versions: the engine filters them, not Python.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.longterm.facade import NewItem
from memstrata.memory.units import Dispute, MemoryUnit, UnitSource

TYPE_HISTORY = "history"
"""Payload ``type`` of every unit that is not active (superseded, older, closed)."""
TYPE_PENDING = "pending"
"""Payload ``type`` of a point written before its version was committed."""
ACTIVE_TYPES: tuple[str, ...] = ("fact", "event")
UNIT_TYPES: tuple[str, ...] = (*ACTIVE_TYPES, TYPE_HISTORY, TYPE_PENDING)
"""Every payload ``type`` a memory unit's point can have (episodes are ``episode``)."""

_ID_NAMESPACE = uuid.UUID("5b0b7f8e-3c1a-4f43-9a55-0c2f1d6e8a11")


def slot_string(tenant: str, slot: tuple[str, str, str]) -> str:
    """The slot key stored in payloads: stable, short, safe for exact filters."""
    return sha256_hex([tenant, *slot])[:40]


def unit_id(unit: MemoryUnit) -> str:
    """The unit's own id, or one derived from what it says (and, for a fact, when).

    Derived ids make writes idempotent (an at-least-once queue replaying a write
    finds the point already there) and make two stores fed the same input hold
    the same ids, which consolidation's determinism relies on. An event's id is its
    content alone: the same event observed twice is one event (one point to find).
    """
    if unit.id is not None:
        return unit.id
    if unit.kind == "event":
        key = "|".join(["event", unit.content_hash, ",".join(unit.derived_from)])
    else:
        key = "|".join(
            [
                unit.content_hash,
                unit.valid_from.isoformat(),
                unit.observed_at.isoformat(),
                ",".join(unit.derived_from),
            ]
        )
    return str(uuid.uuid5(_ID_NAMESPACE, key))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def to_payload(
    unit: MemoryUnit, *, pending: bool = False, invalidated: bool = False
) -> dict[str, Any]:
    """The payload fields of ``unit`` (the facade adds tenant, user, type, text)."""
    source = unit.source
    return {
        "subject": unit.subject,
        "attribute": unit.attribute,
        "value": unit.value,
        "kind": unit.kind,
        "session_id": source.session_id,
        "turn_id": source.turn_id,
        "document_id": source.document_id,
        "confidence": source.confidence,
        "observed_at": _iso(unit.observed_at),
        "observed_at_ts": _ts(unit.observed_at),
        "valid_from": _iso(unit.valid_from),
        "valid_from_ts": _ts(unit.valid_from),
        "valid_to": _iso(unit.valid_to),
        "valid_to_ts": _ts(unit.valid_to),
        "version": unit.version,
        "active": unit.active and not pending,
        "pending": pending,
        "invalidated": invalidated,
        "importance": unit.importance,
        "pinned": unit.pinned,
        "last_accessed": _iso(unit.last_accessed),
        "access_count": unit.access_count,
        "extras": json.dumps([list(p) for p in unit.extras], ensure_ascii=False),
        "derived_from": json.dumps(list(unit.derived_from)),
        # A list, not JSON text: the engine matches a filter on any element, which is
        # how the facts of an episode are found.
        "episodes": list(unit.episodes),
        "superseded_by": unit.superseded_by,
        "feedback_applied": list(unit.feedback_applied),
        "summary": unit.is_summary,
        "disputed": _dispute_payload(unit.disputed),
        "slot": slot_string(source.tenant, unit.slot),
        "content_hash": unit.content_hash,
    }


def point_type(unit: MemoryUnit, *, pending: bool = False) -> str:
    """``fact`` / ``event`` while active, ``history`` or ``pending`` otherwise."""
    if pending:
        return TYPE_PENDING
    return unit.kind if unit.active else TYPE_HISTORY


def to_item(unit: MemoryUnit, *, pending: bool = False, invalidated: bool = False) -> NewItem:
    """The L3 item of ``unit`` (its id must be set: see :func:`unit_id`).

    ``pending``: written before its commit; ``invalidated``: found wrong, bound for
    cold storage at the next consolidation.
    """
    if unit.id is None:
        raise ValidationError("id", "a stored unit needs an id")
    return NewItem(
        text=unit.text,
        tenant=unit.source.tenant,
        user=unit.source.user,
        type=point_type(unit, pending=pending),
        source=unit.source.label,
        id=unit.id,
        created_at=unit.observed_at.timestamp(),
        extra=to_payload(unit, pending=pending, invalidated=invalidated),
    )


def _dt(payload: Mapping[str, Any], key: str) -> datetime | None:
    value = payload.get(key)
    return None if value is None else datetime.fromisoformat(str(value))


def _required_dt(payload: Mapping[str, Any], key: str) -> datetime:
    value = _dt(payload, key)
    if value is None:
        raise ValidationError(key, "missing from the stored payload")
    return value


def from_payload(point_id: str, payload: Mapping[str, Any]) -> MemoryUnit:
    """Rebuild the unit stored under ``point_id`` (validated like any new unit)."""
    source = UnitSource(
        tenant=str(payload["tenant"]),
        user=str(payload["user"]),
        session_id=payload.get("session_id"),
        turn_id=payload.get("turn_id"),
        document_id=payload.get("document_id"),
        confidence=float(payload.get("confidence", 1.0)),
    )
    extras = tuple(tuple(pair) for pair in json.loads(str(payload.get("extras") or "[]")))
    return MemoryUnit(
        subject=str(payload["subject"]),
        attribute=str(payload["attribute"]),
        value=str(payload["value"]),
        kind=payload["kind"],
        source=source,
        observed_at=_required_dt(payload, "observed_at"),
        valid_from=_required_dt(payload, "valid_from"),
        valid_to=_dt(payload, "valid_to"),
        version=int(payload.get("version", 1)),
        active=bool(payload.get("active", False)),
        importance=float(payload.get("importance", 0.5)),
        pinned=bool(payload.get("pinned", False)),
        last_accessed=_dt(payload, "last_accessed"),
        access_count=int(payload.get("access_count", 0)),
        id=point_id,
        extras=extras,  # pairs re-checked by MemoryUnit
        derived_from=tuple(json.loads(str(payload.get("derived_from") or "[]"))),
        episodes=tuple(str(i) for i in payload.get("episodes") or ()),
        superseded_by=payload.get("superseded_by") or None,
        feedback_applied=tuple(str(i) for i in payload.get("feedback_applied") or ()),
        disputed=dispute_of_payload(payload.get("disputed")),
    )


def _dispute_payload(dispute: Dispute | None) -> dict[str, Any] | None:
    if dispute is None:
        return None
    return {
        "episode": dispute.episode,
        "at": dispute.at.isoformat(),
        "text": dispute.text,
        "confidence": dispute.confidence,
    }


def dispute_note(payload: Mapping[str, Any]) -> str | None:
    """How a reader shows a disputed fact (``payload``: the fact's, or a context
    item's carrying ``disputed`` and ``observed_at``): when it was stated and when,
    and by what, it was put in doubt; None for a fact not in doubt (or unreadable)."""
    try:
        dispute = dispute_of_payload(payload.get("disputed"))
    except (ValidationError, ValueError, TypeError):
        return None
    if dispute is None:
        return None
    stated = payload.get("observed_at")
    when = f"stated {str(stated)[:10]}; " if isinstance(stated, str) and stated else ""
    return f'{when}put in doubt on {dispute.at.date().isoformat()} by: "{dispute.text}"'


def dispute_of_payload(value: Any) -> Dispute | None:
    """The dispute a stored ``disputed`` payload field holds (None when absent)."""
    if not isinstance(value, Mapping) or not value.get("episode"):
        return None
    return Dispute(
        episode=str(value["episode"]),
        at=datetime.fromisoformat(str(value["at"])),
        text=str(value.get("text", "")) or "-",
        confidence=float(value.get("confidence", 1.0)),
    )


def is_pending(payload: Mapping[str, Any]) -> bool:
    """True for a point whose version was never committed (or not yet)."""
    return bool(payload.get("pending", False))
