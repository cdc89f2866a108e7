"""The wire types of the service: one pydantic model per request and response.

REST bodies, gRPC messages (:mod:`memstrata.service.proto`), MCP tool schemas and the
client all come from these models, so a field has one name and one type everywhere.
Every model forbids unknown fields: a misspelt field is a 422 naming it, not a
silently ignored option. The tenant is never a body field: it is the API key's.

Where a response is a domain value, its model is derived from the domain type
(:mod:`memstrata.service.derive`, generated into :mod:`memstrata.service.wire_derived`)
and re-exported here. The models written here are the requests, which carry the wire's
own limits (lengths, ranges, sizes), and the results that are no domain value or
deliberately differ from one (each says why). Nothing here imports the engine.
"""

# Pydantic copies a mutable default for each instance.
# ruff: noqa: RUF012

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, JsonValue

from memstrata.service.wire_base import *  # noqa: F403
from memstrata.service.wire_base import (
    Id,
    JsonObject,
    Label,
    Name,
    Ref,
    Risk,
    SessionId,
    ShortText,
    StoreKey,
    StoreNamespace,
    Text,
    TurnIn,
    Uuid,
    Wire,
    exactly_one_of,
    given,
    only_with,
    rules,
)
from memstrata.service.wire_derived import *  # noqa: F403
from memstrata.service.wire_derived import (
    AccessRequestOut,
    ApiResultOut,
    ForgetResult,
    KeyOut,
    NamespaceOut,
    SharedItemOut,
    StoreItemOut,
    TraceCardOut,
    TraceEntryOut,
    TurnRefOut,
    WorkingKeyOut,
)
from memstrata.service.wire_listing import *  # noqa: F403
from memstrata.validation import (
    DOCUMENT_NAME_PATTERN,
    DURATION_PATTERN,
    MAX_CORRECTION_CHARS,
    MAX_DOCUMENT_NAME_CHARS,
    MAX_REPLY_CHARS,
    MAX_SPEAKER_CHARS,
    MAX_TEXT_CHARS,
    NONBLANK_PATTERN,
    SLOT_SOURCE_PATTERN,
)

# -- sessions (L1) ---------------------------------------------------------------------


class StartSessionRequest(Wire):
    user_id: Id
    initial_query: ShortText
    session_id: SessionId | None = None


class SessionRef(Wire):
    session_id: SessionId


class ApiResultIn(Wire):
    status: Literal["success", "error", "timeout"]
    data: JsonValue = None


class ActionIn(Wire):
    action_id: Id
    payload: JsonValue = None


class UpdateSessionRequest(Wire):
    """A change to a session; the parts given are applied in this order, atomically."""

    session_id: SessionId
    advance: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    entity_id: Id | None = None
    pointers: dict[str, Id] | None = None
    api_result: ApiResultIn | None = None
    action: ActionIn | None = None


# Explicit: the session id is the one the caller knows (the engine's carries the tenant),
# and the auth context and observation counters stay inside.
class Session(Wire):
    """A session's L1 state: ids, pointers and hashes only (payloads live in L2)."""

    session_id: str
    user_id: str
    started_at: datetime
    initial_query: str
    current_step: int
    last_entity_id: str | None = None
    last_api_result: ApiResultOut | None = None
    action_trace: list[TraceEntryOut] = []
    pointers: dict[str, str] = {}
    history: list[TurnRefOut] = []


# -- long-term writes --------------------------------------------------------------------


class ObserveRequest(Wire):
    session_id: SessionId
    role: Literal["user", "assistant", "system", "tool"]
    text: Text
    speaker: (
        Annotated[str, Field(min_length=1, max_length=MAX_SPEAKER_CHARS, pattern=NONBLANK_PATTERN)]
        | None
    ) = None


class RememberRequest(Wire):
    user_id: Id
    text: Text
    wait: bool = False
    """Wait until it is stored and report the episode and each fact."""


