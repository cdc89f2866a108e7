"""The three places one :class:`memstrata.interface.Memory` lives: the engine in this
process, the service in this process (the client over its in-process transport), and a
real ``memstrata serve`` over HTTP (the service tests' server, a fresh tenant)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from tests.service.conftest import server  # noqa: F401  (the running service)
from tests.service.support import RunningServer, create_key

from memstrata.client import Client
from memstrata.config import Settings
from memstrata.decision import ToolSpec
from memstrata.embed.cache import CachedEmbedder
from memstrata.engine import ContextEngine
from memstrata.interface import Memory
from memstrata.service.core import Service
from memstrata.service.inprocess import ServiceTransport
from memstrata.service.local import local_caller, local_service


@dataclass
class Backend:
    """A :class:`Memory` and the setup the interface leaves to each (registering a tool)."""

    name: str
    memory: Memory
    register_tool: Callable[[str, str, dict[str, Any]], None]
    service: Service | None = None
    """The service in this process, for an async client over it."""
    url: str = ""
    key: str = ""
    """The running service's url and this tenant's admin key (``http``)."""


def _engine_backend(engine: ContextEngine, name: str, service: Service) -> Backend:
    def register(tool: str, description: str, parameters: dict[str, Any]) -> None:
        engine.register_tool(ToolSpec(tool, description, parameters), replace=True)

    return Backend(name, engine, register, service=service)


def _client_backend(client: Client, name: str, **where: Any) -> Backend:
    def register(tool: str, description: str, parameters: dict[str, Any]) -> None:
        client.register_tool(tool, description, parameters)

    return Backend(name, client, register, **where)


@pytest.fixture(scope="module", params=["engine", "inprocess", "http"])
def backend(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    minilm: CachedEmbedder,
) -> Iterator[Backend]:
    """Each place in turn, one per test module; tests keep apart by fresh ids."""
    if request.param == "http":
        running: RunningServer = request.getfixturevalue("server")
        tenant = f"contract{uuid.uuid4().hex[:8]}"
        key = create_key(
            running, running.admin_keys["default"], agent="contract", role="admin", tenant=tenant
        )
        with Client(running.url, key) as client:
            yield _client_backend(client, "http", url=running.url, key=key)
        return
    data_dir = tmp_path_factory.mktemp(f"contract-{request.param}")
    with ContextEngine.open(Settings(data_dir=data_dir), embedder=minilm) as engine:
        if request.param == "engine":
            yield _engine_backend(engine, "engine", local_service(engine, local_caller("default")))
            return
        service = local_service(engine, local_caller("default", agent="contract"))
        with Client(transport=ServiceTransport(service)) as client:
            yield _client_backend(client, "inprocess", service=service)
