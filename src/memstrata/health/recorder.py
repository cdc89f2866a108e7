"""Where health samples are kept: a bounded Valkey stream (or a deque, without one).

Each sample is one stream entry whose id is the sample's time in ms (``<ms>-*``,
the server numbers entries of the same ms), so a time window is one XRANGE. XADD
trims with ``MAXLEN ~``: the stream keeps about ``maxlen`` samples (default 14 days
at one a minute) and never grows past it by more than one stream node.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Protocol, cast

import redis
from redis.cluster import RedisCluster

from memstrata.errors import ConflictError, ValidationError
from memstrata.health.sample import HealthSample
from memstrata.working.redis_errors import redis_errors

HEALTH_STREAM = "{memstrata:health}:samples"
"""One key with the service's hash-tag convention (``{memstrata:auth}`` beside it)."""
DEFAULT_MAXLEN = 20_160
"""14 days of one sample a minute."""
PAGE = 1_000
_FIELD = "sample"


class HealthLog(Protocol):
    """The role: append samples, read them back by time."""

    def append(self, sample: HealthSample) -> None:
        """Keep ``sample``; ConflictError when it is not newer than the last one kept."""
        ...

    def window(self, start: datetime, end: datetime) -> list[HealthSample]:
        """The samples with ``start <= at <= end``, oldest first."""
        ...


def _ms(field: str, at: datetime) -> int:
    if not isinstance(at, datetime) or at.tzinfo is None:
        raise ValidationError(field, "must be a timezone-aware datetime")
    return int(at.timestamp() * 1000)


def _check_maxlen(maxlen: int) -> int:
    if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1:
        raise ValidationError("maxlen", "must be a positive integer")
    return maxlen


class HealthRecorder:
    """Health samples in a Valkey/Redis stream (a client with decoded responses)."""

    def __init__(
        self,
        client: redis.Redis | RedisCluster,
        *,
        maxlen: int = DEFAULT_MAXLEN,
        key: str = HEALTH_STREAM,
    ) -> None:
        self._redis = client
        self._maxlen = _check_maxlen(maxlen)
        self._key = key

    @property
    def key(self) -> str:
        return self._key

    @property
    def maxlen(self) -> int:
        return self._maxlen

    def append(self, sample: HealthSample) -> None:
        entry_id = f"{_ms('at', sample.at)}-*"
        try:
            with redis_errors("redis record health sample"):
                self._redis.xadd(
                    self._key,
                    {_FIELD: sample.to_json()},
                    id=entry_id,
                    maxlen=self._maxlen,
                    approximate=True,
                )
        except Exception as exc:
            cause = exc.__cause__
            if isinstance(cause, redis.ResponseError) and "equal or smaller" in str(cause):
                raise ConflictError(
                    f"health sample at {sample.at.isoformat()} is older than the last one kept"
                ) from exc
            raise

    def window(self, start: datetime, end: datetime) -> list[HealthSample]:
        return list(self._iter(_ms("start", start), _ms("end", end)))

    def _iter(self, low: int, high: int) -> Iterator[HealthSample]:
        if low > high:
            raise ValidationError("start", "must not be after end")
        cursor = str(low)
        while True:
            with redis_errors("redis read health samples"):
                rows = cast(
                    list[tuple[str, dict[str, Any]]],
                    self._redis.xrange(self._key, min=cursor, max=str(high), count=PAGE),
                )
            for _, fields in rows:
                yield HealthSample.from_json(fields[_FIELD])
            if len(rows) < PAGE:
                return
            cursor = f"({rows[-1][0]}"

    def length(self) -> int:
        """How many samples the stream holds now."""
        with redis_errors("redis count health samples"):
            return int(self._redis.xlen(self._key))


class MemoryHealthLog:
    """:class:`HealthLog` in process (an engine without a Redis client), bounded."""

    def __init__(self, *, maxlen: int = DEFAULT_MAXLEN) -> None:
        self._samples: deque[HealthSample] = deque(maxlen=_check_maxlen(maxlen))
        self._lock = threading.Lock()

    def append(self, sample: HealthSample) -> None:
        with self._lock:
            if self._samples and _ms("at", sample.at) < _ms("at", self._samples[-1].at):
                raise ConflictError(
                    f"health sample at {sample.at.isoformat()} is older than the last one kept"
                )
            self._samples.append(sample)

    def window(self, start: datetime, end: datetime) -> list[HealthSample]:
        low, high = _ms("start", start), _ms("end", end)
        if low > high:
            raise ValidationError("start", "must not be after end")
        with self._lock:
            return [s for s in self._samples if low <= _ms("at", s.at) <= high]
