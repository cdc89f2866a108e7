"""Listing: a user's memories without a query, a fact's history, the tenant's users
(docs/service.md, "Listing"). Under the caller's tenant, and cleared as ``retrieve``
is: an item above the key's clearance is left out, and nothing says it was there."""

from __future__ import annotations

from typing import Any

from memstrata.errors import NotFoundError
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import Call, Operation


def _list_memories(call: Call, req: m.ListMemoriesRequest) -> m.MemoryPageOut:
    page = call.engine.list_memories(
        req.user_id,
        kind=req.kind,
        since=req.since,
        until=req.until,
        page=req.page,
        page_size=req.page_size,
        tenant=call.caller.tenant,
        clearance=call.caller.clearance,
    )
    return convert.to_wire(page, m.MemoryPageOut)


def _history(call: Call, req: m.HistoryRequest) -> m.FactHistoryOut:
    found = call.engine.history(
        req.fact_id, tenant=call.caller.tenant, clearance=call.caller.clearance
    )
    return convert.to_wire(found, m.FactHistoryOut)


def _list_users(call: Call, req: m.Empty) -> m.UserListOut:
    users = call.engine.list_users(tenant=call.caller.tenant, clearance=call.caller.clearance)
    return m.UserListOut(users=[convert.to_wire(u, m.UserSummaryOut) for u in users])


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "list_memories",
        "A page of a user's memories without a query, newest first (episodes, facts with "
        "every version marked, events, preferences), each with the episodes it came from "
        "or the facts it gave; page on with next_page.",
        m.ListMemoriesRequest,
        m.MemoryPageOut,
        "reader",
        _list_memories,
    ),
    Operation(
        "history",
        "Every version of a fact, oldest to newest, with validity windows and the "
        "episodes each version came from.",
        m.HistoryRequest,
        m.FactHistoryOut,
        "reader",
        _history,
        (NotFoundError,),
    ),
    Operation(
        "list_users",
        "The users with memory in the caller's tenant, with counts and last activity.",
        m.Empty,
        m.UserListOut,
        "reader",
        _list_users,
    ),
)
