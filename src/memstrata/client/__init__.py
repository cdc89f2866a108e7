"""Python clients of ``memstrata serve`` with the engine's method names.

``Client(url, key)`` / ``AsyncClient(url, key)`` (or ``MEMSTRATA_URL`` and
``MEMSTRATA_API_KEY``) call a running service over REST; ``Client(service=...)`` calls a
service in this process; ``Client(transport=...)`` sends through the transport given
(:class:`HTTPTransport`, or :class:`memstrata.service.inprocess.ServiceTransport`).
Their methods are generated from the service's capability table
(:mod:`memstrata.service.codegen`), so every operation has one method, typed with the
wire models of :mod:`memstrata.service.wire`. Importing this package imports no engine
module.
"""

from memstrata.client._methods import AsyncClientMethods, ClientMethods
from memstrata.client.base import (
    AsyncHTTPTransport,
    AsyncTransport,
    HTTPTransport,
    Transport,
    error_from_body,
)


class Client(ClientMethods):
    """The synchronous client (a context manager; ``close()`` ends its connections)."""


class AsyncClient(AsyncClientMethods):
    """The asynchronous client (``async with``; ``aclose()``)."""


__all__ = [
    "AsyncClient",
    "AsyncHTTPTransport",
    "AsyncTransport",
    "Client",
    "HTTPTransport",
    "Transport",
    "error_from_body",
]
