"""The queue payloads of the pipeline, without a server: round trips and bad fields."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata.errors import ValidationError
from memstrata.extract.candidates import Turn
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.write.payloads import (
    extractor_turn,
    note_episode,
    note_payload,
    turn_episode,
    turn_payload,
    unit_from_payload,
    unit_payload,
)
from memstrata.write.submit import PipelineSettings

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


def make_episode(**changes: object) -> Episode:
    fields: dict[str, object] = {
        "id": turn_episode_id("acme", "s1#0", 9),
        "tenant": "acme",
        "user": "u1",
        "text": "我搬到成都了。",
        "role": "user",
        "observed_at": AT,
        "source": "turn:s1/t9",
        "session_id": "s1",
        "turn_id": "t9",
        "thread": "s1#0",
        "seq": 9,
    }
    fields.update(changes)
    return Episode(**fields)  # type: ignore[arg-type]


def test_turns_notes_and_units_survive_the_queue_payload() -> None:
    episode = make_episode()
    assert turn_episode(turn_payload(episode)) == episode
    spoken = make_episode(speaker="Caroline")
    assert turn_episode(turn_payload(spoken)) == spoken
    assert extractor_turn(episode) == Turn("我搬到成都了。", "user", "acme", "u1", "s1", "t9", AT)
    unit = make_unit()
    assert unit_from_payload(unit_payload(unit)) == unit
    note = note_episode(note_payload("acme", "u1", "Call me after 6pm.", AT))
    assert note == note_episode(note_payload("acme", "u1", "Call me after 6pm.", AT))
    assert note.position is None and note.source == "remember"
    read = extractor_turn(note)
    assert read.role == "user" and read.turn_id.startswith("n") and read.session_id == "direct"


def test_a_turn_enqueued_before_positions_still_decodes() -> None:
    payload = dict(turn_payload(make_episode()))
    del payload["thread"], payload["seq"]
    episode = turn_episode(payload)
    assert episode.position is None and episode.text == "我搬到成都了。"
    assert episode.id == turn_episode(payload).id  # derived: a replay is the same point


@pytest.mark.parametrize(
    ("change", "field"),
    [({"role": "narrator"}, "role"), ({"seq": "nine"}, "seq"), ({"observed_at": 3}, "observed_at")],
)
def test_a_bad_turn_payload_names_the_field(change: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        turn_episode({**turn_payload(make_episode()), **change})
    assert info.value.field == field


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


def test_settings_are_validated() -> None:
    with pytest.raises(ValidationError, match="max_observe_chars"):
        PipelineSettings(max_turn_chars=5_000, max_observe_chars=1_000)
    with pytest.raises(ValidationError, match="worker_threads"):
        PipelineSettings(worker_threads=0)
