"""`memstrata serve --workers 2`: one front, two engine processes sharded by tenant; every
transport reaches the worker that holds the caller's tenant (and so its sessions)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.service.support import (
    RunningServer,
    cli,
    free_port,
    grpc_call,
    mcp_call,
    read_timeout_s,
    rest_call,
    running_server,
)

from memstrata.errors import ConfigError
from memstrata.service.merged_metrics import WORKER_UP
from memstrata.service.workers import WORKER_HEADER, check_layout, worker_of

# Two tenants that hash to different workers of two.
TENANTS = ("acme", "globex")


def test_tenants_are_spread_and_the_layout_is_fixed(tmp_path: Path) -> None:
    assert {worker_of(t, 2) for t in TENANTS} == {0, 1}
    assert worker_of("acme", 2) == worker_of("acme", 2) and worker_of(None, 2) == 0
    check_layout(tmp_path, 2)
    check_layout(tmp_path, 2)
    with pytest.raises(ConfigError, match="laid out for 2 workers"):
        check_layout(tmp_path, 3)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("sharded"), "--workers", "2") as running:
        yield running


def test_each_tenant_is_served_by_its_worker_over_every_transport(sharded: RunningServer) -> None:
    for tenant in TENANTS:
        key = sharded.admin_keys[tenant]
        sid = f"s-{uuid.uuid4().hex[:8]}"
        rest = rest_call(sharded, key)
        rest("start_session", {"user_id": "u1", "initial_query": "hi", "session_id": sid})
        rest("observe", {"session_id": sid, "role": "user", "text": "I'm allergic to kiwi."})
        stored = rest("remember", {"user_id": "u1", "text": "I live in Lyon.", "wait": True})
        assert [f["attribute"] for f in stored["facts"]] == ["city"]
        reply = httpx.post(
            f"{sharded.url}/v1/get_session",
            json={"session_id": sid},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert reply.headers[WORKER_HEADER] == str(worker_of(tenant, 2))

        # The session opened over REST is reachable over gRPC and MCP: same worker.
        grpc_gen = grpc_call(sharded, key)
        via_grpc = next(grpc_gen)
        built = via_grpc(
            "build_context",
            {
                "session_id": sid,
                "step_intent": "respond",
                "user_input": "Any allergies?",
                "system_prompt": "s",
            },
        )
        assert "kiwi" in str(built["messages"])
        for _ in grpc_gen:
            pass
        assert mcp_call(sharded, key)("get_session", {"session_id": sid})["session_id"] == sid

    # Each worker holds its own tenant's long-term memory, in its own directory.
    for tenant in TENANTS:
        found = rest_call(sharded, sharded.admin_keys[tenant])(
            "retrieve", {"query": "where do I live", "user_id": "u1"}
        )
        assert "Lyon" in found["items"][0]["text"]
    workers = sorted(p.name for p in (sharded.data_dir / "workers").iterdir())
    assert workers == ["0", "1"]


def test_the_front_keeps_authentication_with_the_workers(sharded: RunningServer) -> None:
    anonymous = httpx.post(f"{sharded.url}/v1/retrieve", json={"query": "x"})
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthenticated"


def test_another_worker_count_on_the_same_data_dir_is_refused(sharded: RunningServer) -> None:
    refused = cli(
        "serve",
        "--workers",
        "3",
        "--data-dir",
        str(sharded.data_dir),
        "--port",
        str(free_port()),
        "--grpc-port",
        str(free_port()),
    )
    assert refused.returncode == 6 and "laid out for 2 workers" in refused.stderr


def test_the_fronts_metrics_cover_every_worker(sharded: RunningServer) -> None:
    def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        response = httpx.get(f"{sharded.url}/metrics", timeout=read_timeout_s())
        assert response.status_code == 200 and WORKER_HEADER not in response.headers
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples
        }

    def served(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], worker: int) -> float:
        labels = (("code", "ok"), ("operation", "list_namespaces"), ("transport", "rest"))
        return samples.get(
            ("memstrata_service_requests_total", (*labels, ("worker", str(worker)))), 0.0
        )

    before = scrape()
    assert before[(WORKER_UP, (("worker", "0"),))] == before[(WORKER_UP, (("worker", "1"),))] == 1
    for tenant, calls in zip(TENANTS, (2, 3), strict=True):
        for _ in range(calls):
            rest_call(sharded, sharded.admin_keys[tenant])("list_namespaces", {})
    after = scrape()
    for tenant, calls in zip(TENANTS, (2, 3), strict=True):
        worker = worker_of(tenant, 2)
        assert served(after, worker) - served(before, worker) == calls
