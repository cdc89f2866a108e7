"""Stage 2 of the write path, its pure part: the queue payloads of turns, notes and units,
and the values the consumer rebuilds from them.

* ``turn`` (``engine.observe``): an :class:`~memstrata.memory.episodes.Episode` of a
  conversation, with its thread and position;
* ``note`` (``engine.remember`` with text): a remembered text, kept as an episode of
  its own;
* ``unit`` (``engine.remember`` with a :class:`MemoryUnit`): a structured unit, as is.

Every decoder raises ValidationError naming the bad field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memstrata.errors import ValidationError
from memstrata.extract.candidates import ROLES, Role, Turn
from memstrata.hashing import sha256_hex
from memstrata.memory.episodes import Episode, note_episode_id, turn_episode_id
from memstrata.memory.units import UNIT_KINDS, MemoryUnit, UnitKind, UnitSource
from memstrata.write.entries import JSON

KIND_TURN = "turn"
KIND_NOTE = "note"
KIND_UNIT = "unit"
ENTRY_KINDS: frozenset[str] = frozenset({KIND_TURN, KIND_NOTE, KIND_UNIT})
NOTE_SESSION = "direct"
"""The session id the extractor sees for a remembered text."""


def _iso(value: datetime) -> str:
    return value.isoformat()


def _when(payload: Mapping[str, Any], key: str) -> datetime:
    raw = payload.get(key)
    if not isinstance(raw, str):
        raise ValidationError(key, "must be an ISO-8601 timestamp")
    try:
        return datetime.fromisoformat(raw)
    except ValueError as exc:
        raise ValidationError(key, "is not an ISO-8601 timestamp") from exc


def _string(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str):
        raise ValidationError(key, "must be a string")
    return value


def _optional_string(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise ValidationError(key, "must be a string or null")
    return value


def _role(value: str) -> Role:
    if value not in ROLES:
        raise ValidationError("role", f"must be one of {sorted(ROLES)}")
    role: Role = value  # type: ignore[assignment]  # narrowed by the membership check
    return role


def _kind(value: str) -> UnitKind:
    if value not in UNIT_KINDS:
        raise ValidationError("kind", f"must be one of {sorted(UNIT_KINDS)}")
    kind: UnitKind = value  # type: ignore[assignment]  # narrowed by the membership check
    return kind


def turn_payload(episode: Episode) -> dict[str, JSON]:
    """The queue payload of an observed turn (its text already sanitized)."""
    if episode.position is None or episode.session_id is None or episode.turn_id is None:
        raise ValidationError("episode", "a turn needs its session, turn id and position")
    payload: dict[str, JSON] = {
        "tenant": episode.tenant,
        "user": episode.user,
        "session_id": episode.session_id,
        "turn_id": episode.turn_id,
        "role": episode.role,
        "text": episode.text,
        "observed_at": _iso(episode.observed_at),
        "thread": episode.thread,
        "seq": episode.seq,
    }
    if episode.speaker is not None:
        payload["speaker"] = episode.speaker
    return payload


def turn_episode(payload: Mapping[str, Any]) -> Episode:
    """The episode of a ``turn`` payload.

    Entries enqueued before turns carried a position decode too, as an episode of
    no thread whose id is derived from its session, turn and time.
    """
    tenant, user = _string(payload, "tenant"), _string(payload, "user")
    session_id, turn_id = _string(payload, "session_id"), _string(payload, "turn_id")
    text, observed_at = _string(payload, "text"), _when(payload, "observed_at")
    thread, seq = _optional_string(payload, "thread"), payload.get("seq")
    if thread is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        raise ValidationError("seq", "must be an integer")
    episode_id = (
        turn_episode_id(tenant, thread, int(seq))
        if thread is not None and isinstance(seq, int)
        else note_episode_id(tenant, user, f"{session_id}/{turn_id}\x1f{text}", observed_at)
    )
    return Episode(
        id=episode_id,
        tenant=tenant,
        user=user,
        text=text,
        role=_role(_string(payload, "role")),
        observed_at=observed_at,
        source=f"turn:{session_id}/{turn_id}",
        session_id=session_id,
        turn_id=turn_id,
        thread=thread,
        seq=int(seq) if thread is not None and isinstance(seq, int) else None,
        speaker=_optional_string(payload, "speaker"),
    )


def note_payload(tenant: str, user: str, text: str, observed_at: datetime) -> dict[str, JSON]:
    """The queue payload of a text remembered directly (no filter)."""
    return {"tenant": tenant, "user": user, "text": text, "observed_at": _iso(observed_at)}


def note_episode(payload: Mapping[str, Any]) -> Episode:
    """The episode of a ``note`` payload; its id is derived from the content, so a
    replayed note is the same episode."""
    return Episode.remembered(
        _string(payload, "tenant"),
        _string(payload, "user"),
        _string(payload, "text"),
        _when(payload, "observed_at"),
    )


def extractor_turn(episode: Episode) -> Turn:
    """What the extractor reads of an episode: a turn of its session (a remembered
    text is a user turn of the ``direct`` session, its turn id from its content)."""
    if episode.session_id is not None and episode.turn_id is not None:
        session_id, turn_id = episode.session_id, episode.turn_id
    else:
        digest = sha256_hex([episode.tenant, episode.user, episode.text, _iso(episode.observed_at)])
        session_id, turn_id = NOTE_SESSION, f"n{digest[:16]}"
    return Turn(
        text=episode.text,
        role=_role(episode.role),
        tenant=episode.tenant,
        user=episode.user,
        session_id=session_id,
        turn_id=turn_id,
        observed_at=episode.observed_at,
    )


def unit_payload(unit: MemoryUnit) -> dict[str, JSON]:
    """The queue payload of a structured unit written directly.

    Only what a new unit may carry travels: version, active flag, validity end and
    access stats belong to the store, which assigns them when it versions the unit.
    """
    source = unit.source
    return {
        "subject": unit.subject,
        "attribute": unit.attribute,
        "value": unit.value,
        "kind": unit.kind,
        "tenant": source.tenant,
        "user": source.user,
        "session_id": source.session_id,
        "turn_id": source.turn_id,
        "document_id": source.document_id,
        "confidence": source.confidence,
        "observed_at": _iso(unit.observed_at),
        "valid_from": _iso(unit.valid_from),
        "importance": unit.importance,
        "pinned": unit.pinned,
        "extras": [[label, value] for label, value in unit.extras],
    }


def _number(payload: Mapping[str, Any], key: str) -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(key, "must be a number")
    return float(value)


def unit_from_payload(payload: Mapping[str, Any]) -> MemoryUnit:
    """Rebuild a unit from :func:`unit_payload`; ValidationError names the bad field."""
    raw_extras = payload.get("extras", ())
    if not isinstance(raw_extras, Sequence) or isinstance(raw_extras, str):
        raise ValidationError("extras", "must be a list of [label, value] pairs")
    extras: list[tuple[str, str]] = []
    for index, pair in enumerate(raw_extras):
        if not (
            isinstance(pair, Sequence)
            and len(pair) == 2
            and all(isinstance(part, str) for part in pair)
        ):
            raise ValidationError(f"extras[{index}]", "must be a [label, value] pair")
        extras.append((str(pair[0]), str(pair[1])))
    pinned = payload.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValidationError("pinned", "must be a boolean")
    source = UnitSource(
        tenant=_string(payload, "tenant"),
        user=_string(payload, "user"),
        session_id=_optional_string(payload, "session_id"),
        turn_id=_optional_string(payload, "turn_id"),
        document_id=_optional_string(payload, "document_id"),
        confidence=_number(payload, "confidence"),
    )
    return MemoryUnit(
        subject=_string(payload, "subject"),
        attribute=_string(payload, "attribute"),
        value=_string(payload, "value"),
        kind=_kind(_string(payload, "kind")),
        source=source,
        observed_at=_when(payload, "observed_at"),
        valid_from=_when(payload, "valid_from"),
        importance=_number(payload, "importance"),
        pinned=pinned,
        extras=tuple(extras),
    )
