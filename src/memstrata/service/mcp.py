"""MCP: one tool per operation (the official SDK's low-level server).

Tools take the operation's request model as their input schema and return its
response as structured content (and as JSON text, for clients that read text).
Over streamable HTTP (``/mcp`` on the REST app) the API key is the request's
``Authorization: Bearer`` header; over stdio (``memstrata mcp``) the server acts as
the local user, with the tenant and agent given on the command line. An error is an
MCP error with the error table's code and the JSON error body as its data.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.shared.exceptions import MCPError
from starlette.types import ASGIApp

from memstrata import __version__
from memstrata.errors import MemstrataError, error_code
from memstrata.service.core import Service, bearer_key, error_body
from memstrata.service.operations import OPERATIONS
from memstrata.service.wire import dump

INTERNAL_ERROR = -32603


def tools() -> list[types.Tool]:
    """The MCP tools: one per operation, named like it."""
    return [
        types.Tool(
            name=op.name,
            description=f"{op.summary} (role: {op.role})",
            input_schema=op.request.model_json_schema(),
        )
        for op in OPERATIONS
    ]


def _headers(ctx: Any) -> dict[str, str]:
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    return {k.lower(): v for k, v in headers.items()} if headers is not None else {}


def build_server(service: Service) -> Server[Any]:
    """The MCP server over ``service``."""
    listed = tools()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        key = bearer_key(_headers(ctx))
        arguments = dict(params.arguments or {})
        try:
            result = await anyio.to_thread.run_sync(
                service.call, params.name, key, arguments, "mcp"
            )
        except MemstrataError as exc:
            raise MCPError(error_code(exc).mcp, str(exc), data=error_body(exc)) from None
        except Exception as exc:
            raise MCPError(INTERNAL_ERROR, "internal error", data=error_body(exc)) from None
        data = dump(result)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data))],
            structured_content=data,
        )

    return Server(
        "memstrata",
        version=__version__,
        instructions=(
            "Context for agents: start a session, observe turns, remember and retrieve "
            "long-term memories, and build each step's context within a token budget."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def http_app(
    service: Service, *, host: str = "127.0.0.1"
) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]:
    """The streamable-HTTP endpoint as an ASGI app, and the lifespan that must wrap it."""
    server = build_server(service)
    server.streamable_http_app(host=host, json_response=True)
    manager = server.session_manager

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return StreamableHTTPASGIApp(manager), lifespan


async def run_stdio(service: Service) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes."""
    from mcp.server.stdio import stdio_server

    server = build_server(service)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
