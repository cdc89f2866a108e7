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

from memstrata.config import settings_from_env
from memstrata.errors import ERROR_CODES
from memstrata.service.grpc_server import GrpcClient
from memstrata.service.operations import OPERATIONS

Caller = Callable[[str, dict[str, Any]], dict[str, Any]]

# How long a test waits on the service, in one place. A client never gives up before
# the server would: a machine doing other work (load 5-7 on two cores) runs the server
# several times slower than its own deadlines assume, and a read timeout shorter than
# those failed requests the server was still rightly serving (issue 34).
LOAD_FACTOR = 3.0
"""How many times its own deadlines a busy machine's server may take."""
SLACK_S = 60.0
"""Added on top: scheduling, a first model load, a garbage collection."""
MAX_ASKED_WAIT_S = 3600.0
"""The longest wait a request may ask the server for that a test client honours."""
START_TIMEOUT_S = 300.0
"""``serve`` to its first answer, and a one-shot CLI command, on a busy machine (the
issue measured 10-17 s each on a loaded one)."""


def server_deadline_s(operation: str | None = None, payload: dict[str, Any] | None = None) -> float:
    """The longest the server may rightly spend on one request: the wait it asks for
    (``timeout_s``, or the operation's default for it: ``flush``, ``forget``,
    ``forget_status``) plus every deadline of the server's own reads (the settings it
    runs with: this process's environment, which ``serve`` inherits)."""
    longterm = settings_from_env().longterm
    own = (
        longterm.search_deadline_s
        + longterm.read_deadline_s
        + longterm.embed_deadline_s
        + longterm.server_timeout_s
    )
    asked = 0.0
    op = next((o for o in OPERATIONS if o.name == operation), None)
    if op is not None and "timeout_s" in op.request.model_fields:
        default = float(op.request.model_fields["timeout_s"].default)
        given = (payload or {}).get("timeout_s", default)
        # a fuzzed payload may ask for anything ("", null, -1, 1e300): the server
        # refuses those, so the client waits as for the operation's default
        valid = isinstance(given, int | float) and not isinstance(given, bool)
        asked = float(given) if valid and 0 < given <= MAX_ASKED_WAIT_S else default
    return own + asked


def read_timeout_s(operation: str | None = None, payload: dict[str, Any] | None = None) -> float:
    """A test client's read timeout for one request (or, without an operation, for one
    that asks the server to wait for nothing): generous beyond the server's deadline."""
    return LOAD_FACTOR * server_deadline_s(operation, payload) + SLACK_S


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
        timeout=START_TIMEOUT_S,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"memstrata serve exited: {log.read_text()[-2000:]}")
        try:
            # /healthz answers "starting" at once; /readyz once every operation is served.
            if httpx.get(f"{url}/readyz", timeout=5.0).status_code == 200:
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
        response = httpx.post(
            f"{server.url}/v1/{name}",
            json=payload,
            headers=headers,
            timeout=read_timeout_s(name, payload),
        )
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
        http = httpx2.AsyncClient(headers=headers, timeout=read_timeout_s(name, payload))
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            result = await c.call_tool(name, payload)
        await http.aclose()
        if result.is_error:  # a tool's failure is its result, the error body its content
            body = json.loads(result.content[0].text)["error"]
            assert result.structured_content == {"error": body}
            raise ToolFailed(body)
        data: dict[str, Any] = result.structured_content
        return data

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return anyio.run(run, name, payload)
        except ToolFailed as failed:
            body = failed.body
            raise CallFailed(str(body["code"]), body, MCP_CODES.get(body["type"])) from None
        except (MCPError, BaseExceptionGroup) as exc:
            error = _first_mcp_error(exc, MCPError)
            body = dict(error.error.data or {})
            raise CallFailed(str(body.get("code")), body, error.error.code) from None

    return call


class ToolFailed(Exception):
    """An MCP tool result with ``isError``: its error body."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body)
        self.body = body


# The error table's MCP code by error type (what a JSON-RPC error would have carried).
MCP_CODES = {cls.__name__: code.mcp for cls, code in ERROR_CODES.items()} | {
    "InternalError": -32603
}


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
            process.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()


SESSION_TIMEOUT_S = read_timeout_s("flush")
"""The read timeout of a client that makes many calls (``Client``, an MCP session), none
waiting longer than ``flush``'s default."""
