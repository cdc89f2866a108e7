"""Forget, for real: what a user said is gone from L3, from Redis and from every file
under the data dir; another user's and another tenant's memories stay."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from memstrata.engine import ContextEngine
from memstrata.errors import NotFoundError, ValidationError
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.testing.disk import files_holding
from memstrata.testing.disk import keys_holding as redis_holding
from memstrata.upkeep.forget import deletion_record
from memstrata.upkeep.jobs import PendingForgets

Factory = Callable[..., ContextEngine]


def say(engine: ContextEngine, tenant: str, user: str, marker: str) -> None:
    session = engine.start_session(user, f"plan a trip {marker}", tenant=tenant)
    engine.observe(session.session_id, "user", f"I live in {marker}ville and love {marker}.")
    engine.observe(session.session_id, "user", "I moved to Chengdu last month.")
    engine.remember(user, f"My code word is {marker}.", tenant=tenant)
    engine.set_preference(user, "food", f"{marker} noodles", 0.9, tenant=tenant)
    engine.working(session.session_id).put_api_response("/weather", {"q": marker}, {"t": 1})


def test_a_forgotten_user_is_gone_from_l3_redis_and_every_file(
    engine_factory: Factory, tmp_path: Path
) -> None:
    data = tmp_path / "forget"
    engine = engine_factory(data)
    client = engine.parts.memory.redis
    # RDB-format files (the AOF's base) compress strings; a byte scan needs them plain.
    client.config_set("rdbcompression", "no")
    gone, kept, other_tenant = (f"zq{uuid.uuid4().hex[:10]}" for _ in range(3))
    say(engine, "acme", "bob", gone)
    say(engine, "acme", "alice", kept)
    say(engine, "globex", "bob", other_tenant)  # another tenant's bob
    engine.flush()
    engine.parts.longterm.optimize()
    assert engine.retrieve(f"{gone}ville", tenant="acme", user="bob").items
    assert files_holding(data, gone), "the scan of the files is blind"
    assert redis_holding(client, gone), "the scan of Redis is blind"

    report = engine.forget("bob", tenant="acme")

    assert report.points_deleted >= 5  # 3 episodes, their facts and history
    assert report.keys_deleted >= 3 and report.sessions_ended == 1
    assert files_holding(data, gone) == []
    assert redis_holding(client, gone) == []
    flt = Filter(tenant="acme", user="bob")
    assert engine.count_memories("acme", user="bob") == 0
    assert list(engine.parts.longterm.iter_records(MEMORIES, flt)) == []
    result = engine.retrieve(f"{gone}ville", tenant="acme", user="bob")
    assert not result.items and not result.below_threshold
    # The others' memories are all still there, on disk and in Redis.
    for marker, tenant, user in ((kept, "acme", "alice"), (other_tenant, "globex", "bob")):
        assert files_holding(data, marker) and redis_holding(client, marker)
        found = engine.retrieve(f"{marker}ville", tenant=tenant, user=user).items
        assert any(marker in item.text for item in found)
        assert engine.get_preference(user, "food", tenant=tenant).value
    # The audit keeps that a deletion happened: no name, no content.
    lines = (data / "audit.jsonl").read_text().splitlines()
    (record,) = [json.loads(line) for line in lines if '"forget"' in line]
    expected = deletion_record(report, engine.parts.clock.now(), user="bob")
    assert {k: v for k, v in record.items() if k != "at"} == {
        k: v for k, v in expected.items() if k != "at"
    }
    assert "bob" not in json.dumps(record)


def test_forgetting_one_memory_takes_its_versions_and_what_it_said(
    engine_factory: Factory, tmp_path: Path
) -> None:
    engine = engine_factory(tmp_path / "one")
    session = engine.start_session("u1", "hi", tenant="acme")
    engine.observe(session.session_id, "user", "I live in Hangzhou.")
    engine.observe(session.session_id, "user", "I moved to Chengdu.")
    engine.observe(session.session_id, "user", "I'm allergic to peanuts.")
    engine.flush()
    city = engine.parts.memory.active_fact("acme", "u1", "user", "city")
    assert city is not None and city.value == "Chengdu"
    engine.forget_memories([city.id or ""], tenant="acme")
    assert engine.parts.memory.history("acme", "u1", "user", "city") == ()
    assert engine.parts.memory.active_fact("acme", "u1", "user", "city") is None
    texts = {
        r.payload["text"]
        for r in engine.parts.longterm.iter_records(MEMORIES, Filter(tenant="acme", user="u1"))
    }
    # The facts of other slots and what was said stay: only the city's versions went.
    assert "I'm allergic to peanuts." in texts and "I live in Hangzhou." in texts
    # An episode takes the facts extracted from it.
    (episode,) = [
        r.id
        for r in engine.parts.longterm.iter_records(
            MEMORIES, Filter(tenant="acme", user="u1", types=("episode",))
        )
        if r.payload["text"] == "I'm allergic to peanuts."
    ]
    engine.forget_memories([episode], tenant="acme")
    left = {
        r.payload["text"]
        for r in engine.parts.longterm.iter_records(MEMORIES, Filter(tenant="acme", user="u1"))
    }
    assert not any("peanut" in text for text in left)
    # Another tenant's id is not there to delete; bad input is refused.
    assert engine.forget_memories([episode], tenant="globex").points_deleted == 0
    with pytest.raises(ValidationError) as info:
        engine.forget_memories([], tenant="acme")
    assert info.value.field == "ids"


def test_a_store_namespace_is_gone_from_l3_and_every_file(
    engine_factory: Factory, tmp_path: Path
) -> None:
    data = tmp_path / "forget-store"
    engine = engine_factory(data)
    gone, kept = (f"zq{uuid.uuid4().hex[:10]}" for _ in range(2))
    engine.store_put(("memories", "bob"), "diet", {"text": f"{gone} noodles"}, tenant="acme")
    engine.store_put(("memories", "bob", "trips"), "next", {"text": f"{gone} bay"}, tenant="acme")
    engine.store_put(("memories", "alice"), "diet", {"text": f"{kept} rice"}, tenant="acme")
    engine.store_put(("memories", "bob"), "diet", {"text": f"{kept} soup"}, tenant="globex")
    engine.remember("bob", f"My code word is {kept}.", tenant="acme")
    engine.flush()
    engine.parts.longterm.optimize()
    assert files_holding(data, gone), "the scan of the files is blind"

    report = engine.forget_store_namespace(("memories", "bob"), tenant="acme")

    assert report.points_deleted == 2 and report.keys_deleted == 0
    assert files_holding(data, gone) == []
    assert engine.store_search(("memories", "bob"), tenant="acme") == []
    # Only that prefix of that tenant: alice's items, globex's bob and bob's memories stay.
    assert engine.store_get(("memories", "alice"), "diet", tenant="acme") is not None
    assert engine.store_get(("memories", "bob"), "diet", tenant="globex") is not None
    assert engine.retrieve(f"code word {kept}", tenant="acme", user="bob").items
    audit = (data / "audit.jsonl").read_text().splitlines()
    assert json.loads(audit[-1])["points_deleted"] == 2 and gone not in audit[-1]


@pytest.mark.parametrize("prefix", [(), [""], "memories"])
def test_a_store_namespace_to_forget_is_checked(engine: ContextEngine, prefix: Any) -> None:
    engine.store_put(("memories", "bob"), "diet", {"text": "noodles"})
    with pytest.raises(ValidationError, match="namespace_prefix"):
        engine.forget_store_namespace(prefix)
    assert engine.store_get(("memories", "bob"), "diet") is not None


def test_a_forget_started_in_the_background_is_followed_by_its_tenant_only(
    engine: ContextEngine,
) -> None:
    marker = f"zq{uuid.uuid4().hex[:10]}"
    engine.remember("bob", f"My code word is {marker}.", tenant="acme")
    engine.remember("bob", f"My code word is {marker}.", tenant="globex")
    engine.flush()

    job = engine.start_forget("bob", tenant="acme")
    assert job.state == "queued" and job.kind == "user" and job.tenant == "acme"
    with pytest.raises(NotFoundError):
        engine.forget_status(job.id, tenant="globex")  # another tenant's job
    done = engine.wait_forget(job.id, tenant="acme", timeout_s=300)
    assert done.state == "done" and done.report is not None
    assert done.report.points_deleted >= 1
    assert engine.forget_status(job.id, tenant="acme") == done
    assert engine.count_memories("acme", user="bob") == 0
    assert engine.count_memories("globex", user="bob") >= 1


def test_a_forget_is_refused_at_once_for_bad_input(engine: ContextEngine) -> None:
    with pytest.raises(ValidationError, match="user_id"):
        engine.start_forget("bob", ids=["x"], tenant="acme")  # two of the three
    with pytest.raises(ValidationError, match="user_id"):
        engine.start_forget(tenant="acme")  # none
    with pytest.raises(ValidationError, match="ids"):
        engine.start_forget(ids=[], tenant="acme")
    with pytest.raises(ValidationError, match="tenant"):
        engine.start_forget("bob", tenant="no such tenant!")


def test_a_forget_accepted_before_a_crash_runs_when_an_engine_starts_again(
    engine_factory: Factory, tmp_path: Path
) -> None:
    data = tmp_path / "restart"
    engine = engine_factory(data)
    gone, kept = (f"zq{uuid.uuid4().hex[:10]}" for _ in range(2))
    say(engine, "acme", "bob", gone)
    say(engine, "acme", "alice", kept)
    engine.flush()
    memory = engine.parts.memory
    # What start_forget keeps in Valkey before it answers the job; the process then
    # dies before the job's deletes.
    PendingForgets(memory.redis, memory.settings.redis_prefix).add(
        "job-before-the-crash", "acme", "user", {"user_id": "bob"}
    )
    engine.close()

    engine = engine_factory(data)
    with pytest.raises(NotFoundError):  # another tenant cannot see it
        engine.forget_status("job-before-the-crash", tenant="globex")
    job = engine.wait_forget("job-before-the-crash", tenant="acme", timeout_s=300)

    assert job.state == "done" and job.report is not None
    assert job.report.points_deleted >= 5
    assert engine.count_memories("acme", user="bob") == 0
    assert not engine.retrieve(f"{gone}ville", tenant="acme", user="bob").items
    assert engine.count_memories("acme", user="alice") > 0
    memory = engine.parts.memory
    assert PendingForgets(memory.redis, memory.settings.redis_prefix).pending() == []


def test_a_started_forget_is_kept_until_its_deletes_are_done(engine_factory: Factory) -> None:
    engine = engine_factory()
    say(engine, "acme", "bob", f"zq{uuid.uuid4().hex[:10]}")
    memory = engine.parts.memory
    pending = PendingForgets(memory.redis, memory.settings.redis_prefix)
    seen: list[list[tuple[str, str, str, dict[str, Any]]]] = []
    original = engine.parts.longterm.index.purge

    def purge_watching(tenants: Collection[str] | None = None) -> None:
        seen.append(pending.pending())  # the deletes are done when the files are rebuilt
        original(tenants)

    engine.parts.longterm.index.purge = purge_watching  # type: ignore[method-assign]
    job = engine.start_forget("bob", tenant="acme")
    assert engine.wait_forget(job.id, tenant="acme", timeout_s=300).state == "done"
    assert seen == [[]], "the request naming the user must be gone before the rewrite"
    assert pending.pending() == []
