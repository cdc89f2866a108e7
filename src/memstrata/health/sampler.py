"""A health sample from what the engine read (pure functions; the engine does the I/O)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memstrata.feedback.events import FEEDBACK_KINDS
from memstrata.health.counters import top
from memstrata.health.sample import (
    CER_EFFECTIVE,
    CER_INEFFECTIVE,
    DECISION_ROUTES,
    DEGRADED_READS,
    EMBEDDER_BREAKER_OPEN,
    FALLBACKS,
    L1_BYTES,
    L1_SESSIONS,
    L1_STALE_WRITES,
    L2_EXPIRED,
    L2_KEYS,
    L2_MEMORY,
    L3_BREAKER_OPEN,
    L3_POINTS,
    L3_SERVER_POINTS,
    TOOL_OUTCOMES,
    HealthSample,
    decision_name,
    feedback_name,
    tool_name,
)
from memstrata.metrics import sample_value
from memstrata.session.state import SessionState
from memstrata.working.backend import BackendInfo

L1_MEASURED_SESSIONS = 1_000
"""Sessions whose size is measured; with more open, the total is extrapolated."""
HOT_KEYS_KEPT = 50
QUERIES_KEPT = 20
"""Per sample: the report ranks the sums over many samples, so a few more than it shows."""

Snapshot = Mapping[str, list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class EngineReadings:
    """What one sample is made of, as the engine read it."""

    sessions: int
    l1_bytes: int
    stale_writes: int
    working: BackendInfo | None
    points: Mapping[str, int]
    """Long-term points per collection."""
    metrics: Snapshot = field(default_factory=dict)
    """``engine.metrics()``."""
    points_shared: bool = False
    """The points are a server's that every process reads (not added up)."""


def l1_bytes(states: Sequence[SessionState], total: int) -> int:
    """Approximate L1 size: the JSON of the first states measured, scaled to ``total``."""
    measured = states[:L1_MEASURED_SESSIONS]
    if not measured:
        return 0
    size = sum(len(json.dumps(s.as_dict(), default=str)) for s in measured)
    return round(size * total / len(measured))


def sample_values(readings: EngineReadings) -> dict[str, float]:
    """The sample's named values (see :mod:`memstrata.health.sample`); a metric the
    engine does not export counts as 0."""
    m = readings.metrics
    values: dict[str, float] = {
        L1_SESSIONS: readings.sessions,
        L1_BYTES: readings.l1_bytes,
        L1_STALE_WRITES: readings.stale_writes,
    }
    if readings.working is not None:
        values[L2_KEYS] = readings.working.keys
        values[L2_EXPIRED] = readings.working.expired_keys
        values[L2_MEMORY] = readings.working.used_memory_bytes
    for collection, count in readings.points.items():
        values[(L3_SERVER_POINTS if readings.points_shared else L3_POINTS) + collection] = count
    for route in DECISION_ROUTES:
        values[decision_name(route)] = sample_value(m, "memstrata_decisions_total", route=route)
    for outcome in TOOL_OUTCOMES:
        values[tool_name(outcome)] = sample_value(m, "memstrata_tool_calls_total", outcome=outcome)
    for kind in FEEDBACK_KINDS:
        values[feedback_name(kind)] = sample_value(m, "memstrata_feedback_total", kind=kind)
    values[FALLBACKS] = sample_value(m, "memstrata_fallbacks_total")
    # The reader's breakers (0 closed, 1 half-open, 2 open): 1 while not closed.
    for name, backend in ((L3_BREAKER_OPEN, "l3"), (EMBEDDER_BREAKER_OPEN, "embedder")):
        values[name] = float(sample_value(m, "memstrata_breaker_state", backend=backend) > 0)
    values[DEGRADED_READS] = sample_value(m, "memstrata_degraded_reads_total")
    values[CER_EFFECTIVE] = sample_value(m, "memstrata_cer_steps_total", effective="true")
    values[CER_INEFFECTIVE] = sample_value(m, "memstrata_cer_steps_total", effective="false")
    return values


def build_sample(
    at: datetime,
    readings: EngineReadings,
    *,
    hot_keys: Mapping[str, int],
    low_confidence_queries: Mapping[str, int],
    source: str,
) -> HealthSample:
    """The sample at ``at``; the counts keep their largest entries only (bounded)."""
    return HealthSample(
        at=at,
        values=sample_values(readings),
        hot_keys=top(hot_keys, HOT_KEYS_KEPT),
        low_confidence_queries=top(low_confidence_queries, QUERIES_KEPT),
        source=source,
    )
