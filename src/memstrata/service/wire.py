"""The wire types of the service: one pydantic model per request and response.

REST bodies, gRPC messages (:mod:`memstrata.service.proto`), MCP tool schemas and the
client all come from these models, so a field has one name and one type everywhere.
Every model forbids unknown fields: a misspelt field is a 422 naming it, not a
silently ignored option. The tenant is never a body field: it is the API key's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

Id = Annotated[str, Field(min_length=1, max_length=256)]
Text = Annotated[str, Field(min_length=1, max_length=100_000)]
ShortText = Annotated[str, Field(min_length=1, max_length=8_000)]


class Wire(BaseModel):
    """Base of every wire model: unknown fields are errors, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# -- sessions (L1) ---------------------------------------------------------------------


class StartSessionRequest(Wire):
    user_id: Id
    initial_query: ShortText
    session_id: Id | None = None


class SessionRef(Wire):
    session_id: Id


class ApiResultIn(Wire):
    status: Literal["success", "error", "timeout"]
    data: JsonValue = None


class ActionIn(Wire):
    action_id: Id
    payload: JsonValue = None


class UpdateSessionRequest(Wire):
    """A change to a session; the parts given are applied in this order, atomically."""

    session_id: Id
    advance: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    entity_id: Id | None = None
    pointers: dict[str, Id] | None = None
    api_result: ApiResultIn | None = None
    action: ActionIn | None = None


class ApiResultOut(Wire):
    status: str
    data_hash: str


class TraceEntryOut(Wire):
    step: int
    action_id: str
    payload_hash: str
    at: datetime


class TurnRefOut(Wire):
    turn_id: str
    role: str
    text_hash: str
    chars: int
    at: datetime


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
    session_id: Id
    role: Literal["user", "assistant", "system", "tool"]
    text: Text
    speaker: Annotated[str, Field(min_length=1, max_length=200)] | None = None


class RememberRequest(Wire):
    user_id: Id
    text: Text
    wait: bool = False
    """Wait until it is stored and report the episode and each fact."""


class EpisodeOut(Wire):
    id: str
    text: str
    role: str
    observed_at: datetime
    session_id: str | None = None
    speaker: str | None = None


class FactOut(Wire):
    id: str
    kind: str
    subject: str
    attribute: str
    value: str
    version: int
    active: bool
    valid_from: datetime
    episodes: list[str] = []


class Receipt(Wire):
    """What observe/remember queued; with ``wait``, what was stored."""

    queued: bool
    episode_ids: list[str] = []
    error: str | None = None
    episodes: list[EpisodeOut] = []
    facts: list[FactOut] = []


Label = Annotated[str, Field(min_length=1, max_length=256)]
StoreNamespace = Annotated[list[Label], Field(min_length=1, max_length=32)]
StoreKey = Annotated[str, Field(min_length=1, max_length=1024)]


class ForgetRequest(Wire):
    """Forget a user (everything held of them), chosen memories, or the item store's
    items under a namespace prefix; give exactly one of the three."""

    user_id: Id | None = None
    ids: Annotated[list[Id], Field(min_length=1, max_length=1_000)] | None = None
    store_namespace: StoreNamespace | None = None
    """A namespace prefix of the item store (its items are keyed by namespace, not user)."""


class ForgetResult(Wire):
    points_deleted: int
    keys_deleted: int
    queue_entries_deleted: int
    sessions_ended: int


class ConsolidationAction(Wire):
    """One kind of change a consolidation made, with the memory ids it touched."""

    action: str
    count: int
    ids: list[str] = []


class ConsolidationOut(Wire):
    """What one consolidation pass did to the caller's tenant."""

    tenant: str
    actions: list[ConsolidationAction] = []
    hot_merged: int = 0
    hot_duplicates: int = 0
    hot_expired: int = 0


class RestoreRequest(Wire):
    ids: Annotated[list[Id], Field(min_length=1, max_length=1_000)]


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


class RetrievedOut(Wire):
    id: str
    kind: str
    text: str
    score: float
    cosine: float
    low_confidence: bool
    routes: list[str] = []
    observed_at: datetime | None = None
    in_time_window: bool | None = None
    superseded_by: str | None = None
    facts: list[RetrievedOut] = []
    metadata: dict[str, JsonValue] = {}


class TimeWindowOut(Wire):
    start: datetime
    end: datetime
    phrase: str


class RetrievalOut(Wire):
    items: list[RetrievedOut] = []
    below_threshold: list[RetrievedOut] = []
    l3_skipped: bool = False
    time_window: TimeWindowOut | None = None


# -- routing and context --------------------------------------------------------------------


class RouteRequest(Wire):
    """``ContextRequest(session_id, step_intent)``: the context of the session's step."""

    session_id: Id
    step_intent: Id
    query: ShortText | None = None


