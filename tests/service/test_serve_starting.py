"""`memstrata serve` answers at once and says when it is ready (issue 34, "Why": `serve`
took 13.9 s to its first `/healthz`; the README read `admin.key` before it existed).

A real `memstrata serve` subprocess whose Valkey is held (tests/service/startup_support):
while its engine cannot open, `/healthz` says `starting` (200), `/readyz` 503, every
operation a typed 503 with Retry-After over REST, MCP and gRPC, and nothing says
"serving"; once the Valkey is let through, `memstrata wait` returns, `admin.key`
exists, the key works, and only then the log says "serving".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from tests.service.startup_support import HeldValkey
from tests.service.support import START_TIMEOUT_S, free_port, read_timeout_s

from memstrata.service.grpc_server import GrpcClient

SERVING = "memstrata serving"


def _memstrata(*args: str) -> list[str]:
    return [sys.executable, "-m", "memstrata.cli", *args]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[HeldValkey]:
    with HeldValkey(tmp_path / "valkey") as valkey:
        yield valkey


def _first_answer(url: str, process: subprocess.Popen[bytes], log: Path) -> httpx.Response:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited: {log.read_text()[-2000:]}")
        try:
            return httpx.get(f"{url}/healthz", timeout=2.0)
        except httpx.HTTPError:
            time.sleep(0.05)
    raise AssertionError(f"serve did not answer: {log.read_text()[-2000:]}")


def test_serve_answers_while_it_starts_and_says_when_it_is_ready(
    tmp_path: Path, held: HeldValkey
) -> None:
    port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    data_dir = tmp_path / "data"
    log = tmp_path / "serve.log"
    env = {**os.environ, "MEMSTRATA_REDIS_URL": held.url}
    command = _memstrata(
        "serve", "--data-dir", str(data_dir), "--port", str(port), "--grpc-port", str(grpc_port)
    )
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        health = _first_answer(url, process, log)
        assert health.status_code == 200 and health.json()["status"] == "starting", health.text

        ready = httpx.get(f"{url}/readyz", timeout=5)
        assert ready.status_code == 503 and ready.json()["status"] == "starting"
        assert ready.headers["retry-after"] == "1"

        call = httpx.post(f"{url}/v1/retrieve", json={"query": "x"}, timeout=read_timeout_s())
        assert call.status_code == 503, call.text
        assert call.headers["retry-after"] == "1"
        error = call.json()["error"]
        assert error["code"] == "unavailable" and error["type"] == "BackendUnavailableError"
        assert "starting" in error["message"] and error["retry_after_s"] == 1.0

        rpc = httpx.post(
            f"{url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=read_timeout_s(),
        )
        assert rpc.status_code == 503 and rpc.json()["error"]["data"]["code"] == "unavailable"

        client = GrpcClient(f"127.0.0.1:{grpc_port}", "msk_x")
        try:
            with pytest.raises(grpc.RpcError) as refused:
                client.call("retrieve", {"query": "x"})
        finally:
            client.close()
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert json.loads(refused.value.details())["type"] == "BackendUnavailableError"

        assert not (data_dir / "admin.key").exists()
        assert SERVING not in log.read_text()

        held.release()
        waited = subprocess.run(
            _memstrata("wait", "--url", url, "--timeout", "180"),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_S,
            check=False,
        )
        assert waited.returncode == 0, waited.stderr
        key = (data_dir / "admin.key").read_text().strip()  # exists once ready
        assert httpx.get(f"{url}/readyz", timeout=5).status_code == 200
        listed = httpx.post(
            f"{url}/v1/list_keys",
            json={},
            headers={"Authorization": f"Bearer {key}"},
            timeout=read_timeout_s("list_keys"),
        )
        assert listed.status_code == 200, listed.text
        assert held.connections > 0  # it did wait on the held Valkey
        assert SERVING in log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    assert process.returncode == 0, log.read_text()[-2000:]


def test_wait_gives_up_with_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = subprocess.run(
        _memstrata("wait", "--url", url, "--timeout", "0.5"),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not ready after 0.5 s" in lines[0], done.stderr


def test_mcp_over_stdio_answers_initialize_before_its_engine_opens(tmp_path: Path) -> None:
    """The engine of this data directory cannot open (its Valkey's append-only file is
    damaged): `initialize` and `tools/list` are answered all the same, without it, and
    a tool call gets the reason (named once on stderr too)."""
    import anyio
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPError

    data_dir = tmp_path / "data"
    manifest = data_dir / "valkey" / "appendonlydir" / "appendonly.aof.manifest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("not a manifest\n")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memstrata.cli", "mcp", "--data-dir", str(data_dir)],
        env=dict(os.environ),
    )

    async def run() -> tuple[int, str]:
        async with Client(params) as client:  # initialize
            listed = await client.list_tools()
            try:
                result = await client.call_tool("list_namespaces", {})
            except MCPError as exc:  # today's MCP errors; a tool result with isError later
                return len(listed.tools), str(exc)
            assert result.is_error
            return len(listed.tools), json.dumps(result.model_dump(mode="json"))

    tools, reason = anyio.run(run)
    assert tools > 0
    assert "Valkey did not start" in reason, reason
