"""The generated clients: current with the table, the engine's names, typed results and
the engine's exceptions, over HTTP and in process."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from tests.service.support import SESSION_TIMEOUT_S, RunningServer

from memstrata.client import AsyncClient, Client
from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import (
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from memstrata.service import codegen
from memstrata.service import wire as m
from memstrata.service.operations import OPERATIONS
from memstrata.service.server import open_service

ENGINE_NAMES = {
    "start_session", "end_session", "update_session", "observe", "remember", "forget",
    "retrieve", "route", "build_context", "ingest_documents", "confirm_knowledge", "inspect",
}  # fmt: skip


def test_the_generated_methods_are_current() -> None:
    assert codegen.TARGET.read_text() == codegen.source(), (
        "regenerate: python -m memstrata.service.codegen"
    )


def test_every_operation_is_a_method_named_like_the_engine() -> None:
    for op in OPERATIONS:
        assert callable(getattr(Client, op.name)) and callable(getattr(AsyncClient, op.name))
    assert {op.name for op in OPERATIONS} >= ENGINE_NAMES
    assert all(callable(getattr(ContextEngine, name)) for name in ENGINE_NAMES)


def test_client_over_http(server: RunningServer) -> None:
    tag = uuid.uuid4().hex[:8]
    with Client(server.url, server.admin_keys["acme"], timeout_s=SESSION_TIMEOUT_S) as client:
        session = client.start_session(f"u-{tag}", "hello", session_id=f"c-{tag}")
        assert isinstance(session, m.Session) and session.session_id == f"c-{tag}"
        stored = client.remember(f"u-{tag}", "I'm allergic to peanuts.", wait=True)
        assert [f.attribute for f in stored.facts] == ["allergies"]
        found = client.retrieve("what am I allergic to", user_id=f"u-{tag}", k=3)
        assert "peanuts" in found.items[0].text
        built = client.build_context(f"c-{tag}", "respond", "Any allergies?", "You help.")
        assert any("peanuts" in message.content for message in built.messages)
        with pytest.raises(NotFoundError, match="is not open"):
            client.session("never")
        with pytest.raises(ValidationError) as bad:
            client.retrieve("x", k=0)
        assert bad.value.field == "k"
    stranger = Client(server.url, "msk_0123456789abcdef_" + "x" * 43, timeout_s=SESSION_TIMEOUT_S)
    with stranger, pytest.raises(AuthenticationError):
        stranger.retrieve("x")


def test_async_client_over_http(server: RunningServer) -> None:
    async def run() -> m.RetrievalOut:
        async with AsyncClient(
            server.url, server.admin_keys["globex"], timeout_s=SESSION_TIMEOUT_S
        ) as client:
            await client.remember("async-user", "I moved to Chengdu.", wait=True)
            return await client.retrieve("where do I live", user_id="async-user")

    assert "Chengdu" in anyio.run(run).items[0].text


def test_client_in_process(engine_opener: Callable[..., ContextEngine], tmp_path: Path) -> None:
    engine = engine_opener(data_dir=tmp_path / "data")
    running = open_service(Settings(data_dir=tmp_path / "data"), engine=engine)
    try:
        key = running.keys.create("acme", "local", "writer").key
        client = Client(service=running.service, key=key)
        stored = client.remember("u1", "My budget is 300 euros.", wait=True)
        assert [f.attribute for f in stored.facts] == ["budget"]
        with pytest.raises(PermissionDeniedError):
            client.start_forget(user_id="u1")  # forget needs the admin role
    finally:
        running.close()


def test_client_with_a_transport(
    engine_opener: Callable[..., ContextEngine], tmp_path: Path
) -> None:
    from memstrata.service.inprocess import ServiceTransport
    from memstrata.service.local import local_caller, local_service

    engine = engine_opener(data_dir=tmp_path / "data")
    service = local_service(engine, local_caller("acme"))
    with Client(transport=ServiceTransport(service)) as client:
        stored = client.remember("u1", "My budget is 300 euros.", wait=True)
        assert [f.attribute for f in stored.facts] == ["budget"]
        forgotten = client.start_forget(
            user_id="u1", wait=True
        ).report  # the local user is an admin
        assert forgotten is not None and forgotten.points_deleted >= 2

    async def run() -> m.RetrievalOut:
        async with AsyncClient(service=service) as client:
            await client.remember("u2", "I moved to Chengdu.", wait=True)
            return await client.retrieve("where do I live", user_id="u2")

    assert "Chengdu" in anyio.run(run).items[0].text
    with pytest.raises(ValidationError) as both:
        Client("http://localhost:1", transport=ServiceTransport(service))
    assert both.value.field == "transport"