class BundleItemOut(Wire):
    name: str
    content: JsonValue = None
    layer: str
    level: str
    """Its permission level: low, medium or high."""
    ref: str
    source: str
    relevance: float
    freshness_hours: float | None = None
    low_confidence: bool = False


class MissingOut(Wire):
    name: str
    layer: str
    ref: str
    reason: str


class Bundle(Wire):
    """``ContextBundle``: every item with its provenance, and what was missing."""

    session_id: str
    step_intent: str
    step: int
    built_at: datetime
    items: list[BundleItemOut] = []
    missing: list[MissingOut] = []
    l3_skipped: bool = False


class TurnIn(Wire):
    role: Literal["user", "assistant", "system"]
    content: Text
    id: Id | None = None
    summary: bool = False
    covers: list[Id] = []


class ToolResultIn(Wire):
    call_id: Id
    name: Id
    content: Text
    relevance: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    freshness_hours: Annotated[float, Field(ge=0.0)] | None = 0.0


class BuildContextRequest(Wire):
    session_id: Id
    step_intent: Id
    user_input: Text
    system_prompt: Text
    model: Id = "gpt-4o"
    history: Annotated[list[TurnIn], Field(max_length=1_000)] = []
    tool_results: Annotated[list[ToolResultIn], Field(max_length=100)] = []
    k: Annotated[int, Field(ge=1, le=100)] = 10


class ChatMessageOut(Wire):
    role: str
    content: str


class ContextEntryOut(Wire):
    """An admitted or dropped part of the context, with where it came from."""

    id: str
    section: str
    tokens: int
    layer: str
    ref: str
    source: str
    relevance: float | None = None
    freshness_hours: float | None = None
    low_confidence: bool = False
    reason: str | None = None
    detail: str | None = None


class SectionOut(Wire):
    section: str
    budget: int
    used: int


class BuiltContextOut(Wire):
    """The step's model call: its messages, and the accounting of what went in."""

    messages: list[ChatMessageOut]
    admitted: list[ContextEntryOut] = []
    dropped: list[ContextEntryOut] = []
    sections: list[SectionOut] = []
    total_tokens: int
    available_tokens: int
    counter: str
    exact: bool
    summary: TurnIn | None = None


# -- working memory (L2) -------------------------------------------------------------------


class PutApiResponseRequest(Wire):
    session_id: Id
    endpoint: Id
    params: dict[str, JsonValue] = {}
    value: JsonValue
    ttl_s: Annotated[float, Field(gt=0, le=30 * 86_400)] | None = None


class GetApiResponseRequest(Wire):
    session_id: Id
    endpoint: Id
    params: dict[str, JsonValue] = {}


class PutStepResultRequest(Wire):
    session_id: Id
    step_id: Id
    fields: dict[str, JsonValue]


class GetStepResultRequest(Wire):
    session_id: Id
    step_id: Id
    reader_step: Id | None = None


class WorkingItemOut(Wire):
    key: str
    value: JsonValue = None
    ttl_remaining_s: float | None = None
    stored_at: datetime | None = None


class SeriesPointIn(Wire):
    timestamp: float
    value: JsonValue


class AppendSeriesRequest(Wire):
    session_id: Id
    metric: Id
    points: Annotated[list[SeriesPointIn], Field(min_length=1, max_length=10_000)]
    window: Annotated[int, Field(ge=1, le=1_000_000)] | None = None


class AppendSeriesResult(Wire):
    kept: int


class ReadSeriesRequest(Wire):
    session_id: Id
    metric: Id
    start: float | None = None
    end: float | None = None


class SeriesOut(Wire):
    points: list[SeriesPointIn] = []


class PendingRequest(Wire):
    session_id: Id
    task_ids: Annotated[list[Id], Field(min_length=1, max_length=1_000)]


class PendingOut(Wire):
    pending: list[str] = []
    changed: int = 0


# -- knowledge -------------------------------------------------------------------------------


class DocumentIn(Wire):
    name: Annotated[str, Field(min_length=1, max_length=512)]
    text: Annotated[str, Field(max_length=10_000_000)]
    format: Literal["markdown", "html", "text"] = "markdown"


class IngestDocumentsRequest(Wire):
    documents: Annotated[list[DocumentIn], Field(min_length=1, max_length=1_000)]
    level: Literal["low", "medium", "high"] = "low"
    """The permission level the documents' chunks carry."""


class FileErrorOut(Wire):
    path: str
    reason: str


class IngestReportOut(Wire):
    files_seen: int
    files_added: int
    files_updated: int
    files_skipped: int
    files_removed: int
    chunks_added: int
    chunks_deleted: int
    oversized_chunks: int
    errors: list[FileErrorOut] = []


