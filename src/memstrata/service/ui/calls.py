"""What the browser's pages read and write, each through the capability table.

Every function here calls :meth:`memstrata.service.core.Service.call` with the
signed-in session's API key, exactly as ``POST /v1/<operation>`` does: the key is
verified (and audited, rate counted) on every call, the role checked, the request
validated and screened, and the operation runs under the key's tenant and clearance.
Nothing reads the engine around the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memstrata.errors import NotFoundError, ValidationError
from memstrata.service.core import Service
from memstrata.service.ui.session import UiSession
from memstrata.service.wire_base import dump

TRANSPORT = "ui"
"""The service metrics' transport label of the browser's calls."""
CARD_SCAN_LIMIT = 1_000
"""How many recent trace cards a card's page (or a fact's) looks through."""


def call(service: Service, session: UiSession, name: str, payload: Mapping[str, Any]) -> Any:
    """One operation for the signed-in key, its answer as JSON-ready data."""
    return dump(service.call(name, session.key, dict(payload), transport=TRANSPORT))


def list_users(service: Service, session: UiSession) -> Any:
    """The users with memory in the key's tenant, most recently active first."""
    return call(service, session, "list_users", {})


def list_memories(
    service: Service,
    session: UiSession,
    user_id: str,
    *,
    kind: str | None = None,
    page: str | None = None,
) -> Any:
    """A user's memories, newest first, without a query (``list_memories``)."""
    payload: dict[str, Any] = {"user_id": user_id}
    if kind:
        payload["kind"] = kind
    if page:
        payload["page"] = page
    return call(service, session, "list_memories", payload)


def fact_history(service: Service, session: UiSession, fact_id: str) -> Any:
    """Every version of a fact, oldest first, with the episodes each came from."""
    return call(service, session, "history", {"fact_id": fact_id})


def search(service: Service, session: UiSession, query: str, user_id: str | None) -> Any:
    """``retrieve`` over the user's memories, superseded versions included."""
    payload: dict[str, Any] = {"query": query, "k": 20, "include_history": True}
    if user_id:
        payload["user_id"] = user_id
    return call(service, session, "retrieve", payload)


def trace_cards(
    service: Service, session: UiSession, *, limit: int = 100, session_id: str | None = None
) -> list[dict[str, Any]]:
    """The tenant's most recent trace cards, newest first."""
    payload: dict[str, Any] = {"limit": limit}
    if session_id:
        payload["session_id"] = session_id
    cards = call(service, session, "trace_cards", payload)["cards"]
    return list(reversed(cards))


def trace_card(service: Service, session: UiSession, card_id: str) -> dict[str, Any]:
    """One card of the tenant (among its recent ones); NotFoundError otherwise."""
    for card in trace_cards(service, session, limit=CARD_SCAN_LIMIT):
        if card["id"] == card_id:
            return card
    raise NotFoundError(f"trace card {card_id!r} is not among this tenant's recent cards")


CARD_MEMORIES_SHOWN = 20
"""How many of a card's memories its page reads back (one ``history`` call each)."""


def card_memories(
    service: Service, session: UiSession, memory_ids: list[str]
) -> dict[str, dict[str, Any]]:
    """What a card's memories hold now, by id: the version of each fact as ``history``
    reads it (its value, status, episodes). One forgotten since, or above the key's
    clearance, is left out (the page shows its id alone)."""
    found: dict[str, dict[str, Any]] = {}
    for memory_id in memory_ids[:CARD_MEMORIES_SHOWN]:
        if memory_id in found:
            continue
        try:
            history = fact_history(service, session, memory_id)
        except (NotFoundError, ValidationError):
            continue
        for version in history["versions"]:
            found[version["id"]] = version
    return found


def cards_using(service: Service, session: UiSession, memory_id: str) -> list[dict[str, Any]]:
    """The recent decisions whose context held ``memory_id`` (what a correction needs)."""
    return [
        card
        for card in trace_cards(service, session, limit=CARD_SCAN_LIMIT)
        if memory_id in card.get("memory_ids", ())
    ]


def correct(
    service: Service, session: UiSession, card_id: str, memory_id: str, correction: str
) -> Any:
    """A correction through the feedback path: the decision's memory is wrong, the
    correction becomes memory that supersedes it (applied by the write queue)."""
    return call(
        service,
        session,
        "feedback",
        {
            "card_id": card_id,
            "kind": "corrected",
            "correction": correction,
            "used": [memory_id],
            "wrong": [memory_id],
        },
    )


def forget(service: Service, session: UiSession, user_id: str, ids: list[str] | None) -> Any:
    """Start the forget job: the whole user, or the chosen memories of theirs."""
    payload: dict[str, Any] = {"ids": ids} if ids else {"user_id": user_id}
    return call(service, session, "forget", payload)


FORGET_WAIT_S = 3.0
"""How long the job's page waits for the job to finish before it shows it running
(and refreshes itself)."""


def forget_status(service: Service, session: UiSession, job_id: str) -> Any:
    return call(service, session, "forget_status", {"job_id": job_id, "timeout_s": FORGET_WAIT_S})


def health_report(service: Service, session: UiSession, since: str = "7d") -> Any:
    """The context health report now (a fresh sample is taken first)."""
    return call(service, session, "health_report", {"since": since})
