"""The export file: one versioned JSON Lines document of a user's or a tenant's memory
(docs/service.md, "Export and import"), and the conversation files users already have.

Pure: records are built from and read back into domain values here;
:mod:`memstrata.capabilities.exchange` reads and writes the stores. The first line is
a header (``format``, ``version``, where and when it was exported, what it holds);
each further line is one record: an ``episode`` (what was said, when, in which
thread, by whom, and the facts it gave), a ``fact`` (one version of a fact or event
with every field: validity, provenance, importance, pin, feedback state, dispute) or
a ``preference``. A reader validates the whole file before anything is written, and
every error names its line and field.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from memstrata.errors import ValidationError
from memstrata.longterm.points import check_point_id
from memstrata.memory.episodes import Episode
from memstrata.memory.units import Dispute, MemoryUnit, UnitSource
from memstrata.working.values import Preference

FORMAT = "memstrata-export"
VERSION = 1
VERSIONS: frozenset[int] = frozenset({1})
"""The versions this release reads; any other is refused, never guessed at."""
MAX_LINES = 1_000_000
_REMAP = uuid.UUID("8a1d5c3e-6b2f-4e7a-9c0d-3f4e5a6b7c8d")

ImportFormat = Literal["memstrata", "openai", "messages"]
IMPORT_FORMATS: tuple[ImportFormat, ...] = ("memstrata", "openai", "messages")


@dataclass(frozen=True, slots=True)
class StoredFact:
    """One stored version and what the unit alone does not say."""

    unit: MemoryUnit
    invalidated: bool = False
    updated_at: float | None = None


@dataclass(frozen=True, slots=True)
class StoredEpisode:
    """One stored episode, the facts it names, and when its point last changed."""

    episode: Episode
    facts: tuple[str, ...] = ()
    updated_at: float | None = None


@dataclass(frozen=True, slots=True)
class ExportFile:
    """A parsed export: its header, and its records by kind, in file order."""

    header: Mapping[str, Any]
    episodes: tuple[StoredEpisode, ...]
    facts: tuple[StoredFact, ...]
    preferences: tuple[Preference, ...]


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import read and what it changed (a second import of one file adds
    nothing: ``added`` 0)."""

    format: str
    users: tuple[str, ...]
    episodes: int
    """Episodes read (an exported file) or turns queued (a conversation)."""
    facts: int
    preferences: int
    added: int
    """Episodes and fact versions that were not stored before (0 for a conversation
    already imported)."""
    remapped: bool = False
    """Ids were namespaced under the importing tenant (the file came from another)."""
    note: str | None = None
    """Why nothing was written, when nothing was (a conversation already imported)."""


@dataclass(frozen=True, slots=True)
class ConversationTurn:
    """One message of an imported conversation."""

    role: str
    text: str
    at: datetime | None
    speaker: str | None = None


# --- writing ---------------------------------------------------------------------------


