"""The engine's health state: the counters its hot paths feed, the log, the schedule.

Hot paths pay a clock read (:meth:`HealthMonitor.claim_due`) and, for an L2 read or a
low-confidence query, a counter update (the gateway runs when a sample drains them). A
sample (a few Valkey round trips and the L3 counts) is taken at most once per
``interval_s``, by the one caller that claims it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from memstrata.clock import Clock
from memstrata.errors import ValidationError
from memstrata.health.counters import BoundedCounter, key_family, merge
from memstrata.health.recorder import HealthLog
from memstrata.health.sample import (
    CONTEXT_LOAD_FAILURES,
    L3_SEARCH_LE,
    RETRIEVALS,
    RETRIEVALS_CONFIDENT_TOP5,
    RETRIEVALS_LOW_CONFIDENCE,
    HealthSample,
)
from memstrata.health.sampler import EngineReadings, Snapshot, build_sample
from memstrata.metrics import sample_value

DEFAULT_INTERVAL_S = 60.0
MAX_QUERY_CHARS = 200
RAW_QUERY_CHARS = 4 * MAX_QUERY_CHARS
"""What is counted of a query before it is sanitized (the rest is never kept)."""

Sanitize = Callable[[str], str]


def default_source() -> str:
    """This process, as samples name it (counters are per process)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class HealthMonitor:
    """Counts hot keys and low-confidence queries; records samples into a log."""

    def __init__(
        self,
        log: HealthLog,
        clock: Clock,
        sanitize: Sanitize,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        max_names: int = 1_000,
        source: str | None = None,
    ) -> None:
        if isinstance(interval_s, bool) or not isinstance(interval_s, int | float):
            raise ValidationError("interval_s", "must be a number")
        if not interval_s > 0:
            raise ValidationError("interval_s", "must be > 0")
        self.log = log
        self._clock = clock
        self._sanitize = sanitize
        self._interval = timedelta(seconds=interval_s)
        self._source = source or default_source()
        self._hot_keys = BoundedCounter(max_names)
        self._queries = BoundedCounter(max_names)
        self._lock = threading.Lock()
        self._next: datetime | None = None
        self._low_confidence = 0
        """Low-confidence retrievals since this monitor started (a counter)."""

    # -- fed by hot paths ------------------------------------------------------------

    def key_read(self, key: str) -> None:
        """One L2 read of ``key`` (counted by family: no session or user in it)."""
        self._hot_keys.add(key_family(key))

    def low_confidence_query(self, text: str) -> None:
        """A retrieval query whose result was skipped or low-confidence. Counted as
        said (bounded); it passes the gateway when a sample takes it, before it goes
        anywhere, so the hot path pays no sanitizer."""
        with self._lock:
            self._low_confidence += 1
        said = " ".join(text[:RAW_QUERY_CHARS].split())
        if said:
            self._queries.add(said)

    def claim_due(self) -> bool:
        """True, for one caller, when ``interval_s`` passed since the last sample (or
        none was taken yet): that caller takes it. Cheap otherwise: one clock read."""
        now = self._clock.now()
        due = self._next
        if due is not None and now < due:
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._next is not None and now < self._next:
                return False
            self._next = now + self._interval
            return True
        finally:
            self._lock.release()

    # -- samples ---------------------------------------------------------------------

    def _clean_query(self, said: str) -> str:
        """A counted query through the gateway, whole, then shortened."""
        clean = self._sanitize(said)
        return clean if len(clean) <= MAX_QUERY_CHARS else clean[: MAX_QUERY_CHARS - 1] + "…"

    def record(self, at: datetime, readings: EngineReadings) -> HealthSample:
        """Build the sample at ``at`` (draining the counters) and append it to the log."""
        hot = merge(*({self._sanitize(k): n} for k, n in self._hot_keys.drain().items()))
        sample = build_sample(
            at,
            readings,
            hot_keys=hot,
            low_confidence_queries=merge(
                *({self._clean_query(q): n} for q, n in self._queries.drain().items())
            ),
            source=self._source,
        )
        with self._lock:
            low_confidence = self._low_confidence
        sample = dataclasses.replace(
            sample, values={**sample.values, **retrieval_values(readings.metrics, low_confidence)}
        )
        with self._lock:
            self._next = max(self._next or at, at + self._interval)
        self.log.append(sample)
        return sample


def retrieval_values(metrics: Snapshot, low_confidence: int) -> Mapping[str, float]:
    """The counters the report's retrieval bounds are checked on: retrievals, those
    with low confidence (``low_confidence``, this monitor's count), those with a
    confident top 5, the routed steps whose context failed to load, and the L3 search
    latency histogram's buckets (every collection together)."""
    values = {
        RETRIEVALS: sample_value(metrics, "memstrata_retrieval_requests_total"),
        RETRIEVALS_LOW_CONFIDENCE: float(low_confidence),
        RETRIEVALS_CONFIDENT_TOP5: sample_value(
            metrics, "memstrata_retrieval_confident_top5_total"
        ),
        CONTEXT_LOAD_FAILURES: sample_value(metrics, "memstrata_context_load_failures_total"),
    }
    for entry in metrics.get("memstrata_l3_search_seconds_bucket", ()):
        name = L3_SEARCH_LE + str(entry["labels"].get("le"))
        values[name] = values.get(name, 0.0) + float(entry["value"])
    return values
