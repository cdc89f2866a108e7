"""L2 working memory over the Redis protocol (docs/architecture.md, "The layers").

``WorkingMemory(backend, settings, clock).session(sid)`` gives a session view with
API-response caching, dependency-driven step results, windowed time series and a
pending-task set. Backends: :class:`RedisBackend` (server, cluster, or the
:class:`EmbeddedValkey` socket) and :class:`InMemoryBackend`.
"""

from memstrata.working.backend import BackendInfo, KeyInfo, KVBackend
from memstrata.working.embedded import EmbeddedValkey, valkey_binary
from memstrata.working.inmemory import InMemoryBackend
from memstrata.working.memory import SessionWorkingMemory, ValueSanitizer, WorkingMemory
from memstrata.working.redis_backend import RedisBackend
from memstrata.working.stepgraph import StepGraph, StepSpec
from memstrata.working.values import (
    MAX_VALUE_BYTES,
    Preference,
    SeriesPoint,
    StoredPlan,
    WorkingItem,
    WorkingKey,
)

__all__ = [
    "MAX_VALUE_BYTES",
    "BackendInfo",
    "EmbeddedValkey",
    "InMemoryBackend",
    "KVBackend",
    "KeyInfo",
    "Preference",
    "RedisBackend",
    "SeriesPoint",
    "SessionWorkingMemory",
    "StepGraph",
    "StepSpec",
    "StoredPlan",
    "ValueSanitizer",
    "WorkingItem",
    "WorkingKey",
    "WorkingMemory",
    "valkey_binary",
]
