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
    except UNAVAILABLE as exc:
        raise BackendUnavailableError(f"{what}: {exc}") from exc
    except rexc.RedisClusterException as exc:
        if connecting:
            raise BackendUnavailableError(f"{what}: {exc}") from exc
        raise BackendError(f"{what}: {exc}") from exc
    except rexc.RedisError as exc:
        raise BackendError(f"{what}: {exc}") from exc
    except OSError as exc:  # socket errors raised before redis-py wraps them
        raise BackendUnavailableError(f"{what}: {exc}") from exc
