"""Values the context builder reads and returns: frozen, slotted, validated on construction."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memstrata.context.budget import SECTIONS, Section
from memstrata.errors import ValidationError
from memstrata.router.recognize import Recognition
from memstrata.validation import check_id, check_text

ItemLayer = Literal["L1", "L2", "L3", "tool", "history"]
MEMORY_LAYERS: frozenset[str] = frozenset({"L1", "L2", "L3"})
LIVE_LAYERS: frozenset[str] = frozenset({"L1", "L2", "tool"})
"""Live data: session state, working memory and tool results outrank stored knowledge."""

TurnRole = Literal["user", "assistant", "system"]
TURN_ROLES: frozenset[str] = frozenset({"user", "assistant", "system"})
ChatRole = Literal["system", "user", "assistant"]

DropReason = Literal["over_budget", "duplicate", "compressed", "low_confidence"]
"""Why an item was left out: no room, a repeat, replaced by a summary, or under the
low-confidence floor while confident memories answer the request."""

# Large enough for a whole tool result or document chunk; the budget decides what fits.
MAX_CONTENT_CHARS = 2_000_000
MAX_REF_CHARS = 512


def check_content(field: str, value: Any) -> str:
    """A non-blank string of at most ``MAX_CONTENT_CHARS`` characters."""
    return check_text(field, value, max_chars=MAX_CONTENT_CHARS)


def check_label(field: str, value: Any) -> str:
    """A short non-blank string (keys, sources, tool names); may hold ':' and '/'."""
    text = check_text(field, value, max_chars=MAX_REF_CHARS)
    if text != text.strip() or "\n" in text:
        raise ValidationError(field, "must be one line without surrounding whitespace")
    return text


def check_score(field: str, value: Any) -> float:
    """A finite number (relevance scores are fused and need not lie in [0, 1])."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValidationError(field, "must be finite")
    return float(value)


def check_hours(field: str, value: Any) -> float | None:
    """``None`` (unknown) or a finite number of hours >= 0."""
    if value is None:
        return None
    number = check_score(field, value)
    if number < 0:
        raise ValidationError(field, "must be >= 0")
    return number


def check_bool(field: str, value: Any) -> bool:
    """A real bool (not 0/1)."""
    if not isinstance(value, bool):
        raise ValidationError(field, f"must be a bool, got {type(value).__name__}")
    return value


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an admitted or dropped item came from (docs/architecture.md, "The reader")."""

    layer: ItemLayer
    ref: str
    """L1 field name, L2 key, L3 point id, tool call id, or turn id."""
    source: str
    relevance: float | None
    freshness_hours: float | None
    low_confidence: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready provenance."""
        return {
            "layer": self.layer,
            "ref": self.ref,
            "source": self.source,
            "relevance": None if self.relevance is None else round(self.relevance, 6),
            "freshness_hours": (
                None if self.freshness_hours is None else round(self.freshness_hours, 6)
            ),
            "low_confidence": self.low_confidence,
        }


