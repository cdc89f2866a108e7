"""The whole memstrata exception tree, mapped once to transport codes.

::

    MemstrataError
    ├── ValidationError          bad input; names the field and the reason
    │   ├── UnknownIntentError   route() asked for an intent nobody registered
    │   ├── DatasetError         a malformed evaluation data file (names file and record)
    │   └── BudgetError          the token budget cannot hold a part sent whole (system prompt)
    ├── NotFoundError            a key, point or session that does not exist
    │   └── ContextMissError     an L2 key missed or expired (names the key)
    ├── IsolationError           an attempt to address another session's / tenant's data
    ├── ConflictError            an optimistic version check lost
    ├── BackendError             the Redis / Qdrant / embedder backend failed
    │   └── BackendUnavailableError   it could not be reached or started
    └── ConfigError              invalid configuration

Every adapter translates library exceptions into these with ``raise ... from``;
``ERROR_CODES`` is the single table the HTTP / gRPC / MCP layers use.
"""

from __future__ import annotations

from dataclasses import dataclass


class MemstrataError(Exception):
    """Base of every error memstrata raises on purpose."""


class ValidationError(MemstrataError, ValueError):
    """Input rejected before anything was written."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class UnknownIntentError(ValidationError):
    """The step intent has not been registered with the router."""

    def __init__(self, intent: str, known: tuple[str, ...] = ()) -> None:
        hint = f" (known: {', '.join(sorted(known))})" if known else ""
        super().__init__("step_intent", f"unknown intent {intent!r}{hint}")
        self.intent = intent


class DatasetError(ValidationError):
    """An evaluation data file is unreadable or malformed.

    Names the file and the first bad record (its index, and its id when it has one),
    e.g. ``locomo10.json: record 3 (conv-42): qa[7].category: must be an integer``.
    """

    def __init__(self, path: str, record: str | None, reason: str) -> None:
        self.path = path
        self.record = record
        where = path if record is None else f"{path}: {record}"
        super().__init__(where, reason)


class BudgetError(ValidationError):
    """The token budget is smaller than a part that must be sent whole (the system prompt).

    Raised instead of building an empty or truncated context; ``field`` names the part,
    ``needed`` and ``budget`` are token counts.
    """

    def __init__(self, field: str, needed: int, budget: int, detail: str = "") -> None:
        self.needed = needed
        self.budget = budget
        reason = f"needs {needed} tokens but its budget is {budget}"
        super().__init__(field, f"{reason} ({detail})" if detail else reason)


class NotFoundError(MemstrataError, LookupError):
    """The addressed item does not exist."""


class ContextMissError(NotFoundError):
    """An L2 key is missing or has expired."""

    def __init__(self, key: str, reason: str = "missing or expired") -> None:
        self.key = key
        super().__init__(f"L2 miss for {key}: {reason}")


class IsolationError(MemstrataError, PermissionError):
    """A request tried to cross a session or tenant boundary."""


class ConflictError(MemstrataError):
    """A concurrent writer changed the item first (optimistic check failed)."""


class BackendError(MemstrataError, RuntimeError):
    """A storage or model backend failed."""


class BackendUnavailableError(BackendError):
    """A backend could not be reached or started."""


class ConfigError(MemstrataError, ValueError):
    """The configuration is invalid."""


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """How one error class is reported by each transport."""

    http: int
    grpc: str
    mcp: int


# Most specific class first: lookup walks the MRO of the raised error.
ERROR_CODES: dict[type[MemstrataError], ErrorCode] = {
    DatasetError: ErrorCode(422, "INVALID_ARGUMENT", -32602),
    BudgetError: ErrorCode(422, "INVALID_ARGUMENT", -32602),
    ValidationError: ErrorCode(422, "INVALID_ARGUMENT", -32602),
    ContextMissError: ErrorCode(404, "NOT_FOUND", -32004),
    NotFoundError: ErrorCode(404, "NOT_FOUND", -32004),
    IsolationError: ErrorCode(403, "PERMISSION_DENIED", -32003),
    ConflictError: ErrorCode(409, "ABORTED", -32009),
    BackendUnavailableError: ErrorCode(503, "UNAVAILABLE", -32001),
    BackendError: ErrorCode(502, "INTERNAL", -32603),
    ConfigError: ErrorCode(500, "FAILED_PRECONDITION", -32603),
    MemstrataError: ErrorCode(500, "INTERNAL", -32603),
}


def error_code(error: MemstrataError) -> ErrorCode:
    """Return the transport codes for ``error`` (its most specific registered class)."""
    for cls in type(error).__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    return ERROR_CODES[MemstrataError]