def header(
    *, tenant: str, user: str | None, exported_at: datetime, source: Mapping[str, Any]
) -> dict[str, Any]:
    """The first line: the format and its version, the scope and where it came from."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at.isoformat(),
        "scope": {"tenant": tenant, "user": user},
        "source": dict(source),
    }


def episode_record(stored: StoredEpisode) -> dict[str, Any]:
    """An episode line (its tenant is the file's)."""
    e = stored.episode
    return _compact(
        {
            "record": "episode",
            "id": e.id,
            "user": e.user,
            "text": e.text,
            "role": e.role,
            "observed_at": e.observed_at.isoformat(),
            "source": e.source,
            "session_id": e.session_id,
            "turn_id": e.turn_id,
            "thread": e.thread,
            "seq": e.seq,
            "speaker": e.speaker,
            "facts": list(stored.facts),
            "updated_at": stored.updated_at,
        }
    )


def fact_record(stored: StoredFact) -> dict[str, Any]:
    """A fact line: one version, every field."""
    u = stored.unit
    s = u.source
    dispute = u.disputed
    return _compact(
        {
            "record": "fact",
            "id": u.id,
            "user": s.user,
            "kind": u.kind,
            "subject": u.subject,
            "attribute": u.attribute,
            "value": u.value,
            "version": u.version,
            "active": u.active,
            "observed_at": u.observed_at.isoformat(),
            "valid_from": u.valid_from.isoformat(),
            "valid_to": _iso(u.valid_to),
            "importance": u.importance,
            "pinned": u.pinned,
            "last_accessed": _iso(u.last_accessed),
            "access_count": u.access_count,
            "confidence": s.confidence,
            "session_id": s.session_id,
            "turn_id": s.turn_id,
            "document_id": s.document_id,
            "extras": [list(pair) for pair in u.extras],
            "derived_from": list(u.derived_from),
            "episodes": list(u.episodes),
            "superseded_by": u.superseded_by,
            "feedback_applied": list(u.feedback_applied),
            "disputed": None
            if dispute is None
            else {
                "episode": dispute.episode,
                "at": dispute.at.isoformat(),
                "text": dispute.text,
                "confidence": dispute.confidence,
            },
            "invalidated": stored.invalidated or None,
            "updated_at": stored.updated_at,
        }
    )


def preference_record(pref: Preference) -> dict[str, Any]:
    """A preference line."""
    return {
        "record": "preference",
        "user": pref.user_id,
        "pref_type": pref.pref_type,
        "value": pref.value,
        "confidence": pref.confidence,
        "last_updated": pref.last_updated.isoformat(),
    }


def dumps(record: Mapping[str, Any]) -> str:
    """One line of the file (no newline)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=False, default=str)


def _compact(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None and v != []}


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


# --- reading ---------------------------------------------------------------------------


class _Line:
    """Field access on one record that names its line in every error."""

    def __init__(self, number: int, data: Mapping[str, Any]) -> None:
        self.number = number
        self.data = data

    def error(self, field: str, reason: str) -> ValidationError:
        return ValidationError(f"line {self.number}: {field}", reason)

    def text(self, field: str, *, optional: bool = False) -> str | None:
        value = self.data.get(field)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            raise self.error(field, "must be a non-empty string")
        return value

    def required(self, field: str) -> str:
        value = self.text(field)
        assert value is not None
        return value

    def when(self, field: str, *, optional: bool = False) -> datetime | None:
        raw = self.text(field, optional=optional)
        if raw is None:
            return None
        try:
            at = datetime.fromisoformat(raw)
        except ValueError as exc:
            raise self.error(field, f"must be an ISO 8601 datetime, got {raw!r}") from exc
        if at.tzinfo is None:
            raise self.error(field, "must name its time zone")
        return at

    def at(self, field: str) -> datetime:
        value = self.when(field)
        assert value is not None
        return value

    def number_of(self, field: str, default: float | None = None) -> float | None:
        value = self.data.get(field, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(field, "must be a number")
        return float(value)

    def ids(self, field: str, *, points: bool = True) -> tuple[str, ...]:
        value = self.data.get(field, [])
        if not isinstance(value, list) or not all(isinstance(i, str) and i for i in value):
            raise self.error(field, "must be a list of ids")
        return tuple(check_point_id(field, i) for i in value) if points else tuple(value)

    def point(self, field: str, *, optional: bool = False) -> str | None:
        value = self.text(field, optional=optional)
        return None if value is None else check_point_id(field, value)

    def point_id(self, field: str) -> str:
        value = self.point(field)
        assert value is not None
        return value


def parse_export(lines: Iterable[str]) -> ExportFile:
    """Read a whole export file (ValidationError naming the line and the field of the
    first problem; an unknown format or version is refused)."""
    head: Mapping[str, Any] | None = None
    episodes: list[StoredEpisode] = []
    facts: list[StoredFact] = []
    prefs: list[Preference] = []
    for number, raw in enumerate(lines, start=1):
        if number > MAX_LINES:
            raise ValidationError("file", f"has more than {MAX_LINES} lines")
        if not raw.strip():
            continue
        data = _json_object(number, raw)
        if head is None:
            head = _check_header(number, data)
            continue
        line = _Line(number, data)
        kind = data.get("record")
        try:
            if kind == "episode":
                episodes.append(_episode(line))
            elif kind == "fact":
                facts.append(_fact(line))
            elif kind == "preference":
                prefs.append(_preference(line))
            else:
                raise line.error("record", "must be episode, fact or preference")
        except ValidationError as exc:
            if exc.field.startswith("line "):
                raise
            raise line.error(exc.field, exc.reason) from exc
        except (TypeError, ValueError) as exc:
            raise line.error("record", str(exc)) from exc
    if head is None:
        raise ValidationError("line 1", "the file is empty: no header")
    parsed = ExportFile(head, tuple(episodes), tuple(facts), tuple(prefs))
    _check_unique(parsed)
    return parsed


def _check_unique(parsed: ExportFile) -> None:
    """No two records claim one id (a file edited by hand, or two files joined)."""
    seen: dict[str, str] = {}
    named = [("episode", s.episode.id) for s in parsed.episodes]
    named += [("fact", s.unit.id or "") for s in parsed.facts]
    for kind, point_id in named:
        if point_id in seen:
            raise ValidationError(
                "id", f"{point_id} is in the file twice ({seen[point_id]}, {kind})"
            )
        seen[point_id] = kind
    prefs = [(p.user_id, p.pref_type) for p in parsed.preferences]
    if len(prefs) != len(set(prefs)):
        raise ValidationError("pref_type", "a user's preference is in the file twice")


def _json_object(number: int, raw: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"line {number}", f"is not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise ValidationError(f"line {number}", "must be a JSON object")
    return data


def _check_header(number: int, data: Mapping[str, Any]) -> Mapping[str, Any]:
    if data.get("format") != FORMAT:
        raise ValidationError(
            f"line {number}: format", f"must be {FORMAT!r} (the header line comes first)"
        )
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version not in VERSIONS:
        known = ", ".join(str(v) for v in sorted(VERSIONS))
        raise ValidationError(
            f"line {number}: version",
            f"{version!r} is not a version this release reads ({known}); "
            "export it again with a matching release",
        )
    return data


def _episode(line: _Line) -> StoredEpisode:
    seq = line.data.get("seq")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        raise line.error("seq", "must be an integer")
    episode = Episode(
        id=line.point_id("id"),
        tenant="import",  # the importing tenant's, set when it is written
        user=line.required("user"),
        text=line.required("text"),
        role=line.required("role"),
        observed_at=line.at("observed_at"),
        source=line.text("source", optional=True) or "import",
        session_id=line.text("session_id", optional=True),
        turn_id=line.text("turn_id", optional=True),
        thread=line.text("thread", optional=True),
        seq=seq,
        speaker=line.text("speaker", optional=True),
    )
    return StoredEpisode(episode, line.ids("facts"), line.number_of("updated_at"))


def _fact(line: _Line) -> StoredFact:
    data = line.data
    disputed = data.get("disputed")
    dispute = None
    if disputed is not None:
        if not isinstance(disputed, dict):
            raise line.error("disputed", "must be an object")
        inner = _Line(line.number, disputed)
        dispute = Dispute(
            episode=inner.point_id("episode"),
            at=inner.at("at"),
            text=inner.required("text"),
            confidence=inner.number_of("confidence", 1.0) or 0.0,
        )
    extras = data.get("extras", [])
    if not isinstance(extras, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in extras
    ):
        raise line.error("extras", "must be a list of [label, value] pairs")
    for name in ("version", "access_count"):
        value = data.get(name, 1 if name == "version" else 0)
        if isinstance(value, bool) or not isinstance(value, int):
            raise line.error(name, "must be an integer")
    for name in ("active", "pinned", "invalidated"):
        if not isinstance(data.get(name, False), bool):
            raise line.error(name, "must be true or false")
    unit = MemoryUnit(
        subject=line.required("subject"),
        attribute=line.required("attribute"),
        value=line.required("value"),
        kind=data.get("kind"),  # type: ignore[arg-type]  # checked by MemoryUnit
        source=UnitSource(
            tenant="import",
            user=line.required("user"),
            session_id=line.text("session_id", optional=True),
            turn_id=line.text("turn_id", optional=True),
            document_id=line.text("document_id", optional=True),
            confidence=line.number_of("confidence", 1.0) or 0.0,
        ),
        observed_at=line.at("observed_at"),
        valid_from=line.at("valid_from"),
        valid_to=line.when("valid_to", optional=True),
        version=int(data.get("version", 1)),
        active=bool(data.get("active", False)),
        importance=line.number_of("importance", 0.5) or 0.0,
        pinned=bool(data.get("pinned", False)),
        last_accessed=line.when("last_accessed", optional=True),
        access_count=int(data.get("access_count", 0)),
        id=line.point_id("id"),
        extras=tuple((p[0], p[1]) for p in extras),
        derived_from=line.ids("derived_from"),
        episodes=line.ids("episodes"),
        superseded_by=line.point("superseded_by", optional=True),
        feedback_applied=line.ids("feedback_applied", points=False),
        disputed=dispute,
    )
    return StoredFact(unit, bool(data.get("invalidated", False)), line.number_of("updated_at"))


def _preference(line: _Line) -> Preference:
    confidence = line.number_of("confidence", 1.0)
    return Preference(
        user_id=line.required("user"),
        pref_type=line.required("pref_type"),
        value=line.data.get("value"),
        confidence=1.0 if confidence is None else confidence,
        last_updated=line.at("last_updated"),
    )


# --- tenants and ids -------------------------------------------------------------------


def remapped_id(tenant: str, point_id: str) -> str:
    """The id a point of another tenant's file takes in ``tenant``: namespaced, so an
    import never overwrites the exporting tenant's points, and the same on every import
    of the file (so it stays idempotent)."""
    return str(uuid.uuid5(_REMAP, f"{tenant}\x1f{point_id}"))


def into_tenant(parsed: ExportFile, tenant: str, *, remap: bool) -> ExportFile:
    """``parsed`` as ``tenant``'s: every record's tenant set, and with ``remap`` every id
    and link namespaced by :func:`remapped_id` (pure)."""

    def ref(point_id: str) -> str:
        return remapped_id(tenant, point_id) if remap else point_id

    def refs(ids: Sequence[str]) -> tuple[str, ...]:
        return tuple(ref(i) for i in ids)

    episodes = tuple(
        replace(
            s,
            episode=replace(s.episode, tenant=tenant, id=ref(s.episode.id)),
            facts=refs(s.facts),
        )
        for s in parsed.episodes
    )
    facts = []
    for s in parsed.facts:
        u = s.unit
        dispute = u.disputed
        facts.append(
            replace(
                s,
                unit=replace(
                    u,
                    source=replace(u.source, tenant=tenant),
                    id=ref(u.id or ""),
                    episodes=refs(u.episodes),
                    derived_from=refs(u.derived_from),
                    superseded_by=None if u.superseded_by is None else ref(u.superseded_by),
                    disputed=None
                    if dispute is None
                    else replace(dispute, episode=ref(dispute.episode)),
                ),
            )
        )
    return replace(parsed, episodes=episodes, facts=tuple(facts))


# --- conversations users already have ---------------------------------------------------

_ROLES = frozenset({"user", "assistant", "system", "tool"})


def parse_conversation(text: str, form: ImportFormat) -> tuple[ConversationTurn, ...]:
    """The turns of an OpenAI messages array (``openai``: ``[{"role", "content"}]``,
    content a string or a list of text parts, optional ``timestamp`` / ``name``) or of
    JSON Lines of ``{role, content, timestamp}`` (``messages``); ValidationError naming
    the message (or line) and field."""
    if form == "openai":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError("file", f"is not JSON: {exc.msg} (line {exc.lineno})") from exc
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            data = data["messages"]
        if not isinstance(data, list):
            raise ValidationError("file", "must be a JSON array of messages")
        items = [(f"message {i}", m) for i, m in enumerate(data)]
    else:
        items = [
            (f"line {n}", _json_object(n, raw))
            for n, raw in enumerate(text.splitlines(), start=1)
            if raw.strip()
        ]
    turns = [_turn(where, message) for where, message in items]
    kept: list[ConversationTurn] = []
    for turn in turns:
        if turn is None:
            continue
        if turn.at is None and kept:
            # An undated message was said when the one before it was, not "now".
            turn = replace(turn, at=kept[-1].at)
        kept.append(turn)
    if not kept:
        raise ValidationError("file", "holds no message with text")
    return tuple(kept)


def _turn(where: str, message: Any) -> ConversationTurn | None:
    if not isinstance(message, dict):
        raise ValidationError(where, "must be an object with role and content")
    role = message.get("role")
    if role == "developer":
        role = "system"
    if role not in _ROLES:
        raise ValidationError(f"{where}: role", f"must be one of {', '.join(sorted(_ROLES))}")
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in (
                "text",
                "input_text",
                "output_text",
            ):
                if not isinstance(part.get("text"), str):
                    raise ValidationError(f"{where}: content[{i}].text", "must be a string")
                parts.append(part["text"])
            elif not isinstance(part, dict):
                raise ValidationError(f"{where}: content[{i}]", "must be a text part")
        content = "\n".join(parts)
    elif content is None:
        content = ""
    elif not isinstance(content, str):
        raise ValidationError(f"{where}: content", "must be a string or a list of text parts")
    if not content.strip():
        return None  # a tool call's empty assistant turn says nothing to remember
    name = message.get("name")
    speaker = name if isinstance(name, str) and name.strip() else None
    return ConversationTurn(str(role), content, _timestamp(where, message), speaker)


def _timestamp(where: str, message: Mapping[str, Any]) -> datetime | None:
    raw = message.get("timestamp", message.get("created_at"))
    if raw is None:
        return None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return datetime.fromtimestamp(float(raw), UTC)
    if isinstance(raw, str):
        try:
            at = datetime.fromisoformat(raw)
        except ValueError as exc:
            raise ValidationError(f"{where}: timestamp", f"is not ISO 8601: {raw!r}") from exc
        return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    raise ValidationError(f"{where}: timestamp", "must be ISO 8601 text or epoch seconds")


def conversation_session(tenant: str, user: str, text: str) -> str:
    """The session id an imported conversation is observed under: derived from what it
    holds, so importing the same file again is recognized."""
    digest = hashlib.sha256(f"{tenant}\x1f{user}\x1f{text}".encode()).hexdigest()
    return f"import-{digest[:24]}"
