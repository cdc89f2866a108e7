"""One OpenAI-compatible ``/v1/chat/completions`` endpoint, for every model call the
engine makes (fact extraction, decision judgments, reply checks).

429, 5xx, timeouts and connection errors are retried with exponential backoff; after
the last try the caller's error class names the endpoint URL (never its key or query).
Logs carry statuses and counts only: requests and answers may hold user data.

Uses the standard library's ``urllib``: model calls add no dependency.
"""

from __future__ import annotations

import http.client
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from memstrata.errors import BackendError, ValidationError
from memstrata.validation import check_text

logger = logging.getLogger("memstrata.chat")

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""Answers longer than this are refused rather than read into memory."""

# 408 and 425 are the server asking to try again; 429 is rate limiting; 5xx is theirs.
_RETRY_STATUSES = frozenset({408, 425, 429})


class _RetryableError(Exception):
    """One failed attempt that may succeed when repeated."""

    def __init__(self, detail: str, *, unreachable: bool, retry_after_s: float | None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.unreachable = unreachable
        self.retry_after_s = retry_after_s


def endpoint_url(base_url: str) -> str:
    """The chat-completions URL for ``base_url``.

    ``https://api.openai.com/v1`` and ``http://host:8000`` both work, as does a full
    ``.../chat/completions`` URL.
    """
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if base.endswith("/v1"):
        return f"{base}/chat/completions"
    return f"{base}/v1/chat/completions"


def redacted_url(url: str) -> str:
    """``url`` without user info or query (either may carry a credential)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _retry_after(value: str | None) -> float | None:
    """Seconds from a numeric ``Retry-After`` header (HTTP dates are ignored)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


class ChatEndpoint:
    """POSTs JSON bodies to one chat-completions endpoint, with retries.

    ``what`` names the endpoint in errors and logs ("LLM extraction endpoint");
    ``error`` is raised when it keeps failing or answers unusably, ``unavailable``
    when it cannot be reached. ``max_retries`` counts repeats after the first try;
    the n-th repeat waits ``backoff_s * 2**(n-1)`` seconds, or the server's
    ``Retry-After`` when longer, capped at ``max_backoff_s``. ``sleep`` and ``opener``
    are injected so tests run against a real local server without waiting.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        what: str,
        error: type[BackendError],
        unavailable: type[BackendError],
        timeout_s: float = 10.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        opener: urllib.request.OpenerDirector | None = None,
    ) -> None:
        check_text("base_url", base_url, max_chars=2_000)
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise ValidationError("base_url", "must be an http(s) URL")
        check_text("model", model, max_chars=200)
        if api_key is not None:
            check_text("api_key", api_key, max_chars=4_000)
        if not timeout_s > 0:
            raise ValidationError("timeout_s", "must be > 0")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValidationError("max_retries", "must be an integer >= 0")
        if backoff_s < 0 or max_backoff_s < 0:
            raise ValidationError("backoff_s", "backoff_s and max_backoff_s must be >= 0")
        self._url = endpoint_url(base_url)
        self._safe_url = redacted_url(self._url)
        self._model = model
        self._api_key = api_key
        self._what = what
        self._error = error
        self._unavailable = unavailable
        self._timeout_s = float(timeout_s)
        self._max_retries = max_retries
        self._backoff_s = float(backoff_s)
        self._max_backoff_s = float(max_backoff_s)
        self._sleep = sleep
        self._opener = opener or urllib.request.build_opener()

    def __repr__(self) -> str:
        # The key is deliberately absent: reprs end up in logs and tracebacks.
        return f"ChatEndpoint(url={self._safe_url!r}, model={self._model!r})"

    @property
    def url(self) -> str:
        """The chat-completions endpoint (without user info or query)."""
        return self._safe_url

    @property
    def model(self) -> str:
        return self._model

    def failure(self, detail: str) -> BackendError:
        """The caller's error for an unusable answer, naming the endpoint."""
        return self._error(f"{self._what} {self._safe_url} {detail}")

    def post(self, body: bytes, *, ref: str = "-") -> bytes:
        """The endpoint's answer to ``body``; ``ref`` (an id, never text) labels logs."""
        attempts = self._max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._send(body)
            except _RetryableError as exc:
                failure = exc
            logger.warning(
                "%s: attempt %d/%d failed url=%s ref=%s error=%s",
                self._what,
                attempt,
                attempts,
                self._safe_url,
                ref,
                failure.detail,
            )
            if attempt < attempts:
                self._sleep(self._delay(attempt, failure.retry_after_s))
        error = self._unavailable if failure.unreachable else self._error
        what = "is unreachable" if failure.unreachable else "kept failing"
        raise error(
            f"{self._what} {self._safe_url} {what} after {attempts} attempt(s): {failure.detail}"
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _delay(self, attempt: int, retry_after_s: float | None) -> float:
        delay = self._backoff_s * 2.0 ** (attempt - 1)
        if retry_after_s is not None:
            delay = max(delay, retry_after_s)
        return min(delay, self._max_backoff_s)

    def _send(self, body: bytes) -> bytes:
        request = urllib.request.Request(
            self._url, data=body, headers=self._headers(), method="POST"
        )
        try:
            with self._opener.open(request, timeout=self._timeout_s) as response:
                payload: bytes = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            status, retry_after = exc.code, _retry_after(exc.headers.get("Retry-After"))
            exc.close()  # the error body may echo the request: never read into logs
            if status in _RETRY_STATUSES or status >= 500:
                raise _RetryableError(
                    f"HTTP {status}", unreachable=False, retry_after_s=retry_after
                ) from None
            raise self.failure(f"answered HTTP {status}") from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            # URLError wraps refused connections and connect timeouts; a bare
            # TimeoutError / ConnectionResetError comes from reading the answer.
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise _RetryableError(
                f"{type(reason).__name__}: {reason}", unreachable=True, retry_after_s=None
            ) from exc
        if len(payload) > MAX_RESPONSE_BYTES:
            raise self.failure(f"answered more than {MAX_RESPONSE_BYTES} bytes")
        return payload
