"""One interface for the engine, in process or over the wire.

:class:`Memory` lists the operations that :class:`memstrata.engine.ContextEngine` and
:class:`memstrata.client.Client` share - the same names, the same arguments, results
of the same shape - and :class:`AsyncMemory` the same for
:class:`memstrata.client.AsyncClient`; the LangGraph store and the CLI are written once
against them (as qdrant-client's local and remote modes share one API).

Who is calling is not an argument here: the engine acts for its ``tenant`` keyword
(default ``default``) and a client for its key's tenant and agent, so the engine's
extra keywords (``tenant``, ``clearance``...) stay optional extensions of this
Protocol. Results are typed by the views of :mod:`memstrata.interface.views`:
read-only attributes that the engine's domain values and the service's wire models
both carry (a tuple on one side, a list on the other, both a ``Sequence``).

:func:`connect` returns a :class:`Memory`: a client of the service at ``url``, or the
engine opened on a data directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import JsonValue

from memstrata.interface.views import (
    AdmittedView,
    BuiltContextView,
    BundleItemView,
    BundleView,
    DeadLetterView,
    DecisionView,
    EpisodeView,
    FactHistoryView,
    FactVersionView,
    FeedbackReceiptView,
    ForgetJobView,
    ListedMemoryView,
    MemoryPageView,
    NamespaceView,
    ReceiptView,
    ReplyCheckView,
    RetrievalView,
    RetrievedView,
    SessionView,
    SharedItemView,
    StoreItemView,
    ToolOutcomeView,
    ToolView,
    TraceCardView,
    UserSummaryView,
)

if TYPE_CHECKING:
    from memstrata.config import Settings

Role = Literal["user", "assistant", "system", "tool"]
FeedbackKind = Literal["confirmed", "corrected", "abandoned", "rating"]

__all__ = [
    "AdmittedView",
    "AsyncMemory",
    "BuiltContextView",
    "BundleItemView",
    "BundleView",
    "DeadLetterView",
    "DecisionView",
    "EpisodeView",
    "FactHistoryView",
    "FactVersionView",
    "FeedbackReceiptView",
    "ForgetJobView",
    "ListedMemoryView",
    "Memory",
    "MemoryPageView",
    "NamespaceView",
    "ReceiptView",
    "ReplyCheckView",
    "RetrievalView",
    "RetrievedView",
    "SessionView",
    "SharedItemView",
    "StoreItemView",
    "ToolOutcomeView",
    "ToolView",
    "TraceCardView",
    "UserSummaryView",
    "connect",
]


# -- the operations ------------------------------------------------------------------------
# AsyncMemory repeats Memory with ``async def`` (a test keeps the two the same): the
# positional-only parameters (before ``/``) are those the engine and the wire name
# differently (``session`` / ``session_id``); the rest are called by name.


@runtime_checkable
class Memory(Protocol):
    """The operations the engine and the synchronous client share."""

    def start_session(
        self, user_id: str, initial_query: str, *, session_id: str | None = None
    ) -> SessionView:
        """Open a session (its L1 state lives in the engine's process)."""
        ...

    def session(self, session_id: str) -> SessionView:
        """A session's current L1 state (NotFoundError when it is not open)."""
        ...

    def end_session(self, session_id: str) -> SessionView:
        """Close a session; returns its last state."""
        ...

    def observe(
        self, session_id: str, role: Role, text: str, *, speaker: str | None = None
    ) -> ReceiptView:
        """Record a conversation turn: L1 now, its episode and facts queued."""
        ...

    def remember(self, user_id: str, text: str, /) -> ReceiptView:
        """Queue a text for the user's long-term memory (episode and facts)."""
        ...

    def flush(self, *, timeout_s: float = 60.0) -> None:
        """Wait until everything queued so far is in long-term memory."""
        ...

    def retrieve(
        self,
        query: str,
        *,
        user_id: str | None = None,
        k: int = 10,
        collection: Literal["memories", "knowledge"] = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
    ) -> RetrievalView:
        """Multi-route retrieval of memories or knowledge, with confidence."""
        ...

    def route(
        self, session: str, step_intent: str | None = None, /, *, query: str | None = None
    ) -> BundleView:
        """The context bundle of the session's step (intent recognized from ``query``
        when ``step_intent`` is None)."""
        ...

    def build_context(
        self,
        session: str,
        step_intent: str | None,
        user_input: str,
        /,
        *,
        system_prompt: str,
        model: str = "gpt-4o",
        k: int = 10,
        window_tokens: int | None = None,
    ) -> BuiltContextView:
        """The step's model call, assembled within the token budget of ``model``."""
        ...

    def confirm_knowledge(self, query: str, response: str, *, source: str) -> str:
        """Learn a confirmed question/answer pair (hot knowledge); returns its id."""
        ...

    def start_forget(
        self,
        *,
        user_id: str | None = None,
        ids: list[str] | None = None,
        store_namespace: list[str] | None = None,
    ) -> ForgetJobView:
        """Forget a user, chosen memories or item-store items (give one), as a job."""
        ...

    def forget_status(self, job_id: str, *, timeout_s: float = 0.0) -> ForgetJobView:
        """A forget job, after waiting up to ``timeout_s`` for it to end."""
        ...

    def restore(self, ids: list[str]) -> Sequence[str]:
        """Bring memories back from cold storage; the ids restored."""
        ...

    def dead_letters(
        self, *, after: str | None = None, limit: int = 100
    ) -> Sequence[DeadLetterView]:
        """Entries the write queue gave up on, oldest first."""
        ...

    def store_put(
        self,
        namespace: list[str],
        key: str,
        value: dict[str, JsonValue],
        *,
        index: list[str] | None = None,
        searchable: bool = True,
    ) -> StoreItemView:
        """Store a JSON object under ``(namespace, key)``, replacing the item there."""
        ...

    def store_get(self, namespace: list[str], key: str) -> StoreItemView | None:
        """The item at ``(namespace, key)``, or None."""
        ...

    def store_delete(self, namespace: list[str], key: str) -> bool:
        """Delete the item at ``(namespace, key)``; whether there was one."""
        ...

    def store_search(
        self,
        *,
        namespace_prefix: list[str] = ...,
        query: str | None = None,
        filter: dict[str, JsonValue] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> Sequence[StoreItemView]:
        """Items under a namespace prefix matching ``filter``; ranked with ``query``."""
        ...

    def store_list_namespaces(
        self,
        *,
        prefix: list[str] | None = None,
        suffix: list[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items (``*`` a wildcard in prefix and suffix)."""
        ...

    def tools(self) -> Sequence[ToolView]:
        """The tools the decisions may call."""
        ...

    def decide(
        self, session: str, /, *, question: str = "", given: dict[str, JsonValue] | None = None
    ) -> DecisionView:
        """Route the step from ``question`` and decide: answer, call a tool, or ask."""
        ...

    def call_tool(
        self, card_id: str, *, tool: str | None = None, params: dict[str, JsonValue] | None = None
    ) -> ToolOutcomeView:
        """Run a decision's tool call through the gate and the fallback chain."""
        ...

    def confirm_tool(self, pending_id: str, *, confirmed: bool = True) -> ToolOutcomeView:
        """Confirm (run) or reject a high-impact call held for confirmation."""
        ...

    def report_tool_result(
        self, card_id: str, *, tool: str, ok: bool, error: str = ""
    ) -> ToolOutcomeView:
        """A remote tool's attempt; the outcome says what the chain does next."""
        ...

    def check_reply(self, card_id: str, reply: str) -> ReplyCheckView:
        """Check a reply against the memories its decision used."""
        ...

    def trace_cards(
        self,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> Sequence[TraceCardView]:
        """Trace cards by session and time, oldest first."""
        ...

    def feedback(
        self,
        card_id: str,
        kind: FeedbackKind,
        *,
        correction: str = "",
        rating: int | None = None,
        used: list[str] | None = None,
        wrong: list[str] | None = None,
    ) -> FeedbackReceiptView:
        """The user's follow-up to a decision, applied to the memories it used."""
        ...

    def create_namespace(
        self, name: str, /, *, owner: str, purpose: str, ttl_s: float
    ) -> NamespaceView:
        """A shared namespace: its purpose, its items' TTL and its owner."""
        ...

    def list_memories(
        self,
        user_id: str,
        *,
        kind: Literal["episode", "fact", "event", "preference", "pinned"] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        page: str | None = None,
        page_size: int = 50,
    ) -> MemoryPageView:
        """A page of a user's memories without a query, newest first."""
        ...

    def history(self, fact_id: str) -> FactHistoryView:
        """Every version of a fact, oldest first, with its episodes."""
        ...

    def list_users(self) -> Sequence[UserSummaryView]:
        """The users with memory in the tenant, with counts and last activity."""
        ...

    def close(self) -> None:
        """End what this object opened."""
        ...


@runtime_checkable
class AsyncMemory(Protocol):
    """:class:`Memory` for :class:`memstrata.client.AsyncClient`: each operation awaited."""

    async def start_session(
        self, user_id: str, initial_query: str, *, session_id: str | None = None
    ) -> SessionView:
        """Open a session (its L1 state lives in the engine's process)."""
        ...

    async def session(self, session_id: str) -> SessionView:
        """A session's current L1 state (NotFoundError when it is not open)."""
        ...

    async def end_session(self, session_id: str) -> SessionView:
        """Close a session; returns its last state."""
        ...

    async def observe(
        self, session_id: str, role: Role, text: str, *, speaker: str | None = None
    ) -> ReceiptView:
        """Record a conversation turn: L1 now, its episode and facts queued."""
        ...

    async def remember(self, user_id: str, text: str, /) -> ReceiptView:
        """Queue a text for the user's long-term memory (episode and facts)."""
        ...

    async def flush(self, *, timeout_s: float = 60.0) -> None:
        """Wait until everything queued so far is in long-term memory."""
        ...

    async def retrieve(
        self,
        query: str,
        *,
        user_id: str | None = None,
        k: int = 10,
        collection: Literal["memories", "knowledge"] = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
    ) -> RetrievalView:
        """Multi-route retrieval of memories or knowledge, with confidence."""
        ...

    async def route(
        self, session: str, step_intent: str | None = None, /, *, query: str | None = None
    ) -> BundleView:
        """The context bundle of the session's step (intent recognized from ``query``
        when ``step_intent`` is None)."""
        ...

    async def build_context(
        self,
        session: str,
        step_intent: str | None,
        user_input: str,
        /,
        *,
        system_prompt: str,
        model: str = "gpt-4o",
        k: int = 10,
        window_tokens: int | None = None,
    ) -> BuiltContextView:
        """The step's model call, assembled within the token budget of ``model``."""
        ...

    async def confirm_knowledge(self, query: str, response: str, *, source: str) -> str:
        """Learn a confirmed question/answer pair (hot knowledge); returns its id."""
        ...

    async def start_forget(
        self,
        *,
        user_id: str | None = None,
        ids: list[str] | None = None,
        store_namespace: list[str] | None = None,
    ) -> ForgetJobView:
        """Forget a user, chosen memories or item-store items (give one), as a job."""
        ...

    async def forget_status(self, job_id: str, *, timeout_s: float = 0.0) -> ForgetJobView:
        """A forget job, after waiting up to ``timeout_s`` for it to end."""
        ...

    async def restore(self, ids: list[str]) -> Sequence[str]:
        """Bring memories back from cold storage; the ids restored."""
        ...

    async def dead_letters(
        self, *, after: str | None = None, limit: int = 100
    ) -> Sequence[DeadLetterView]:
        """Entries the write queue gave up on, oldest first."""
        ...

    async def store_put(
        self,
        namespace: list[str],
        key: str,
        value: dict[str, JsonValue],
        *,
        index: list[str] | None = None,
        searchable: bool = True,
    ) -> StoreItemView:
        """Store a JSON object under ``(namespace, key)``, replacing the item there."""
        ...

    async def store_get(self, namespace: list[str], key: str) -> StoreItemView | None:
        """The item at ``(namespace, key)``, or None."""
        ...

    async def store_delete(self, namespace: list[str], key: str) -> bool:
        """Delete the item at ``(namespace, key)``; whether there was one."""
        ...

    async def store_search(
        self,
        *,
        namespace_prefix: list[str] = ...,
        query: str | None = None,
        filter: dict[str, JsonValue] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> Sequence[StoreItemView]:
        """Items under a namespace prefix matching ``filter``; ranked with ``query``."""
        ...

    async def store_list_namespaces(
        self,
        *,
        prefix: list[str] | None = None,
        suffix: list[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items (``*`` a wildcard in prefix and suffix)."""
        ...

    async def tools(self) -> Sequence[ToolView]:
        """The tools the decisions may call."""
        ...

    async def decide(
        self, session: str, /, *, question: str = "", given: dict[str, JsonValue] | None = None
    ) -> DecisionView:
        """Route the step from ``question`` and decide: answer, call a tool, or ask."""
        ...

    async def call_tool(
        self, card_id: str, *, tool: str | None = None, params: dict[str, JsonValue] | None = None
    ) -> ToolOutcomeView:
        """Run a decision's tool call through the gate and the fallback chain."""
        ...

    async def confirm_tool(self, pending_id: str, *, confirmed: bool = True) -> ToolOutcomeView:
        """Confirm (run) or reject a high-impact call held for confirmation."""
        ...

    async def report_tool_result(
        self, card_id: str, *, tool: str, ok: bool, error: str = ""
    ) -> ToolOutcomeView:
        """A remote tool's attempt; the outcome says what the chain does next."""
        ...

    async def check_reply(self, card_id: str, reply: str) -> ReplyCheckView:
        """Check a reply against the memories its decision used."""
        ...

    async def trace_cards(
        self,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> Sequence[TraceCardView]:
        """Trace cards by session and time, oldest first."""
        ...

    async def feedback(
        self,
        card_id: str,
        kind: FeedbackKind,
        *,
        correction: str = "",
        rating: int | None = None,
        used: list[str] | None = None,
        wrong: list[str] | None = None,
    ) -> FeedbackReceiptView:
        """The user's follow-up to a decision, applied to the memories it used."""
        ...

    async def create_namespace(
        self, name: str, /, *, owner: str, purpose: str, ttl_s: float
    ) -> NamespaceView:
        """A shared namespace: its purpose, its items' TTL and its owner."""
        ...

    async def list_memories(
        self,
        user_id: str,
        *,
        kind: Literal["episode", "fact", "event", "preference", "pinned"] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        page: str | None = None,
        page_size: int = 50,
    ) -> MemoryPageView:
        """A page of a user's memories without a query, newest first."""
        ...

    async def history(self, fact_id: str) -> FactHistoryView:
        """Every version of a fact, oldest first, with its episodes."""
        ...

    async def list_users(self) -> Sequence[UserSummaryView]:
        """The users with memory in the tenant, with counts and last activity."""
        ...

    async def aclose(self) -> None:
        """End what this object opened."""
        ...


def connect(
    url: str | None = None,
    *,
    key: str | None = None,
    data_dir: Path | None = None,
    settings: Settings | None = None,
    timeout_s: float = 60.0,
) -> Memory:
    """A :class:`Memory`: a client of the service at ``url`` (or ``MEMSTRATA_URL``) with
    ``key`` (or ``MEMSTRATA_API_KEY``), else the engine opened in this process on
    ``settings`` (default: from the ``MEMSTRATA_*`` environment), its data directory
    ``data_dir`` when given. Only the in-process branch imports the engine."""
    import os

    url = url or os.environ.get("MEMSTRATA_URL")
    if url:
        from memstrata.client import Client

        return Client(url, key, timeout_s=timeout_s)
    import dataclasses

    from memstrata.config import settings_from_env
    from memstrata.engine import ContextEngine

    if settings is None:
        return ContextEngine.open(settings_from_env(data_dir=data_dir))
    if data_dir is not None:
        settings = dataclasses.replace(settings, data_dir=Path(data_dir))
    return ContextEngine.open(settings)


if TYPE_CHECKING:
    # mypy (``make typecheck``) holds the engine and the clients to the Protocols.
    from memstrata.client import AsyncClient, Client
    from memstrata.engine import ContextEngine

    def _engine_is_memory(engine: ContextEngine) -> Memory:
        return engine

    def _client_is_memory(client: Client) -> Memory:
        return client

    def _async_client_is_async_memory(client: AsyncClient) -> AsyncMemory:
        return client
