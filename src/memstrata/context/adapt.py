"""Turn a router :class:`~memstrata.router.bundle.ContextBundle` into builder items."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memstrata.context.models import MAX_REF_CHARS, MemoryItem
from memstrata.errors import ValidationError
from memstrata.frozen import thaw
from memstrata.hashing import canonical_json
from memstrata.retrieval.models import RetrievedItem
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
    """One bundle item as a builder :class:`MemoryItem` (its provenance carried over)."""
    provenance = item.provenance
    return MemoryItem(
        id=item.name,
        text=item_text(item.content),
        layer=provenance.layer,
        ref=provenance.ref,
        source=provenance.source,
        relevance=provenance.relevance,
        freshness_hours=provenance.freshness_hours,
        low_confidence=provenance.low_confidence,
    )


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
    return MemoryItem(
        id=f"l3-{item.id}",
        text=item.text,
        layer="L3",
        ref=item.id,
        source=_source_label(item.payload.get("source"), "L3:memories"),
        relevance=max(0.0, item.score if relevance is None else relevance),
        freshness_hours=age_hours,
        low_confidence=item.low_confidence,
    )


def _source_label(value: Any, default: str) -> str:
    """A stored ``source`` as a provenance label (one line, trimmed, bounded): any string
    a writer stored must not make the whole context build fail."""
    if isinstance(value, str):
        label = " ".join(value.split())[:MAX_REF_CHARS].strip()
        if label:
            return label
    return default
