"""The browser's session store: expiry, sign-out, and the key kept out of reprs and of
Valkey (only the session's tenant is written there, under the digest of its id)."""

from __future__ import annotations

from memstrata.service.auth import Caller
from memstrata.service.ui.session import SessionStore, route_key, session_tenant
from memstrata.working import RedisBackend

KEY = "msk_0123abcdef0123ab_secret-part"
CALLER = Caller("0123abcdef0123ab", "acme", "bot", "reader", "low")


def test_a_session_expires_and_sign_out_ends_it() -> None:
    clock = [100.0]
    store = SessionStore(ttl_s=60.0, now=lambda: clock[0])
    cookie, session = store.open(KEY, CALLER)
    assert store.get(cookie) is session and store.get("other") is None and store.get(None) is None
    assert KEY not in repr(session) and cookie != session.csrf
    clock[0] += 59.0
    assert store.get(cookie) is session
    clock[0] += 1.0
    assert store.get(cookie) is None
    again, _ = store.open(KEY, CALLER)
    store.close(again)
    assert store.get(again) is None


def test_the_route_holds_the_tenant_never_the_key(embedded_backend: RedisBackend) -> None:
    client = embedded_backend.client
    store = SessionStore(ttl_s=60.0, routes=client)
    cookie, _ = store.open(KEY, CALLER)
    assert session_tenant(client, cookie) == "acme"
    assert client.get(route_key(cookie)) == "acme" and cookie not in route_key(cookie)
    assert 0 < int(client.ttl(route_key(cookie))) <= 60
    store.close(cookie)
    assert session_tenant(client, cookie) is None and session_tenant(client, None) is None
