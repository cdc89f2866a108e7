"""An item-store value with an integer past 64 bits is refused before it is written
(it was stored, then its answer failed to encode: a 500 after the write)."""

from __future__ import annotations

import httpx
from tests.service.support import RunningServer, read_timeout_s


def test_an_integer_past_64_bits_is_refused_before_the_write(server: RunningServer) -> None:
    headers = {"Authorization": f"Bearer {server.admin_keys['acme']}"}
    where = {"namespace": ["big-ints"], "key": "k1"}
    refused = httpx.post(
        f"{server.url}/v1/store_put",
        json={**where, "value": {"n": 2**70}},
        headers=headers,
        timeout=read_timeout_s(),
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["field"] == "value"
    found = httpx.post(
        f"{server.url}/v1/store_get", json=where, headers=headers, timeout=read_timeout_s()
    )
    assert found.status_code == 200 and "item" not in found.json()
    kept = httpx.post(
        f"{server.url}/v1/store_put",
        json={**where, "value": {"n": 2**63 - 1}},
        headers=headers,
        timeout=read_timeout_s(),
    )
    assert kept.status_code == 200 and kept.json()["value"] == {"n": 2**63 - 1}
