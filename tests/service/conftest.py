"""A real ``memstrata serve`` (a subprocess on free loopback ports) and a caller per transport."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tests.service.support import (
    Caller,
    RunningServer,
    grpc_call,
    mcp_call,
    rest_call,
    running_server,
)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("serve")) as running:
        yield running


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
