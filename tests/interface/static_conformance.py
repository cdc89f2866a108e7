"""Checked by mypy (tests/interface/test_protocol.py runs it): the engine and the
clients are the interface's Protocols. Not a test module: nothing here runs."""

from __future__ import annotations

from memstrata.client import AsyncClient, Client
from memstrata.engine import ContextEngine
from memstrata.interface import AsyncMemory, Memory


def engine_is_memory(engine: ContextEngine) -> Memory:
    return engine


def client_is_memory(client: Client) -> Memory:
    return client


def async_client_is_async_memory(client: AsyncClient) -> AsyncMemory:
    return client
