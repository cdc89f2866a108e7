"""API keys of the caller's tenant."""

from __future__ import annotations

from typing import Any

from memstrata.errors import (
    NotFoundError,
    PermissionDeniedError,
)
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.auth import KeyInfo
from memstrata.service.capability import (
    OPERATOR_TENANT,
    Call,
    Operation,
)
from memstrata.service.ops.clearance import check_grant


def _tenant_key(call: Call, key_id: str) -> KeyInfo:
    try:
        info = call.key_store().get(key_id)
    except NotFoundError:
        info = None
    if info is None or info.tenant != call.caller.tenant:
        raise NotFoundError(f"api key {key_id!r} does not exist")
    return info


def _own_key(call: Call) -> KeyInfo:
    """The stored key the caller presented (a local user has no key store at all)."""
    return call.key_store().get(call.caller.key_id)


def _create_key(call: Call, req: m.CreateKeyRequest) -> m.CreatedKeyOut:
    check_grant(call, req.role, req.clearance)
    tenant = call.caller.tenant if req.tenant is None else req.tenant
    if tenant != call.caller.tenant and call.caller.tenant != OPERATOR_TENANT:
        raise PermissionDeniedError(
            "tenant",
            f"a key of tenant {call.caller.tenant!r} creates keys of its own tenant only; "
            f"keys of another tenant come from an admin key of tenant {OPERATOR_TENANT!r}",
        )
    created = call.key_store().create(
        tenant,
        req.agent,
        req.role,
        clearance=req.clearance,
        ttl_s=req.ttl_s,
        rate_per_s=req.rate_per_s,
        minted_by=_own_key(call),  # expiry and rate at most the caller's
    )
    return convert.created_key_out(created)


def _revoke_key(call: Call, req: m.KeyRef) -> m.KeyOut:
    _tenant_key(call, req.key_id)
    return convert.key_out(call.key_store().revoke(req.key_id, by=_own_key(call)))


def _list_keys(call: Call, req: m.Empty) -> m.KeyList:
    return m.KeyList(keys=[convert.key_out(i) for i in call.key_store().all(call.caller.tenant)])


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "create_key",
        "Create an API key for an agent of the caller's tenant (an operator admin key: of "
        "any tenant), with at most the caller's role, clearance, expiry and rate.",
        m.CreateKeyRequest,
        m.CreatedKeyOut,
        "admin",
        _create_key,
        (PermissionDeniedError,),
    ),
    Operation(
        "revoke_key",
        "Revoke an API key of the caller's tenant at once (not one of a higher clearance "
        "than the caller's, nor the tenant's last admin key).",
        m.KeyRef,
        m.KeyOut,
        "admin",
        _revoke_key,
        (NotFoundError, PermissionDeniedError),
    ),
    Operation(
        "list_keys",
        "The API keys of the caller's tenant (never their secrets).",
        m.Empty,
        m.KeyList,
        "admin",
        _list_keys,
    ),
)