class ConfirmKnowledgeRequest(Wire):
    """A question and the answer a user confirmed: searchable at once, merged later."""

    query: ShortText
    response: Text
    source: Id


class IdOut(Wire):
    id: str


# -- inspect -----------------------------------------------------------------------------------


class WorkingKeyOut(Wire):
    key: str
    type: str
    ttl_remaining_s: float | None = None


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
    purpose: Annotated[str, Field(min_length=1, max_length=500)]
    ttl_s: Annotated[float, Field(ge=1, le=365 * 86_400)]
    owner: Id | None = None


class NamespaceOut(Wire):
    namespace: str
    purpose: str
    ttl_s: float
    owner: str
    created_at: float


class NamespaceList(Wire):
    namespaces: list[NamespaceOut] = []


class AccessRequestIn(Wire):
    """Ask for access to a namespace, stating the purpose."""

    namespace: Id
    purpose: Annotated[str, Field(min_length=1, max_length=500)]
    mode: Literal["read", "write"] = "read"


class AccessRequestOut(Wire):
    namespace: str
    agent: str
    purpose: str
    mode: str
    at: float


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


class SharedItemOut(Wire):
    namespace: str
    item_id: str
    value: JsonValue = None
    level: str
    written_by: str
    written_at: float
    expires_at: float


class SharedItemList(Wire):
    items: list[SharedItemOut] = []


# -- item store (LangGraph's BaseStore) ------------------------------------------------------


class StorePutRequest(Wire):
    """Store a JSON object under (namespace, key), replacing the item there."""

    namespace: StoreNamespace
    key: StoreKey
    value: dict[str, JsonValue]
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


class StoreItemOut(Wire):
    namespace: list[str]
    key: str
    value: dict[str, JsonValue] = {}
    created_at: datetime
    updated_at: datetime
    score: float | None = None
    """With a query: the item's cosine to it."""


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


class StoreNamespaceOut(Wire):
    namespace: list[str]


class StoreNamespaceList(Wire):
    namespaces: list[StoreNamespaceOut] = []


# -- API keys ----------------------------------------------------------------------------------


class CreateKeyRequest(Wire):
    """A key for an agent of the caller's tenant."""

    agent: Annotated[str, Field(min_length=1, max_length=40)]
    role: Literal["reader", "writer", "admin"]
    clearance: Literal["low", "medium", "high"] = "high"
    ttl_s: Annotated[float, Field(gt=0)] | None = None
    rate_per_s: Annotated[int, Field(ge=1, le=1_000_000)] = 1_000


class KeyOut(Wire):
    key_id: str
    tenant: str
    agent: str
    role: str
    clearance: str
    created_at: float
    expires_at: float | None = None
    revoked: bool = False
    rate_per_s: int


class CreatedKeyOut(Wire):
    """``key`` is shown this once; only its hash is stored."""

    key: str
    info: KeyOut


class KeyRef(Wire):
    key_id: Annotated[str, Field(min_length=1, max_length=64)]


class KeyList(Wire):
    keys: list[KeyOut] = []


# -- decisions (seed 003 §4) -------------------------------------------------------------

Risk = Literal["low", "medium", "high"]
JsonObject = dict[str, JsonValue]


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


class SlotModel(Wire):
    """Key information a step needs, found in the first source that holds it."""

    name: Id
    sources: Annotated[list[Id], Field(min_length=1, max_length=16)]
    question: ShortText | None = None


class StepPolicyModel(Wire):
    """How one intent's steps decide: risk, evidence, key information, tool."""

    intent: Id
    risk: Risk = "low"
    evidence: Annotated[list[Id], Field(min_length=1, max_length=64)] = ["*"]
    slots: Annotated[list[SlotModel], Field(max_length=32)] = []
    tool: Id | None = None
    tool_params: dict[str, Id] = {}


class DecideRequest(Wire):
    """Route the session's step and decide: answer, call a tool, or ask."""

    session_id: Id
    step_intent: Id
    query: ShortText | None = None
    question: ShortText | None = None
    """The user's question, kept (sanitized) on the trace card."""
    given: JsonObject = {}
    """What the caller parsed from this turn, as ``given.<name>`` facts."""


class JudgmentOut(Wire):
    needs_data: bool
    data_kind: str | None = None
    enough: bool
    confidence: float
    missing: list[str] = []
    tool: str | None = None
    params: JsonObject = {}
    reasons: list[str] = []
    judged_by: str


class UsedContextOut(Wire):
    memory_ids: list[str] = []
    episode_ids: list[str] = []
    knowledge_ids: list[str] = []
    l2_keys: list[str] = []


