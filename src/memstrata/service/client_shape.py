"""How the generated client presents each operation: its method name (the engine's),
the old name kept as a deprecated alias, and the result it returns.

The service's operation names and wire models stay as they are (REST paths, gRPC
methods and MCP tools derive from them); only the Python client's method names and
results follow :class:`memstrata.interface.Memory`, the Protocol the engine shares.
Read by :mod:`memstrata.service.codegen` (it lives beside it: the client imports the
service's wire models, so the service must not import the client); imports nothing.
"""

from __future__ import annotations

from typing import NamedTuple


class Shape(NamedTuple):
    """One operation's client method: ``name`` (None: the operation's), ``result`` (the
    return annotation and an expression of the response ``r``; None: the response)."""

    name: str | None = None
    result: tuple[str, str] | None = None


SHAPES: dict[str, Shape] = {
    "get_session": Shape("session"),
    "forget": Shape("start_forget"),
    "flush": Shape(result=("None", "None")),
    "confirm_knowledge": Shape(result=("str", "r.id")),
    "restore": Shape(result=("list[str]", "r.restored")),
    "list_namespaces": Shape("namespaces", ("list[m.NamespaceOut]", "r.namespaces")),
    "request_access": Shape("request_namespace_access"),
    "access_requests": Shape(
        "namespace_access_requests", ("list[m.AccessRequestOut]", "r.requests")
    ),
    "grant_access": Shape("grant_namespace_access", ("None", "None")),
    "revoke_access": Shape("revoke_namespace_access", ("None", "None")),
    "shared_items": Shape(result=("list[m.SharedItemOut]", "r.items")),
    "store_get": Shape(result=("m.StoreItemOut | None", "r.item")),
    "store_delete": Shape(result=("bool", "r.deleted")),
    "store_search": Shape(result=("list[m.StoreItemOut]", "r.items")),
    "store_list_namespaces": Shape(
        result=("list[tuple[str, ...]]", "[tuple(n.namespace) for n in r.namespaces]")
    ),
    "list_tools": Shape("tools", ("list[m.ToolSpecModel]", "r.tools")),
    "trace_cards": Shape(result=("list[m.TraceCardOut]", "r.cards")),
    "list_users": Shape(result=("list[m.UserSummaryOut]", "r.users")),
    "list_dead_letters": Shape("dead_letters", ("list[m.DeadLetterOut]", "r.dead_letters")),
}
"""Operations whose client method differs from the plain ``op(...) -> response``; a
renamed one keeps its old name as a deprecated alias with its old result."""