class ForgetRequest(Wire):
    """Forget a user (everything held of them), chosen memories, or the item store's
    items under a namespace prefix; give exactly one of the three."""

    model_config = rules(exactly_one_of("user_id", "ids", "store_namespace"))

    user_id: Id | None = None
    ids: Annotated[list[Uuid], Field(min_length=1, max_length=1_000)] | None = None
    store_namespace: StoreNamespace | None = None
    """A namespace prefix of the item store (its items are keyed by namespace, not user)."""
    wait: bool = False
    """Wait for the forget to finish (at most ``timeout_s``) and answer it with its
    report; by default the job is answered at once, queued (see forget_status)."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 300.0
    """With ``wait``: how long to wait; past it the job is answered as it stands."""


class ForgetStatusRequest(Wire):
    job_id: Ref
    """The id ``forget`` answered."""
    timeout_s: Annotated[float, Field(ge=0, le=600)] = 0.0
    """Wait up to this long for the job to finish (0: answer at once)."""


# Explicit: a ForgetJob without its tenant (the caller's), its report as ForgetResult.
class ForgetJobOut(Wire):
    """A forget running in the background: ``queued``, ``running``, ``done`` (with
    its report) or ``failed`` (with the error's type and message)."""

    job_id: str
    kind: Literal["user", "memories", "store_namespace"]
    state: Literal["queued", "running", "done", "failed"]
    submitted_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    report: ForgetResult | None = None
    error_type: str | None = None
    error: str | None = None


# Explicit (with ConsolidationOut): one tenant's view of a consolidation pass, its
# report's actions as rows and the tenant's hot-knowledge merge flattened.
class ConsolidationAction(Wire):
    """One kind of change a consolidation made, with the memory ids it touched."""

    action: str
    count: int
    ids: list[str] = []


class ConsolidateRequest(Wire):
    """The tenants one pass covers. An admin key of the operator tenant ``default`` may
    name any tenant (none named: every known tenant); another tenant's admin key its
    own only (none named: its own)."""

    tenants: Annotated[list[Name], Field(max_length=1_000)] | None = None
    """The tenants to consolidate (default: every tenant the key may name)."""


class HotMergeOut(Wire):
    """One tenant's hot-knowledge merge in a consolidation pass."""

    tenant: str
    merged: int = 0
    duplicates: int = 0
    expired: int = 0


class ConsolidationOut(Wire):
    """What one consolidation pass did: the memory actions over the tenants it covered,
    and each tenant's hot-knowledge merge (``hot_*``: the caller's tenant's)."""

    tenant: str
    actions: list[ConsolidationAction] = []
    hot_merged: int = 0
    hot_duplicates: int = 0
    hot_expired: int = 0
    hot_knowledge: list[HotMergeOut] = []
    """Each covered tenant's hot-knowledge merge, by tenant name."""


class RestoreRequest(Wire):
    ids: Annotated[list[Uuid], Field(min_length=1, max_length=1_000)]


class RestoreOut(Wire):
    restored: list[str] = []


# -- retrieval -----------------------------------------------------------------------------


class RetrieveRequest(Wire):
    query: ShortText
    user_id: Id | None = None
    k: Annotated[int, Field(ge=1, le=100)] = 10
    collection: Literal["memories", "knowledge"] = "memories"
    include_history: bool = False
    as_of: datetime | None = None


# -- routing and context --------------------------------------------------------------------


class RouteRequest(Wire):
    """``ContextRequest(session_id, step_intent)``: the context of the session's step.
    Without ``step_intent`` the intent is recognized from ``query`` (then required)."""

    model_config = rules({"anyOf": [given("step_intent"), given("query")]})

    session_id: SessionId
    step_intent: Id | None = None
    query: ShortText | None = None


# Explicit: a request mirroring ToolResult with the wire's limits (ids, ranges).
class ToolResultIn(Wire):
    call_id: Id
    name: Id
    content: Text
    relevance: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    freshness_hours: Annotated[float, Field(ge=0.0)] | None = 0.0


class BuildContextRequest(Wire):
    """Without ``step_intent`` the intent is recognized from ``user_input``."""

    session_id: SessionId
    step_intent: Id | None = None
    user_input: Text
    system_prompt: Text
    model: Ref = "gpt-4o"
    history: Annotated[list[TurnIn], Field(max_length=1_000)] = []
    tool_results: Annotated[list[ToolResultIn], Field(max_length=100)] = []
    k: Annotated[int, Field(ge=1, le=100)] = 10
    window_tokens: Annotated[int, Field(ge=1, le=100_000_000)] | None = None
    """The model's context window in tokens; needed for a model whose window is not known
    (the OpenAI, Claude, DeepSeek, Qwen, Llama and Gemini families are), and wins over
    the known one when given."""


class FlushRequest(Wire):
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 60.0
    """How long to wait for the write queue to drain before answering 504."""


class FlushOut(Wire):
    """Everything queued before the call is in long-term memory and searchable."""

    flushed: bool


# -- working memory (L2) -------------------------------------------------------------------


class PutApiResponseRequest(Wire):
    session_id: SessionId
    endpoint: Ref
    params: dict[str, JsonValue] = {}
    value: JsonValue
    ttl_s: Annotated[float, Field(gt=0, le=30 * 86_400)] | None = None


class GetApiResponseRequest(Wire):
    session_id: SessionId
    endpoint: Ref
    params: dict[str, JsonValue] = {}


class PutStepResultRequest(Wire):
    session_id: SessionId
    step_id: Id
    fields: dict[str, JsonValue]


class GetStepResultRequest(Wire):
    session_id: SessionId
    step_id: Id
    reader_step: Id | None = None


# Explicit: a request's point; its value is required, which SeriesPoint's Any cannot say.
class SeriesPointIn(Wire):
    timestamp: float
    value: JsonValue


class AppendSeriesRequest(Wire):
    session_id: SessionId
    metric: Id
    points: Annotated[list[SeriesPointIn], Field(min_length=1, max_length=10_000)]
    window: Annotated[int, Field(ge=1, le=1_000_000)] | None = None


class AppendSeriesResult(Wire):
    kept: int


class ReadSeriesRequest(Wire):
    session_id: SessionId
    metric: Id
    start: float | None = None
    end: float | None = None


class SeriesOut(Wire):
    points: list[SeriesPointIn] = []


class PendingRequest(Wire):
    session_id: SessionId
    task_ids: Annotated[list[Id], Field(min_length=1, max_length=1_000)]


class PendingOut(Wire):
    pending: list[str] = []
    changed: int = 0


# -- knowledge -------------------------------------------------------------------------------


# Explicit: a request mirroring Document with the wire's limits (name and text sizes).
DocumentName = Annotated[
    str, Field(min_length=1, max_length=MAX_DOCUMENT_NAME_CHARS, pattern=DOCUMENT_NAME_PATTERN)
]


class DocumentIn(Wire):
    name: DocumentName
    text: Annotated[str, Field(max_length=10_000_000)]
    format: Literal["markdown", "html", "text"] = "markdown"


class IngestDocumentsRequest(Wire):
    """Documents by name (a relative, '/'-separated path); with ``prune_missing_under``
    the call is a folder's manifest, as ``memstrata ingest`` sends one."""

    model_config = rules(
        {
            "anyOf": [
                {"required": ["documents"], "properties": {"documents": {"minItems": 1}}},
                {
                    "required": ["prune_missing_under"],
                    "properties": {"prune_missing_under": {"minItems": 1}},
                },
            ]
        }
    )

    documents: Annotated[list[DocumentIn], Field(max_length=1_000)]
    """The documents, each name once (an unchanged document ingested again changes
    nothing); none with a prune that only removes."""
    level: Literal["low", "medium", "high"] = "low"
    """The permission level the documents' chunks carry."""
    prune_missing_under: Annotated[list[DocumentName], Field(max_length=1_000)] = []
    """Remove the tenant's documents at or under these names that are neither given
    here nor in ``also_present`` (a folder's files deleted since the last ingest)."""
    also_present: Annotated[list[DocumentName], Field(max_length=100_000)] = []
    """Names of the same folder sent by earlier calls of one ingest (kept by the prune)."""


class ConfirmKnowledgeRequest(Wire):
    """A question and the answer a user confirmed: searchable at once, merged later."""

    query: ShortText
    response: Annotated[
        str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NONBLANK_PATTERN)
    ]
    source: Id


