"""Time as an injected dependency, so TTLs, decay and freshness are testable."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Source of the current time."""

    def now(self) -> datetime:
        """Current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, never going backwards."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._now = start or datetime(2025, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("start: must be timezone-aware")
        self._mono = 0.0

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def set(self, at: datetime) -> None:
        """Jump to ``at``, forward or back (a replay of recorded data sets each
        record's own time); the monotonic clock does not move."""
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise ValueError("at: must be a timezone-aware datetime")
        with self._lock:
            self._now = at

    def advance(self, delta: timedelta | float) -> None:
        """Move time forward by a timedelta or a number of seconds."""
        seconds = delta.total_seconds() if isinstance(delta, timedelta) else float(delta)
        if seconds < 0:
            raise ValueError("delta: must not be negative")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._mono += seconds
