"""Export and import (issue 35, item 1) on real engines: embedded Valkey, qdrant-edge
and MiniLM. A LoCoMo round trip into a fresh data directory gives the same retrieve
ranks; importing twice changes nothing; another tenant's file lands namespaced; a
forgotten user's export is its header; a bad file names its line and field and
writes nothing; an unknown version is refused; a user's conversation (OpenAI
messages, JSON Lines) goes through the normal write path, dated, its secrets never
stored."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError
from memstrata.eval.datasets import LocomoConversation, load_locomo
from memstrata.longterm.points import Filter
from memstrata.testing.disk import valkey_entries

Factory = Callable[..., ContextEngine]
REPO = Path(__file__).resolve().parents[2]
LOCOMO = Path(
    os.environ.get("MEMSTRATA_LOCOMO", REPO.parent / "shared" / "data" / "locomo" / "locomo10.json")
)
NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)
SECRET = "sk-proj-Zx81KqLmN0pQrStUvWxYz1234567890abcd"
CARD = "4111111111111111"


def _conversations() -> tuple[LocomoConversation, ...]:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo is read from {LOCOMO} (CC BY-NC, never copied here)")
    return load_locomo(LOCOMO, limit=2)


def _observe_locomo(engine: ContextEngine, clock: FakeClock, conv: LocomoConversation) -> None:
    sessions = list(dict.fromkeys(t.session for t in conv.turns))[:2]
    for name in sessions:
        turns = [t for t in conv.turns if t.session == name]
        clock.set(turns[0].at)
        sid = f"{conv.sample_id}-{name}"
        engine.start_session(conv.sample_id, "chat", tenant="acme", session_id=sid)
        for turn in turns:
            engine.observe(sid, "user", turn.text, speaker=turn.speaker)
        engine.end_session(sid)
    engine.flush()


def _ranks(engine: ContextEngine, conv: LocomoConversation, tenant: str) -> list[list[str]]:
    questions = [q.question for q in conv.questions if not q.adversarial][:8]
    return [
        [f"{i.kind}:{i.id}" for i in engine.retrieve(q, tenant=tenant, user=conv.sample_id).items]
        for q in questions
    ]


def _state(engine: ContextEngine, tenant: str, users: list[str]) -> dict[str, Any]:
    """What a person can see of ``users``: every listed memory and every fact's history."""
    seen: dict[str, Any] = {}
    for user in users:
        items = engine.list_memories(user, tenant=tenant, page_size=200)
        assert items.next_page is None
        seen[user] = [repr(i) for i in items.items]
        for item in items.items:
            if item.fact is not None:
                seen[item.id] = repr(engine.history(item.id, tenant=tenant))
        seen[f"{user}:count"] = engine.count_memories(tenant, user=user)
    return seen


def test_a_locomo_round_trip_into_a_fresh_store_keeps_ids_history_and_ranks(
    engine_factory: Factory, tmp_path: Path
) -> None:
    conversations = _conversations()
    clock = FakeClock(NOW)
    source = engine_factory(tmp_path / "a", clock=clock)
    for conv in conversations:
        _observe_locomo(source, clock, conv)
    clock.set(NOW)
    users = [c.sample_id for c in conversations]
    exported = {u: list(source.export_memories(u, tenant="acme")) for u in users}
    whole = list(source.export_memories(tenant="acme"))
    header = json.loads(whole[0])
    assert (header["format"], header["version"]) == ("memstrata-export", 1)
    assert header["scope"] == {"tenant": "acme", "user": None}
    assert header["source"]["distribution"] == "ctxstrata"
    assert sorted(whole[1:]) == sorted(line for u in users for line in exported[u][1:])
    records = [json.loads(line) for line in whole[1:]]
    assert {r["record"] for r in records} == {"episode", "fact"}
    assert all(
        r["observed_at"] and r["thread"] and r["speaker"]
        for r in records
        if r["record"] == "episode"
    )
    before = _state(source, "acme", users)
    ranks = {c.sample_id: _ranks(source, c, "acme") for c in conversations}
    assert all(found for r in ranks.values() for found in r)  # every question found some

    fresh = engine_factory(tmp_path / "b", clock=clock)
    report = fresh.import_memories(whole, tenant="acme")
    assert report.added == len(records) and not report.remapped
    assert sorted(report.users) == sorted(users)
    assert _state(fresh, "acme", users) == before  # same ids, dates, versions, links
    for conv in conversations:
        assert _ranks(fresh, conv, "acme") == ranks[conv.sample_id], conv.sample_id

    # Idempotent: the same file again adds nothing and changes nothing a person sees.
    settled = _state(fresh, "acme", users)
    again = fresh.import_memories(whole, tenant="acme")
    assert again.added == 0 and again.episodes == report.episodes
    assert _state(fresh, "acme", users) == settled
    assert [json.loads(x) for x in fresh.export_memories(tenant="acme")][1:] == [
        json.loads(x) for x in source.export_memories(tenant="acme")
    ][1:]


