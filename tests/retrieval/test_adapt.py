"""context.adapt.retrieved_item: a retrieval result as a builder memory item (L3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.context import ContextBudget, ContextRequest, build_context, counter_for_model
from memstrata.context.adapt import retrieved_item
from memstrata.errors import ValidationError
from memstrata.retrieval import RetrievedItem

NOW = datetime(2023, 8, 20, 15, 0, tzinfo=UTC)
PID = "2f1e3c4d-5b6a-4789-8a0b-1c2d3e4f5a6b"


def hit(**changes: Any) -> RetrievedItem:
    values: dict[str, Any] = {
        "id": PID,
        "score": 0.8,
        "cosine": 0.35,
        "low_confidence": True,
        "routes": ("query",),
        "payload": {"text": "Anna drinks green tea", "source": "session:s1", "tenant": "t"},
        "observed_at": NOW - timedelta(hours=30),
        "in_time_window": None,
    }
    values.update(changes)
    return RetrievedItem(**values)


def test_carries_l3_provenance() -> None:
    item = retrieved_item(hit(), NOW)
    assert (item.id, item.layer, item.ref, item.source) == (f"l3-{PID}", "L3", PID, "session:s1")
    assert item.text == "Anna drinks green tea"
    assert item.relevance == pytest.approx(0.8)
    assert item.freshness_hours == pytest.approx(30.0)
    assert item.low_confidence is True


def test_unknown_time_negative_score_and_future_observation() -> None:
    assert retrieved_item(hit(observed_at=None), NOW).freshness_hours is None
    assert retrieved_item(hit(score=-0.5), NOW).relevance == 0.0
    assert retrieved_item(hit(observed_at=NOW + timedelta(hours=2)), NOW).freshness_hours == 0.0


@pytest.mark.parametrize(
    ("source", "label"),
    [
        (None, "L3:memories"),
        ("", "L3:memories"),
        ("   ", "L3:memories"),
        (42, "L3:memories"),
        (" docs/guide.md ", "docs/guide.md"),  # stored by any writer: no crash
        ("line one\nline two", "line one line two"),
        ("x" * 2000, "x" * 512),
    ],
)
def test_any_stored_source_becomes_a_valid_label(source: object, label: str) -> None:
    payload = {"text": "Anna drinks green tea", "source": source}
    item = retrieved_item(hit(payload=payload), NOW)
    assert item.source == label
    # and the builder accepts it
    built = build_context(
        ContextRequest("You are helpful.", "What does Anna drink?", memory=(item,)),
        ContextBudget(window_tokens=4000, max_output_tokens=500, buffer_tokens=0),
        counter_for_model("gpt-4o"),
    )
    assert any(entry["source"] == f"L3:{PID}" for entry in built.context_used())


def test_invalid_arguments_name_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        retrieved_item(hit(), datetime(2023, 8, 20))
    assert info.value.field == "now"
    with pytest.raises(ValidationError) as info:
        retrieved_item("not an item", NOW)  # type: ignore[arg-type]
    assert info.value.field == "item"
