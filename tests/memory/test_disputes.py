"""MemoryStore.dispute over the real stores (qdrant-edge, embedded Valkey): a current
fact put in doubt keeps its slot, marked, its confidence halved once however often it
is disputed; history, a fact stated after the doubt and a fact of the disputing
episode itself are left alone; the same value said again takes the doubt back; the
dispute survives the payload round trip; bad input is refused naming the field."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from tests.conftest import T0, Env

from memstrata.errors import ValidationError
from memstrata.memory.codec import dispute_of_payload, from_payload, to_payload
from memstrata.memory.units import Dispute, MemoryUnit, UnitSource

USER = "u1"


def _fact(env: Env, value: str, at_days: float, episode: str, confidence: float = 0.9) -> str:
    at = T0 + timedelta(days=at_days)
    unit = MemoryUnit(
        subject="user",
        attribute="city",
        value=value,
        kind="fact",
        source=UnitSource(env.tenant, USER, "s1", f"t{at_days}", confidence=confidence),
        observed_at=at,
        valid_from=at,
        episodes=(episode,),
    )
    return env.store.write(unit).unit_id


def _dispute(days: float, episode: str = "ep-new") -> Dispute:
    return Dispute(episode, T0 + timedelta(days=days), "我搬家了。", 1.0)


def test_a_current_fact_is_disputed_once_and_keeps_its_slot(env: Env) -> None:
    fact_id = _fact(env, "杭州", 0, "ep-old")
    marked = env.store.dispute(env.tenant, fact_id, _dispute(2))
    assert marked is not None and marked.disputed is not None
    assert marked.source.confidence == pytest.approx(0.45)
    assert marked.disputed.confidence == pytest.approx(0.9)  # what it was before
    again = env.store.dispute(env.tenant, fact_id, _dispute(3, "ep-newer"))
    assert again is not None and again.source.confidence == pytest.approx(0.45)
    active = env.store.active_fact(env.tenant, USER, "user", "city")
    assert active is not None and active.id == fact_id
    assert active.disputed is not None and active.disputed.episode == "ep-newer"


def test_what_the_doubt_cannot_reach_is_left_alone(env: Env) -> None:
    old_id = _fact(env, "杭州", 0, "ep-1")
    _fact(env, "成都", 1, "ep-2")
    assert env.store.dispute(env.tenant, old_id, _dispute(2)) is None  # history
    newer = env.store.active_fact(env.tenant, USER, "user", "city")
    assert newer is not None and newer.id is not None
    assert env.store.dispute(env.tenant, newer.id, _dispute(0.5)) is None  # stated after
    assert env.store.dispute(env.tenant, newer.id, _dispute(2, "ep-2")) is None  # its own
    assert env.store.dispute(env.tenant, str(uuid.uuid4()), _dispute(2)) is None  # gone


def test_the_same_value_said_again_takes_the_doubt_back(env: Env) -> None:
    fact_id = _fact(env, "杭州", 0, "ep-1")
    env.store.dispute(env.tenant, fact_id, _dispute(2))
    _fact(env, "杭州", 3, "ep-3")
    active = env.store.active_fact(env.tenant, USER, "user", "city")
    assert active is not None and active.id == fact_id
    assert active.disputed is None and active.source.confidence == pytest.approx(0.9)


def test_a_dispute_survives_the_payload_round_trip(env: Env) -> None:
    fact_id = _fact(env, "杭州", 0, "ep-1")
    marked = env.store.dispute(env.tenant, fact_id, _dispute(2))
    assert marked is not None
    payload = {**to_payload(marked), "tenant": env.tenant, "user": USER}
    assert from_payload(fact_id, payload) == marked
    assert dispute_of_payload(None) is None


def test_bad_disputes_are_refused_naming_the_field(env: Env) -> None:
    with pytest.raises(ValidationError) as caught:
        Dispute("", T0, "x", 1.0)
    assert caught.value.field == "disputed.episode"
    with pytest.raises(ValidationError) as caught:
        Dispute("e", T0.replace(tzinfo=None), "x", 1.0)
    assert caught.value.field == "disputed.at"
    with pytest.raises(ValidationError) as caught:
        Dispute("e", T0, "x" * 301, 1.0)
    assert caught.value.field == "disputed.text"
    with pytest.raises(ValidationError) as caught:
        env.store.dispute(env.tenant, "x", "not a dispute")  # type: ignore[arg-type]
    assert caught.value.field == "dispute"
