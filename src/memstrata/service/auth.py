"""API keys: created, verified, revoked and rate limited in Valkey; every use audited.

A key is ``msk_<key id>_<secret>``. Only the SHA-256 of the secret is stored; the key
itself is shown once, at creation. Every verification appends one entry to a bounded
audit stream naming the key id, the operation and the outcome, never the key.
All keys of this module share one hash tag, so a pipeline stays on one cluster slot.

Verifying a key only reads: when the server refuses writes (a full disk, out of
memory, a read-only replica) a call is not failed for the audit entry or the rate
counter it could not write. Those are best effort: a missed audit entry is counted
(:attr:`KeyStore.audit_failures`, the ``memstrata_auth_audit_failures`` metric) and
logged by type, and the rate limit falls back to a count kept in this process. A
read must keep working on a full disk; a write fails on its own account anyway.

A key minted by another key (``create(..., minted_by=...)``) has at most its
creator's rights: role, clearance, expiry and rate (:func:`check_mint`); asking for
more is refused with :class:`PermissionDeniedError` naming the field. A key is not
revoked by a key of a lower clearance, and a tenant's last live admin key is never
revoked (:meth:`KeyStore.revoke`, one atomic script): a tenant cannot lock itself out.
Keys made without a creator come from the operator (``memstrata keys create`` on the
data directory, which works beside a running service: it reads every key from Valkey
on each call).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis
import redis.exceptions as rexc
from redis.cluster import RedisCluster

from memstrata.clock import Clock, SystemClock
from memstrata.errors import (
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ValidationError,
)
from memstrata.permissions import rank
from memstrata.validation import NAME_PATTERN, NAME_REASON
from memstrata.working.redis_errors import REDIS_FAILURES, redis_errors, translated

Role = Literal["reader", "writer", "admin"]
ROLES: tuple[Role, ...] = ("reader", "writer", "admin")
_RANK: Mapping[str, int] = {role: rank for rank, role in enumerate(ROLES)}
Clearance = Literal["low", "medium", "high"]
CLEARANCES: tuple[Clearance, ...] = ("low", "medium", "high")

KEY_PREFIX = "msk_"
_TAG = "{memstrata:auth}"
_KEY_RE = re.compile(r"msk_([0-9a-f]{16})_([A-Za-z0-9_-]{20,100})")
# Tenants and agents are a stricter id than the engine's (validation.NAME_PATTERN).
_NAME_RE = re.compile(NAME_PATTERN)
AUDIT_STREAM = f"{_TAG}:audit"
AUDIT_MAXLEN = 100_000
DEFAULT_RATE_PER_S = 1_000
MAX_RATE_PER_S = 1_000_000
"""The most a key may have (the wire's limit): the bootstrap admin key's, so that the
keys it mints may have any rate."""
log = logging.getLogger("memstrata.service")


def check_name(field: str, value: Any) -> str:
    """A tenant or agent name: 1-40 letters, digits, '_', '-', '.' (no '@')."""
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise ValidationError(field, NAME_REASON)
    return value


KEY_ID_DIGIT_RUN = re.compile(r"\d{6,}")
"""A run of digits the gateway's identifier screen could read as a card, phone or ID
number: a key id holding one would be refused when its owner sends it back."""


def mint_key_id() -> str:
    """A fresh key id: 16 hex chars with no run of six digits (``4331752379201d91``
    was refused by ``revoke_key``: its 13 digits pass as a bank card)."""
    while True:
        key_id = secrets.token_hex(8)
        if KEY_ID_DIGIT_RUN.search(key_id) is None:
            return key_id


LOCAL_KEY_ID = "local"
"""The key id of the local user of a data directory (CLI, MCP over stdio): no stored
key has it (theirs are hex)."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the key's tenant, agent, role and clearance."""

    key_id: str
    tenant: str
    agent: str
    role: Role
    clearance: Clearance = "high"

    def require(self, role: Role) -> None:
        """PermissionDeniedError unless this caller's role is at least ``role``."""
        if _RANK[self.role] < _RANK[role]:
            raise PermissionDeniedError(
                "role", f"this operation needs the {role} role; the key has {self.role}"
            )


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A stored key, without its secret."""

    key_id: str
    tenant: str
    agent: str
    role: Role
    clearance: Clearance
    created_at: float
    expires_at: float | None
    revoked: bool
    rate_per_s: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "tenant": self.tenant,
            "agent": self.agent,
            "role": self.role,
            "clearance": self.clearance,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked": self.revoked,
            "rate_per_s": self.rate_per_s,
        }


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key: ``key`` is shown this once and never stored."""

    key: str
    info: KeyInfo


def check_mint(
    creator: KeyInfo,
    *,
    role: str,
    clearance: str,
    ttl_s: float | None,
    rate_per_s: int,
    now: float,
) -> None:
    """PermissionDeniedError, naming the field, unless a key with these rights is
    within ``creator``'s: its role, clearance, expiry and rate at most the creator's."""
    if _RANK[role] > _RANK[creator.role]:
        raise PermissionDeniedError(
            "role", f"a key can grant at most its own role ({creator.role}), not {role}"
        )
    if rank(cast(Clearance, clearance)) > rank(creator.clearance):
        raise PermissionDeniedError(
            "clearance",
            f"a key can grant at most its own clearance ({creator.clearance}), not {clearance}",
        )
    if creator.expires_at is not None:
        left = max(creator.expires_at - now, 0.0)
        if ttl_s is None:
            raise PermissionDeniedError(
                "ttl_s",
                f"this key expires in {left:.0f}s: a key it creates must expire too "
                "(give ttl_s at most that)",
            )
        if now + ttl_s > creator.expires_at:
            raise PermissionDeniedError(
                "ttl_s",
                f"a key can live at most as long as the key creating it ({left:.0f}s left), "
                f"not {ttl_s:g}s",
            )
    if rate_per_s > creator.rate_per_s:
        raise PermissionDeniedError(
            "rate_per_s",
            f"a key can grant at most its own rate ({creator.rate_per_s} requests per second), "
            f"not {rate_per_s}",
        )


# Revokes KEYS[1] unless it is a live admin key of tenant ARGV[1] and none of KEYS[2..]
# is (at time ARGV[2]): checked and written in one step, so two concurrent revokes
# cannot each take away the other's last admin. Every key shares the module's hash tag.
_REVOKE_SCRIPT = """
local function live_admin(key, tenant, now)
  local f = redis.call('HMGET', key, 'tenant', 'role', 'revoked', 'expires_at')
  if f[1] ~= tenant or f[2] ~= 'admin' or f[3] == '1' then return false end
  if f[4] and f[4] ~= '' and tonumber(f[4]) <= now then return false end
  return true
end
local now = tonumber(ARGV[2])
if live_admin(KEYS[1], ARGV[1], now) then
  local others = 0
  for i = 2, #KEYS do
    if live_admin(KEYS[i], ARGV[1], now) then others = others + 1 end
  end
  if others == 0 then return 0 end
end
redis.call('HSET', KEYS[1], 'revoked', '1')
return 1
"""


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _info(key_id: str, fields: Mapping[str, str]) -> KeyInfo:
    expires = fields.get("expires_at", "")
    return KeyInfo(
        key_id=key_id,
        tenant=fields["tenant"],
        agent=fields["agent"],
        role=cast(Role, fields["role"]),
        clearance=cast(Clearance, fields.get("clearance", "high")),
        created_at=float(fields["created_at"]),
        expires_at=float(expires) if expires else None,
        revoked=fields.get("revoked") == "1",
        rate_per_s=int(fields.get("rate_per_s", DEFAULT_RATE_PER_S)),
    )


class KeyStore:
    """API keys in Valkey/Redis (decoded responses expected from ``client``)."""

    def __init__(self, client: redis.Redis | RedisCluster, clock: Clock | None = None) -> None:
        self._redis = client
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._audit_failures = 0
        # Requests per (key id, second) while the server refuses the rate counter.
        self._local_counts: dict[tuple[str, int], int] = {}

    @property
    def client(self) -> redis.Redis | RedisCluster:
        """The Valkey/Redis client the keys live in (the browser's session routes too)."""
        return self._redis

    @property
    def audit_failures(self) -> int:
        """Audit entries that could not be written (the server refused or was down)."""
        return self._audit_failures

    def create(
        self,
        tenant: str,
        agent: str,
        role: str,
        *,
        clearance: str = "high",
        ttl_s: float | None = None,
        rate_per_s: int = DEFAULT_RATE_PER_S,
        minted_by: KeyInfo | None = None,
    ) -> CreatedKey:
        """A new key; with ``minted_by`` (the key asking), at most that key's rights
        (:func:`check_mint`). Without it the caller is the operator."""
        check_name("tenant", tenant)
        check_name("agent", agent)
        if role not in ROLES:
            raise ValidationError("role", f"must be one of {', '.join(ROLES)}")
        if clearance not in CLEARANCES:
            raise ValidationError("clearance", f"must be one of {', '.join(CLEARANCES)}")
        if ttl_s is not None and not ttl_s > 0:
            raise ValidationError("ttl_s", "must be positive")
        if isinstance(rate_per_s, bool) or not isinstance(rate_per_s, int) or rate_per_s < 1:
            raise ValidationError("rate_per_s", "must be a positive integer")
        now = self._clock.now().timestamp()
        if minted_by is not None:
            if minted_by.revoked or (
                minted_by.expires_at is not None and now >= minted_by.expires_at
            ):
                raise AuthenticationError("the API key creating this key expired or was revoked")
            check_mint(
                minted_by,
                role=role,
                clearance=clearance,
                ttl_s=ttl_s,
                rate_per_s=rate_per_s,
                now=now,
            )
        key_id = mint_key_id()
        secret = secrets.token_urlsafe(32)
        fields = {
            "tenant": tenant,
            "agent": agent,
            "role": role,
            "clearance": clearance,
            "hash": _hash(secret),
            "created_at": repr(now),
            "expires_at": "" if ttl_s is None else repr(now + ttl_s),
            "revoked": "0",
            "rate_per_s": str(rate_per_s),
            "created_by": "" if minted_by is None else minted_by.key_id,
        }
        with redis_errors("redis create api key"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hset(f"{_TAG}:key:{key_id}", mapping=dict[Any, Any](fields))
            pipe.sadd(f"{_TAG}:keys", key_id)
            pipe.execute()
        return CreatedKey(f"{KEY_PREFIX}{key_id}_{secret}", _info(key_id, fields))

    def revoke(self, key_id: str, *, by: KeyInfo | None = None) -> KeyInfo:
        """Revoke a key at once; NotFoundError for an unknown id.

        PermissionDeniedError (field ``clearance``) when ``by`` (the key asking) has a
        lower clearance than the key, and (field ``key_id``) for the tenant's last live
        admin key, whoever asks: make another admin key first.
        """
        info = self.get(key_id)
        if by is not None and rank(info.clearance) > rank(by.clearance):
            raise PermissionDeniedError(
                "clearance",
                f"key {key_id} has {info.clearance} clearance; a key with {by.clearance} "
                "clearance cannot revoke it",
            )
        others = [
            f"{_TAG}:key:{other.key_id}"
            for other in self.all(info.tenant)
            if other.role == "admin" and other.key_id != key_id
        ]
        now = self._clock.now().timestamp()
        with redis_errors("redis revoke api key"):
            done = self._redis.eval(
                _REVOKE_SCRIPT, 1 + len(others), f"{_TAG}:key:{key_id}", *others,
                info.tenant, repr(now),
            )  # fmt: skip
        if not int(cast(int, done)):
            raise PermissionDeniedError(
                "key_id",
                f"key {key_id} is the last admin key of tenant {info.tenant!r}; create "
                "another admin key before revoking it",
            )
        return KeyInfo(**{**info.as_dict(), "revoked": True})

    def get(self, key_id: str) -> KeyInfo:
        with redis_errors("redis read api key"):
            fields = cast(dict[str, str], self._redis.hgetall(f"{_TAG}:key:{key_id}"))
        if not fields:
            raise NotFoundError(f"api key {key_id!r} does not exist")
        return _info(key_id, fields)

    def all(self, tenant: str | None = None) -> tuple[KeyInfo, ...]:
        with redis_errors("redis list api keys"):
            ids = sorted(cast(set[str], self._redis.smembers(f"{_TAG}:keys")))
        infos = (self.get(key_id) for key_id in ids)
        return tuple(i for i in infos if tenant is None or i.tenant == tenant)

    def any_key(self) -> bool:
        with redis_errors("redis list api keys"):
            return bool(self._redis.scard(f"{_TAG}:keys"))

    @staticmethod
    def key_id_of(presented: str | None) -> str | None:
        """The key id of a well-formed presented key (nothing is checked)."""
        match = _KEY_RE.fullmatch(presented.strip()) if presented else None
        return match.group(1) if match else None

    def tenant_of(self, key_id: str) -> str | None:
        """The tenant a key id was made for (None for an unknown id); not a verification."""
        with redis_errors("redis read api key"):
            tenant = self._redis.hget(f"{_TAG}:key:{key_id}", "tenant")
        return None if tenant is None else str(tenant)

    def verify(self, presented: str | None, operation: str) -> Caller:
        """The caller a presented key stands for, counted against its rate limit.

        AuthenticationError (401) for a missing, malformed, unknown, expired or revoked
        key; RateLimitedError (429) past the key's requests per second.
        """
        if not presented:
            raise AuthenticationError("an API key is required (Authorization: Bearer <key>)")
        match = _KEY_RE.fullmatch(presented.strip())
        if match is None:
            self._audit("-", operation, "malformed")
            raise AuthenticationError("the API key is not valid")
        key_id, secret = match.groups()
        window = int(time.time())
        counter = f"{_TAG}:rate:{key_id}:{window}"
        with redis_errors("redis verify api key"):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hgetall(f"{_TAG}:key:{key_id}")
            pipe.incr(counter)
            pipe.pexpire(counter, 2_000)
            fields, count, _ = pipe.execute(raise_on_error=False)
        if isinstance(fields, Exception):
            raise translated("redis verify api key", fields) from fields
        if isinstance(count, rexc.ResponseError):
            # The server refuses writes (MISCONF on a full disk, OOM, READONLY): count here.
            count = self._count_locally(key_id, window)
        elif isinstance(count, Exception):
            raise translated("redis verify api key", count) from count
        if not fields or not hmac.compare_digest(fields.get("hash", ""), _hash(secret)):
            self._audit(key_id, operation, "unknown")
            raise AuthenticationError("the API key is not valid")
        info = _info(key_id, fields)
        if info.revoked:
            self._audit(key_id, operation, "revoked")
            raise AuthenticationError("the API key was revoked")
        if info.expires_at is not None and self._clock.now().timestamp() >= info.expires_at:
            self._audit(key_id, operation, "expired")
            raise AuthenticationError("the API key has expired")
        if int(count) > info.rate_per_s:
            self._audit(key_id, operation, "rate_limited")
            raise RateLimitedError(
                f"key {key_id} is over its limit of {info.rate_per_s} requests per second",
                retry_after_s=1.0,
            )
        self._audit(key_id, operation, "ok")
        return Caller(key_id, info.tenant, info.agent, info.role, info.clearance)

    def _count_locally(self, key_id: str, window: int) -> int:
        with self._lock:
            for stale in [k for k in self._local_counts if k[1] < window - 1]:
                del self._local_counts[stale]
            count = self._local_counts.get((key_id, window), 0) + 1
            self._local_counts[key_id, window] = count
            return count

    def _audit(self, key_id: str, operation: str, outcome: str) -> None:
        entry = {
            "at": repr(self._clock.now().timestamp()),
            "key_id": key_id,
            "operation": operation,
            "outcome": outcome,
        }
        try:
            self._redis.xadd(AUDIT_STREAM, entry, maxlen=AUDIT_MAXLEN, approximate=True)  # type: ignore[arg-type]
        except REDIS_FAILURES as exc:
            # Best effort (see the module docstring): never fails the call it audits.
            with self._lock:
                self._audit_failures += 1
            log.warning("api key audit entry not written: %s", type(exc).__name__)
