"""A user's Redis footprint, deleted on a real Valkey (embedded, and a cluster): the
user's keys and queue entries go, another user's and another tenant's stay."""

from __future__ import annotations

import fnmatch
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from memstrata.clock import SystemClock
from memstrata.config import WorkingMemorySettings
from memstrata.errors import ValidationError
from memstrata.memory.slots import SlotRecords
from memstrata.memory.versioning import slot_key, tenants_key
from memstrata.testing.disk import files_holding
from memstrata.upkeep.erase import ErasureReport, delete_user_keys, entry_owner, user_footprint
from memstrata.working import EmbeddedValkey, RedisBackend, WorkingMemory
from memstrata.working.compaction import compact_persistence
from memstrata.working.keys import pref_index_key, pref_key, recall_key, result_key
from memstrata.write.entries import QueueKeys, dead_letter_fields, encode_entry
from memstrata.write.queue import WriteQueue

# --- the footprint (pure) -------------------------------------------------------------


def test_the_footprint_follows_the_key_builders() -> None:
    found = user_footprint("acme", "bob", memory_prefix="mv", queues=("q1",), sessions=("s1",))
    assert found.key_patterns == (
        "mv:{acme:bob}:slot:*",
        "recall:{acme:bob}:*",
        "pref:{acme:bob}:*",
        "wm:{s1}:*",
    )
    assert found.queues == (QueueKeys("q1"),)
    patterns = found.key_patterns
    for key in (
        slot_key("mv", "acme", "bob", "user.food"),
        pref_key("acme", "bob", "ui_color"),
        pref_index_key("acme", "bob"),
        recall_key("acme", "bob", "memories"),
        result_key("s1", "step-1"),
    ):
        assert any(fnmatch.fnmatchcase(key, p) for p in patterns), key
    for key in (
        slot_key("mv", "acme", "bobby", "user.food"),  # a longer id, same start
        slot_key("mv", "globex", "bob", "user.food"),
        pref_key("acme", "bobby", "ui_color"),
        pref_key("globex", "bob", "ui_color"),  # another tenant's bob
        recall_key("acme", "bobby", "memories"),
        recall_key("acme", None, "knowledge"),  # the tenant's shared reads
        tenants_key("mv"),
        result_key("s10", "step-1"),
    ):
        assert not any(fnmatch.fnmatchcase(key, p) for p in patterns), key
    spared = user_footprint("acme", "bob", preferences=False)
    # The cached reads are copies of memories, not preferences: they go regardless.
    assert spared.key_patterns == ("mv:{acme:bob}:slot:*", "recall:{acme:bob}:*")


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("", "bob"), "tenant"),
        (("acme", "b*b"), "user"),
        (("acme", "bob", "m{v}"), "memory_prefix"),
    ],
)
def test_the_footprint_refuses_bad_ids(args: tuple[str, ...], field: str) -> None:
    tenant, user, *prefix = args
    with pytest.raises(ValidationError) as err:
        user_footprint(tenant, user, memory_prefix=prefix[0] if prefix else "mv")
    assert err.value.field == field


def test_an_entry_names_its_owner_only_through_a_json_payload() -> None:
    fields = encode_entry("note", {"tenant": "acme", "user": "bob", "text": "hi"})
    assert entry_owner(fields) == ("acme", "bob")
    raw = {k.encode(): v.encode() for k, v in fields.items()}  # a bytes-decoding client
    assert entry_owner(raw) == ("acme", "bob")
    assert entry_owner({"payload": "not json"}) is None
    assert entry_owner({"payload": '{"tenant": "acme"}'}) is None
    assert entry_owner({"kind": "note"}) is None


# --- deleting on a real server ----------------------------------------------------------


@dataclass
class World:
    """Three owners' data under fresh names on a shared server."""

    client: Any
    backend: RedisBackend
    prefix: str
    queue: WriteQueue
    tenant: str
    other_tenant: str
    session: str
    other_session: str

    @property
    def owners(self) -> list[tuple[str, str]]:
        return [(self.tenant, "bob"), (self.tenant, "alice"), (self.other_tenant, "bob")]


def _populate(client: Any, backend: RedisBackend, marker: str = "") -> World:
    suffix = uuid.uuid4().hex[:8]
    world = World(
        client,
        backend,
        f"mv-{suffix}",
        WriteQueue(client, f"q-{suffix}"),
        f"acme-{suffix}",
        f"globex-{suffix}",
        f"sess-bob-{suffix}",
        f"sess-alice-{suffix}",
    )
    slots = SlotRecords(client, world.prefix)
    wm = WorkingMemory(backend, WorkingMemorySettings(), SystemClock())
    for tenant, user in world.owners:
        # Only what the forgotten user said carries the marker.
        said = marker if (tenant, user) == world.owners[0] else "kept"
        slots.register_tenant(tenant)
        for attribute in ("food", "city"):
            assert slots.swap(tenant, user, f"user.{attribute}", 0, {"active_id": said})
        # Interleaved in the stream, more than a page (7) of them.
        for i in range(6):
            text = f"{said} {user} note {i}"
            world.queue.enqueue("note", {"tenant": tenant, "user": user, "text": text})
        fields = encode_entry("note", {"tenant": tenant, "user": user, "text": f"{said} dead"})
        client.xadd(world.queue.keys.dead, dead_letter_fields("1-1", fields, "boom", 3, 0))
        client.zadd(world.queue.keys.done, {fields["content_hash"]: 1})
    wm.set_preference("bob", "food", f"{marker} ramen", 0.9, tenant=world.tenant)
    wm.set_preference("bob", "food", "udon", 0.9, tenant=world.other_tenant)
    wm.set_preference("alice", "food", "soba", 0.9, tenant=world.tenant)
    wm.session(world.session).put_api_response("/orders", {"p": 1}, {"said": marker})
    wm.session(world.other_session).put_api_response("/orders", {"p": 1}, {"said": "kept"})
    return world


