"""Python clients of ``memstrata serve`` with the engine's method names.

``Client(url, key)`` / ``AsyncClient(url, key)`` (or ``MEMSTRATA_URL`` and
``MEMSTRATA_API_KEY``) call a running service over REST; ``Client(service=...)`` calls a
service in this process. Both are generated from the service's capability table
(:mod:`memstrata.service.codegen`), so every operation has one method, typed with the
wire models of :mod:`memstrata.service.wire`.
"""

from memstrata.client._methods import AsyncClientMethods, ClientMethods
from memstrata.client.base import error_from_body


class Client(ClientMethods):
    """The synchronous client (a context manager; ``close()`` ends its connections)."""


class AsyncClient(AsyncClientMethods):
    """The asynchronous client (``async with``; ``aclose()``)."""


__all__ = ["AsyncClient", "Client", "error_from_body"]
