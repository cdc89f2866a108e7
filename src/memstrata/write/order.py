"""One user's entries in order, whatever the number of worker threads.

The write queue is one stream read by a consumer group: worker threads each take a
batch, and without more, two threads may hold the same user's entries at once (the
turn stating "peanuts and shellfish" in one batch, "not peanuts" in the next) and
write them in either order. :class:`UserOrder` partitions the work by (tenant, user):

* reading is serialized and each batch gets a ticket in reading order, registered
  under every (tenant, user) it holds before the next read (so tickets follow the
  stream's order for new entries);
* a thread handles a user's entries only once every earlier ticket holding that user
  has settled them (written and acknowledged, dead-lettered, or left for a retry), so
  two threads never handle one user's entries concurrently or out of order; different
  users' entries still run in parallel.

Waits only ever go to earlier tickets, so they cannot deadlock. The order holds among
the threads sharing one :class:`UserOrder` (an engine's workers); worker processes
(``python -m memstrata.worker``) run one thread each and should be one per queue where
corrections matter (docs/architecture.md, "The writer").
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memstrata.write.entries import entry_owner

UserKey = tuple[str, str]
T = TypeVar("T")


def user_key(fields: Mapping[str, str]) -> UserKey | None:
    """(tenant, user) of a raw stream entry; None when its payload names neither
    (a malformed entry: it is dead-lettered without being ordered)."""
    return entry_owner(fields)


@dataclass(frozen=True, slots=True)
class Ticket:
    """One batch's place in the reading order, and the users it holds."""

    number: int
    users: frozenset[UserKey]


class UserOrder:
    """Tickets in reading order; a user's tickets settled one after the other."""

    def __init__(self) -> None:
        self._read_lock = threading.Lock()
        self._cond = threading.Condition()
        self._next = 0
        self._holders: dict[UserKey, deque[int]] = {}

    def admit(
        self, read: Callable[[], Sequence[T]], key: Callable[[T], UserKey | None]
    ) -> tuple[list[T], Ticket]:
        """``read()`` under the read lock, its rows registered under a new ticket."""
        with self._read_lock:
            rows = list(read())
            users = frozenset(k for k in map(key, rows) if k is not None)
            with self._cond:
                number = self._next
                self._next += 1
                for user in users:
                    self._holders.setdefault(user, deque()).append(number)
        return rows, Ticket(number, users)

    def free(self, ticket: Ticket, users: Iterable[UserKey]) -> frozenset[UserKey]:
        """The users among ``users`` whose earlier tickets have all settled (no wait)."""
        wanted = frozenset(users) & ticket.users
        with self._cond:
            return frozenset(u for u in wanted if self._holders[u][0] == ticket.number)

    def wait_turn(
        self, ticket: Ticket, users: Iterable[UserKey], stop: threading.Event
    ) -> frozenset[UserKey]:
        """The users among ``users`` whose earlier tickets have all settled, once there
        is at least one (empty when ``stop`` is set first, or ``users`` is empty)."""
        wanted = frozenset(users) & ticket.users
        if not wanted:
            return frozenset()
        with self._cond:
            while True:
                free = frozenset(u for u in wanted if self._holders[u][0] == ticket.number)
                if free or stop.is_set():
                    return free
                # A timeout, so a stop is noticed without a notify.
                self._cond.wait(0.2)

    def release(self, ticket: Ticket, users: Iterable[UserKey]) -> None:
        """``ticket`` is done with ``users``: the next ticket of each may go."""
        with self._cond:
            for user in frozenset(users) & ticket.users:
                held = self._holders.get(user)
                if held is None or ticket.number not in held:
                    continue
                held.remove(ticket.number)
                if not held:
                    del self._holders[user]
            self._cond.notify_all()

    def held(self) -> int:
        """Users with a batch in hand or waiting (for tests and metrics)."""
        with self._cond:
            return len(self._holders)