class IdOut(Wire):
    id: str


# -- inspect -----------------------------------------------------------------------------------


# Explicit: what the engine holds for a session, gathered from L1 and L2.
class InspectOut(Wire):
    session_id: str
    session: Session | None = None
    l2: list[WorkingKeyOut] = []
    pending_tasks: list[str] = []


# -- shared namespaces ---------------------------------------------------------------------------


class CreateNamespaceRequest(Wire):
    """A namespace of the caller's tenant; its owner (default: the caller's agent) reads
    and writes it."""

    namespace: Id
    purpose: Annotated[str, Field(min_length=1, max_length=500, pattern=NONBLANK_PATTERN)]
    ttl_s: Annotated[float, Field(ge=1, le=365 * 86_400)]
    owner: Id | None = None


class NamespaceList(Wire):
    namespaces: list[NamespaceOut] = []


class AccessRequestIn(Wire):
    """Ask for access to a namespace, stating the purpose."""

    namespace: Id
    purpose: Annotated[str, Field(min_length=1, max_length=500, pattern=NONBLANK_PATTERN)]
    mode: Literal["read", "write"] = "read"


class AccessRequestList(Wire):
    requests: list[AccessRequestOut] = []


class NamespaceRef(Wire):
    namespace: Id


class GrantRequest(Wire):
    namespace: Id
    agent: Id
    mode: Literal["read", "write"] = "read"


