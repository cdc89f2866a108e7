"""Authentication before parsing, and MCP behind a key (issue 23, "Why" case 7), on a
running ``memstrata serve``: no key is 401 whatever the body, on REST, gRPC and MCP;
an MCP client gets no session without a key and sees only the tools its role may
call, each field described."""

from __future__ import annotations

import json
from typing import Any

import anyio
import grpc
import httpx
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from tests.service.support import RunningServer, create_key, read_timeout_s

from memstrata.service.operations import OPERATIONS
from memstrata.service.proto import SERVICE_FULL_NAME, method_name

BAD_BODIES: dict[str, bytes] = {
    "wrong types": b'{"user_id": 5, "text": []}',
    "missing fields": b"{}",
    "not json": b"{not json",
    "empty": b"",
    "a list": b"[1, 2]",
}
BAD_KEYS = {"no key": None, "unknown key": "msk_0123456789abcdef_" + "x" * 43, "garbage": "x"}


def _post(server: RunningServer, path: str, body: bytes, key: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.post(
        f"{server.url}{path}", content=body, headers=headers, timeout=read_timeout_s()
    )


@pytest.mark.parametrize("body", sorted(BAD_BODIES))
@pytest.mark.parametrize("key", sorted(BAD_KEYS))
def test_rest_answers_401_before_it_reads_the_body(
    server: RunningServer, body: str, key: str
) -> None:
    response = _post(server, "/v1/remember", BAD_BODIES[body], BAD_KEYS[key])
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_rest_parses_the_body_once_the_key_is_good(server: RunningServer) -> None:
    admin = server.admin_keys["acme"]
    for body in BAD_BODIES.values():
        response = _post(server, "/v1/remember", body, admin)
        assert response.status_code == 422, (body, response.text)
        assert response.json()["error"]["code"] == "invalid_argument"


def test_rest_refuses_an_anonymous_oversized_body_unread(server: RunningServer) -> None:
    response = httpx.post(
        f"{server.url}/v1/remember",
        content=b'{"user_id": "u", "text": "' + b"a" * (17 * 1024 * 1024) + b'"}',
        headers={"Content-Type": "application/json"},
        timeout=read_timeout_s(),
    )
    assert response.status_code == 401


def _grpc_raw(server: RunningServer, key: str | None, body: bytes) -> grpc.RpcError:
    channel = grpc.insecure_channel(server.grpc_target)
    try:
        call = channel.unary_unary(f"/{SERVICE_FULL_NAME}/{method_name('remember')}")
        metadata = (("authorization", f"Bearer {key}"),) if key else ()
        with pytest.raises(grpc.RpcError) as failed:
            call(body, metadata=metadata, timeout=read_timeout_s())
        return failed.value
    finally:
        channel.close()


def test_grpc_checks_the_key_before_the_message(server: RunningServer) -> None:
    garbage = b"\xff\xff\xff\xff\x0f"
    for key in BAD_KEYS.values():
        refused = _grpc_raw(server, key, garbage)
        assert refused.code() == grpc.StatusCode.UNAUTHENTICATED, refused.details()
    parsed = _grpc_raw(server, server.admin_keys["acme"], garbage)
    assert parsed.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert json.loads(parsed.details())["code"] == "invalid_argument"


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


@pytest.mark.parametrize("key", sorted(BAD_KEYS))
def test_mcp_over_http_needs_a_key_even_to_start(server: RunningServer, key: str) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if BAD_KEYS[key] is not None:
        headers["Authorization"] = f"Bearer {BAD_KEYS[key]}"
    for message in (_INITIALIZE, _LIST):
        response = httpx.post(
            f"{server.url}/mcp", json=message, headers=headers, timeout=read_timeout_s()
        )
        assert response.status_code == 401, (message["method"], response.text)
        error = response.json()["error"]  # a JSON-RPC error, which MCP clients surface
        assert error["data"]["code"] == "unauthenticated" and error["code"] < 0
    assert (
        httpx.get(f"{server.url}/mcp", headers=headers, timeout=read_timeout_s()).status_code == 401
    )


async def _listed(server: RunningServer, key: str) -> list[Any]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=read_timeout_s()) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        return list((await client.list_tools()).tools)


def test_mcp_lists_only_the_tools_a_role_may_call_each_field_described(
    server: RunningServer,
) -> None:
    admin = server.admin_keys["acme"]
    allowed = {
        "reader": {op.name for op in OPERATIONS if op.role == "reader"},
        "writer": {op.name for op in OPERATIONS if op.role in ("reader", "writer")},
        "admin": {op.name for op in OPERATIONS},
    }
    for role, names in allowed.items():
        key = create_key(server, admin, agent=f"mcp-{role}", role=role)
        listed = anyio.run(_listed, server, key)
        assert {tool.name for tool in listed} == names, role
        for tool in listed:
            assert tool.description and tool.annotations is not None
            schema = tool.input_schema
            for name, prop in schema.get("properties", {}).items():
                assert prop.get("description"), (tool.name, name)
            for model, definition in schema.get("$defs", {}).items():
                for name, prop in definition.get("properties", {}).items():
                    assert prop.get("description"), (tool.name, model, name)
    by_name = {tool.name: tool for tool in anyio.run(_listed, server, admin)}
    assert by_name["retrieve"].annotations.read_only_hint
    assert by_name["forget"].annotations.destructive_hint
    assert not by_name["remember"].annotations.read_only_hint