def _small(engine: ContextEngine, clock: FakeClock, tenant: str) -> None:
    sid = f"s-{tenant}"
    engine.start_session("u1", "chat", tenant=tenant, session_id=sid)
    for text in ("I live in Berlin.", "I moved to Paris."):
        engine.observe(sid, "user", text)
        clock.advance(timedelta(days=2))
    engine.end_session(sid)
    engine.set_preference("u1", "language", "fr", 0.8, tenant=tenant)
    engine.flush()


def test_a_file_of_another_tenant_lands_namespaced_and_a_forgotten_user_is_empty(
    engine_factory: Factory,
) -> None:
    clock = FakeClock(NOW)
    engine = engine_factory(clock=clock)
    _small(engine, clock, "tenant-a")
    lines = list(engine.export_memories("u1", tenant="tenant-a"))
    a_before = _state(engine, "tenant-a", ["u1"])
    report = engine.import_memories(lines, tenant="tenant-b")
    assert report.remapped and report.added == report.episodes + report.facts
    assert _state(engine, "tenant-a", ["u1"]) == a_before  # A untouched
    a_ids = {i.id for i in engine.list_memories("u1", tenant="tenant-a").items}
    b_items = engine.list_memories("u1", tenant="tenant-b").items
    assert len(b_items) == len(a_ids) and not a_ids & {i.id for i in b_items} - {"pref:language"}
    paris = next(i for i in b_items if i.fact is not None and i.fact.value == "Paris")
    history = engine.history(paris.id, tenant="tenant-b")
    assert [v.fact.value for v in history.versions if v.fact] == ["Berlin", "Paris"]
    assert [e.text for e in history.versions[1].episodes] == ["I moved to Paris."]
    assert engine.import_memories(lines, tenant="tenant-b").added == 0

    engine.forget("u1", tenant="tenant-a")
    emptied = list(engine.export_memories("u1", tenant="tenant-a"))
    assert len(emptied) == 1 and json.loads(emptied[0])["format"] == "memstrata-export"


def test_a_bad_file_names_its_line_and_field_and_writes_nothing(
    engine_factory: Factory,
) -> None:
    clock = FakeClock(NOW)
    engine = engine_factory(clock=clock)
    _small(engine, clock, "acme")
    lines = list(engine.export_memories("u1", tenant="acme"))
    engine.forget("u1", tenant="acme")
    engine.remember("keep", "I am allergic to peanuts.", tenant="acme")
    engine.flush()
    kept = _state(engine, "acme", ["keep", "u1"])

    broken = [
        *lines[:2],
        json.dumps({**json.loads(lines[2]), "observed_at": "yesterday"}),
        *lines[3:],
    ]
    with pytest.raises(ValidationError) as bad_date:
        engine.import_memories(broken, tenant="acme")
    assert bad_date.value.field == "line 3: observed_at"
    with pytest.raises(ValidationError) as not_json:
        engine.import_memories([*lines, "{not json"], tenant="acme")
    assert not_json.value.field == f"line {len(lines) + 1}"
    future = json.dumps({**json.loads(lines[0]), "version": 2})
    with pytest.raises(ValidationError) as unknown:
        engine.import_memories([future, *lines[1:]], tenant="acme")
    assert unknown.value.field == "line 1: version" and "not a version" in unknown.value.reason
    with pytest.raises(ValidationError) as headless:
        engine.import_memories(lines[1:], tenant="acme")
    assert headless.value.field == "line 1: format"
    assert _state(engine, "acme", ["keep", "u1"]) == kept  # nothing lost, nothing written


