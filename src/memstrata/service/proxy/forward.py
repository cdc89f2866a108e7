"""The upstream call: the request sent on, the answer's status, headers and bytes
passed back as they come (a streamed answer chunk by chunk, never buffered whole)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from memstrata.errors import UpstreamError, UpstreamTimeoutError

# Hop-by-hop headers (RFC 9110 7.6.1), and what this hop recomputes or owns: the
# memstrata key and headers stay here; the caller's Authorization goes upstream.
_NOT_FORWARDED = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
        "accept-encoding",  # httpx asks for and decodes its own; the body goes back decoded
        "x-api-key",
    }
)
_NOT_RETURNED = frozenset(
    {
        "content-length",
        "content-encoding",  # decoded by httpx
        "transfer-encoding",
        "connection",
        "keep-alive",
        "date",  # the server here sets its own
        "server",
    }
)
MEMSTRATA_HEADER_PREFIX = "x-memstrata-"


def upstream_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The caller's headers the upstream gets (``Authorization`` with the caller's own
    model key among them)."""
    out = {
        name: value
        for name, value in headers.items()
        if name.lower() not in _NOT_FORWARDED
        and not name.lower().startswith(MEMSTRATA_HEADER_PREFIX)
    }
    out["content-type"] = "application/json"
    return out


def returned_headers(headers: httpx.Headers) -> dict[str, str]:
    """The upstream answer's headers the caller gets."""
    return {name: value for name, value in headers.items() if name.lower() not in _NOT_RETURNED}


def client(connect_timeout_s: float, timeout_s: float) -> httpx.AsyncClient:
    """One pooled client per app: a connection to the upstream is reused across calls."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
        limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        follow_redirects=False,
    )


async def send(
    http: httpx.AsyncClient, url: str, body: bytes, headers: Mapping[str, str]
) -> httpx.Response:
    """The upstream's answer, its body not read yet (the caller streams or reads it).
    UpstreamError (502) when it cannot be reached, UpstreamTimeoutError (504) when it
    does not answer in time."""
    request = http.build_request("POST", url, content=body, headers=dict(headers))
    try:
        return await http.send(request, stream=True)
    except httpx.TimeoutException as exc:
        raise UpstreamTimeoutError(url, f"no answer in time ({type(exc).__name__})") from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(url, f"unreachable ({type(exc).__name__}: {exc})") from exc
