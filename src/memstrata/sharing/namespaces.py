"""Shared context namespaces (docs/architecture.md, "Sharing"): context several agents of a
tenant share.

A namespace has a declared purpose, its own TTL (every item written to it lives that
long) and an ACL of agents that may read or write it. Its owner may read and write.
Another agent asks for access by stating its purpose; the owner (or a tenant admin)
grants or revokes it. Each request, grant and revocation is audited. A purpose is free
text: it passes the gateway before it is stored or audited, like everything else.

An agent that may not read a namespace learns nothing about it: every operation on
it answers exactly as for a namespace that does not exist.

Keys (one hash tag per tenant, so a pipeline stays on one cluster slot)::

    {ns:<tenant>}:meta:<name>           hash   purpose, ttl_s, owner, created_at
    {ns:<tenant>}:acl:<name>            hash   agent -> read | write
    {ns:<tenant>}:requests:<name>       hash   agent -> {"purpose", "mode", "at"}
    {ns:<tenant>}:items:<name>          zset   item id -> expiry (epoch s)
    {ns:<tenant>}:item:<name>:<id>      string the item's JSON, with the namespace TTL
    {ns:<tenant>}:readable:<agent>      set    namespaces the agent may read
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

import redis
from redis.cluster import RedisCluster

from memstrata.clock import Clock
from memstrata.errors import ConflictError, NotFoundError, PermissionDeniedError, ValidationError
from memstrata.permissions import Level, check_level
from memstrata.router.bundle import ContextItem, Provenance
from memstrata.validation import check_id, check_text
from memstrata.working.redis_errors import redis_errors

Mode = Literal["read", "write"]
MODES: tuple[Mode, ...] = ("read", "write")
_MODE_OF: dict[str, Mode] = {mode: mode for mode in MODES}
MIN_TTL_S = 1
MAX_TTL_S = 365 * 86_400
MAX_ITEM_BYTES = 256 * 1024
Audit = Callable[[Mapping[str, str]], None]
TextSanitizer = Callable[[str, str], str]
"""(text, location) -> the text after the gateway."""


@dataclass(frozen=True, slots=True)
class Namespace:
    tenant: str
    name: str
    purpose: str
    ttl_s: float
    owner: str
    created_at: float


@dataclass(frozen=True, slots=True)
class SharedItem:
    """One item of shared context, with where it came from."""

    namespace: str
    item_id: str
    value: Any
    level: Level
    written_by: str
    written_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class AccessRequest:
    namespace: str
    agent: str
    purpose: str
    mode: Mode
    at: float


def _check_mode(value: Any) -> Mode:
    if value not in MODES:
        raise ValidationError("mode", "must be read or write")
    mode: Mode = value
    return mode


class NamespaceStore:
    """Namespaces in Valkey/Redis (a client with decoded responses)."""

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        clock: Clock,
        audit: Audit | None = None,
        *,
        sanitize: TextSanitizer,
    ) -> None:
        self._redis = client
        self._clock = clock
        self._audit = audit or (lambda entry: None)
        self._sanitize = sanitize

    # -- keys ------------------------------------------------------------------------

    @staticmethod
    def _key(tenant: str, kind: str, name: str) -> str:
        return f"{{ns:{tenant}}}:{kind}:{name}"

    def _record(self, event: str, tenant: str, name: str, agent: str, **extra: str) -> None:
        self._audit(
            {
                "event": f"namespace.{event}",
                "tenant": tenant,
                "namespace": name,
                "agent": agent,
                "at": repr(self._clock.now().timestamp()),
                **extra,
            }
        )

    def _meta(self, tenant: str, name: str) -> Namespace | None:
        with redis_errors("redis read namespace"):
            fields = cast(dict[str, str], self._redis.hgetall(self._key(tenant, "meta", name)))
        if not fields:
            return None
        return Namespace(
            tenant,
            name,
            fields["purpose"],
            float(fields["ttl_s"]),
            fields["owner"],
            float(fields["created_at"]),
        )

    def _mode(self, tenant: str, name: str, agent: str) -> Mode | None:
        with redis_errors("redis read namespace acl"):
            mode = self._redis.hget(self._key(tenant, "acl", name), agent)
        return _MODE_OF.get(str(mode))

    def _absent(self, name: str) -> NotFoundError:
        return NotFoundError(f"namespace {name!r} does not exist")

    def _readable(self, tenant: str, name: str, agent: str) -> Namespace:
        meta = self._meta(tenant, name)
        if meta is None or self._mode(tenant, name, agent) is None:
            raise self._absent(name)
        return meta

    # -- lifecycle ---------------------------------------------------------------------

    def create(
        self, tenant: str, name: str, *, owner: str, purpose: str, ttl_s: float
    ) -> Namespace:
        """A new namespace owned (read and write) by ``owner``."""
        check_id("tenant", tenant)
        check_id("namespace", name)
        check_id("owner", owner)
        check_text("purpose", purpose, max_chars=500)
        purpose = self._sanitize(purpose, f"ns:{tenant}:{name}:purpose")
        if isinstance(ttl_s, bool) or not isinstance(ttl_s, int | float):
            raise ValidationError("ttl_s", "must be a number of seconds")
        if not MIN_TTL_S <= ttl_s <= MAX_TTL_S:
            raise ValidationError("ttl_s", f"must be in [{MIN_TTL_S}, {MAX_TTL_S}] seconds")
        now = self._clock.now().timestamp()
        meta = {
            "purpose": purpose,
            "ttl_s": repr(float(ttl_s)),
            "owner": owner,
            "created_at": repr(now),
        }
        with redis_errors("redis create namespace"):
            created = self._redis.hsetnx(self._key(tenant, "meta", name), "owner", owner)
            if not created:
                # Existence is not secret from the namespace's own readers only; to
                # anyone else a taken name looks like any refused name.
                raise ConflictError(f"{name!r} cannot be created (name taken)", field="namespace")
            pipe = self._redis.pipeline(transaction=False)
            pipe.hset(self._key(tenant, "meta", name), mapping=cast(Any, meta))
            pipe.hset(self._key(tenant, "acl", name), owner, "write")
            pipe.sadd(self._key(tenant, "readable", owner), name)
            pipe.execute()
        self._record("create", tenant, name, owner, purpose=purpose)
        return Namespace(tenant, name, purpose, float(ttl_s), owner, now)

    def get(self, tenant: str, name: str, agent: str) -> Namespace:
        """The namespace, for an agent that may read it."""
        return self._readable(tenant, name, agent)

    def readable(self, tenant: str, agent: str) -> tuple[Namespace, ...]:
        """The namespaces ``agent`` may read, by name."""
        with redis_errors("redis list namespaces"):
            names = sorted(
                cast(set[str], self._redis.smembers(self._key(tenant, "readable", agent)))
            )
        found = []
        for name in names:
            meta = self._meta(tenant, name)
            if meta is not None and self._mode(tenant, name, agent) is not None:
                found.append(meta)
        return tuple(found)

    # -- access ------------------------------------------------------------------------

    def request_access(
        self, tenant: str, name: str, agent: str, *, purpose: str, mode: str = "read"
    ) -> AccessRequest:
        """Ask for access, stating why. Recorded (and audited) whether or not the
        namespace exists, so the answer tells the asker nothing."""
        check_id("agent", agent)
        check_id("namespace", name)
        check_text("purpose", purpose, max_chars=500)
        purpose = self._sanitize(purpose, f"ns:{tenant}:{name}:request:{agent}")
        checked = _check_mode(mode)
        at = self._clock.now().timestamp()
        entry = json.dumps({"purpose": purpose, "mode": checked, "at": at})
        if self._meta(tenant, name) is not None:
            with redis_errors("redis request namespace access"):
                self._redis.hset(self._key(tenant, "requests", name), agent, entry)
        self._record("request", tenant, name, agent, purpose=purpose, mode=checked)
        return AccessRequest(name, agent, purpose, checked, at)

    def requests(self, tenant: str, name: str, by: str) -> tuple[AccessRequest, ...]:
        """Pending requests, for the namespace's owner."""
        self._owned(tenant, name, by)
        with redis_errors("redis read namespace requests"):
            rows = cast(dict[str, str], self._redis.hgetall(self._key(tenant, "requests", name)))
        out = []
        for agent, raw in sorted(rows.items()):
            data = json.loads(raw)
            out.append(AccessRequest(name, agent, data["purpose"], data["mode"], data["at"]))
        return tuple(out)

    def _owned(self, tenant: str, name: str, by: str, *, admin: bool = False) -> Namespace:
        meta = self._meta(tenant, name)
        if meta is None or (meta.owner != by and not admin):
            if meta is not None and self._mode(tenant, name, by) is not None:
                raise PermissionDeniedError("namespace", f"only its owner manages {name!r}")
            raise self._absent(name)
        return meta

    def grant(
        self, tenant: str, name: str, agent: str, *, mode: str, by: str, admin: bool = False
    ) -> None:
        """Give ``agent`` read or write access (by the owner, or a tenant admin)."""
        check_id("agent", agent)
        checked = _check_mode(mode)
        self._owned(tenant, name, by, admin=admin)
        with redis_errors("redis grant namespace access"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hset(self._key(tenant, "acl", name), agent, checked)
            pipe.sadd(self._key(tenant, "readable", agent), name)
            pipe.hdel(self._key(tenant, "requests", name), agent)
            pipe.execute()
        self._record("grant", tenant, name, agent, mode=checked, by=by)

    def revoke(self, tenant: str, name: str, agent: str, *, by: str, admin: bool = False) -> None:
        meta = self._owned(tenant, name, by, admin=admin)
        if agent == meta.owner:
            raise ValidationError("agent", "the owner's access cannot be revoked")
        with redis_errors("redis revoke namespace access"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hdel(self._key(tenant, "acl", name), agent)
            pipe.srem(self._key(tenant, "readable", agent), name)
            pipe.execute()
        self._record("revoke", tenant, name, agent, by=by)

    # -- items -------------------------------------------------------------------------

    def put(
        self,
        tenant: str,
        name: str,
        agent: str,
        item_id: str,
        value: Any,
        *,
        level: str = "medium",
    ) -> SharedItem:
        """Write an item (agents with write access); it lives the namespace's TTL."""
        check_id("item_id", item_id)
        checked_level = check_level("level", level)
        meta = self._readable(tenant, name, agent)
        if self._mode(tenant, name, agent) != "write":
            raise PermissionDeniedError("namespace", f"{agent!r} may only read {name!r}")
        now = self._clock.now().timestamp()
        expires = now + meta.ttl_s
        body = json.dumps(
            {"value": value, "level": checked_level, "written_by": agent, "written_at": now},
            ensure_ascii=False,
        )
        if len(body.encode()) > MAX_ITEM_BYTES:
            raise ValidationError("value", f"is over {MAX_ITEM_BYTES} bytes")
        with redis_errors("redis write shared item"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.set(
                self._key(tenant, "item", f"{name}:{item_id}"), body, px=int(meta.ttl_s * 1000)
            )
            pipe.zadd(self._key(tenant, "items", name), {item_id: expires})
            pipe.zremrangebyscore(self._key(tenant, "items", name), "-inf", now)
            pipe.execute()
        return SharedItem(name, item_id, value, checked_level, agent, now, expires)

    def items(self, tenant: str, agent: str) -> tuple[SharedItem, ...]:
        """Every live item of every namespace ``agent`` may read, newest first."""
        now = self._clock.now().timestamp()
        found: list[SharedItem] = []
        for meta in self.readable(tenant, agent):
            with redis_errors("redis read shared items"):
                ids = cast(
                    list[str],
                    self._redis.zrangebyscore(self._key(tenant, "items", meta.name), now, "+inf"),
                )
                bodies = (
                    cast(
                        list[str | None],
                        self._redis.mget(
                            [self._key(tenant, "item", f"{meta.name}:{i}") for i in ids]
                        ),
                    )
                    if ids
                    else []
                )
            for item_id, raw in zip(ids, bodies, strict=True):
                if raw is None:
                    continue
                data = json.loads(raw)
                found.append(
                    SharedItem(
                        meta.name,
                        item_id,
                        data["value"],
                        check_level("level", data["level"]),
                        data["written_by"],
                        float(data["written_at"]),
                        float(data["written_at"]) + meta.ttl_s,
                    )
                )
        found.sort(key=lambda item: (-item.written_at, item.namespace, item.item_id))
        return tuple(found)


def shared_context_items(items: Sequence[SharedItem], now: datetime) -> tuple[ContextItem, ...]:
    """Shared items as bundle items: layer L2 (Valkey, with a TTL), source
    ``namespace:<name>``, their own permission level."""
    return tuple(
        ContextItem.of(
            f"shared.{item.namespace}.{item.item_id}",
            item.value,
            Provenance(
                "L2",
                f"namespace:{item.namespace}/{item.item_id}",
                f"namespace:{item.namespace}",
                1.0,
                max(0.0, (now.timestamp() - item.written_at) / 3600),
                level=item.level,
            ),
        )
        for item in items
    )