def test_a_users_conversations_go_through_the_write_path_dated_and_sanitized(
    engine_factory: Factory, tmp_path: Path
) -> None:
    clock = FakeClock(NOW)
    engine = engine_factory(tmp_path / "data", clock=clock)
    openai_chat = [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": [{"type": "text", "text": f"I live in Lisbon. My key is {SECRET}"}],
            "timestamp": "2024-02-03T10:00:00Z",
        },
        {"role": "assistant", "content": "Noted, Lisbon it is."},
    ]
    messages = [
        {
            "role": "user",
            "content": f"My card is {CARD}, I work as a nurse.",
            "timestamp": 1717236000,
        },
        {"role": "assistant", "content": "Thanks!", "timestamp": "2024-06-01T10:00:05+00:00"},
    ]
    first = engine.import_memories(
        [json.dumps(openai_chat)], format="openai", user_id="u9", tenant="acme"
    )
    second = engine.import_memories(
        [json.dumps(m) for m in messages], format="messages", user_id="u9", tenant="acme"
    )
    assert (first.episodes, second.episodes) == (3, 2)
    engine.flush()
    listed = engine.list_memories("u9", tenant="acme", kind="episode").items
    dated = {i.text.split(".")[0]: i.at for i in listed}
    assert dated["I live in Lisbon"] == datetime(2024, 2, 3, 10, tzinfo=UTC)
    assert dated["Noted, Lisbon it is"] == datetime(
        2024, 2, 3, 10, tzinfo=UTC
    )  # undated: as before
    assert any(i.at == datetime(2024, 6, 1, 10, tzinfo=UTC) for i in listed)
    facts = {
        i.fact.attribute: i.fact.value
        for i in engine.list_memories("u9", tenant="acme", kind="fact").items
        if i.fact
    }
    assert facts.get("city") == "Lisbon"
    again = engine.import_memories(
        [json.dumps(openai_chat)], format="openai", user_id="u9", tenant="acme"
    )
    assert again.added == 0 and again.note
    assert len(engine.list_memories("u9", tenant="acme", kind="episode").items) == len(listed)

    payloads = "\n".join(
        str(dict(r.payload))
        for r in engine.parts.longterm.iter_records("memories", Filter(tenant="acme"))
    )
    client = engine.parts.working_memory.backend.client  # type: ignore[attr-defined]
    redis_text = "\n".join(f"{k} {v}" for k, v in valkey_entries(client).items())
    assert "Lisbon" in payloads and "Lisbon" in redis_text  # the scans see the turns
    for blob in (payloads, redis_text):
        assert SECRET not in blob and CARD not in blob

    with pytest.raises(ValidationError) as bad_role:
        engine.import_memories(
            [
                json.dumps({"role": "user", "content": "hi"}),
                json.dumps({"role": "robot", "content": "x"}),
            ],
            format="messages",
            user_id="u9",
            tenant="acme",
        )
    assert bad_role.value.field == "line 2: role"
    with pytest.raises(ValidationError) as no_user:
        engine.import_memories([json.dumps(openai_chat)], format="openai", tenant="acme")
    assert no_user.value.field == "user_id"


def test_a_tenant_export_keeps_a_user_who_has_only_preferences(
    engine_factory: Factory, tmp_path: Path
) -> None:
    clock = FakeClock(NOW)
    engine = engine_factory(tmp_path / "a", clock=clock)
    _small(engine, clock, "tenant-a")
    engine.set_preference("quiet-user", "language", "pt", 0.9, tenant="tenant-a")
    engine.set_preference("other-tenant-user", "language", "de", 0.9, tenant="tenant-z")
    records = [json.loads(line) for line in engine.export_memories(tenant="tenant-a")]
    owners = {r.get("user") for r in records[1:]}
    assert {"u1", "quiet-user"} <= owners and "other-tenant-user" not in owners

    fresh = engine_factory(tmp_path / "b", clock=clock)
    fresh.import_memories([json.dumps(r) for r in records], tenant="tenant-a")
    kept = fresh.get_preference("quiet-user", "language", tenant="tenant-a")
    assert kept.value == "pt"
