"""A deleted value leaves every file of the Valkey data directory once compacted.

Each test scans the bytes of every file under the server's directory for a marker
that only the deleted value held, and checks first that the marker *is* there
after the delete: without the compaction these tests fail.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from memstrata.errors import CompactionTimeoutError, ValidationError
from memstrata.testing import ValkeyCluster
from memstrata.testing.disk import files_holding
from memstrata.working import EmbeddedValkey
from memstrata.working.compaction import (
    NodeCompaction,
    compact_persistence,
    snapshot_wanted,
)


def _marker() -> str:
    return f"zq{uuid.uuid4().hex[:12]}"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[EmbeddedValkey, redis.Redis]]:
    """A fresh embedded server of its own (its files are what the tests scan)."""
    with EmbeddedValkey(tmp_path / "valkey") as valkey:
        client = redis.Redis(unix_socket_path=str(valkey.socket_path), decode_responses=True)
        # RDB files (the AOF's base) compress strings: uncompressed, a scan sees text.
        client.config_set("rdbcompression", "no")
        yield valkey, client
        client.close()


def test_a_deleted_value_leaves_the_aof_only_once_compacted(
    server: tuple[EmbeddedValkey, redis.Redis],
) -> None:
    valkey, client = server
    marker = _marker()
    client.set("kept", "a value that stays")
    client.set("secret", f"the user said {marker}")
    client.hset("pref:{u9}:food", mapping={"value": f'"{marker}"'})
    client.delete("secret", "pref:{u9}:food")
    # The AOF logged the writes (Valkey may postpone a write while an fsync is slow).
    assert _eventually(lambda: files_holding(valkey.data_dir, marker))
    done = compact_persistence(client)
    assert done == (NodeCompaction(str(valkey.socket_path), True, False),)
    assert files_holding(valkey.data_dir, marker) == []
    assert files_holding(valkey.data_dir, "a value that stays")  # the scan sees text
    # The embedded server keeps no RDB snapshot (save ""), before or after a stop.
    assert client.config_get("save") == {"save": ""}
    valkey.stop()
    assert files_holding(valkey.data_dir, marker) == []
    assert not list(valkey.data_dir.rglob("dump.rdb"))
    valkey.start()
    again = redis.Redis(unix_socket_path=str(valkey.socket_path), decode_responses=True)
    assert again.get("kept") == "a value that stays"  # the rewrite lost nothing
    assert again.get("secret") is None
    again.close()


def test_a_rewrite_running_since_before_the_delete_is_not_enough(
    server: tuple[EmbeddedValkey, redis.Redis],
) -> None:
    """A rewrite forked before the delete writes the value into the new base file;
    compaction waits for it and rewrites again."""
    valkey, client = server
    marker = _marker()
    client.mset({f"filler:{i}": "x" for i in range(300)})
    client.set("secret", marker)
    client.config_set("rdb-key-save-delay", 1000)  # 1 ms a key: the child runs ~0.3 s
    try:
        client.bgrewriteaof()
        client.delete("secret")
        assert int(client.info("persistence")["aof_rewrite_in_progress"]) == 1
        compact_persistence(client)
    finally:
        client.config_set("rdb-key-save-delay", 0)
    assert files_holding(valkey.data_dir, marker) == []


def test_an_rdb_snapshot_is_rewritten_where_save_points_exist(
    server: tuple[EmbeddedValkey, redis.Redis],
) -> None:
    valkey, client = server
    marker = _marker()
    client.config_set("save", "3600 1")
    client.set("secret", marker)
    client.save()  # a snapshot holding the value, as the save points would make
    client.delete("secret")
    assert "dump.rdb" in files_holding(valkey.data_dir, marker)
    (done,) = compact_persistence(client)
    assert done.aof_rewritten and done.rdb_saved
    assert files_holding(valkey.data_dir, marker) == []
    client.config_set("save", "")


def test_snapshot_choice_follows_the_server() -> None:
    assert not snapshot_wanted("", {"rdb_saves": 0})
    assert snapshot_wanted("3600 1 300 100", {"rdb_saves": 0})
    assert snapshot_wanted("", {"rdb_saves": 2})  # someone saved since start
    assert snapshot_wanted(None, {})  # CONFIG refused: assume a snapshot exists


def test_a_timeout_names_the_server_and_the_command(
    server: tuple[EmbeddedValkey, redis.Redis],
) -> None:
    valkey, client = server
    client.mset({f"filler:{i}": "x" for i in range(200)})
    client.config_set("rdb-key-save-delay", 5000)  # the rewrite takes ~1 s
    try:
        with pytest.raises(CompactionTimeoutError) as err:
            compact_persistence(client, timeout_s=0.05)
        assert err.value.operation == "BGREWRITEAOF"
        assert str(valkey.socket_path) in str(err.value)
    finally:
        client.config_set("rdb-key-save-delay", 0)
    with pytest.raises(ValidationError) as bad:
        compact_persistence(client, timeout_s=0)
    assert bad.value.field == "timeout_s"


def test_a_server_without_aof_or_snapshots_is_left_alone(tmp_path: Path) -> None:
    with EmbeddedValkey(tmp_path / "valkey") as valkey:
        client = redis.Redis(unix_socket_path=str(valkey.socket_path), decode_responses=True)
        client.config_set("appendonly", "no")
        before = client.info("persistence")
        (done,) = compact_persistence(client)
        assert (done.aof_rewritten, done.rdb_saved) == (False, False)
        after = client.info("persistence")
        assert after["aof_rewrites"] == before["aof_rewrites"]
        assert after["rdb_saves"] == before["rdb_saves"] == 0
        client.close()


@pytest.fixture(scope="module")
def aof_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ValkeyCluster]:
    """A 3-primary cluster of its own with AOF turned on (the shared one runs without)."""
    with ValkeyCluster(tmp_path_factory.mktemp("aof-cluster"), nodes=3) as cluster:
        for index in range(3):
            node = cluster.node_client(index)
            node.config_set("rdbcompression", "no")  # a scan must see the text
            node.config_set("appendonly", "yes")
            node.close()
        yield cluster


@pytest.mark.cluster
def test_every_primary_of_a_cluster_is_compacted(aof_cluster: ValkeyCluster) -> None:
    client = RedisCluster.from_url(aof_cluster.url.replace("redis+cluster", "redis"))
    marker = _marker()
    # Keys on every node (slots are split in three): each node's AOF logs some.
    keys = [f"secret:{{{i}}}" for i in range(30)]
    for key in keys:
        client.set(key, marker)
    client.delete(*keys)
    node_dirs = []
    for index in range(3):
        node = aof_cluster.node_client(index)
        node_dirs.append(Path(node.config_get("dir")["dir"]))
        node.close()
    assert all(files_holding(folder, marker) for folder in node_dirs)
    done = compact_persistence(client)
    assert len(done) == 3 and all(n.aof_rewritten and not n.rdb_saved for n in done)
    assert [files_holding(folder, marker) for folder in node_dirs] == [[], [], []]
    client.close()


@pytest.mark.cluster
def test_a_cluster_without_aof_is_a_no_op(valkey_cluster: ValkeyCluster) -> None:
    client = RedisCluster.from_url(valkey_cluster.url.replace("redis+cluster", "redis"))
    done = compact_persistence(client)
    assert len(done) == 3
    assert all(not n.aof_rewritten and not n.rdb_saved for n in done)
    client.close()


def _eventually(found: Callable[[], list[str]], timeout_s: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while not (result := found()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return result
