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
    ├── BackendError             the Redis / Qdrant / embedder / extractor backend failed
    │   ├── BackendUnavailableError   it could not be reached or started
    │   ├── ExtractionError           the extractor's endpoint failed or answered unusably
    │   │   └── ExtractionUnavailableError   ... and could not be reached (also a
    │   │                                    BackendUnavailableError)
    │   ├── ModelError                a decision or reply-check model failed or answered
    │   │   │                         unusably (the rules then decide)
    │   │   └── ModelUnavailableError        ... and could not be reached
    │   ├── DiskSpaceError            too little free disk for what was asked (names the
    │   │   │                         path, the free and the needed space)
    │   │   └── ReadOnlyError         ... so the engine refuses writes until space returns
    │   ├── WriteNotQueuedError       a write could not be queued durably: nothing of it kept
    │   ├── StageUnavailableError     a stage of the write path (the embedder, the
    │   │                             extractor) failed: the queue's consumers pause
    │   ├── FlushTimeoutError         the write queue did not drain in time (a TimeoutError)
    │   └── CompactionTimeoutError    a persistence rewrite did not finish in time
    │                                 (a TimeoutError)
    ├── ConfigError              invalid configuration
    ├── AuthenticationError      no valid API key (missing, unknown, expired, revoked)
    ├── PermissionDeniedError    the key's role or access does not allow the operation
    └── RateLimitedError         the key is over its request rate

Every exception class memstrata defines lives here (a test walks the package to
keep it so), and each has its own row in ``ERROR_CODES``.

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
    """A concurrent writer changed the item first (optimistic check failed), or the
    id asked for is taken. ``field`` and ``reason``, when given, name the field and why
    (the message is then ``field: reason``, as a ValidationError's)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field
        self.reason = message if field is not None else None
        super().__init__(f"{field}: {message}" if field is not None else message)


class BackendError(MemstrataError, RuntimeError):
    """A storage or model backend failed."""


class BackendUnavailableError(BackendError):
    """A backend could not be reached or started."""


class ExtractionError(BackendError):
    """The extractor's infrastructure failed (endpoint error, unusable answer).

    Never raised for a turn that simply holds nothing worth remembering: that is an
    empty result.
    """


class ExtractionUnavailableError(ExtractionError, BackendUnavailableError):
    """The extraction endpoint could not be reached, even after retries."""


class ModelError(BackendError):
    """A model judging a decision or checking a reply failed or answered unusably.

    The decision layer catches it and falls back to its rules; it surfaces only from
    the model client itself.
    """


class ModelUnavailableError(ModelError, BackendUnavailableError):
    """The decision model's endpoint could not be reached, even after retries."""


MIB = 1024 * 1024


def _mib(size: int) -> str:
    return f"{max(0, size) / MIB:.0f} MiB"


class DiskSpaceError(BackendUnavailableError):
    """Too little free disk for what was asked (a new collection, a rebuild, a start).

    ``path`` is where the space is missing, ``free_bytes`` what is free there and
    ``needed_bytes`` what the operation needs; nothing was written.
    """

    def __init__(
        self, what: str, path: str, free_bytes: int, needed_bytes: int, detail: str = ""
    ) -> None:
        self.path = path
        self.free_bytes = free_bytes
        self.needed_bytes = needed_bytes
        self.retry_after_s = 30.0
        message = f"{what}: {_mib(free_bytes)} free on {path}, need {_mib(needed_bytes)}"
        super().__init__(f"{message} ({detail})" if detail else message)


class ReadOnlyError(DiskSpaceError):
    """Writes are refused while the data directory's disk is short of space.

    Reads are still served; writes are accepted again by themselves once
    ``needed_bytes`` are free (docs/service.md, "Disk").
    """

    def __init__(self, path: str, free_bytes: int, needed_bytes: int) -> None:
        super().__init__("read-only", path, free_bytes, needed_bytes)


class WriteNotQueuedError(BackendUnavailableError):
    """A write (``observe``, ``remember``, feedback) could not be queued durably.

    Nothing of it was kept, so the caller may send it again; ``cause`` is the type
    name of the failure (never its message, which may quote the text).
    """

    def __init__(self, cause: str | None, chunks: int | None = None) -> None:
        self.cause = cause or "BackendError"
        self.chunks = chunks
        self.retry_after_s = 1.0
        parts = "" if not chunks else f" ({chunks} chunk{'s' if chunks != 1 else ''})"
        super().__init__(
            f"the write was not queued{parts}: {self.cause}; nothing of it was kept, send it again"
        )


class StageUnavailableError(BackendUnavailableError):
    """A stage of the write path is down (``stage``: ``embedder`` or ``extractor``).

    Raised by the write handler, never to a caller: the queue's consumers pause and
    retry the batch instead of spending its deliveries. ``cause`` is the type name of
    what the stage raised (never its message, which may quote the text).
    """

    def __init__(self, stage: str, cause: str) -> None:
        self.stage = stage
        self.cause = cause
        super().__init__(f"the {stage} failed ({cause}); the entries wait in the queue")


