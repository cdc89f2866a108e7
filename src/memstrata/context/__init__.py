"""The token-budgeted context builder (docs/architecture.md, "Context budget and
compression").

Build a :class:`ContextRequest` (system prompt, memory items — e.g. ``from_bundle`` of a
router bundle —, history turns, current input, tool results), pick a
:class:`ContextBudget` and a :class:`TokenCounter` (``counter_for_model``), and call
:func:`build_context`: it returns OpenAI chat messages plus what was admitted, what was
dropped and why, per-section token accounting and ``context_used`` provenance JSON.
"""

from memstrata.context.adapt import from_bundle, item_text, memory_item
from memstrata.context.budget import (
    SECTIONS,
    BudgetShares,
    ContextBudget,
    Section,
)
from memstrata.context.builder import build_context
from memstrata.context.compress import compress_turns
from memstrata.context.encodings import load_encoding
from memstrata.context.protect import ProtectedField, find_protected
from memstrata.context.tokens import (
    ApproxCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_model,
    encoding_for_model,
)
from memstrata.context.values import (
    AdmittedItem,
    BuiltContext,
    ChatMessage,
    ContextRequest,
    DroppedItem,
    DropReason,
    MemoryItem,
    Origin,
    SectionUsage,
    ToolResult,
    Turn,
)
from memstrata.errors import BudgetError

__all__ = [
    "SECTIONS",
    "AdmittedItem",
    "ApproxCounter",
    "BudgetError",
    "BudgetShares",
    "BuiltContext",
    "ChatMessage",
    "ContextBudget",
    "ContextRequest",
    "DropReason",
    "DroppedItem",
    "MemoryItem",
    "Origin",
    "ProtectedField",
    "Section",
    "SectionUsage",
    "TiktokenCounter",
    "TokenCounter",
    "ToolResult",
    "Turn",
    "build_context",
    "compress_turns",
    "counter_for_model",
    "encoding_for_model",
    "find_protected",
    "from_bundle",
    "item_text",
    "load_encoding",
    "memory_item",
]
