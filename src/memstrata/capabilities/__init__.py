"""The capability services :class:`~memstrata.engine.ContextEngine` delegates to
(docs/architecture.md, "Wiring").

Each holds one group of the engine's methods and the behaviour behind them; the engine
adds none. :func:`memstrata.wiring.build_stack` builds them over one stack's parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from memstrata.capabilities.decisions import Decisions
from memstrata.capabilities.knowledge import Knowledge
from memstrata.capabilities.listing import Listing
from memstrata.capabilities.reader import Reader
from memstrata.capabilities.sessions import Sessions
from memstrata.capabilities.sharing import Sharing
from memstrata.capabilities.upkeep import ConsolidationResult, Upkeep, UpkeepParts
from memstrata.capabilities.writer import Writer, WrittenMemory


@dataclass(frozen=True, slots=True)
class Capabilities:
    """One stack's capability services."""

    sessions: Sessions
    writer: Writer
    reader: Reader
    knowledge: Knowledge
    decisions: Decisions
    sharing: Sharing
    upkeep: Upkeep
    listing: Listing


__all__ = [
    "Capabilities",
    "ConsolidationResult",
    "Decisions",
    "Knowledge",
    "Listing",
    "Reader",
    "Sessions",
    "Sharing",
    "Upkeep",
    "UpkeepParts",
    "Writer",
    "WrittenMemory",
]
