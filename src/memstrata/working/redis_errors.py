"""The one translation of redis-py failures into memstrata's exception tree."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import redis.exceptions as rexc

from memstrata.errors import BackendError, BackendUnavailableError, MemstrataError

UNAVAILABLE: tuple[type[Exception], ...] = (
    rexc.ConnectionError,
    rexc.TimeoutError,
    rexc.ClusterDownError,
    rexc.SlotNotCoveredError,
)


# Everything redis-py (standalone or cluster) raises for a failed call; note that
# RedisClusterException is not a RedisError.
REDIS_FAILURES: tuple[type[Exception], ...] = (
    rexc.RedisError,
    rexc.RedisClusterException,
    OSError,
)


# redis-py echoes a failed pipeline command with its arguments, values included:
# "Command # 1 (SET key <value> PX 0) of pipeline caused error: ...". Stored content
# must never reach an error message or a log, so the echo is cut.
_PIPELINE_ECHO = re.compile(r"Command # (\d+) \(.*\) of pipeline caused error: ", re.DOTALL)


def describe(exc: Exception) -> str:
    """A redis-py failure's text without the command arguments it may quote."""
    return _PIPELINE_ECHO.sub(r"pipeline command \1 failed: ", str(exc))


@contextmanager
def redis_errors(what: str, *, connecting: bool = False) -> Iterator[None]:
    """Map redis-py failures to BackendUnavailableError / BackendError, naming ``what``.

    ``connecting``: RedisCluster's constructor reports "no reachable node" as a plain
    RedisClusterException, which then means unavailable rather than a fault.
    """
    try:
        yield
    except MemstrataError:
        raise
    except REDIS_FAILURES as exc:
        raise translated(what, exc, connecting=connecting) from exc


def translated(what: str, exc: Exception, *, connecting: bool = False) -> Exception:
    """The memstrata error for a redis-py (or socket) failure; other errors unchanged.

    For hot paths that catch exceptions themselves instead of entering
    :func:`redis_errors` (two generator context managers cost ~8 us per call).
    """
    if isinstance(exc, MemstrataError):
        return exc
    if isinstance(exc, UNAVAILABLE):
        return BackendUnavailableError(f"{what}: {describe(exc)}")
    if isinstance(exc, rexc.RedisClusterException):
        if connecting:
            return BackendUnavailableError(f"{what}: {describe(exc)}")
        return BackendError(f"{what}: {describe(exc)}")
    if isinstance(exc, rexc.RedisError):
        return BackendError(f"{what}: {describe(exc)}")
    if isinstance(exc, OSError):  # socket errors raised before redis-py wraps them
        return BackendUnavailableError(f"{what}: {describe(exc)}")
    return exc