class RevokeAccessRequest(Wire):
    namespace: Id
    agent: Id


class PutSharedRequest(Wire):
    namespace: Id
    item_id: Id
    value: JsonValue
    level: Literal["low", "medium", "high"] = "medium"


class SharedItemList(Wire):
    items: list[SharedItemOut] = []


# -- item store (LangGraph's BaseStore) ------------------------------------------------------


class StorePutRequest(Wire):
    """Store a JSON object under (namespace, key), replacing the item there."""

    namespace: StoreNamespace
    key: StoreKey
    value: dict[str, JsonValue]
    """A JSON object (at most 256 KiB encoded); its integers within 64 bits, as every
    answer encodes them."""
    index: (
        Annotated[list[Annotated[str, Field(min_length=1, max_length=256)]], Field(max_length=64)]
        | None
    ) = None
    """The value's fields embedded for search (dotted paths; none: the whole value)."""
    searchable: bool = True
    """False: the item is found by namespace and filter, never by a query."""


class StoreItemRef(Wire):
    namespace: StoreNamespace
    key: StoreKey


class StoreGetResult(Wire):
    item: StoreItemOut | None = None
    """None when there is no item at that key."""


class StoreDeleteResult(Wire):
    deleted: bool


class StoreSearchRequest(Wire):
    """Items under a namespace prefix whose value matches ``filter`` (equality, or
    ``$eq $ne $gt $gte $lt $lte``); with ``query``, ranked by hybrid search."""

    namespace_prefix: Annotated[list[Label], Field(max_length=32)] = []
    query: ShortText | None = None
    filter: dict[str, JsonValue] | None = None
    limit: Annotated[int, Field(ge=1, le=1_000)] = 10
    offset: Annotated[int, Field(ge=0, le=10_000)] = 0


class StoreItemList(Wire):
    items: list[StoreItemOut] = []


