"""memstrata: a layered context engine for long-running LLM agents.

L1 session state (in process, immutable), L2 working memory (Redis/Valkey with
TTLs), L3 long-term memory and knowledge (Qdrant, hybrid dense + BM25), a
sanitizing gateway in front of every write, and a router that builds each step's
context with provenance.
"""

from memstrata.clock import Clock, FakeClock, SystemClock
from memstrata.config import LongTermSettings, Settings, WorkingMemorySettings
from memstrata.engine import ContextEngine
from memstrata.errors import (
    BackendError,
    BackendUnavailableError,
    ConfigError,
    ConflictError,
    ContextMissError,
    IsolationError,
    MemstrataError,
    NotFoundError,
    UnknownIntentError,
    ValidationError,
)
from memstrata.router import (
    ContextBundle,
    ContextItem,
    IntentSpec,
    L2Need,
    L3Need,
    MissingContext,
    Provenance,
)
from memstrata.session import AuthContext, SessionState
from memstrata.working.stepgraph import StepGraph, StepSpec

__version__ = "0.1.0"

__all__ = [
    "AuthContext",
    "BackendError",
    "BackendUnavailableError",
    "Clock",
    "ConfigError",
    "ConflictError",
    "ContextBundle",
    "ContextEngine",
    "ContextItem",
    "ContextMissError",
    "FakeClock",
    "IntentSpec",
    "IsolationError",
    "L2Need",
    "L3Need",
    "LongTermSettings",
    "MemstrataError",
    "MissingContext",
    "NotFoundError",
    "Provenance",
    "SessionState",
    "Settings",
    "StepGraph",
    "StepSpec",
    "SystemClock",
    "UnknownIntentError",
    "ValidationError",
    "WorkingMemorySettings",
    "__version__",
]