class FlushTimeoutError(BackendError, TimeoutError):
    """The write queue's consumers did not catch up before the flush timeout."""

    def __init__(self, queue: str, timeout_s: float, outstanding: int) -> None:
        self.queue = queue
        self.timeout_s = timeout_s
        self.outstanding = outstanding
        super().__init__(
            f"write queue {queue!r}: {outstanding} entries still unacknowledged "
            f"after {timeout_s:g}s"
        )


class CompactionTimeoutError(BackendError, TimeoutError):
    """A background rewrite or save did not finish within the timeout."""

    def __init__(self, node: str, operation: str, timeout_s: float) -> None:
        self.node = node
        self.operation = operation
        self.timeout_s = timeout_s
        super().__init__(f"{node}: {operation} still running after {timeout_s:g}s")


class UpstreamError(BackendError):
    """The proxy's upstream model endpoint could not be reached (``memstrata proxy``,
    ``POST /v1/chat/completions``); an answer it gave, errors included, is passed on
    as it came instead."""

    def __init__(self, upstream: str, reason: str) -> None:
        self.upstream = upstream
        self.field = "upstream"
        self.reason = f"{upstream}: {reason}"
        super().__init__(f"upstream {upstream}: {reason}")


class UpstreamTimeoutError(UpstreamError, TimeoutError):
    """The upstream did not answer within the proxy's timeout."""


class ConfigError(MemstrataError, ValueError):
    """The configuration is invalid."""


class AuthenticationError(MemstrataError):
    """No valid credential: a missing, malformed, unknown, expired or revoked API key."""


class PermissionDeniedError(MemstrataError, PermissionError):
    """The caller is known but its role or access does not allow the operation."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


class RateLimitedError(MemstrataError):
    """The caller's key is over its request rate; retry after ``retry_after_s``."""

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """How one error class is reported by each transport."""

    http: int
    grpc: str
    mcp: int


# One row per class, most specific class first: lookup walks the MRO of the
# raised error, and a test checks that no class comes after one of its bases.
ERROR_CODES: dict[type[MemstrataError], ErrorCode] = {
    # A name no intent has: the intent is not there (a 404), the request is well formed.
    UnknownIntentError: ErrorCode(404, "NOT_FOUND", -32004),
    DatasetError: ErrorCode(422, "INVALID_ARGUMENT", -32602),
    BudgetError: ErrorCode(422, "INVALID_ARGUMENT", -32602),
    ValidationError: ErrorCode(422, "INVALID_ARGUMENT", -32602),
    ContextMissError: ErrorCode(404, "NOT_FOUND", -32004),
    NotFoundError: ErrorCode(404, "NOT_FOUND", -32004),
    IsolationError: ErrorCode(403, "PERMISSION_DENIED", -32003),
    ConflictError: ErrorCode(409, "ABORTED", -32009),
    ExtractionUnavailableError: ErrorCode(503, "UNAVAILABLE", -32001),
    ExtractionError: ErrorCode(502, "INTERNAL", -32603),
    ModelUnavailableError: ErrorCode(503, "UNAVAILABLE", -32001),
    ModelError: ErrorCode(502, "INTERNAL", -32603),
    ReadOnlyError: ErrorCode(503, "UNAVAILABLE", -32001),
    DiskSpaceError: ErrorCode(503, "UNAVAILABLE", -32001),
    WriteNotQueuedError: ErrorCode(503, "UNAVAILABLE", -32001),
    StageUnavailableError: ErrorCode(503, "UNAVAILABLE", -32001),
    FlushTimeoutError: ErrorCode(504, "DEADLINE_EXCEEDED", -32001),
    CompactionTimeoutError: ErrorCode(504, "DEADLINE_EXCEEDED", -32001),
    UpstreamTimeoutError: ErrorCode(504, "DEADLINE_EXCEEDED", -32001),
    UpstreamError: ErrorCode(502, "UNAVAILABLE", -32001),
    BackendUnavailableError: ErrorCode(503, "UNAVAILABLE", -32001),
    BackendError: ErrorCode(502, "INTERNAL", -32603),
    ConfigError: ErrorCode(500, "FAILED_PRECONDITION", -32603),
    AuthenticationError: ErrorCode(401, "UNAUTHENTICATED", -32011),
    PermissionDeniedError: ErrorCode(403, "PERMISSION_DENIED", -32003),
    RateLimitedError: ErrorCode(429, "RESOURCE_EXHAUSTED", -32029),
    MemstrataError: ErrorCode(500, "INTERNAL", -32603),
}


def error_code(error: MemstrataError) -> ErrorCode:
    """Return the transport codes for ``error`` (its most specific registered class)."""
    return error_code_of(type(error))


def error_code_of(error_class: type[MemstrataError]) -> ErrorCode:
    """The transport codes of an error class (its most specific registered base)."""
    for cls in error_class.__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    return ERROR_CODES[MemstrataError]