class StoreListNamespacesRequest(Wire):
    """Namespaces holding items; ``*`` in ``prefix`` or ``suffix`` matches any label."""

    prefix: Annotated[list[Label], Field(max_length=32)] | None = None
    suffix: Annotated[list[Label], Field(max_length=32)] | None = None
    max_depth: Annotated[int, Field(ge=1, le=32)] | None = None
    limit: Annotated[int, Field(ge=1, le=1_000)] = 100
    offset: Annotated[int, Field(ge=0, le=10_000)] = 0


# Explicit: a namespace of the item store is a tuple of labels in the engine.
class StoreNamespaceOut(Wire):
    namespace: list[str]


class StoreNamespaceList(Wire):
    namespaces: list[StoreNamespaceOut] = []


# -- API keys ----------------------------------------------------------------------------------


class CreateKeyRequest(Wire):
    """A key for an agent of the caller's tenant (or, by an admin key of the operator
    tenant ``default``, of ``tenant``)."""

    agent: Name
    tenant: Name | None = None
    """The key's tenant; another tenant than the caller's needs an operator admin key."""
    role: Literal["reader", "writer", "admin"]
    clearance: Literal["low", "medium", "high"] = "high"
    ttl_s: Annotated[float, Field(gt=0)] | None = None
    rate_per_s: Annotated[int, Field(ge=1, le=1_000_000)] = 1_000


class KeyRef(Wire):
    key_id: Annotated[str, Field(min_length=1, max_length=64)]


class KeyList(Wire):
    keys: list[KeyOut] = []


# -- the write queue's dead letters (docs/service.md, "Dead letters") -----------------------

StreamIdText = Annotated[str, Field(min_length=3, max_length=41, pattern=r"^[0-9]+-[0-9]+$")]


class DeadLettersRequest(Wire):
    after: StreamIdText | None = None
    """Only dead letters after this id (the last one of the previous page)."""
    limit: Annotated[int, Field(ge=1, le=1000)] = 100
    """At most this many, oldest first."""


# Explicit: a DeadLetter without its stream fields (the entry's content).
class DeadLetterOut(Wire):
    """An entry of the caller's tenant the write queue gave up on, and why."""

    dead_id: str
    """Its id in the dead-letter stream (what ``replay_dead_letter`` takes)."""
    entry_id: str
    """Its id on the write stream when it was given up."""
    kind: str
    """``turn``, ``note``, ``unit`` or ``feedback``."""
    user_id: str | None = None
    error: str
    """The failure's type (``MalformedEntry``, ``ConsumerLost`` or an exception type)."""
    reason: str
    """Why it can never be stored, in words."""
    deliveries: int
    dead_at: float
    """When it was given up (seconds since the epoch)."""


class DeadLetterList(Wire):
    dead_letters: list[DeadLetterOut] = []
    next_after: str | None = None
    """Pass as ``after`` for the next page (absent: this was the last)."""


class DeadLetterRef(Wire):
    dead_id: StreamIdText
    """The dead letter to replay: its id in the dead-letter stream (``list_dead_letters``)."""


class ReplayedOut(Wire):
    """A dead letter put back on the write stream."""

    dead_id: str
    entry_id: str
    """Its new id on the write stream (its deliveries counted from 0 again)."""


# -- decisions (docs/architecture.md, "Decisions and feedback") ---------------------------


# Explicit (as SlotModel and StepPolicyModel): requests mirroring ToolSpec, Slot and
# StepPolicy with the wire's limits on each field (ids, lengths, list sizes).
class ToolSpecModel(Wire):
    """A tool: JSON-schema parameters, risk, alternatives, and the parameters that
    must equal facts the session holds (``bound``: parameter -> ``l1.<field>`` or
    ``l2.<item>[.<key>]``)."""

    name: Id
    description: ShortText
    parameters: JsonObject
    risk: Risk = "low"
    high_impact: bool = False
    alternatives: Annotated[list[Id], Field(max_length=16)] = []
    bound: dict[str, Id] = {}


class ToolList(Wire):
    tools: list[ToolSpecModel] = []


