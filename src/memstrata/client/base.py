"""What the generated client methods call: a transport that sends one request.

A transport takes an operation's name and its request model and returns the response
model, or raises the memstrata exception the service raised (the way httpx separates
a client from its transports). :class:`HTTPTransport` and :class:`AsyncHTTPTransport`
talk to a running ``memstrata serve`` over REST; the transports that call a
:class:`memstrata.service.core.Service` in this process live next to it, in
:mod:`memstrata.service.inprocess`, because this package imports no engine module.
Errors from HTTP come back as the exceptions the service raised, rebuilt from the
error body (same class, message, ``field`` and ``reason``).
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memstrata import errors
from memstrata.errors import MemstrataError
from memstrata.service.wire_base import dump, request_error

if TYPE_CHECKING:
    from memstrata.service.core import Service

R = TypeVar("R", bound=BaseModel)
DEFAULT_TIMEOUT_S = 60.0
_BY_STATUS: dict[int, type[MemstrataError]] = {
    401: errors.AuthenticationError,
    403: errors.PermissionDeniedError,
    404: errors.NotFoundError,
    409: errors.ConflictError,
    413: errors.ValidationError,
    422: errors.ValidationError,
    429: errors.RateLimitedError,
    503: errors.BackendUnavailableError,
}


class Transport(Protocol):
    """Sends one request of an operation and returns its response (or raises)."""

    def send(self, operation: str, request: BaseModel, response: type[R]) -> R: ...

    def close(self) -> None: ...


class AsyncTransport(Protocol):
    """The asynchronous twin of :class:`Transport`."""

    async def send(self, operation: str, request: BaseModel, response: type[R]) -> R: ...

    async def aclose(self) -> None: ...


def error_from_body(status: int, body: Any) -> MemstrataError:
    """The memstrata exception an error body stands for (its ``type``, else its status)."""
    error = body.get("error", {}) if isinstance(body, dict) else {}
    message = str(error.get("message", f"HTTP {status}"))
    cls = getattr(errors, str(error.get("type", "")), None)
    if not (isinstance(cls, type) and issubclass(cls, MemstrataError)):
        cls = _BY_STATUS.get(status, errors.BackendError)
    # The server built the message; the constructors' own signatures differ per class.
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    for attribute in ("field", "reason", "retry_after_s"):
        if attribute in error:
            setattr(exc, attribute, error[attribute])
    return exc


def request_of(model: type[BaseModel], fields: dict[str, Any]) -> BaseModel:
    """The request model of ``fields``; those left at None take the model's default."""
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not None})
    except PydanticValidationError as exc:
        raise request_error(exc) from None


def _reply(response: type[R], status: int, body: Any) -> R:
    if status >= 400:
        raise error_from_body(status, body)
    return response.model_validate(body)


def _http_options(url: str, key: str | None, timeout_s: float) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return {"base_url": url.rstrip("/"), "timeout": timeout_s, "headers": headers}


class HTTPTransport:
    """REST to a running service: ``POST /v1/<operation>`` with the key as a bearer."""

    def __init__(
        self, url: str, key: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self._http = httpx.Client(**_http_options(url, key, timeout_s))

    def send(self, operation: str, request: BaseModel, response: type[R]) -> R:
        reply = self._http.post(f"/v1/{operation}", json=dump(request))
        return _reply(response, reply.status_code, reply.json())

    def close(self) -> None:
        self._http.close()


class AsyncHTTPTransport:
    """The asynchronous twin of :class:`HTTPTransport`."""

    def __init__(
        self, url: str, key: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self._http = httpx.AsyncClient(**_http_options(url, key, timeout_s))

    async def send(self, operation: str, request: BaseModel, response: type[R]) -> R:
        reply = await self._http.post(f"/v1/{operation}", json=dump(request))
        return _reply(response, reply.status_code, reply.json())

    async def aclose(self) -> None:
        await self._http.aclose()


def _target(
    url: str | None, key: str | None, service: Service | None, transport: object | None
) -> tuple[str | None, str | None]:
    """The url (None: the service) and the key of a client without a transport; the
    environment fills in what the arguments leave out."""
    if transport is not None:
        if url is not None or key is not None or service is not None:
            raise errors.ValidationError(
                "transport", "give a transport, or a url or a service, not both"
            )
        return None, None
    url = url or (None if service is not None else os.environ.get("MEMSTRATA_URL"))
    key = key or os.environ.get("MEMSTRATA_API_KEY")
    if (url is None) == (service is None):
        raise errors.ValidationError("url", "give a service url (or MEMSTRATA_URL) or a service")
    return url, key


class ClientBase:
    """What the generated methods of :class:`memstrata.client.Client` call.

    ``Client(url, key)`` (or ``MEMSTRATA_URL`` and ``MEMSTRATA_API_KEY``) sends over
    HTTP, ``Client(service=..., key=...)`` calls a service in this process, and
    ``Client(transport=...)`` uses the transport given.
    """

    def __init__(
        self,
        url: str | None = None,
        key: str | None = None,
        *,
        service: Service | None = None,
        transport: Transport | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        url, key = _target(url, key, service, transport)
        if transport is None and service is not None:
            # Imported here: the in-process transport brings the service (and engine).
            from memstrata.service.inprocess import ServiceTransport

            transport = ServiceTransport(service, key)
        elif transport is None:
            assert url is not None
            transport = HTTPTransport(url, key, timeout_s=timeout_s)
        self._transport: Transport = transport

    def _call(
        self, name: str, request_model: type[BaseModel], response: type[R], /, **fields: Any
    ) -> R:
        return self._transport.send(name, request_of(request_model, fields), response)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClientBase:
    """The asynchronous twin of :class:`ClientBase`."""

    def __init__(
        self,
        url: str | None = None,
        key: str | None = None,
        *,
        service: Service | None = None,
        transport: AsyncTransport | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        url, key = _target(url, key, service, transport)
        if transport is None and service is not None:
            from memstrata.service.inprocess import AsyncServiceTransport

            transport = AsyncServiceTransport(service, key)
        elif transport is None:
            assert url is not None
            transport = AsyncHTTPTransport(url, key, timeout_s=timeout_s)
        self._transport: AsyncTransport = transport

    async def _call(
        self, name: str, request_model: type[BaseModel], response: type[R], /, **fields: Any
    ) -> R:
        return await self._transport.send(name, request_of(request_model, fields), response)

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def deprecated_name(old: str, new: str) -> None:
    """Warn that the client method ``old`` is now ``new`` (the engine's name)."""
    warnings.warn(
        f"Client.{old}() is deprecated: use {new}(), the name ContextEngine shares",
        DeprecationWarning,
        stacklevel=3,
    )
