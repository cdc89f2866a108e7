"""Turn and Candidate validate on construction and convert to memory units."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime
from typing import Any

import pytest

from memstrata.errors import BackendError, BackendUnavailableError, ValidationError
from memstrata.extract import Candidate, ExtractionError, ExtractionUnavailableError, Turn
from memstrata.memory.units import unit_from_candidate

MakeTurn = Callable[..., Turn]
OBSERVED_AT = datetime(2025, 3, 25, 10, 30, tzinfo=UTC)  # make_turn's default time


def _candidate(**overrides: Any) -> Candidate:
    fields: dict[str, Any] = {
        "subject": "user",
        "attribute": "city",
        "value": "Hangzhou",
        "kind": "fact",
        "confidence": 0.9,
        "importance": 0.7,
    }
    fields.update(overrides)
    return Candidate(**fields)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("text", "   "),
        ("role", "moderator"),
        ("tenant", "has space"),
        ("user", ""),
        ("session_id", "a:b"),
        ("turn_id", 7),
        ("observed_at", datetime(2025, 1, 1)),
    ],
)
def test_turn_rejects_bad_fields(field: str, value: Any) -> None:
    fields: dict[str, Any] = {
        "text": "hello",
        "role": "user",
        "tenant": "t1",
        "user": "u1",
        "session_id": "s1",
        "turn_id": "turn-1",
        "observed_at": OBSERVED_AT,
    }
    fields[field] = value
    with pytest.raises(ValidationError) as info:
        Turn(**fields)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("subject", ""),
        ("attribute", " city"),
        ("attribute", "x" * 129),
        ("value", ""),
        ("kind", "opinion"),
        ("confidence", 1.5),
        ("confidence", float("nan")),
        ("importance", True),
        ("importance", -0.1),
        ("extras", [("amount", "¥1")]),
        ("extras", (("amount",),)),
        ("extras", (("", "¥1"),)),
        ("valid_from", datetime(2025, 1, 1)),
    ],
)
def test_candidate_rejects_bad_fields(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as info:
        _candidate(**{field: value})
    assert info.value.field.startswith(field)


def test_values_are_frozen(make_turn: MakeTurn) -> None:
    with pytest.raises(FrozenInstanceError):
        _candidate().value = "Chengdu"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        make_turn("hi").text = "bye"  # type: ignore[misc]


def test_to_unit_carries_source_and_times(make_turn: MakeTurn) -> None:
    turn = make_turn("I paid ¥300 yesterday", turn_id="turn-9")
    happened = datetime(2025, 3, 24, tzinfo=UTC)
    candidate = _candidate(
        attribute="payment",
        value="I paid ¥300 yesterday",
        kind="event",
        extras=(("amount", "¥300"), ("date", "yesterday")),
        valid_from=happened,
    )
    unit = unit_from_candidate(candidate, turn)
    assert (unit.subject, unit.attribute, unit.kind) == ("user", "payment", "event")
    assert unit.source.turn_id == "turn-9"
    assert unit.source.session_id == "s1"
    assert unit.source.confidence == 0.9
    assert unit.importance == 0.7
    assert unit.observed_at == turn.observed_at
    assert unit.valid_from == happened
    assert unit.extras == candidate.extras
    assert unit.active
    # without valid_from the unit starts when the turn was observed
    assert unit_from_candidate(_candidate(), turn).valid_from == turn.observed_at


def test_error_tree() -> None:
    assert issubclass(ExtractionError, BackendError)
    assert issubclass(ExtractionUnavailableError, ExtractionError)
    assert issubclass(ExtractionUnavailableError, BackendUnavailableError)
