"""Real MCP client sessions (the SDK's own client) over streamable HTTP and over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tests.service.support import SESSION_TIMEOUT_S, RunningServer

from memstrata.service.operations import OPERATIONS


async def _agent_step(client: Client) -> dict[str, Any]:
    """List the tools, then remember, retrieve and build a step's context."""
    listed = await client.list_tools()
    names = {tool.name for tool in listed.tools}
    assert names == {op.name for op in OPERATIONS}
    session = await client.call_tool(
        "start_session", {"user_id": "mia", "initial_query": "dinner", "session_id": "desk-1"}
    )
    assert session.structured_content["session_id"] == "desk-1"
    stored = await client.call_tool(
        "remember", {"user_id": "mia", "text": "I'm allergic to shellfish.", "wait": True}
    )
    assert [f["attribute"] for f in stored.structured_content["facts"]] == ["allergies"]
    found = await client.call_tool("retrieve", {"query": "what am I allergic to", "user_id": "mia"})
    assert "shellfish" in found.structured_content["items"][0]["text"]
    built = await client.call_tool(
        "build_context",
        {
            "session_id": "desk-1",
            "step_intent": "respond",
            "user_input": "Suggest a dinner that is safe for my allergies.",
            "system_prompt": "You plan meals.",
        },
    )
    assert not built.is_error
    # Text content carries the same JSON for clients that read text only.
    assert "shellfish" in built.content[0].text
    data: dict[str, Any] = built.structured_content
    return data


def test_mcp_over_streamable_http(server: RunningServer) -> None:
    async def run() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {server.admin_keys['globex']}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=SESSION_TIMEOUT_S) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
        ):
            return await _agent_step(client)

    built = anyio.run(run)
    assert any("shellfish" in m["content"] for m in built["messages"])


def test_mcp_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "memstrata.cli",
            "mcp",
            "--tenant",
            "acme",
            "--agent",
            "desk",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        env=dict(os.environ),
    )

    async def run() -> dict[str, Any]:
        async with Client(params) as client:
            return await _agent_step(client)

    built = anyio.run(run)
    assert any("shellfish" in m["content"] for m in built["messages"])
