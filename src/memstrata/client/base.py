"""What the generated client methods call: one request, over HTTP or in process.

A client made with ``url`` talks to a running ``memstrata serve`` over REST (httpx);
one made with ``service`` calls a :class:`memstrata.service.core.Service` in this
process, with the same authentication, roles and errors. Errors come back as the
memstrata exceptions the service raised (rebuilt from the error body: same class,
message, ``field`` and ``reason``).
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memstrata import errors
from memstrata.errors import MemstrataError
from memstrata.service.core import Service
from memstrata.service.operations import request_error
from memstrata.service.wire import dump

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


def _connection(
    url: str | None, key: str | None, service: Service | None, timeout_s: float
) -> tuple[str | None, dict[str, Any] | None]:
    """The key to present and, for a URL, the HTTP client's options (one of the two
    targets must be given; the environment fills in what the arguments leave out)."""
    url = url or (None if service is not None else os.environ.get("MEMSTRATA_URL"))
    key = key or os.environ.get("MEMSTRATA_API_KEY")
    if (url is None) == (service is None):
        raise errors.ValidationError("url", "give a service url (or MEMSTRATA_URL) or a service")
    if url is None:
        return key, None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return key, {"base_url": url.rstrip("/"), "timeout": timeout_s, "headers": headers}


def _reply(response: type[R], status: int, body: Any) -> R:
    if status >= 400:
        raise error_from_body(status, body)
    return response.model_validate(body)


def _in_process(result: BaseModel, response: type[R]) -> R:
    # The service returns the operation's response model itself.
    return result if isinstance(result, response) else response.model_validate(result.model_dump())


class SyncTransport:
    """Sends a request model, returns the response model (or raises)."""

    def __init__(
        self,
        url: str | None = None,
        key: str | None = None,
        *,
        service: Service | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._service = service
        self._key, options = _connection(url, key, service, timeout_s)
        self._http = httpx.Client(**options) if options is not None else None

    def _call(
        self, name: str, request_model: type[BaseModel], response: type[R], /, **fields: Any
    ) -> R:
        request = request_of(request_model, fields)
        if self._service is not None:
            return _in_process(self._service.call(name, self._key, request), response)
        assert self._http is not None
        reply = self._http.post(f"/v1/{name}", json=dump(request))
        return _reply(response, reply.status_code, reply.json())

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncTransport:
    """The asynchronous twin of :class:`SyncTransport`."""

    def __init__(
        self,
        url: str | None = None,
        key: str | None = None,
        *,
        service: Service | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._service = service
        self._key, options = _connection(url, key, service, timeout_s)
        self._http = httpx.AsyncClient(**options) if options is not None else None

    async def _call(
        self, name: str, request_model: type[BaseModel], response: type[R], /, **fields: Any
    ) -> R:
        request = request_of(request_model, fields)
        if self._service is not None:
            import anyio

            result = await anyio.to_thread.run_sync(self._service.call, name, self._key, request)
            return _in_process(result, response)
        assert self._http is not None
        reply = await self._http.post(f"/v1/{name}", json=dump(request))
        return _reply(response, reply.status_code, reply.json())

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def __aenter__(self: Any) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