SlotSource = Annotated[str, Field(min_length=1, max_length=256, pattern=SLOT_SOURCE_PATTERN)]
"""A fact a slot reads: ``l1.<field>``, ``l2.<item>[.<key>]`` or ``given.<name>``."""


class SlotModel(Wire):
    """Key information a step needs, found in the first source that holds it."""

    name: Id
    sources: Annotated[list[SlotSource], Field(min_length=1, max_length=16)]
    question: ShortText | None = None


class StepPolicyModel(Wire):
    """How one intent's steps decide: risk, evidence, key information, tool."""

    intent: Id
    risk: Risk = "low"
    evidence: Annotated[list[Ref], Field(min_length=1, max_length=64)] = ["*"]
    slots: Annotated[list[SlotModel], Field(max_length=32)] = []
    tool: Id | None = None
    tool_params: dict[str, Id] = {}
    """The tool's parameters, each the name of one of ``slots`` that gives its value."""


class DecideRequest(Wire):
    """Route the session's step and decide: answer, call a tool, or ask. Without
    ``step_intent`` the intent is recognized from ``query`` (or ``question``)."""

    model_config = rules({"anyOf": [given("step_intent"), given("query"), given("question")]})

    session_id: SessionId
    step_intent: Id | None = None
    query: ShortText | None = None
    question: ShortText | None = None
    """The user's question, kept (sanitized) on the trace card."""
    given: JsonObject = {}
    """What the caller parsed from this turn, as ``given.<name>`` facts."""


class CallToolRequest(Wire):
    """Run the decision's tool call (or the tool and parameters named)."""

    card_id: Id
    tool: Id | None = None
    params: JsonObject | None = None


class ConfirmToolRequest(Wire):
    pending_id: Id
    confirmed: bool = True


class ToolResultReportIn(Wire):
    """One attempt of a remote tool (run by the caller)."""

    card_id: Id
    tool: Id
    ok: bool
    error: ShortText | None = None


class CheckReplyRequest(Wire):
    card_id: Id
    reply: Annotated[str, Field(min_length=1, max_length=MAX_REPLY_CHARS, pattern=NONBLANK_PATTERN)]


class TraceCardsRequest(Wire):
    """Cards by session and time (RFC 3339), oldest first; ``since`` is not after
    ``until``."""

    session_id: SessionId | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: Annotated[int, Field(ge=1, le=1_000)] = 100


class TraceCardList(Wire):
    cards: list[TraceCardOut] = []


class FeedbackRequest(Wire):
    """The user's follow-up to a decision: confirmed, corrected (with the correction),
    abandoned, or a rating from 1 to 5."""

    model_config = rules(
        only_with("rating", "kind", "rating"), only_with("correction", "kind", "corrected")
    )

    card_id: Id
    kind: Literal["confirmed", "corrected", "abandoned", "rating"]
    correction: (
        Annotated[
            str, Field(min_length=1, max_length=MAX_CORRECTION_CHARS, pattern=NONBLANK_PATTERN)
        ]
        | None
    ) = None
    rating: Annotated[int, Field(ge=1, le=5)] | None = None
    used: Annotated[list[Id], Field(max_length=200)] | None = None
    """The memory ids the reply used (default: what the checked reply reflects)."""
    wrong: Annotated[list[Id], Field(max_length=200)] | None = None
    """Memory ids the correction says are wrong (they stop being current)."""


class FeedbackReportRequest(Wire):
    since: datetime | None = None


class HealthReportRequest(Wire):
    since: Annotated[str, Field(pattern=DURATION_PATTERN)] = "7d"
    """The window: ``30m``, ``24h``, ``7d``, ``2w``."""


# Explicit: the health report rendered, not its samples.
class HealthReportOut(Wire):
    """The context health report (docs/architecture.md, "Health and metrics") as
    Markdown and a self-contained HTML page with charts."""

    samples: int
    markdown: str
    html: str
    flags: list[str] = []
    """The seed bounds the report flags, one line each (name, value, bound)."""
