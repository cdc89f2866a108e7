"""Prometheus metrics of one engine (and of the service over it), in process.

Each :class:`EngineMetrics` owns its own :class:`prometheus_client.CollectorRegistry`
(never the global default one: several engines can live in one process). The engine
records into it from :meth:`ContextEngine.retrieve`, :meth:`ContextEngine.route` and
:meth:`ContextEngine.build_context`; the layers' gauges (L2 keys, ingest queue depth)
are read from the backends at scrape time. ``engine.metrics()`` is the JSON-ready
snapshot of the same samples ``GET /metrics`` exposes as Prometheus text.

Two retrieval metrics are proxies, named as such: without relevance labels the
engine cannot know recall or hit rate, so it counts retrievals whose top 5 holds an
item at or above ``low_confidence_cosine`` (``memstrata_retrieval_confident_top5``)
and retrievals that came back empty.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memstrata.context.values import BuiltContext
from memstrata.gateway.labels import safe_label
from memstrata.retrieval.results import RetrievalResult
from memstrata.router.bundle import ContextBundle
from memstrata.working.backend import BackendInfo
from memstrata.write.submit import WriteStats

log = logging.getLogger("memstrata.metrics")

LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
TOKEN_BUCKETS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
SHARE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
CONFIDENT_TOP = 5
UNKNOWN = "unknown"


# -- L3 (long-term store) ----------------------------------------------------------------

L3_SEARCH_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    1.0,
)
"""An embedded hybrid search takes ~0.2-2 ms: finer than :data:`LATENCY_BUCKETS`."""


class _L3Collector(Collector):
    """``memstrata_l3_points{collection}``, read from the store at scrape time (the
    index's own counts: no filter evaluated); left out when the store fails."""

    def __init__(self) -> None:
        self.point_counts: Callable[[], Mapping[str, int]] | None = None
        self.catchup: Callable[[], Mapping[str, object]] | None = None

    def collect(self) -> Iterable[Metric]:
        return [*self._points(), *self._catchup()]

    def _points(self) -> list[Metric]:
        if self.point_counts is None:
            return []
        try:
            counts = self.point_counts()
        except Exception:  # a scrape never fails because a backend is down
            log.debug("long-term store point counts unavailable", exc_info=True)
            return []
        points = GaugeMetricFamily(
            "memstrata_l3_points",
            "Points in each long-term collection (L3), every tenant together.",
            labels=["collection"],
        )
        for collection, count in sorted(counts.items()):
            points.add_metric([safe_label(collection)], count)
        return [points]

    def _catchup(self) -> list[Metric]:
        if self.catchup is None:
            return []
        state = self.catchup()
        found: list[Metric] = []
        for name, key, doc in (
            (
                "memstrata_l3_multilingual_pending_points",
                "points_pending",
                "Points of the tenant being caught up still awaiting the multilingual vector.",
            ),
            (
                "memstrata_l3_multilingual_catchup_tenants",
                "tenants_queued",
                "Tenants queued or running for the multilingual vector's catch-up.",
            ),
        ):
            gauge = GaugeMetricFamily(name, doc)
            value = state.get(key, 0)
            gauge.add_metric([], float(value) if isinstance(value, int | float) else 0.0)
            found.append(gauge)
        return found


class _L3Metrics:
    """The L3 metrics of one registry: the points gauge and the search latency."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.search_seconds = Histogram(
            "memstrata_l3_search_seconds",
            "Long-term store search latency (a search, or one route of a retrieval), "
            "by collection.",
            ["collection"],
            buckets=L3_SEARCH_BUCKETS,
            registry=registry,
        )
        self._search_children: dict[str, Histogram] = {}
        self.collector = _L3Collector()
        registry.register(self.collector)

    def observe_search(self, collection: str, seconds: float) -> None:
        child = self._search_children.get(collection)
        if child is None:
            child = self._search_children[collection] = self.search_seconds.labels(
                safe_label(collection)
            )
        child.observe(seconds)


BREAKER_VALUES: Mapping[str, int] = {"closed": 0, "half_open": 1, "open": 2}
"""``memstrata_breaker_state``'s value per state."""


class _BreakerCollector(Collector):
    """``memstrata_breaker_state{backend}`` (0 closed, 1 half-open, 2 open) and
    ``memstrata_breaker_opened{backend}``, read from the reader's breakers at scrape
    time (docs/service.md, "When L3 is slow or down")."""

    def __init__(self) -> None:
        self.states: Callable[[], Mapping[str, str]] | None = None
        self.opened: Callable[[], Mapping[str, int]] | None = None

    def collect(self) -> Iterable[Metric]:
        if self.states is None:
            return []
        state = GaugeMetricFamily(
            "memstrata_breaker_state",
            "Circuit breaker of each backend the reader guards (l3, embedder): "
            "0 closed, 1 half-open (one probe lets through), 2 open (skipped).",
            labels=["backend"],
        )
        for backend, value in sorted(self.states().items()):
            state.add_metric([backend], BREAKER_VALUES.get(value, 0))
        metrics: list[Metric] = [state]
        if self.opened is not None:
            opened = CounterMetricFamily(
                "memstrata_breaker_opened",
                "Times each backend's circuit breaker opened.",
                labels=["backend"],
            )
            for backend, count in sorted(self.opened().items()):
                opened.add_metric([backend], count)
            metrics.append(opened)
        return metrics


class _LayerCollector(Collector):
    """Gauges read from the backends at scrape time; a backend that fails is left out."""

    def __init__(self) -> None:
        self.working_info: Callable[[], BackendInfo] | None = None
        self.write_stats: Callable[[], WriteStats] | None = None

    def collect(self) -> Iterable[Metric]:
        metrics: list[Metric] = []
        if self.working_info is not None:
            try:
                info = self.working_info()
            except Exception:  # a scrape never fails because a backend is down
                log.debug("working memory info unavailable", exc_info=True)
            else:
                keys = GaugeMetricFamily(
                    "memstrata_l2_keys", "Keys in working memory (L2, DBSIZE summed)."
                )
                keys.add_metric([], info.keys)
                expired = CounterMetricFamily(
                    "memstrata_l2_expired_keys",
                    "Keys the working-memory server expired since it started (INFO).",
                )
                expired.add_metric([], info.expired_keys)
                metrics += [keys, expired]
        if self.write_stats is not None:
            try:
                stats = self.write_stats()
            except Exception:
                log.debug("ingest stats unavailable", exc_info=True)
            else:
                queue = stats.queue
                if queue is not None:
                    for name, help_text, value in (
                        ("length", "Entries in the ingest stream (XLEN).", queue.length),
                        (
                            "pending",
                            "Entries delivered to a worker, not yet acknowledged (XPENDING).",
                            queue.pending,
                        ),
                        ("lag", "Entries not yet delivered to any worker.", queue.lag),
                        (
                            "dead_lettered",
                            "Entries in the dead-letter stream.",
                            queue.dead_lettered,
                        ),
                    ):
                        if value is not None:
                            gauge = GaugeMetricFamily(f"memstrata_ingest_queue_{name}", help_text)
                            gauge.add_metric([], value)
                            metrics.append(gauge)
                failures = CounterMetricFamily(
                    "memstrata_ingest_enqueue_failures",
                    "Writes this process could not enqueue.",
                )
                failures.add_metric([], stats.enqueue_failures)
                metrics.append(failures)
        return metrics


class EngineMetrics:
    """The engine's counters and histograms, in a registry of their own."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.retrievals = Counter(
            "memstrata_retrieval_requests", "Retrievals, by collection.", ["collection"], registry=r
        )
        self.retrieval_seconds = Histogram(
            "memstrata_retrieval_duration_seconds",
            "Retrieval latency, by collection.",
            ["collection"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.retrieval_empty = Counter(
            "memstrata_retrieval_empty",
            "Retrievals that returned no item.",
            ["collection"],
            registry=r,
        )
        self.retrieval_l3_skipped = Counter(
            "memstrata_retrieval_l3_skipped",
            "Retrievals whose every candidate was below the skip threshold.",
            ["collection"],
            registry=r,
        )
        self.retrieval_confident_top5 = Counter(
            "memstrata_retrieval_confident_top5",
            "Retrievals whose top 5 holds an item with cosine >= low_confidence_cosine "
            "(a recall / top-5 hit proxy: no relevance labels are known).",
            ["collection"],
            registry=r,
        )
        self.contexts = Counter(
            "memstrata_context_requests", "build_context calls that built a context.", registry=r
        )
        self.context_tokens = Histogram(
            "memstrata_context_tokens",
            "Tokens of each built context.",
            buckets=TOKEN_BUCKETS,
            registry=r,
        )
        self.context_section_share = Histogram(
            "memstrata_context_section_budget_share",
            "Each section's used tokens over its budget, per built context.",
            ["section"],
            buckets=SHARE_BUCKETS,
            registry=r,
        )
        self.context_truncated = Counter(
            "memstrata_context_truncated",
            "Built contexts that left an item out for lack of budget.",
            registry=r,
        )
        self.context_compressed = Counter(
            "memstrata_context_compressed",
            "Built contexts whose older history was replaced by a summary.",
            registry=r,
        )
        self.routes = Counter(
            "memstrata_route_requests", "Routed steps, by intent.", ["intent"], registry=r
        )
        self.route_seconds = Histogram(
            "memstrata_route_duration_seconds",
            "Routing latency (context bundle loading), by intent.",
            ["intent"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.route_l2_misses = Counter(
            "memstrata_route_l2_misses",
            "Working-memory (L2) items an intent asked for that were missing or expired.",
            ["intent"],
            registry=r,
        )
        self.route_failures = Counter(
            "memstrata_context_load_failures",
            "Routed steps that raised instead of returning a bundle, by intent.",
            ["intent"],
            registry=r,
        )
        self.degraded_reads = Counter(
            "memstrata_degraded_reads",
            "Reads answered without L3 (l3_timeout, l3_unavailable, circuit_open: from "
            "L2 and L1) or without the query's vector (embedder_*: BM25 alone), by "
            "operation (retrieve, route) and reason.",
            ["operation", "reason"],
            registry=r,
        )
        self._breakers = _BreakerCollector()
        r.register(self._breakers)
        self._layers = _LayerCollector()
        r.register(self._layers)
        self._l3 = _L3Metrics(r)

    # -- sources read at scrape time -------------------------------------------

    def watch_layers(
        self,
        *,
        working_info: Callable[[], BackendInfo] | None = None,
        write_stats: Callable[[], WriteStats] | None = None,
    ) -> None:
        """Read the L2 and ingest-queue gauges from these calls at each scrape."""
        self._layers.working_info = working_info
        self._layers.write_stats = write_stats

    # -- L3 (long-term store) -------------------------------------------------------

    def watch_l3(
        self,
        *,
        point_counts: Callable[[], Mapping[str, int]] | None = None,
        catchup: Callable[[], Mapping[str, object]] | None = None,
    ) -> None:
        """Read ``memstrata_l3_points`` from ``point_counts`` at each scrape
        (``LongTermStore.point_counts``), and the multilingual catch-up's gauges
        from ``catchup`` (``LongTermStore.catchup_state().as_dict``)."""
        self._l3.collector.point_counts = point_counts
        self._l3.collector.catchup = catchup

    def observe_l3_search(self, collection: str, seconds: float) -> None:
        """One long-term store search (``LongTermStore.observe_searches`` calls it)."""
        self._l3.observe_search(collection, seconds)

    def watch_breakers(
        self,
        states: Callable[[], Mapping[str, str]],
        opened: Callable[[], Mapping[str, int]] | None = None,
    ) -> None:
        """Read ``memstrata_breaker_state`` (and ``_opened``) from these calls at each
        scrape (``ReadGuard.states``)."""
        self._breakers.states = states
        self._breakers.opened = opened

    # -- recording -----------------------------------------------------------------

    def _degraded(self, operation: str, l3: str | None, dense: str | None) -> None:
        for reason in (l3, dense):
            if reason is not None and reason != "below_threshold":
                self.degraded_reads.labels(operation, reason).inc()

    def observe_retrieval(
        self, collection: str, seconds: float, result: RetrievalResult, confident_cosine: float
    ) -> None:
        label = safe_label(collection)
        self.retrievals.labels(label).inc()
        self.retrieval_seconds.labels(label).observe(seconds)
        if not result.items:
            self.retrieval_empty.labels(label).inc()
        if result.l3_skip_reason == "below_threshold":
            self.retrieval_l3_skipped.labels(label).inc()
        self._degraded("retrieve", result.l3_skip_reason, result.dense_skip_reason)
        if any(item.cosine >= confident_cosine for item in result.items[:CONFIDENT_TOP]):
            self.retrieval_confident_top5.labels(label).inc()

    def observe_route(self, intent: str, seconds: float, bundle: ContextBundle) -> None:
        intent = safe_label(intent)
        self.routes.labels(intent).inc()
        self.route_seconds.labels(intent).observe(seconds)
        misses = sum(1 for missing in bundle.missing if missing.layer == "L2")
        if misses:
            self.route_l2_misses.labels(intent).inc(misses)
        self._degraded("route", bundle.l3_skip_reason, bundle.dense_skip_reason)

    def route_failed(self, intent: str) -> None:
        self.route_failures.labels(safe_label(intent)).inc()

    def observe_context(self, built: BuiltContext) -> None:
        self.contexts.inc()
        self.context_tokens.observe(built.total_tokens)
        for usage in built.sections:
            if usage.budget > 0:
                self.context_section_share.labels(safe_label(usage.section)).observe(
                    usage.used / usage.budget
                )
        if any(dropped.reason == "over_budget" for dropped in built.dropped):
            self.context_truncated.inc()
        if built.summary is not None or any(d.reason == "compressed" for d in built.dropped):
            self.context_compressed.inc()

    # -- reading ---------------------------------------------------------------------

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """Every sample, JSON-ready: ``{sample name: [{"labels": {...}, "value": v}]}``.

        Histograms appear as their ``_bucket``, ``_count`` and ``_sum`` samples;
        ``_created`` timestamps are left out.
        """
        return snapshot_of(self.registry)

    def text(self) -> bytes:
        """The Prometheus text exposition of the registry."""
        return generate_latest(self.registry)


def snapshot_of(registry: CollectorRegistry) -> dict[str, list[dict[str, Any]]]:
    """The samples of ``registry`` as :meth:`EngineMetrics.snapshot` gives them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            out.setdefault(sample.name, []).append(
                {"labels": dict(sample.labels), "value": sample.value}
            )
    return out


def sample_value(snapshot: Mapping[str, list[dict[str, Any]]], name: str, **labels: str) -> float:
    """The value of sample ``name`` whose labels include ``labels`` (summed; 0 if none)."""
    return float(
        sum(
            entry["value"]
            for entry in snapshot.get(name, ())
            if all(entry["labels"].get(k) == v for k, v in labels.items())
        )
    )


class ServiceMetrics:
    """The service's request counters; one per registry (see :meth:`of`)."""

    _by_registry: ClassVar[weakref.WeakKeyDictionary[CollectorRegistry, ServiceMetrics]] = (
        weakref.WeakKeyDictionary()
    )
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "memstrata_service_requests",
            "Service calls, by operation, transport and outcome code (ok or the error code).",
            ["operation", "transport", "code"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "memstrata_service_request_duration_seconds",
            "Service call latency, by operation and transport.",
            ["operation", "transport"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    @classmethod
    def of(cls, registry: CollectorRegistry) -> ServiceMetrics:
        """The service metrics registered in ``registry`` (created on first use), so
        several services over one engine share them."""
        with cls._lock:
            found = cls._by_registry.get(registry)
            if found is None:
                found = cls._by_registry[registry] = cls(registry)
            return found

    def observe(self, operation: str, transport: str, code: str, seconds: float) -> None:
        operation = safe_label(operation)
        self.requests.labels(operation, transport, code).inc()
        self.request_seconds.labels(operation, transport).observe(seconds)
