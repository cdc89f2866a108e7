"""On a real 3-node cluster: sessions spread over nodes, one session stays in one slot."""

from __future__ import annotations

from collections import defaultdict

import pytest

from memstrata.clock import SystemClock
from memstrata.config import WorkingMemorySettings
from memstrata.errors import BackendUnavailableError, ConfigError
from memstrata.testing import ValkeyCluster
from memstrata.working import RedisBackend, StepGraph, WorkingMemory

pytestmark = pytest.mark.cluster


def test_sessions_spread_over_nodes_and_each_stays_in_one_slot(
    valkey_cluster: ValkeyCluster, cluster_backend: RedisBackend
) -> None:
    wm = WorkingMemory(cluster_backend, WorkingMemorySettings(), SystemClock())
    sessions = [f"spread-{i}" for i in range(24)]
    for sid in sessions:
        s = wm.session(sid)
        s.plan_steps(StepGraph.of([("a", 1, []), ("b", 1, ["a"])]))
        s.put_api_response("/e", {"sid": sid}, sid)
        s.put_step_result("a", {"v": 1})
        s.append_series("m", [(1.0, 1), (2.0, 2)])
        s.add_pending("t1")
        wm.set_preference(sid, "color", "blue", 0.5)
    # Ask every node directly which keys it physically holds.
    node_of: dict[str, int] = {}
    slot_of: dict[str, int] = {}
    for index in range(len(valkey_cluster.ports)):
        client = valkey_cluster.node_client(index)
        try:
            for key in client.scan_iter(match="*spread-*"):
                node_of[key] = index
                slot_of[key] = int(client.execute_command("CLUSTER KEYSLOT", key))
        finally:
            client.close()
    per_tag: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for key, node in node_of.items():
        tag = key.split("{", 1)[1].split("}", 1)[0]
        per_tag[tag].add((node, slot_of[key]))
    # A session's keys share {sid}; a user's preferences {tenant:user}.
    assert set(per_tag) == {*sessions, *(f"default:{sid}" for sid in sessions)}
    # 6 wm keys per session (plan, its extension table, api, result, ts, pending) +
    # preference and its index.
    assert len(node_of) == 24 * 8
    for tag, placements in per_tag.items():
        # Everything of one tag (wm:{sid}:*, or pref:{tenant:user}:*) lives in one slot.
        assert len(placements) == 1, f"{tag} split over {placements}"
    used_nodes = {node for placements in per_tag.values() for node, _ in placements}
    assert used_nodes == {0, 1, 2}


def test_cluster_url_rejects_unix_sockets() -> None:
    with pytest.raises(ConfigError):
        RedisBackend.from_url("unix:///tmp/x.sock", cluster=True)
    with pytest.raises(ConfigError):
        RedisBackend.from_url("http://localhost:1")


def test_unreachable_cluster_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailableError):
        backend = RedisBackend.from_url("redis+cluster://127.0.0.1:1", socket_timeout_s=0.2)
        backend.ping()


def test_cluster_flag_selects_the_cluster_client(valkey_cluster: ValkeyCluster) -> None:
    backend = RedisBackend.from_url(f"redis://127.0.0.1:{valkey_cluster.ports[1]}", cluster=True)
    try:
        assert backend.is_cluster and backend.ping()
        assert backend.info().nodes == 3
    finally:
        backend.close()
