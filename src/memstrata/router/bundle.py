"""What route() returns: context items, each with its provenance."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Literal

from memstrata.frozen import freeze, thaw
from memstrata.permissions import Level, cleared
from memstrata.router.recognize import Recognition

Layer = Literal["L1", "L2", "L3"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a piece of context came from and how far to trust it (docs/architecture.md,
    "The reader")."""

    layer: Layer
    ref: str
    """L1 field name, L2 key, or L3 point id."""
    source: str
    """What produced it: ``session``, ``api:<endpoint>``, ``step:<id>``, a document id..."""
    relevance: float
    freshness_hours: float | None
    low_confidence: bool = False
    level: Level = "medium"
    """Its permission level (:mod:`memstrata.permissions`): L1 high, L2 medium, L3 by
    its source."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "level": self.level,
            "ref": self.ref,
            "source": self.source,
            "relevance": round(self.relevance, 6),
            "freshness_hours": (
                None if self.freshness_hours is None else round(self.freshness_hours, 6)
            ),
            "low_confidence": self.low_confidence,
        }


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One piece of context. ``content`` is deep-frozen JSON-like data."""

    name: str
    content: Any
    provenance: Provenance

    @classmethod
    def of(cls, name: str, content: Any, provenance: Provenance) -> ContextItem:
        return cls(name, freeze(content), provenance)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "content": thaw(self.content), **self.provenance.as_dict()}


@dataclass(frozen=True, slots=True)
class MissingContext:
    """Something the intent asked for that could not be loaded, and why."""

    name: str
    layer: Layer
    ref: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "layer": self.layer, "ref": self.ref, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ContextBundle:
    """The context for one agent step."""

    session_id: str
    step_intent: str
    step: int
    built_at: datetime
    items: tuple[ContextItem, ...]
    missing: tuple[MissingContext, ...] = ()
    l3_skipped: bool = False
    """True when L3 served nothing for this step, or could not be read for one of its
    needs (that need and the ones after it were answered from L2): see
    ``l3_skip_reason``."""
    l3_skip_reason: str | None = None
    """Why L3 was skipped: ``below_threshold`` (every candidate was below the skip
    threshold, so none was used), or L3 could not be read (``l3_timeout``,
    ``l3_unavailable``, ``circuit_open``): the step was then answered from L2 and L1,
    its L3 items are the user's cached reads (source ``l2_cache``, low-confidence
    unless cached for this same question) and the user's preferences are added
    (docs/service.md, "When L3 is slow or down")."""
    dense_skip_reason: str | None = None
    """Set when the step's query could not be embedded (``embedder_failed``,
    ``embedder_timeout``, ``embedder_circuit_open``): its L3 items were ranked by
    BM25 alone and are flagged low-confidence."""
    recognized: Recognition | None = None
    """Set when the step was routed from the message alone (no step intent given): the
    intent recognized, its confidence, whether it fell back to ``respond``, and the
    entities the message names."""

    def layer(self, layer: Layer) -> tuple[ContextItem, ...]:
        return tuple(item for item in self.items if item.provenance.layer == layer)

    def item(self, name: str) -> ContextItem:
        for candidate in self.items:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    def cleared_for(self, clearance: Level) -> ContextBundle:
        """This bundle without the items above ``clearance`` (nothing says they exist)."""
        kept = tuple(i for i in self.items if cleared(i.provenance.level, clearance))
        return self if len(kept) == len(self.items) else replace(self, items=kept)

    def context_used(self) -> list[dict[str, Any]]:
        """The provenance JSON an agent attaches to its answer."""
        return [
            {
                "id": item.name,
                "source": f"{item.provenance.layer}:{item.provenance.ref}",
                "relevance": round(item.provenance.relevance, 4),
                "freshness_hours": item.provenance.freshness_hours,
                "low_confidence": item.provenance.low_confidence,
            }
            for item in self.items
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "step_intent": self.step_intent,
            "step": self.step,
            "built_at": self.built_at.isoformat(),
            "items": [item.as_dict() for item in self.items],
            "missing": [m.as_dict() for m in self.missing],
            "l3_skipped": self.l3_skipped,
            "l3_skip_reason": self.l3_skip_reason,
            "dense_skip_reason": self.dense_skip_reason,
            "recognized": None if self.recognized is None else asdict(self.recognized),
            "context_used": self.context_used(),
        }
