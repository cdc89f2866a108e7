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
        DiskSpaceError,
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
        ReadOnlyError,
        StageUnavailableError,
        UnknownIntentError,
        ValidationError,
        WriteNotQueuedError,
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
    from memstrata.memory.listing import (
        FactHistory,
        ListedMemory,
        MemoryPage,
        UserSummary,
    )
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
    from memstrata.upkeep.jobs import ForgetJob
    from memstrata.working.memory import SessionWorkingMemory
    from memstrata.working.stepgraph import StepGraph, StepSpec
    from memstrata.working.values import (
        Preference,
        SeriesPoint,
        StoredPlan,
        WorkingItem,
        WorkingKey,
    )
    from memstrata.write.entries import DeadLetter
    from memstrata.write.submit import WriteReceipt, WriteStats

# The names are imported on first use, so that importing a light part of memstrata
# (``memstrata.client``, ``memstrata.errors``) does not import the engine and its models.
_MODULES: dict[str, tuple[str, ...]] = {
    "memstrata.clock": ("Clock", "FakeClock", "SystemClock"),
    "memstrata.config": (
        "LongTermSettings",
        "MemorySettings",
        "PipelineSettings",
        "Settings",
        "WorkingMemorySettings",
    ),
    "memstrata.context": ("BudgetShares", "BuiltContext", "ContextBudget", "ToolResult", "Turn"),
    "memstrata.decision": (
        "Decision",
        "DecisionRates",
        "FeedbackReceipt",
        "FeedbackReport",
        "ReplyCheck",
        "RiskThresholds",
        "Slot",
        "StepPolicy",
        "ToolOutcome",
        "ToolSpec",
        "TraceCard",
    ),
    "memstrata.embed.protocol": ("Embedder",),
    "memstrata.engine": ("ConsolidationResult", "ContextEngine", "EngineParts", "WrittenMemory"),
    "memstrata.errors": (
        "AuthenticationError",
        "BackendError",
        "BackendUnavailableError",
        "BudgetError",
        "CompactionTimeoutError",
        "ConfigError",
        "ConflictError",
        "ContextMissError",
        "DatasetError",
        "DiskSpaceError",
        "ExtractionError",
        "ExtractionUnavailableError",
        "FlushTimeoutError",
        "IsolationError",
        "MemstrataError",
        "ModelError",
        "ModelUnavailableError",
        "NotFoundError",
        "PermissionDeniedError",
        "RateLimitedError",
        "ReadOnlyError",
        "StageUnavailableError",
        "UnknownIntentError",
        "ValidationError",
        "WriteNotQueuedError",
    ),
    "memstrata.extract.protocol": ("Extractor",),
    "memstrata.gateway.audit": ("AuditEvent",),
    "memstrata.gateway.policy": ("FieldPolicy",),
    "memstrata.health": ("HealthReport", "HealthSample"),
    "memstrata.knowledge.documents": ("Document", "DocumentFormat"),
    "memstrata.knowledge.hot": ("MergeReport",),
    "memstrata.knowledge.ingest": ("FileError", "IngestProgress", "IngestReport"),
    "memstrata.longterm.points": ("Hit",),
    "memstrata.memory.episodes": ("Episode",),
    "memstrata.memory.listing": (
        "FactHistory",
        "ListedMemory",
        "MemoryPage",
        "UserSummary",
    ),
    "memstrata.memory.units": ("MemoryUnit", "UnitSource"),
    "memstrata.retrieval.results": ("RetrievalResult", "RetrievedItem"),
    "memstrata.router": (
        "ContextBundle",
        "ContextItem",
        "IntentRegistry",
        "IntentSpec",
        "L2Need",
        "L3Need",
        "MissingContext",
        "Provenance",
    ),
    "memstrata.session": ("AuthContext", "SessionState"),
    "memstrata.sharing.items": ("StoreItem",),
    "memstrata.sharing.namespaces": ("AccessRequest", "Namespace", "SharedItem"),
    "memstrata.upkeep.consolidate": ("ConsolidationReport",),
    "memstrata.upkeep.forget": ("ForgetReport",),
    "memstrata.upkeep.jobs": ("ForgetJob",),
    "memstrata.working.memory": ("SessionWorkingMemory",),
    "memstrata.working.stepgraph": ("StepGraph", "StepSpec"),
    "memstrata.working.values": (
        "Preference",
        "SeriesPoint",
        "StoredPlan",
        "WorkingItem",
        "WorkingKey",
    ),
    "memstrata.write.entries": ("DeadLetter",),
    "memstrata.write.submit": ("WriteReceipt", "WriteStats"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}


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
    "DeadLetter",
    "Decision",
    "DecisionRates",
    "DiskSpaceError",
    "Document",
    "DocumentFormat",
    "Embedder",
    "EngineParts",
    "Episode",
    "ExtractionError",
    "ExtractionUnavailableError",
    "Extractor",
    "FactHistory",
    "FakeClock",
    "FeedbackReceipt",
    "FeedbackReport",
    "FieldPolicy",
    "FileError",
    "FlushTimeoutError",
    "ForgetJob",
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
    "ListedMemory",
    "LongTermSettings",
    "MemoryPage",
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
    "ReadOnlyError",
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
    "StageUnavailableError",
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
    "UserSummary",
    "ValidationError",
    "WorkingItem",
    "WorkingKey",
    "WorkingMemorySettings",
    "WriteNotQueuedError",
    "WriteReceipt",
    "WriteStats",
    "WrittenMemory",
    "__version__",
]