class DecisionOut(Wire):
    """The decision, its judgment, the context it rests on and its trace card id."""

    route: Literal["answer", "tool", "ask"]
    intent: str
    risk: str
    confidence: float
    threshold: float
    tool: str | None = None
    params: JsonObject = {}
    ask_for: list[str] = []
    questions: list[str] = []
    reasons: list[str] = []
    judgment: JudgmentOut
    used: UsedContextOut
    card_id: str
    bundle: Bundle


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


class GateCheckOut(Wire):
    name: str
    passed: bool
    detail: str = ""


class GateVerdictOut(Wire):
    tool: str
    checks: list[GateCheckOut] = []


class AttemptOut(Wire):
    tool: str
    ok: bool
    error: str = ""


class ToolOutcomeOut(Wire):
    """done, approved (run it yourself), pending_confirmation, rejected, blocked or
    cannot_complete; with every gate verdict and attempt."""

    outcome: str
    tool: str
    result: JsonValue = None
    pending_id: str | None = None
    verdicts: list[GateVerdictOut] = []
    attempts: list[AttemptOut] = []
    fallbacks: list[str] = []
    message: str = ""


class CheckReplyRequest(Wire):
    card_id: Id
    reply: Text


class ReplyCheckOut(Wire):
    consistent: bool
    regenerate: bool
    conflicts: list[str] = []
    context_loaded: bool
    context_used: bool
    effective: bool


class TraceCardsRequest(Wire):
    """Cards by session and time (RFC 3339), oldest first."""

    session_id: Id | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: Annotated[int, Field(ge=1, le=1_000)] = 100


class TraceCardOut(Wire):
    """One decision, as an operator reads it back."""

    id: str
    session_id: str
    step: int
    intent: str
    at: datetime
    route: str
    confidence: float
    threshold: float
    judged_by: str
    user: str = ""
    question: str = ""
    reasons: list[str] = []
    memory_ids: list[str] = []
    episode_ids: list[str] = []
    knowledge_ids: list[str] = []
    l2_keys: list[str] = []
    ask_for: list[str] = []
    tool: str | None = None
    params: JsonObject = {}
    tool_outcome: str | None = None
    gate: list[GateVerdictOut] = []
    attempts: list[AttemptOut] = []
    fallbacks: list[str] = []
    timing_ms: dict[str, float] = {}
    reply: str = ""
    consistency: str
    conflicts: list[str] = []
    context_loaded: bool | None = None
    context_used: bool | None = None
    effective: bool | None = None
    flags: list[str] = []


class TraceCardList(Wire):
    cards: list[TraceCardOut] = []


class FeedbackRequest(Wire):
    """The user's follow-up to a decision: confirmed, corrected (with the correction),
    abandoned, or a rating from 1 to 5."""

    card_id: Id
    kind: Literal["confirmed", "corrected", "abandoned", "rating"]
    correction: ShortText | None = None
    rating: Annotated[int, Field(ge=1, le=5)] | None = None
    used: Annotated[list[Id], Field(max_length=200)] | None = None
    """The memory ids the reply used (default: what the checked reply reflects)."""
    wrong: Annotated[list[Id], Field(max_length=200)] | None = None
    """Memory ids the correction says are wrong (they stop being current)."""


class FeedbackReceiptOut(Wire):
    event_id: str
    card_id: str
    kind: str
    queued: bool
    used: list[str] = []
    used_by: str
    ignored: list[str] = []
    wrong: list[str] = []
    error: str | None = None


class FeedbackReportRequest(Wire):
    since: datetime | None = None


class QuestionStatsOut(Wire):
    question: str
    events: int
    misses: int
    miss_rate: float


class IntentStatsOut(Wire):
    intent: str
    events: int
    confirmed: int
    corrected: int
    abandoned: int
    ratings: int
    low_ratings: int
    mean_rating: float | None = None
    misses: int
    miss_rate: float
    questions: list[QuestionStatsOut] = []


class IgnoredMemoryOut(Wire):
    id: str
    ignored: int
    used: int
    text: str | None = None


class FeedbackReportOut(Wire):
    """Which query types keep missing the right memory, and which memories are
    retrieved but ignored."""

    events: int
    by_kind: dict[str, int] = {}
    corrected_share: float | None = None
    intents: list[IntentStatsOut] = []
    ignored: list[IgnoredMemoryOut] = []


class HealthReportRequest(Wire):
    since: Annotated[str, Field(min_length=2, max_length=16)] = "7d"
    """The window: ``30m``, ``24h``, ``7d``, ``2w``."""


class HealthReportOut(Wire):
    """The context health report (seed 000 §5.3) as Markdown and a self-contained
    HTML page with charts."""

    samples: int
    markdown: str
    html: str


class Empty(Wire):
    """No fields."""


def dump(model: BaseModel) -> dict[str, Any]:
    """A model as JSON-ready data, unset optional fields left out."""
    return model.model_dump(mode="json", exclude_none=True)
