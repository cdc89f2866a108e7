"""Sharing: context shared between agents (namespaces with ACLs, TTLs and a declared
purpose) and the item store behind LangGraph's ``BaseStore`` (docs/architecture.md,
"Sharing")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.gateway import Sanitizer
from memstrata.longterm.points import Filter
from memstrata.permissions import Level, check_level, cleared
from memstrata.sharing.items import ItemStore, StoreItem
from memstrata.sharing.namespaces import AccessRequest, Namespace, NamespaceStore, SharedItem


class Sharing:
    """Shared namespaces and their items; the namespaced item store."""

    def __init__(self, namespaces: NamespaceStore, items: ItemStore, sanitizer: Sanitizer) -> None:
        self._namespaces = namespaces
        self._items = items
        self._sanitizer = sanitizer

    # -- shared namespaces ----------------------------------------------------------------

    def create_namespace(
        self, name: str, *, tenant: str = "default", owner: str, purpose: str, ttl_s: float
    ) -> Namespace:
        """A shared namespace of ``tenant`` (audited)."""
        return self._namespaces.create(tenant, name, owner=owner, purpose=purpose, ttl_s=ttl_s)

    def namespace(self, name: str, *, tenant: str = "default", agent: str) -> Namespace:
        """A namespace ``agent`` may read (NotFoundError otherwise, as for no namespace)."""
        return self._namespaces.get(tenant, name, agent)

    def namespaces(self, *, tenant: str = "default", agent: str) -> tuple[Namespace, ...]:
        """The namespaces ``agent`` may read."""
        return self._namespaces.readable(tenant, agent)

    def request_namespace_access(
        self, name: str, *, tenant: str = "default", agent: str, purpose: str, mode: str = "read"
    ) -> AccessRequest:
        """Ask for access, stating the purpose (audited)."""
        return self._namespaces.request_access(tenant, name, agent, purpose=purpose, mode=mode)

    def namespace_access_requests(
        self, name: str, *, tenant: str = "default", by: str
    ) -> tuple[AccessRequest, ...]:
        """The pending requests of a namespace ``by`` owns."""
        return self._namespaces.requests(tenant, name, by)

    def grant_namespace_access(
        self,
        name: str,
        agent: str,
        *,
        tenant: str = "default",
        mode: str = "read",
        by: str,
        admin: bool = False,
    ) -> None:
        """Give ``agent`` read or write access; ``by`` is the owner unless ``admin``."""
        self._namespaces.grant(tenant, name, agent, mode=mode, by=by, admin=admin)

    def revoke_namespace_access(
        self, name: str, agent: str, *, tenant: str = "default", by: str, admin: bool = False
    ) -> None:
        """Take ``agent``'s access away."""
        self._namespaces.revoke(tenant, name, agent, by=by, admin=admin)

    def put_shared(
        self,
        name: str,
        item_id: str,
        value: Any,
        *,
        tenant: str = "default",
        agent: str,
        level: Level = "medium",
    ) -> SharedItem:
        """Write an item of shared context (after the gateway), alive the namespace's TTL."""
        clean = self._sanitizer.value(value, location=f"ns:{tenant}:{name}")
        return self._namespaces.put(tenant, name, agent, item_id, clean, level=level)

    def shared_items(
        self, *, tenant: str = "default", agent: str, clearance: Level = "high"
    ) -> tuple[SharedItem, ...]:
        """The live items of every namespace ``agent`` may read, within ``clearance``."""
        check_level("clearance", clearance)
        return tuple(i for i in self.shared(tenant, agent) if cleared(i.level, clearance))

    def shared(self, tenant: str, agent: str) -> tuple[SharedItem, ...]:
        """Every live item ``agent`` may read in ``tenant`` (route() merges them in)."""
        return self._namespaces.items(tenant, agent)

    # -- the item store ------------------------------------------------------------------

    def store_put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Mapping[str, Any],
        *,
        tenant: str = "default",
        index: Sequence[str] | bool | None = None,
        searchable: bool = True,
    ) -> StoreItem:
        """Store a JSON object under ``(namespace, key)`` (after the gateway);
        ``searchable=False`` is the client's spelling of ``index=False``."""
        return self._items.put(tenant, namespace, key, value, index=index if searchable else False)

    def store_get(
        self, namespace: Sequence[str], key: str, *, tenant: str = "default"
    ) -> StoreItem | None:
        """The item at ``(namespace, key)``, or None."""
        return self._items.get(tenant, namespace, key)

    def store_delete(self, namespace: Sequence[str], key: str, *, tenant: str = "default") -> bool:
        """Delete the item at ``(namespace, key)``; whether there was one."""
        return self._items.delete(tenant, namespace, key)

    def store_search(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        tenant: str = "default",
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[StoreItem]:
        """Items under a namespace prefix matching ``filter``, ranked by the reader
        for ``query``, else the most recently updated first."""
        return self._items.search(
            tenant, namespace_prefix, query=query, filter=filter, limit=limit, offset=offset
        )

    def store_list_namespaces(
        self,
        *,
        tenant: str = "default",
        prefix: Sequence[str] | None = None,
        suffix: Sequence[str] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces holding items (``*`` is a wildcard in prefix and suffix)."""
        return self._items.list_namespaces(
            tenant, prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit, offset=offset
        )

    def items_under(self, tenant: str, namespace_prefix: Sequence[str]) -> Filter:
        """The engine filter of every item under ``namespace_prefix`` (forget uses it)."""
        return self._items.namespace_filter(tenant, namespace_prefix)
