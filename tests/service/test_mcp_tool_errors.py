"""A tool that fails answers a tool result with ``isError`` naming the typed error (code,
field, reason), never a JSON-RPC error: a client that shows the model only tool results
shows it why. Over streamable HTTP and stdio, with the official MCP SDK client."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from tests.service.support import RunningServer, read_timeout_s

from memstrata.validation import ID_REASON


def _error(result: Any) -> dict[str, Any]:
    """The typed error of a failed tool result (its text and structured content agree)."""
    assert result.is_error, result.content
    body: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == body
    error: dict[str, Any] = body["error"]
    return error


async def _bad_calls(client: Client) -> None:
    wrong_type = _error(await client.call_tool("retrieve", {"query": "x", "k": "many"}))
    assert (wrong_type["code"], wrong_type["type"], wrong_type["field"]) == (
        "invalid_argument",
        "ValidationError",
        "k",
    )
    assert wrong_type["reason"]
    missing = _error(await client.call_tool("start_session", {"initial_query": "hello"}))
    assert (missing["code"], missing["field"]) == ("invalid_argument", "user_id")
    invalid_id = _error(await client.call_tool("get_session", {"session_id": "no spaces"}))
    assert (invalid_id["field"], invalid_id["reason"]) == ("session_id", ID_REASON)
    unknown_field = _error(await client.call_tool("retrieve", {"query": "x", "kk": 3}))
    assert unknown_field["field"] == "kk"
    not_open = _error(await client.call_tool("get_session", {"session_id": "never-opened"}))
    assert (not_open["code"], not_open["type"]) == ("not_found", "NotFoundError")
    # An unknown tool is a protocol error (MCP's "Unknown tools"), not a tool's failure.
    with pytest.raises(MCPError) as unknown_tool:
        await client.call_tool("no_such_tool", {})
    assert unknown_tool.value.error.code == -32602


async def _start_twice(client: Client) -> None:
    args = {"user_id": "ines", "initial_query": "my order", "session_id": "desk-retry"}
    first = await client.call_tool("start_session", args)
    assert not first.is_error
    await client.call_tool("update_session", {"session_id": "desk-retry", "entity_id": "order-7"})
    # A retried start (same user, same id) gets the open session as it stands.
    again = await client.call_tool("start_session", {**args, "initial_query": "retry"})
    assert not again.is_error, again.content
    assert again.structured_content["session_id"] == "desk-retry"
    assert again.structured_content["initial_query"] == "my order"
    assert again.structured_content["last_entity_id"] == "order-7"
    taken = _error(await client.call_tool("start_session", {**args, "user_id": "someone-else"}))
    assert (taken["code"], taken["type"], taken["field"]) == (
        "aborted",
        "ConflictError",
        "session_id",
    )


def _over_http(server: RunningServer, steps: Callable[[Client], Awaitable[None]]) -> None:
    async def run() -> None:
        headers = {"Authorization": f"Bearer {server.admin_keys['acme']}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=read_timeout_s()) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
        ):
            await steps(client)

    anyio.run(run)


def test_bad_tool_calls_are_error_results_over_http(server: RunningServer) -> None:
    _over_http(server, _bad_calls)


def test_starting_an_open_session_again_returns_it_over_http(server: RunningServer) -> None:
    _over_http(server, _start_twice)


def test_bad_tool_calls_are_error_results_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "memstrata.cli", "mcp", "--tenant", "acme", "--agent", "desk"),
            *("--data-dir", str(tmp_path / "data")),
        ],
        env=dict(os.environ),
    )

    async def run() -> None:
        async with Client(params) as client:
            await _bad_calls(client)
            await _start_twice(client)

    anyio.run(run)
