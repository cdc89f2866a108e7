"""The client's transports to a :class:`Service` in this process.

They call :meth:`Service.call` with the operation's request model: the same
authentication, roles, errors and metrics as a transport over the network, without
one. They live here rather than in :mod:`memstrata.client`, which imports no engine
module; ``Client(service=...)`` imports this module when it is used.
"""

from __future__ import annotations

from typing import TypeVar

import anyio
from pydantic import BaseModel

from memstrata.service.core import Service

R = TypeVar("R", bound=BaseModel)


def _as(response: type[R], result: BaseModel) -> R:
    # The service returns the operation's response model itself.
    return result if isinstance(result, response) else response.model_validate(result.model_dump())


class ServiceTransport:
    """Calls ``service`` as the holder of ``key`` (None: its local caller)."""

    def __init__(self, service: Service, key: str | None = None) -> None:
        self._service = service
        self._key = key

    def send(self, operation: str, request: BaseModel, response: type[R]) -> R:
        return _as(response, self._service.call(operation, self._key, request))

    def close(self) -> None:
        """Nothing to close: the service belongs to its caller."""


class AsyncServiceTransport:
    """:class:`ServiceTransport` for the async client: each call in a worker thread."""

    def __init__(self, service: Service, key: str | None = None) -> None:
        self._service = service
        self._key = key

    async def send(self, operation: str, request: BaseModel, response: type[R]) -> R:
        result = await anyio.to_thread.run_sync(self._service.call, operation, self._key, request)
        return _as(response, result)

    async def aclose(self) -> None:
        """Nothing to close: the service belongs to its caller."""
