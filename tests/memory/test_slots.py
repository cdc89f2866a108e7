"""Slot records on the real embedded Valkey: tenant registration."""

from __future__ import annotations

import uuid
from typing import Any

from memstrata.memory.slots import SlotRecords
from memstrata.working.redis_backend import RedisBackend


class CountingClient:
    """The real client, with its SADD calls counted."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.sadds = 0

    def sadd(self, *args: Any) -> Any:
        self.sadds += 1
        return self._client.sadd(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_each_tenant_is_registered_once_per_object(embedded_backend: RedisBackend) -> None:
    prefix = f"slots-{uuid.uuid4().hex[:10]}"
    client = CountingClient(embedded_backend.client)
    slots = SlotRecords(client, prefix)
    for tenant in ("acme", "globex", "acme", "acme", "globex"):
        slots.register_tenant(tenant)
    assert slots.tenants() == ("acme", "globex")
    assert client.sadds == 2
    # Another process (another object) registers for itself and sees the same set.
    other = SlotRecords(CountingClient(embedded_backend.client), prefix)
    other.register_tenant("initech")
    assert slots.tenants() == ("acme", "globex", "initech")
