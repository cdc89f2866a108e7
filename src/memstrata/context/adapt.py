"""Turn a router :class:`~memstrata.router.bundle.ContextBundle` into builder items."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from memstrata.context.values import MAX_REF_CHARS, MemoryItem, MemoryKind
from memstrata.errors import ValidationError
from memstrata.frozen import thaw
from memstrata.hashing import canonical_json
from memstrata.memory.codec import dispute_note
from memstrata.retrieval.results import RetrievedItem
from memstrata.router.bundle import ContextBundle, ContextItem


def item_text(content: Any) -> str:
    """What the model reads for a bundle item's content.

    A string is used as is; a mapping with a non-blank ``text`` (an L3 hit) gives that
    text, after its ``title`` when it has one; anything else is compact JSON, keys
    sorted, non-ASCII kept readable.
    """
    if isinstance(content, str) and content.strip():
        return content
    if isinstance(content, Mapping):
        text = content.get("text")
        if isinstance(text, str) and text.strip():
            title = content.get("title")
            return f"{title}\n{text}" if isinstance(title, str) and title.strip() else text
    return canonical_json(thaw(content))


def memory_item(item: ContextItem) -> MemoryItem:
    """One bundle item as a builder :class:`MemoryItem` (its provenance carried over;
    an L3 memory's kind, and an episode's speaker, date and replacing fact)."""
    provenance = item.provenance
    content = item.content if isinstance(item.content, Mapping) else {}
    kind = memory_kind(content.get("type")) if provenance.layer == "L3" else ""
    episode = kind == "episode"
    said_at, said_by, replaced_by = (
        content.get("said_at"),
        content.get("said_by"),
        content.get("replaced_by"),
    )
    return MemoryItem(
        id=item.name,
        text=item_text(item.content),
        layer=provenance.layer,
        ref=provenance.ref,
        source=provenance.source,
        relevance=provenance.relevance,
        freshness_hours=provenance.freshness_hours,
        low_confidence=provenance.low_confidence,
        kind=kind,
        said_at=_when(said_at) if episode else None,
        said_by=_source_label(said_by, "user") if episode else None,
        replaced_by=replaced_by
        if episode and isinstance(replaced_by, str) and replaced_by.strip()
        else None,
        disputed=dispute_note(content) if kind == "fact" else None,
    )


def _when(value: Any) -> datetime | None:
    """An ISO timestamp from a payload, None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def from_bundle(bundle: ContextBundle) -> tuple[MemoryItem, ...]:
    """The bundle's items (L1, L2 and L3) as memory items, in bundle order."""
    if not isinstance(bundle, ContextBundle):
        raise ValidationError("bundle", f"must be a ContextBundle, got {type(bundle).__name__}")
    items: list[MemoryItem] = []
    for index, item in enumerate(bundle.items):
        try:
            items.append(memory_item(item))
        except ValidationError as exc:
            raise ValidationError(f"bundle.items[{index}].{exc.field}", exc.reason) from exc
    return tuple(items)


def memory_kind(payload_type: Any) -> MemoryKind:
    """How the builder presents an L3 point of this payload ``type``."""
    if payload_type in ("fact", "event", "preference", "profile"):
        return "fact"
    if payload_type in ("episode", "history"):
        kind: MemoryKind = payload_type
        return kind
    return ""


def l3_item_id(point_id: str) -> str:
    """The memory item id of an L3 point (``l3-<point id>``)."""
    return f"l3-{point_id}"


def retrieved_item(
    item: RetrievedItem, now: datetime, *, relevance: float | None = None
) -> MemoryItem:
    """A multi-route retrieval result as a builder :class:`MemoryItem` (layer L3);
    ``now`` (timezone-aware) gives its freshness; ``relevance`` (default: the
    retrieval score) is the admission score the builder orders by."""
    if not isinstance(item, RetrievedItem):
        raise ValidationError("item", f"must be a RetrievedItem, got {type(item).__name__}")
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise ValidationError("now", "must be a timezone-aware datetime")
    observed = item.observed_at
    age_hours = None
    if observed is not None:
        age_hours = max(0.0, (now - observed).total_seconds() / 3600)
    kind = memory_kind(item.payload.get("type"))
    speaker = item.payload.get("speaker") or item.payload.get("role")
    return MemoryItem(
        id=l3_item_id(item.id),
        text=item.text,
        layer="L3",
        ref=item.id,
        source=_source_label(item.payload.get("source"), "L3:memories"),
        relevance=max(0.0, item.score if relevance is None else relevance),
        freshness_hours=age_hours,
        low_confidence=item.low_confidence,
        kind=kind,
        said_at=observed if kind == "episode" else None,
        said_by=_source_label(speaker, "user") if kind == "episode" else None,
        replaced_by=next((f.text for f in item.facts if f.id == item.superseded_by), None),
        disputed=dispute_note(item.payload) if kind == "fact" else None,
    )


def retrieved_items(
    item: RetrievedItem, now: datetime, *, relevance: float | None = None
) -> tuple[MemoryItem, ...]:
    """``item`` and the current facts it carries (facts first, at its relevance).

    A fact carried by a confident hit is what that hit says now, so it is as confident
    as the hit (its own cosine to the query may fall under the floor: "user city:
    Chengdu" is far from "Where do I live now?" while the episode is close).
    """
    carrier = retrieved_item(item, now, relevance=relevance)
    facts = (retrieved_item(fact, now, relevance=relevance) for fact in item.facts)
    return (
        *(
            fact if carrier.low_confidence else replace(fact, low_confidence=False)
            for fact in facts
        ),
        carrier,
    )


def _source_label(value: Any, default: str) -> str:
    """A stored ``source`` as a provenance label (one line, trimmed, bounded): any string
    a writer stored must not make the whole context build fail."""
    if isinstance(value, str):
        label = " ".join(value.split())[:MAX_REF_CHARS].strip()
        if label:
            return label
    return default
