"""Audit trail of what the gateway redacted: where and what kind, never the value.

An event deliberately has no field that could carry the secret: no excerpt, no
hash, no prefix. A hash of a short password or a card number is reversible by
brute force, so even that would be a leak.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memstrata.errors import ConfigError
from memstrata.filemodes import open_private, private_file
from memstrata.gateway.kinds import Kind
from memstrata.gateway.policy import Action


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One redaction or masking.

    ``location`` names the destination (``l2:wm:{s1}:api:…``, ``l3:memories``,
    ``log``); ``field_path`` the place inside a value (``$.user.email``, ``$`` for
    plain text); ``offset``/``length`` the span inside that string before replacement.
    """

    kind: Kind
    action: Action
    location: str
    field_path: str
    offset: int
    length: int
    timestamp: datetime

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (timestamp as ISO 8601)."""
        return {
            "kind": self.kind.value,
            "action": self.action.value,
            "location": self.location,
            "field_path": self.field_path,
            "offset": self.offset,
            "length": self.length,
            "timestamp": self.timestamp.isoformat(),
        }


class AuditSink(Protocol):
    """Where audit events go. Implementations must be safe to call from many threads."""

    def record(self, event: AuditEvent) -> None:
        """Store one event."""
        ...


class InMemoryAuditLog:
    """A bounded, thread-safe in-memory log; the oldest events are dropped first.

    The bound keeps a long-running process from growing without limit;
    ``dropped`` says how many events fell off the front.
    """

    def __init__(self, max_events: int = 10_000) -> None:
        if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events <= 0:
            raise ConfigError(f"max_events: must be a positive integer, got {max_events!r}")
        self._lock = threading.Lock()
        self._events: deque[AuditEvent] = deque(maxlen=max_events)
        self._dropped = 0

    def record(self, event: AuditEvent) -> None:
        """Append ``event``, dropping the oldest one when full."""
        with self._lock:
            if len(self._events) == self._events.maxlen:
                self._dropped += 1
            self._events.append(event)

    def events(self) -> tuple[AuditEvent, ...]:
        """A snapshot of the stored events, oldest first."""
        with self._lock:
            return tuple(self._events)

    @property
    def dropped(self) -> int:
        """How many events were discarded because the log was full."""
        with self._lock:
            return self._dropped

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


class JsonlAuditLog:
    """Append-only JSON Lines file, one event per line, readable by its owner only.

    The file is opened in append mode for each event, so rotation by an external
    tool is harmless and nothing is ever rewritten; a lock keeps lines whole when
    several threads record at once. It is created 0600 (in an existing directory,
    at construction, so other writers of the same log append to a private file) and
    an existing one is made 0600.
    """

    def __init__(self, path: str | Path) -> None:
        if not isinstance(path, str | Path) or not str(path):
            raise ConfigError(f"path: must be a non-empty path, got {path!r}")
        self._path = Path(path)
        if self._path.is_dir():
            raise ConfigError(f"path: {self._path} is a directory")
        if self._path.parent.is_dir():
            private_file(self._path)
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The file written to."""
        return self._path

    def record(self, event: AuditEvent) -> None:
        """Append ``event`` as one JSON line."""
        line = json.dumps(event.to_dict(), ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock, open_private(self._path, "a", encoding="utf-8") as handle:
            handle.write(line)


class TeeAuditLog:
    """Fans each event out to several sinks (e.g. in memory for the UI, a file for keeps).

    Every sink is called even if an earlier one fails; the first failure is then
    re-raised, so a broken file never silently stops the in-memory record.
    """

    def __init__(self, sinks: tuple[AuditSink, ...]) -> None:
        if not isinstance(sinks, tuple) or not sinks:
            raise ConfigError("sinks: must be a non-empty tuple of audit sinks")
        self._sinks = sinks

    @property
    def sinks(self) -> tuple[AuditSink, ...]:
        """The sinks written to, in order."""
        return self._sinks

    def record(self, event: AuditEvent) -> None:
        """Give ``event`` to every sink."""
        first_error: Exception | None = None
        for sink in self._sinks:
            try:
                sink.record(event)
            except Exception as exc:  # keep going: the other sinks still get the event
                if first_error is None:
                    first_error = exc
        if first_error is not None:
            raise first_error
