"""The front's ``/metrics`` under ``serve --workers``: the workers' scrapes merged into
one valid exposition, each sample labelled with its worker."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from memstrata.service.merged_metrics import WORKER_UP, merged_exposition


def _worker_scrape(requests: int, keys: float) -> str:
    registry = CollectorRegistry()
    counter = Counter("memstrata_demo_requests", "Requests.", ["op"], registry=registry)
    counter.labels("retrieve").inc(requests)
    Gauge("memstrata_l2_keys", "Keys.", registry=registry).set(keys)
    Histogram("memstrata_demo_seconds", "Latency.", registry=registry).observe(0.01)
    return generate_latest(registry).decode()


def test_each_family_once_with_every_workers_samples() -> None:
    text = merged_exposition({1: _worker_scrape(5, 40), 0: _worker_scrape(2, 40), 2: None})
    decoded = text.decode()
    type_lines = [line for line in decoded.splitlines() if line.startswith("# TYPE")]
    assert len(type_lines) == len(set(type_lines))  # one family per name, not per worker
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(decoded)
        for s in family.samples
    }
    total = "memstrata_demo_requests_total"
    assert samples[(total, (("op", "retrieve"), ("worker", "0")))] == 2
    assert samples[(total, (("op", "retrieve"), ("worker", "1")))] == 5
    # The worker that did not answer is only in memstrata_worker_up.
    silent = {name for name, labels in samples if ("worker", "2") in labels}
    assert silent == {WORKER_UP}
    assert samples[("memstrata_demo_seconds_count", (("worker", "1"),))] == 1
    assert samples[("memstrata_l2_keys", (("worker", "0"),))] == 40
    assert {w: samples[(WORKER_UP, (("worker", w),))] for w in "012"} == {
        "0": 1.0,
        "1": 1.0,
        "2": 0.0,
    }


def test_no_worker_answering_is_still_an_exposition() -> None:
    merged = merged_exposition({0: None, 1: "<html>busy</html>\n"})
    families = list(text_string_to_metric_families(merged.decode()))
    assert [f.name for f in families] == [WORKER_UP]
    assert [s.value for s in families[0].samples] == [0.0, 0.0]
