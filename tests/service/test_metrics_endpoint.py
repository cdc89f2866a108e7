"""``GET /metrics`` on a running service: unauthenticated Prometheus text, and the
service's request counters by operation, transport and outcome."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from tests.service.support import CallFailed, RunningServer, grpc_call, read_timeout_s, rest_call

REQUESTS = "memstrata_service_requests_total"
LATENCY_COUNT = "memstrata_service_request_duration_seconds_count"


def scrape(server: RunningServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(f"{server.url}/metrics", timeout=read_timeout_s())
    assert response.status_code == 200
    assert response.headers["content-type"] == CONTENT_TYPE_LATEST
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_is_open_and_counts_calls_by_transport_and_code(server: RunningServer) -> None:
    before = scrape(server)
    names = {name for name, _ in before}
    assert {"memstrata_context_requests_total", "memstrata_l2_keys"} <= names

    key = server.admin_keys["acme"]
    rest = rest_call(server, key)
    rest("list_namespaces", {})
    rest("list_namespaces", {})
    rest("retrieve", {"query": "what tea do I like?", "user_id": "metrics-user"})
    grpc_gen = grpc_call(server, key)
    grpc = next(grpc_gen)
    grpc("list_namespaces", {})
    for _ in grpc_gen:
        pass
    with pytest.raises(CallFailed) as failed:
        rest_call(server, None)("list_namespaces", {})
    assert failed.value.status == 401

    after = scrape(server)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    ok_rest = {"operation": "list_namespaces", "transport": "rest", "code": "ok"}
    assert delta(REQUESTS, **ok_rest) == 2
    assert delta(REQUESTS, operation="list_namespaces", transport="grpc", code="ok") == 1
    assert (
        delta(REQUESTS, operation="list_namespaces", transport="rest", code=failed.value.code) == 1
    )
    assert failed.value.code == "unauthenticated"
    assert delta(LATENCY_COUNT, operation="list_namespaces", transport="rest") == 3
    assert delta(LATENCY_COUNT, operation="list_namespaces", transport="grpc") == 1
    assert delta(REQUESTS, operation="retrieve", transport="rest", code="ok") == 1
    # the engine's own metrics come with the service's, from the same registry
    assert delta("memstrata_retrieval_requests_total", collection="memories") == 1
    assert ("memstrata_l2_keys", ()) in after