def _owners_in(client: Any, stream: str) -> list[tuple[str, str] | None]:
    return [entry_owner(fields) for _, fields in client.xrange(stream)]


def _check_only_bob_went(world: World) -> None:
    client, prefix = world.client, world.prefix
    slots = SlotRecords(client, prefix)
    assert slots.read(world.tenant, "bob", "user.food").rev == 0
    assert slots.read(world.tenant, "alice", "user.food").rev == 1
    assert slots.read(world.other_tenant, "bob", "user.food").rev == 1
    assert set(slots.tenants()) == {world.tenant, world.other_tenant}  # shared: kept
    kept = [(world.tenant, "alice"), (world.other_tenant, "bob")]
    assert sorted(set(_owners_in(client, world.queue.keys.stream))) == sorted(kept)  # type: ignore[type-var]
    assert len(_owners_in(client, world.queue.keys.stream)) == 12
    assert sorted(_owners_in(client, world.queue.keys.dead)) == sorted(kept)  # type: ignore[type-var]
    assert client.zcard(world.queue.keys.done) == 2
    tenant, other = world.tenant, world.other_tenant
    assert not client.exists(pref_key(tenant, "bob", "food"), pref_index_key(tenant, "bob"))
    assert client.exists(pref_key(tenant, "alice", "food")) == 1
    assert client.exists(pref_key(other, "bob", "food")) == 1  # the other tenant's bob
    assert list(client.scan_iter(match=f"wm:{{{world.session}}}:*")) == []
    assert len(list(client.scan_iter(match=f"wm:{{{world.other_session}}}:*"))) == 1


def _forget_bob(world: World, **options: Any) -> Any:
    return delete_user_keys(
        world.client,
        world.tenant,
        "bob",
        memory_prefix=world.prefix,
        queues=(world.queue.name,),
        sessions=(world.session,),
        page=7,
        **options,
    )


@pytest.fixture(params=["embedded", pytest.param("cluster", marks=pytest.mark.cluster)])
def backend(request: pytest.FixtureRequest) -> RedisBackend:
    found: RedisBackend = request.getfixturevalue(f"{request.param}_backend")
    return found


def test_a_users_keys_and_entries_go_and_no_one_elses(backend: RedisBackend) -> None:
    world = _populate(backend.client, backend)
    report = _forget_bob(world)
    # 2 slot records + the preference and its index + the session's api key; 6 work
    # entries + 1 dead letter; 1 hash; both streams rebuilt without them.
    assert report == ErasureReport(5, 7, 1, 2)
    _check_only_bob_went(world)
    again = _forget_bob(world)
    assert again == ErasureReport(0, 0, 0, 0)
    _check_only_bob_went(world)


def _pending(client: Any, stream: str) -> dict[str, tuple[str, int]]:
    rows = client.xpending_range(stream, "workers", "-", "+", 1000)
    return {r["message_id"]: (r["consumer"], r["times_delivered"]) for r in rows}


def test_the_queue_works_on_after_its_stream_is_rebuilt(backend: RedisBackend) -> None:
    """Groups, consumers and pending entries survive the rebuild (bob's pending
    entries excepted); new work is delivered as before."""
    world = _populate(backend.client, backend)
    client, stream = world.client, world.queue.keys.stream
    client.xreadgroup("workers", "w1", {stream: ">"}, count=10)
    client.xreadgroup("workers", "w1", {stream: "0"}, count=4)  # delivered twice
    before = _pending(client, stream)
    (group,) = client.xinfo_groups(stream)
    bobs = {i for i, f in client.xrange(stream) if entry_owner(f) == (world.tenant, "bob")}
    _forget_bob(world)
    assert _pending(client, stream) == {i: c for i, c in before.items() if i not in bobs}
    (rebuilt,) = client.xinfo_groups(stream)
    assert rebuilt["last-delivered-id"] == group["last-delivered-id"]
    assert rebuilt["lag"] == group["lag"] == 8  # 18 entries, 10 delivered, none of them bob's
    assert client.xinfo_stream(stream)["entries-added"] == 18
    new_id = world.queue.enqueue("note", {"tenant": world.tenant, "user": "alice", "text": "x"})
    delivered = client.xreadgroup("workers", "w2", {stream: ">"}, count=100)
    assert delivered[0][1][-1][0] == new_id
    assert len(delivered[0][1]) == 9


def test_a_forgotten_users_words_leave_the_valkey_directory(tmp_path: Path) -> None:
    """The whole L2 forget: delete the footprint, rewrite the AOF, scan the disk."""
    marker = f"zq{uuid.uuid4().hex[:12]}"
    with EmbeddedValkey(tmp_path / "valkey") as valkey:
        backend = RedisBackend.from_url(valkey.url)
        # RDB files (the AOF's base) compress strings: uncompressed, a scan sees text.
        backend.client.config_set("rdbcompression", "no")
        world = _populate(backend.client, backend, marker)
        assert files_holding(valkey.data_dir, marker)
        _forget_bob(world)
        compact_persistence(backend.client)
        assert files_holding(valkey.data_dir, marker) == []
        assert files_holding(valkey.data_dir, "kept alice note 5")  # the rest is on disk
        _check_only_bob_went(world)
        backend.close()


def test_an_unreachable_server_raises_our_error(tmp_path: Path) -> None:
    from memstrata.errors import BackendUnavailableError

    client = redis.Redis(unix_socket_path=str(tmp_path / "nobody.sock"))
    with pytest.raises(BackendUnavailableError) as err:
        delete_user_keys(client, "acme", "bob")
    assert "SCAN" in str(err.value)
