"""A real ``memstrata serve`` (a subprocess on free loopback ports) and a caller per transport."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest
from tests.service.support import (
    TENANTS,
    Caller,
    RunningServer,
    cli,
    free_port,
    grpc_call,
    mcp_call,
    rest_call,
    wait_ready,
)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    data_dir = tmp_path_factory.mktemp("serve")
    port, grpc_port = free_port(), free_port()
    log = data_dir.parent / "serve.log"
    admins = {}
    for tenant in TENANTS:  # made offline, before the service owns the data directory
        made = cli(
            "keys",
            "create",
            "--tenant",
            tenant,
            "--agent",
            "admin",
            "--role",
            "admin",
            "--data-dir",
            str(data_dir),
        )
        assert made.returncode == 0, made.stderr
        admins[tenant] = json.loads(made.stdout)["key"]
    command = [
        sys.executable,
        "-m",
        "memstrata.cli",
        "serve",
        "--data-dir",
        str(data_dir),
        "--port",
        str(port),
        "--grpc-port",
        str(grpc_port),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, log)
        yield RunningServer(url, f"127.0.0.1:{grpc_port}", admins, data_dir, process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(params=["rest", "grpc", "mcp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def caller_for(server: RunningServer, transport: str) -> Iterator[Callable[[str | None], Caller]]:
    """``caller_for(key)``: a function calling operations over this test's transport."""
    opened: list[Iterator[Caller]] = []

    def make(key: str | None) -> Caller:
        if transport == "rest":
            return rest_call(server, key)
        if transport == "grpc":
            gen = grpc_call(server, key)
            opened.append(gen)
            return next(gen)
        return mcp_call(server, key)

    yield make
    for gen in opened:
        for _ in gen:
            pass
