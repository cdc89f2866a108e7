"""One health sample: what the engine measured at one instant (pure values, JSON).

``values`` maps a name to a number. Counters are cumulative (a process restart
starts them again from 0; the report takes increases, see
:mod:`memstrata.health.report`). Per-process names (L1, the decision counters, L3
with the embedded index) are added up across the processes that recorded samples;
a server's numbers (L2 from Valkey, L3 from a Qdrant server) are the same for every
process and are not.
``hot_keys`` and ``low_confidence_queries`` count what happened since the previous
sample of the same process.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from memstrata.decision.decide import ROUTES
from memstrata.decision.tools import OUTCOMES
from memstrata.errors import ValidationError
from memstrata.feedback.events import FEEDBACK_KINDS

# -- value names ---------------------------------------------------------------------

L1_SESSIONS = "l1.sessions"
L1_BYTES = "l1.bytes"
L1_STALE_WRITES = "l1.stale_writes"
L2_KEYS = "l2.keys"
L2_EXPIRED = "l2.expired_keys"
L2_MEMORY = "l2.used_memory_bytes"
L3_POINTS = "l3.points."
"""Prefix: ``l3.points.<collection>`` (the embedded index: this process's points)."""
L3_SERVER_POINTS = "l3.server_points."
"""Prefix: ``l3.server_points.<collection>`` (a Qdrant server every process shares)."""

DECISION_ROUTES = ROUTES
TOOL_OUTCOMES = OUTCOMES
FALLBACKS = "fallbacks"
L3_BREAKER_OPEN = "l3.breaker_open"
"""1 while this process's L3 circuit breaker is not closed (added up across processes:
how many skip L3); docs/service.md, "When L3 is slow or down"."""
EMBEDDER_BREAKER_OPEN = "embedder.breaker_open"
"""Likewise for the query embedder's breaker."""
DEGRADED_READS = "reads.degraded"
"""Reads answered without L3 or without the query's vector (a counter)."""
CER_EFFECTIVE = "cer.effective"
CER_INEFFECTIVE = "cer.ineffective"
RETRIEVALS = "retrievals"
"""Retrievals made (every collection; a counter)."""
RETRIEVALS_LOW_CONFIDENCE = "retrievals.low_confidence"
"""Retrievals skipped or answered with low confidence (those the report lists)."""
RETRIEVALS_CONFIDENT_TOP5 = "retrievals.confident_top5"
"""Retrievals whose top 5 holds an item at or above the low-confidence cosine (the
engine's proxy for a top-5 hit, :mod:`memstrata.metrics`)."""
CONTEXT_LOAD_FAILURES = "context.load_failures"
"""Routed steps that raised instead of returning a bundle."""
L3_SEARCH_LE = "l3.search_le."
"""Prefix: ``l3.search_le.<seconds>`` (``+Inf`` last): L3 searches that took at most
that long, every collection together (the latency histogram's cumulative buckets, a
counter each)."""


def decision_name(route: str) -> str:
    return f"decisions.{route}"


def tool_name(outcome: str) -> str:
    return f"tool_calls.{outcome}"


def feedback_name(kind: str) -> str:
    return f"feedback.{kind}"


COUNTERS: frozenset[str] = frozenset(
    {
        L1_STALE_WRITES,
        L2_EXPIRED,
        FALLBACKS,
        DEGRADED_READS,
        CER_EFFECTIVE,
        CER_INEFFECTIVE,
        RETRIEVALS,
        RETRIEVALS_LOW_CONFIDENCE,
        RETRIEVALS_CONFIDENT_TOP5,
        CONTEXT_LOAD_FAILURES,
        *(decision_name(r) for r in DECISION_ROUTES),
        *(tool_name(o) for o in TOOL_OUTCOMES),
        *(feedback_name(k) for k in FEEDBACK_KINDS),
    }
)
"""Cumulative names; every other name is a gauge."""

SHARED: frozenset[str] = frozenset({L2_KEYS, L2_EXPIRED, L2_MEMORY})
"""Names every process reads from the same server: never added up across processes."""

MAX_NAME_CHARS = 200
MAX_ENTRIES = 500


def is_counter(name: str) -> bool:
    return name in COUNTERS


def is_shared(name: str) -> bool:
    return name in SHARED or name.startswith(L3_SERVER_POINTS)


def _frozen_numbers(field_name: str, raw: Mapping[str, Any], kind: type) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ValidationError(field_name, "must be a mapping of names to numbers")
    if len(raw) > MAX_ENTRIES:
        raise ValidationError(field_name, f"must hold at most {MAX_ENTRIES} entries")
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            raise ValidationError(field_name, f"names must be 1-{MAX_NAME_CHARS} characters")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(field_name, f"{name!r} must be a number")
        if not math.isfinite(value):
            raise ValidationError(field_name, f"{name!r} must be finite")
        out[name] = kind(value)
    return MappingProxyType(dict(sorted(out.items())))


@dataclass(frozen=True, slots=True)
class HealthSample:
    """The engine's health numbers at ``at`` (UTC), as recorded by ``source``."""

    at: datetime
    values: Mapping[str, float]
    hot_keys: Mapping[str, int] = field(default_factory=dict)
    """L2 reads per key family since the previous sample."""
    low_confidence_queries: Mapping[str, int] = field(default_factory=dict)
    """Sanitized retrieval queries that came back low-confidence, since the previous sample."""
    source: str = "engine"
    """The process that took it (counters are per process)."""

    def __post_init__(self) -> None:
        if not isinstance(self.at, datetime) or self.at.tzinfo is None:
            raise ValidationError("at", "must be a timezone-aware datetime")
        if not isinstance(self.source, str) or not 0 < len(self.source) <= MAX_NAME_CHARS:
            raise ValidationError("source", f"must be 1-{MAX_NAME_CHARS} characters")
        object.__setattr__(self, "at", self.at.astimezone(UTC))
        object.__setattr__(self, "values", _frozen_numbers("values", self.values, float))
        object.__setattr__(self, "hot_keys", _frozen_numbers("hot_keys", self.hot_keys, int))
        object.__setattr__(
            self,
            "low_confidence_queries",
            _frozen_numbers("low_confidence_queries", self.low_confidence_queries, int),
        )

    def to_json(self) -> str:
        """Compact JSON (what the recorder stores)."""
        return json.dumps(
            {
                "at": self.at.timestamp(),
                "source": self.source,
                "values": dict(self.values),
                "hot_keys": dict(self.hot_keys),
                "low_confidence_queries": dict(self.low_confidence_queries),
            },
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> HealthSample:
        """The sample :meth:`to_json` wrote; ValidationError when it is not one."""
        try:
            raw = json.loads(text)
            return cls(
                at=datetime.fromtimestamp(float(raw["at"]), UTC),
                values=raw["values"],
                hot_keys=raw.get("hot_keys", {}),
                low_confidence_queries=raw.get("low_confidence_queries", {}),
                source=raw.get("source", "engine"),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, ValidationError):
                raise
            raise ValidationError("sample", f"not a recorded health sample: {exc}") from exc