MemoryKind = Literal["", "fact", "episode", "history"]
MEMORY_KINDS: frozenset[str] = frozenset({"", "fact", "episode", "history"})


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One retrieved piece of context for the memory section, with its provenance.

    ``relevance`` is the admission score: higher is admitted first. ``kind`` says
    what an L3 memory is: a current ``fact`` (or event), an ``episode`` (something
    said, on ``said_at``, by ``said_by``), or ``history`` (a superseded fact
    version); an episode whose content a newer fact replaced quotes that fact in
    ``replaced_by`` and is shown as the past. A fact a newer episode put in doubt
    carries ``disputed`` (when it was stated, when and by what it was doubted) and
    is never shown as plainly current.
    """

    id: str
    text: str
    layer: Literal["L1", "L2", "L3"]
    ref: str
    source: str
    relevance: float
    freshness_hours: float | None = None
    low_confidence: bool = False
    kind: MemoryKind = ""
    said_at: datetime | None = None
    said_by: str | None = None
    replaced_by: str | None = None
    disputed: str | None = None

    def __post_init__(self) -> None:
        check_id("id", self.id)
        check_content("text", self.text)
        if self.layer not in MEMORY_LAYERS:
            raise ValidationError("layer", f"must be one of L1, L2, L3, got {self.layer!r}")
        check_label("ref", self.ref)
        check_label("source", self.source)
        object.__setattr__(self, "relevance", check_score("relevance", self.relevance))
        object.__setattr__(
            self, "freshness_hours", check_hours("freshness_hours", self.freshness_hours)
        )
        check_bool("low_confidence", self.low_confidence)
        if self.kind not in MEMORY_KINDS:
            raise ValidationError("kind", f"must be one of {sorted(MEMORY_KINDS)}")
        if self.said_at is not None and (
            not isinstance(self.said_at, datetime) or self.said_at.tzinfo is None
        ):
            raise ValidationError("said_at", "must be a timezone-aware datetime")
        if self.said_by is not None:
            check_label("said_by", self.said_by)
        if self.replaced_by is not None:
            check_content("replaced_by", self.replaced_by)
        if self.disputed is not None:
            check_content("disputed", self.disputed)

    @property
    def origin(self) -> Origin:
        """This item's provenance."""
        return Origin(
            self.layer,
            self.ref,
            self.source,
            self.relevance,
            self.freshness_hours,
            self.low_confidence,
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's output for the current step: live data, rendered in the current section.

    Admitted in ``relevance`` order (then input order) after the current input.
    """

    call_id: str
    name: str
    content: str
    relevance: float = 1.0
    freshness_hours: float | None = 0.0

    def __post_init__(self) -> None:
        check_id("call_id", self.call_id)
        check_label("name", self.name)
        check_content("content", self.content)
        object.__setattr__(self, "relevance", check_score("relevance", self.relevance))
        object.__setattr__(
            self, "freshness_hours", check_hours("freshness_hours", self.freshness_hours)
        )

    @property
    def origin(self) -> Origin:
        """This result's provenance."""
        return Origin(
            "tool", self.call_id, f"tool:{self.name}", self.relevance, self.freshness_hours
        )


@dataclass(frozen=True, slots=True)
class Turn:
    """One conversation turn, oldest first in a history.

    A turn with ``summary=True`` stands for earlier turns (``covers`` lists their ids);
    it is kept verbatim and never summarized again.
    """

    role: TurnRole
    content: str
    id: str | None = None
    summary: bool = False
    covers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in TURN_ROLES:
            raise ValidationError("role", f"must be one of user, assistant, system: {self.role!r}")
        check_content("content", self.content)
        if self.id is not None:
            check_id("id", self.id)
        check_bool("summary", self.summary)
        if isinstance(self.covers, str) or not isinstance(self.covers, Iterable):
            raise ValidationError("covers", "must be a sequence of turn ids")
        covers = tuple(self.covers)
        for index, covered in enumerate(covers):
            check_id(f"covers[{index}]", covered)
        if covers and not self.summary:
            raise ValidationError("covers", "only a summary turn covers other turns")
        object.__setattr__(self, "covers", covers)


def check_turns(field: str, value: Any) -> tuple[Turn, ...]:
    """A sequence of :class:`Turn` as a tuple; ValidationError naming ``field[i]`` for
    an element that is not one (a caller's history, checked before it is read)."""
    turns: tuple[Turn, ...] = _check_sequence(field, value, Turn)
    return turns


def _check_sequence(field: str, value: Any, kind: type[Any]) -> tuple[Any, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ValidationError(field, f"must be a sequence of {kind.__name__}")
    items = tuple(value)
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise ValidationError(
                f"{field}[{index}]", f"must be a {kind.__name__}, got {type(item).__name__}"
            )
    return items


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """Everything one model call's context is built from. Sequences are kept as tuples."""

    system_prompt: str
    current_input: str
    memory: tuple[MemoryItem, ...] = ()
    history: tuple[Turn, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()

    def __post_init__(self) -> None:
        check_content("system_prompt", self.system_prompt)
        check_content("current_input", self.current_input)
        object.__setattr__(self, "memory", _check_sequence("memory", self.memory, MemoryItem))
        object.__setattr__(self, "history", _check_sequence("history", self.history, Turn))
        object.__setattr__(
            self, "tool_results", _check_sequence("tool_results", self.tool_results, ToolResult)
        )
        seen: set[str] = set()
        for index, turn in enumerate(self.history):
            if turn.id is not None:
                if turn.id in seen:
                    raise ValidationError(f"history[{index}].id", f"{turn.id!r} is repeated")
                seen.add(turn.id)


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One OpenAI-format chat message."""

    role: ChatRole
    content: str

    def as_dict(self) -> dict[str, str]:
        """``{"role": ..., "content": ...}``."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class AdmittedItem:
    """An item that made it into the context, whole."""

    id: str
    section: Section
    tokens: int
    """What the item added to its section (its rendered text; a turn: its whole message)."""
    origin: Origin
    summary: bool = False
    covers: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        record: dict[str, Any] = {"id": self.id, "section": self.section, "tokens": self.tokens}
        record.update(self.origin.as_dict())
        if self.summary:
            record["summary"] = True
            record["covers"] = list(self.covers)
        return record


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """An item left out of the context, and why."""

    id: str
    section: Section
    reason: DropReason
    detail: str
    tokens: int
    origin: Origin

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        record: dict[str, Any] = {
            "id": self.id,
            "section": self.section,
            "reason": self.reason,
            "detail": self.detail,
            "tokens": self.tokens,
        }
        record.update(self.origin.as_dict())
        return record


@dataclass(frozen=True, slots=True)
class SectionUsage:
    """One section's budget and what it used (message overhead included)."""

    section: Section
    budget: int
    used: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return {"section": self.section, "budget": self.budget, "used": self.used}


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """The built context: chat messages plus the account of how they were chosen.

    ``total_tokens`` equals ``counter.count_messages(self.messages())`` exactly and is
    the sum of the sections' ``used``; each ``used`` is within its ``budget``.
    """

    chat: tuple[ChatMessage, ...]
    admitted: tuple[AdmittedItem, ...]
    dropped: tuple[DroppedItem, ...]
    sections: tuple[SectionUsage, ...]
    total_tokens: int
    available_tokens: int
    counter: str
    exact: bool
    summary: Turn | None = None
    """The summary made by this build (store it in place of the turns it covers)."""
    recognized: Recognition | None = None
    """Set when no step intent was given: the intent recognized from the input, its
    confidence, whether it fell back to ``respond``, and the entities it names."""
    l3_skipped: bool = False
    """L3 served no memory to this context (the bundle's flag), for
    ``l3_skip_reason``."""
    l3_skip_reason: str | None = None
    """Why L3 served nothing: ``below_threshold``, ``l3_timeout``,
    ``l3_unavailable``, ``circuit_open`` (docs/service.md, "When L3 is slow or down")."""
    dense_skip_reason: str | None = None
    """Why the memories were ranked by BM25 alone (the query could not be embedded)."""

    def messages(self) -> list[dict[str, str]]:
        """OpenAI chat messages: a fresh list of ``{"role", "content"}`` dicts."""
        return [message.as_dict() for message in self.chat]

    def section(self, name: Section) -> SectionUsage:
        """The usage of section ``name``."""
        if name not in SECTIONS:
            raise ValidationError("section", f"must be one of {', '.join(SECTIONS)}")
        return next(usage for usage in self.sections if usage.section == name)

    def context_used(self) -> list[dict[str, Any]]:
        """Provenance JSON for the answer: the retrieved items and tool results used."""
        return [
            {
                "id": item.id,
                "source": f"{item.origin.layer}:{item.origin.ref}",
                "relevance": None
                if item.origin.relevance is None
                else round(item.origin.relevance, 4),
                "freshness_hours": item.origin.freshness_hours,
                "low_confidence": item.origin.low_confidence,
            }
            for item in self.admitted
            if item.origin.layer != "history"
        ]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form of the whole result."""
        return {
            "messages": self.messages(),
            "admitted": [item.as_dict() for item in self.admitted],
            "dropped": [item.as_dict() for item in self.dropped],
            "sections": [usage.as_dict() for usage in self.sections],
            "total_tokens": self.total_tokens,
            "available_tokens": self.available_tokens,
            "counter": self.counter,
            "exact": self.exact,
            "summary": None if self.summary is None else self.summary.content,
            "context_used": self.context_used(),
        }
