"""The decision layer (seed 003 §4): tools, the validation gate and fallbacks."""

from memstrata.decision.tools import (
    CANNOT_COMPLETE,
    Attempt,
    Check,
    GateVerdict,
    PendingCall,
    ToolExecutor,
    ToolOutcome,
    ToolRegistry,
    ToolSpec,
    facts_of,
    gate,
)

__all__ = [
    "CANNOT_COMPLETE",
    "Attempt",
    "Check",
    "GateVerdict",
    "PendingCall",
    "ToolExecutor",
    "ToolOutcome",
    "ToolRegistry",
    "ToolSpec",
    "facts_of",
    "gate",
]
