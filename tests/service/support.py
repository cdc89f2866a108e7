"""How the service tests reach a running ``memstrata serve``: one caller per transport."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import grpc
import httpx

from memstrata.service.grpc_server import GrpcClient

Caller = Callable[[str, dict[str, Any]], dict[str, Any]]


class CallFailed(Exception):
    """A transport's error, normalized: the error table's code and the JSON body."""

    def __init__(self, code: str, body: dict[str, Any], status: Any) -> None:
        super().__init__(f"{code}: {body}")
        self.code = code
        self.body = body
        self.status = status


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class RunningServer:
    url: str
    grpc_target: str
    admin_keys: dict[str, str]
    """An admin key per tenant: ``acme``, ``globex`` and the operator's ``default``."""
    data_dir: Path
    process: subprocess.Popen[bytes]


TENANTS = ("acme", "globex", "default")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstrata.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"memstrata serve exited: {log.read_text()[-2000:]}")
        try:
            # /healthz answers "starting" at once; /readyz once every operation is served.
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"memstrata serve did not start: {log.read_text()[-2000:]}")


def create_key(server: RunningServer, tenant_admin_key: str, **fields: Any) -> str:
    """A new key made through the running service by a tenant admin."""
    response = rest_call(server, tenant_admin_key)("create_key", fields)
    return str(response["key"])


def rest_call(server: RunningServer, key: str | None) -> Caller:
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{server.url}/v1/{name}", json=payload, headers=headers, timeout=60)
        body: dict[str, Any] = response.json()
        if response.status_code >= 400:
            raise CallFailed(body["error"]["code"], body["error"], response.status_code)
        return body

    return call


def grpc_call(server: RunningServer, key: str | None) -> Iterator[Caller]:
    client = GrpcClient(server.grpc_target, key)

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return client.call(name, payload)
        except grpc.RpcError as exc:
            body = json.loads(exc.details())
            raise CallFailed(body["code"], body, exc.code()) from None

    try:
        yield call
    finally:
        client.close()


def mcp_call(server: RunningServer, key: str | None) -> Caller:
    """One MCP client session per call over streamable HTTP (the SDK's own client)."""
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def run(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            result = await c.call_tool(name, payload)
        await http.aclose()
        assert not result.is_error, result.content
        data: dict[str, Any] = result.structured_content
        return data

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return anyio.run(run, name, payload)
        except (MCPError, BaseExceptionGroup) as exc:
            error = _first_mcp_error(exc, MCPError)
            body = dict(error.error.data or {})
            raise CallFailed(str(body.get("code")), body, error.error.code) from None

    return call


def _first_mcp_error(exc: BaseException, kind: type[Any]) -> Any:
    """The MCP error itself, out of the task groups the client raises it through."""
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _first_mcp_error(inner, kind)
        if found is not None:
            return found
    raise exc


@contextlib.contextmanager
def running_server(data_dir: Path, *serve_args: str) -> Iterator[RunningServer]:
    """``memstrata serve`` on free loopback ports over ``data_dir``, with an admin key
    per tenant of :data:`TENANTS` made offline first; stopped with SIGINT afterwards."""
    admins = {}
    for tenant in TENANTS:  # made before the service owns the data directory
        made = cli(
            "keys",
            "create",
            "--tenant",
            tenant,
            "--agent",
            "admin",
            "--role",
            "admin",
            # Keys they mint (a fuzzing run's) may have any rate up to the wire's limit.
            "--rate-per-s",
            "1000000",
            "--data-dir",
            str(data_dir),
        )
        assert made.returncode == 0, made.stderr
        admins[tenant] = json.loads(made.stdout)["key"]
    port, grpc_port = free_port(), free_port()
    log = data_dir.parent / f"{data_dir.name}.log"
    command = [
        sys.executable,
        "-m",
        "memstrata.cli",
        "serve",
        *serve_args,
        "--data-dir",
        str(data_dir),
        "--port",
        str(port),
        "--grpc-port",
        str(grpc_port),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, log)
        yield RunningServer(url, f"127.0.0.1:{grpc_port}", admins, data_dir, process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
