"""memstrata: a layered context engine for long-running LLM agents.

L1 session state (in process, immutable), L2 working memory (Redis/Valkey with
TTLs), L3 long-term memory and knowledge (Qdrant, hybrid dense + BM25), a
sanitizing gateway in front of every write, and a router that builds each step's
context with provenance.

:class:`ContextEngine` is the API: every capability is one of its methods, and
every type in their signatures, with every error memstrata raises, is importable
from here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstrata.clock import Clock, FakeClock, SystemClock
    from memstrata.config import (
        LongTermSettings,
        MemorySettings,
        PipelineSettings,
        Settings,
        WorkingMemorySettings,
    )
    from memstrata.context import BudgetShares, BuiltContext, ContextBudget, ToolResult, Turn
    from memstrata.decision import (
        Decision,
        DecisionRates,
        FeedbackReceipt,
        FeedbackReport,
        ReplyCheck,
        RiskThresholds,
        Slot,
        StepPolicy,
        ToolOutcome,
        ToolSpec,
        TraceCard,
    )
    from memstrata.embed.protocol import Embedder
    from memstrata.engine import (
        ConsolidationResult,
        ContextEngine,
        EngineParts,
        WrittenMemory,
    )
    from memstrata.errors import (
        AuthenticationError,
        BackendError,
        BackendUnavailableError,
        BudgetError,
        CompactionTimeoutError,
        ConfigError,
        ConflictError,
        ContextMissError,
        DatasetError,
        ExtractionError,
        ExtractionUnavailableError,
        FlushTimeoutError,
        IsolationError,
        MemstrataError,
        ModelError,
        ModelUnavailableError,
        NotFoundError,
        PermissionDeniedError,
        RateLimitedError,
        UnknownIntentError,
        ValidationError,
    )
    from memstrata.extract.protocol import Extractor
    from memstrata.gateway.audit import AuditEvent
    from memstrata.gateway.policy import FieldPolicy
    from memstrata.health import HealthReport, HealthSample
    from memstrata.knowledge.documents import Document, DocumentFormat
    from memstrata.knowledge.hot import MergeReport
    from memstrata.knowledge.ingest import FileError, IngestProgress, IngestReport
    from memstrata.longterm.points import Hit
    from memstrata.memory.episodes import Episode
    from memstrata.memory.units import MemoryUnit, UnitSource
    from memstrata.retrieval.results import RetrievalResult, RetrievedItem
    from memstrata.router import (
        ContextBundle,
        ContextItem,
        IntentRegistry,
        IntentSpec,
        L2Need,
        L3Need,
        MissingContext,
        Provenance,
    )
    from memstrata.session import AuthContext, SessionState
    from memstrata.sharing.items import StoreItem
    from memstrata.sharing.namespaces import AccessRequest, Namespace, SharedItem
    from memstrata.upkeep.consolidate import ConsolidationReport
    from memstrata.upkeep.forget import ForgetReport
    from memstrata.working.memory import SessionWorkingMemory
    from memstrata.working.stepgraph import StepGraph, StepSpec
    from memstrata.working.values import (
        Preference,
        SeriesPoint,
        StoredPlan,
        WorkingItem,
        WorkingKey,
    )
    from memstrata.write.submit import WriteReceipt, WriteStats

# The names are imported on first use, so that importing a light part of memstrata
# (``memstrata.client``, ``memstrata.errors``) does not import the engine and its models.
_WHERE: dict[str, str] = {
    "Clock": "memstrata.clock",
    "FakeClock": "memstrata.clock",
    "SystemClock": "memstrata.clock",
    "LongTermSettings": "memstrata.config",
    "MemorySettings": "memstrata.config",
    "PipelineSettings": "memstrata.config",
    "Settings": "memstrata.config",
    "WorkingMemorySettings": "memstrata.config",
    "BudgetShares": "memstrata.context",
    "BuiltContext": "memstrata.context",
    "ContextBudget": "memstrata.context",
    "ToolResult": "memstrata.context",
    "Turn": "memstrata.context",
    "Decision": "memstrata.decision",
    "DecisionRates": "memstrata.decision",
    "FeedbackReceipt": "memstrata.decision",
    "FeedbackReport": "memstrata.decision",
    "ReplyCheck": "memstrata.decision",
    "RiskThresholds": "memstrata.decision",
    "Slot": "memstrata.decision",
    "StepPolicy": "memstrata.decision",
    "ToolOutcome": "memstrata.decision",
    "ToolSpec": "memstrata.decision",
    "TraceCard": "memstrata.decision",
    "Embedder": "memstrata.embed.protocol",
    "ConsolidationResult": "memstrata.engine",
    "ContextEngine": "memstrata.engine",
    "EngineParts": "memstrata.engine",
    "WrittenMemory": "memstrata.engine",
    "AuthenticationError": "memstrata.errors",
    "BackendError": "memstrata.errors",
    "BackendUnavailableError": "memstrata.errors",
    "BudgetError": "memstrata.errors",
    "CompactionTimeoutError": "memstrata.errors",
    "ConfigError": "memstrata.errors",
    "ConflictError": "memstrata.errors",
    "ContextMissError": "memstrata.errors",
    "DatasetError": "memstrata.errors",
    "ExtractionError": "memstrata.errors",
    "ExtractionUnavailableError": "memstrata.errors",
    "FlushTimeoutError": "memstrata.errors",
    "IsolationError": "memstrata.errors",
    "MemstrataError": "memstrata.errors",
    "ModelError": "memstrata.errors",
    "ModelUnavailableError": "memstrata.errors",
    "NotFoundError": "memstrata.errors",
    "PermissionDeniedError": "memstrata.errors",
    "RateLimitedError": "memstrata.errors",
    "UnknownIntentError": "memstrata.errors",
    "ValidationError": "memstrata.errors",
    "Extractor": "memstrata.extract.protocol",
    "AuditEvent": "memstrata.gateway.audit",
    "FieldPolicy": "memstrata.gateway.policy",
    "HealthReport": "memstrata.health",
    "HealthSample": "memstrata.health",
    "Document": "memstrata.knowledge.documents",
    "DocumentFormat": "memstrata.knowledge.documents",
    "MergeReport": "memstrata.knowledge.hot",
    "FileError": "memstrata.knowledge.ingest",
    "IngestProgress": "memstrata.knowledge.ingest",
    "IngestReport": "memstrata.knowledge.ingest",
    "Hit": "memstrata.longterm.points",
    "Episode": "memstrata.memory.episodes",
    "MemoryUnit": "memstrata.memory.units",
    "UnitSource": "memstrata.memory.units",
    "RetrievalResult": "memstrata.retrieval.results",
    "RetrievedItem": "memstrata.retrieval.results",
    "ContextBundle": "memstrata.router",
    "ContextItem": "memstrata.router",
    "IntentRegistry": "memstrata.router",
    "IntentSpec": "memstrata.router",
    "L2Need": "memstrata.router",
    "L3Need": "memstrata.router",
    "MissingContext": "memstrata.router",
    "Provenance": "memstrata.router",
    "AuthContext": "memstrata.session",
    "SessionState": "memstrata.session",
    "StoreItem": "memstrata.sharing.items",
    "AccessRequest": "memstrata.sharing.namespaces",
    "Namespace": "memstrata.sharing.namespaces",
    "SharedItem": "memstrata.sharing.namespaces",
    "ConsolidationReport": "memstrata.upkeep.consolidate",
    "ForgetReport": "memstrata.upkeep.forget",
    "SessionWorkingMemory": "memstrata.working.memory",
    "StepGraph": "memstrata.working.stepgraph",
    "StepSpec": "memstrata.working.stepgraph",
    "Preference": "memstrata.working.values",
    "SeriesPoint": "memstrata.working.values",
    "StoredPlan": "memstrata.working.values",
    "WorkingItem": "memstrata.working.values",
    "WorkingKey": "memstrata.working.values",
    "WriteReceipt": "memstrata.write.submit",
    "WriteStats": "memstrata.write.submit",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'memstrata' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__version__ = "0.1.0"

__all__ = [
    "AccessRequest",
    "AuditEvent",
    "AuthContext",
    "AuthenticationError",
    "BackendError",
    "BackendUnavailableError",
    "BudgetError",
    "BudgetShares",
    "BuiltContext",
    "Clock",
    "CompactionTimeoutError",
    "ConfigError",
    "ConflictError",
    "ConsolidationReport",
    "ConsolidationResult",
    "ContextBudget",
    "ContextBundle",
    "ContextEngine",
    "ContextItem",
    "ContextMissError",
    "DatasetError",
    "Decision",
    "DecisionRates",
    "Document",
    "DocumentFormat",
    "Embedder",
    "EngineParts",
    "Episode",
    "ExtractionError",
    "ExtractionUnavailableError",
    "Extractor",
    "FakeClock",
    "FeedbackReceipt",
    "FeedbackReport",
    "FieldPolicy",
    "FileError",
    "FlushTimeoutError",
    "ForgetReport",
    "HealthReport",
    "HealthSample",
    "Hit",
    "IngestProgress",
    "IngestReport",
    "IntentRegistry",
    "IntentSpec",
    "IsolationError",
    "L2Need",
    "L3Need",
    "LongTermSettings",
    "MemorySettings",
    "MemoryUnit",
    "MemstrataError",
    "MergeReport",
    "MissingContext",
    "ModelError",
    "ModelUnavailableError",
    "Namespace",
    "NotFoundError",
    "PermissionDeniedError",
    "PipelineSettings",
    "Preference",
    "Provenance",
    "RateLimitedError",
    "ReplyCheck",
    "RetrievalResult",
    "RetrievedItem",
    "RiskThresholds",
    "SeriesPoint",
    "SessionState",
    "SessionWorkingMemory",
    "Settings",
    "SharedItem",
    "Slot",
    "StepGraph",
    "StepPolicy",
    "StepSpec",
    "StoreItem",
    "StoredPlan",
    "SystemClock",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "TraceCard",
    "Turn",
    "UnitSource",
    "UnknownIntentError",
    "ValidationError",
    "WorkingItem",
    "WorkingKey",
    "WorkingMemorySettings",
    "WriteReceipt",
    "WriteStats",
    "WrittenMemory",
    "__version__",
]
