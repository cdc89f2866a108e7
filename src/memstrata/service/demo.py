"""``memstrata serve-demo``: start the service, run one agent step over REST, then the
same step through MCP, and stop. Everything runs on the embedded defaults."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from memstrata.config import settings_from_env
from memstrata.service.grpc_server import create_server
from memstrata.service.rest import create_app
from memstrata.service.server import open_service

STEP = {
    "step_intent": "respond",
    "user_input": "Recommend a restaurant near my home that is safe for my allergies.",
    "system_prompt": "You are a helpful travel assistant.",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rest(url: str, key: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        f"{url}/v1/{name}", json=payload, headers={"Authorization": f"Bearer {key}"}, timeout=60
    )
    body: dict[str, Any] = response.json()
    if response.status_code >= 400:
        raise RuntimeError(f"{name}: {body}")
    return body


async def _mcp_step(url: str, key: str, session_id: str) -> dict[str, Any]:
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        tools = await client.list_tools()
        print(f"MCP: {len(tools.tools)} tools ({', '.join(t.name for t in tools.tools[:6])}, ...)")
        result = await client.call_tool("build_context", {"session_id": session_id, **STEP})
        data: dict[str, Any] = result.structured_content
        return data


def run_serve_demo(data_dir: Path) -> None:
    import uvicorn

    running = open_service(settings_from_env(data_dir=data_dir))
    port = _free_port()
    grpc_server, grpc_port = create_server(running.service, f"127.0.0.1:{_free_port()}")
    grpc_server.start()
    server = uvicorn.Server(
        uvicorn.Config(create_app(running.service), port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        print(f"memstrata serving REST + MCP on {url} (MCP at /mcp), gRPC on :{grpc_port}")
        key = running.keys.create("demo", "travel-agent", "admin").key
        print("API key created for tenant demo, agent travel-agent (stored hashed)\n")

        sid = f"trip-{int(time.time())}"
        _rest(
            url,
            key,
            "start_session",
            {"user_id": "alice", "initial_query": "Plan my trip", "session_id": sid},
        )
        for text in (
            "I live in Hangzhou.",
            "I'm allergic to peanuts and shellfish.",
            "My budget for the trip is 5000 yuan.",
            "Actually I moved to Chengdu last month.",
        ):
            _rest(url, key, "observe", {"session_id": sid, "role": "user", "text": text})
            print(f"REST observe: {text}")
        stored = _rest(
            url,
            key,
            "remember",
            {"user_id": "alice", "text": "I prefer window seats.", "wait": True},
        )
        print(f"REST remember: episode + facts {[f['attribute'] for f in stored['facts']]}\n")

        built = _rest(url, key, "build_context", {"session_id": sid, **STEP})
        print(f"REST build_context: {built['total_tokens']} tokens, memory block:")
        print(built["messages"][1]["content"].split("\n\n", 1)[-1], "\n")

        over_mcp = anyio.run(_mcp_step, url, key, sid)
        same = over_mcp["messages"] == built["messages"]
        print(
            f"MCP build_context: {over_mcp['total_tokens']} tokens; same messages as REST: {same}"
        )
        print(
            json.dumps(
                {"rest_tokens": built["total_tokens"], "mcp_tokens": over_mcp["total_tokens"]}
            )
        )
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        grpc_server.stop(grace=1).wait()
        running.close()
