"""The one translation of redis-py failures into memstrata's exception tree."""

from __future__ import annotations

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
        return BackendUnavailableError(f"{what}: {exc}")
    if isinstance(exc, rexc.RedisClusterException):
        if connecting:
            return BackendUnavailableError(f"{what}: {exc}")
        return BackendError(f"{what}: {exc}")
    if isinstance(exc, rexc.RedisError):
        return BackendError(f"{what}: {exc}")
    if isinstance(exc, OSError):  # socket errors raised before redis-py wraps them
        return BackendUnavailableError(f"{what}: {exc}")
    return exc
