"""The capability table: every operation of the service, declared once.

Each :class:`Operation` names its request and response models, the role it needs,
the errors it may raise and the function that runs it on the engine (the functions
live in :mod:`memstrata.service.ops`, one module per domain). REST routes, gRPC
methods, MCP tools and the client's methods are all generated from
:data:`OPERATIONS`; a test walks the table against each transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memstrata.service.capability import (
    COMMON_ERRORS,
    SESSION_ERRORS,
    SESSION_SEPARATOR,
    Call,
    Operation,
)
from memstrata.service.ops import (
    deadletters,
    decisions,
    items,
    keys,
    knowledge,
    listing,
    memory,
    namespaces,
    sessions,
    working,
)
from memstrata.service.wire_base import request_error

OPERATIONS: tuple[Operation[Any, Any], ...] = (
    *sessions.OPERATIONS,
    *memory.OPERATIONS,
    *listing.OPERATIONS,
    *working.OPERATIONS,
    *knowledge.OPERATIONS,
    *namespaces.OPERATIONS,
    *items.OPERATIONS,
    *decisions.OPERATIONS,
    *keys.OPERATIONS,
    *deadletters.OPERATIONS,
)

BY_NAME: Mapping[str, Operation[Any, Any]] = {op.name: op for op in OPERATIONS}

__all__ = [
    "BY_NAME",
    "COMMON_ERRORS",
    "OPERATIONS",
    "SESSION_ERRORS",
    "SESSION_SEPARATOR",
    "Call",
    "Operation",
    "request_error",
]
