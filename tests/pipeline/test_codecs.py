"""The queue payloads of the pipeline, without a server: round trips and bad fields."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from memstrata.errors import ValidationError
from memstrata.extract.models import Turn
from memstrata.memory.entries import QueueEntry
from memstrata.memory.handler import (
    KIND_TURN,
    KIND_UNIT,
    IngestHandler,
    note_payload,
    note_turn,
    turn_from_payload,
    turn_payload,
    unit_from_payload,
    unit_payload,
)
from memstrata.memory.pipeline import PipelineSettings
from memstrata.memory.units import MemoryUnit, UnitSource

AT = datetime(2025, 3, 1, 8, 30, tzinfo=UTC)


def make_unit() -> MemoryUnit:
    return MemoryUnit(
        subject="user",
        attribute="order",
        value="ORD-2025-000123 paid 45 yuan",
        kind="event",
        source=UnitSource(tenant="acme", user="u1", session_id="s1", turn_id="t3", confidence=0.8),
        observed_at=AT,
        valid_from=AT,
        importance=0.7,
        pinned=True,
        extras=(("order_id", "ORD-2025-000123"), ("amount", "45 yuan")),
    )


def test_turns_and_units_survive_the_queue_payload() -> None:
    turn = Turn("我搬到成都了。", "user", "acme", "u1", "s1", "t9", AT)
    assert turn_from_payload(turn_payload(turn)) == turn
    unit = make_unit()
    assert unit_from_payload(unit_payload(unit)) == unit
    note = note_turn(note_payload("acme", "u1", "Call me after 6pm.", AT))
    assert note == note_turn(note_payload("acme", "u1", "Call me after 6pm.", AT))
    assert note.role == "user" and note.turn_id.startswith("n")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"importance": 3}, "importance"),
        ({"kind": "rumour"}, "kind"),
        ({"observed_at": "yesterday"}, "observed_at"),
        ({"extras": [["order_id"]]}, "extras[0]"),
        ({"pinned": "yes"}, "pinned"),
        ({"user": "bad user"}, "source.user"),
    ],
)
def test_a_bad_unit_payload_names_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        unit_from_payload({**unit_payload(make_unit()), **change})
    assert info.value.field == field


class _Recorder:
    def __init__(self) -> None:
        self.units: list[MemoryUnit] = []

    def write(self, unit: MemoryUnit) -> object:
        self.units.append(unit)
        return None


def test_invalid_entries_are_skipped_without_a_write(caplog: pytest.LogCaptureFixture) -> None:
    store = _Recorder()
    handler = IngestHandler(store)
    bad_turn = {**turn_payload(Turn("I live in Hangzhou.", "user", "a", "u", "s", "t1", AT))}
    bad_turn["role"] = "narrator"
    entries = [
        QueueEntry("1-0", KIND_TURN, bad_turn, "h1", 1),
        QueueEntry("2-0", KIND_UNIT, {**unit_payload(make_unit()), "value": ""}, "h2", 1),
        QueueEntry("3-0", "mystery", {}, "h3", 1),
        QueueEntry("4-0", KIND_UNIT, unit_payload(make_unit()), "h4", 1),
    ]
    handler(entries)
    assert store.units == [make_unit()]
    assert handler.stats().invalid_entries == 3
    assert "Hangzhou" not in caplog.text


def test_a_store_failure_is_retried_with_the_same_units() -> None:
    class Flaky(_Recorder):
        fail = True

        def write(self, unit: MemoryUnit) -> object:
            if self.fail:
                self.fail = False
                raise ConnectionError("store down")
            return super().write(unit)

    store = Flaky()
    handler = IngestHandler(store)
    turn = Turn("I live in Hangzhou.", "user", "a", "u", "s", "t1", AT)
    entry = QueueEntry("1-0", KIND_TURN, turn_payload(turn), "h1", 1)
    with pytest.raises(ConnectionError):
        handler([entry])
    # The redelivery is not mistaken for a repeated turn by the worth filter.
    handler([QueueEntry("1-0", KIND_TURN, turn_payload(turn), "h1", 2)])
    assert [u.value for u in store.units] == ["Hangzhou"]
    assert handler.stats().store_failures == 1


def test_settings_are_validated() -> None:
    with pytest.raises(ValidationError, match="max_observe_chars"):
        PipelineSettings(max_turn_chars=5_000, max_observe_chars=1_000)
    with pytest.raises(ValidationError, match="worker_threads"):
        PipelineSettings(worker_threads=0)


def test_copies_in_flight_on_two_threads_are_written_after_each_other() -> None:
    started, release = threading.Event(), threading.Event()

    class Slow(_Recorder):
        def write(self, unit: MemoryUnit) -> object:
            started.set()
            release.wait(5)
            return super().write(unit)

    store = Slow()
    handler = IngestHandler(store)
    turn = Turn("I live in Hangzhou.", "user", "a", "u", "s", "t1", AT)
    first = threading.Thread(
        target=handler, args=([QueueEntry("1-0", KIND_TURN, turn_payload(turn), "h1", 1)],)
    )
    first.start()
    assert started.wait(5)
    second = threading.Thread(
        target=handler, args=([QueueEntry("2-0", KIND_TURN, turn_payload(turn), "h1", 1)],)
    )
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waits for the first copy instead of racing it
    release.set()
    first.join(5)
    second.join(5)
    assert [u.value for u in store.units] == ["Hangzhou"]
