"""Deadlines and circuit breakers of the reader's L3 and embedder calls
(docs/service.md, "When L3 is slow or down").

A deadline protects a reader from a slow backend, and counts only that
(docs/architecture.md, "Deadlines"): L3's apply to a remote index (a Qdrant server),
not to the embedded qdrant-edge, whose reads wait only on this process's CPU; and no
deadline counts the seconds a model of this process was loading
(:mod:`memstrata.loading`). A call into a backend cannot be interrupted, only
abandoned (a Qdrant server's call can wait on its socket up to the client's timeout).
So a guarded call runs on a worker thread (:class:`DeadlineRunner`) and its caller
waits at most the deadline. An abandoned call goes on until its current engine call
returns, then stops at the next :func:`checkpoint` (the reader checks between engine
calls) instead of making the calls after it: it never hangs the caller, and it does
not keep loading a backend that is already too slow.

Each backend has a :class:`CircuitBreaker`: after ``breaker_failures`` consecutive
failures or timeouts it opens, and reads skip the backend at once for
``breaker_cooldown_s``; then one read probes it (half-open), and the probe's success
closes the breaker, its failure opens it again. :class:`ReadGuard` holds both for
one engine: the L3 index's and the query embedder's.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from memstrata.config import LongTermSettings
from memstrata.errors import BackendError, BackendUnavailableError, ValidationError
from memstrata.loading import loading_now, loading_seconds

# The skip reasons live apart so the CLI says them without importing this package.
from memstrata.skipreasons import BELOW_THRESHOLD as BELOW_THRESHOLD
from memstrata.skipreasons import (
    CIRCUIT_OPEN,
    EMBEDDER_CIRCUIT_OPEN,
    EMBEDDER_FAILED,
    EMBEDDER_TIMEOUT,
    L3_TIMEOUT,
    L3_UNAVAILABLE,
)
from memstrata.skipreasons import OUTAGE_REASONS as OUTAGE_REASONS
from memstrata.skipreasons import SKIP_REASONS as SKIP_REASONS
from memstrata.skipreasons import skip_note as skip_note

log = logging.getLogger("memstrata.retrieval")

T = TypeVar("T")

BreakerState = Literal["closed", "open", "half_open"]
BREAKER_STATES: tuple[BreakerState, ...] = ("closed", "half_open", "open")
"""In the order of the metric's value (0, 1, 2)."""

MAX_RUNNING = 64
"""Guarded calls running at once (abandoned ones included); more are refused."""
IDLE_WORKERS = 8
"""Worker threads kept waiting for the next call."""


class CircuitBreaker:
    """Closed -> open after ``failures`` consecutive failures; open -> half-open after
    ``cooldown_s``, when one call is let through as a probe; the probe's success
    closes it, its failure opens it again. Thread-safe; ``clock`` is monotonic
    seconds (a test's fake)."""

    def __init__(
        self,
        name: str,
        *,
        failures: int,
        cooldown_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise ValidationError("failures", "must be an int >= 1")
        if isinstance(cooldown_s, bool) or not isinstance(cooldown_s, int | float):
            raise ValidationError("cooldown_s", "must be a number of seconds")
        if not cooldown_s > 0:
            raise ValidationError("cooldown_s", "must be > 0")
        self.name = name
        self._threshold = failures
        self._cooldown_s = float(cooldown_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False
        self.opened = 0
        """How many times it opened."""

    @property
    def state(self) -> BreakerState:
        """Closed, open, or half-open (cooled down, or its probe under way)."""
        with self._lock:
            if self._opened_at is None:
                return "closed"
            if self._probing or self._clock() - self._opened_at >= self._cooldown_s:
                return "half_open"
            return "open"

    def admit(self) -> bool:
        """Whether a call may go to the backend now (when half-open, only the probe)."""
        with self._lock:
            if self._opened_at is None:
                return True
            if self._probing or self._clock() - self._opened_at < self._cooldown_s:
                return False
            self._probing = True
            return True

    def released(self) -> None:
        """An admitted call ended without saying anything of the backend's health
        (bad input, a bug): a probe's turn goes to the next call."""
        with self._lock:
            self._probing = False

    def succeeded(self) -> None:
        """The backend answered: the breaker closes."""
        with self._lock:
            was_open = self._opened_at is not None
            self._failures = 0
            self._opened_at = None
            self._probing = False
        if was_open:
            log.warning("%s answers again: its circuit breaker closed", self.name)

    def failed(self) -> None:
        """The backend failed or timed out: the breaker opens at the threshold, or
        again when the probe failed."""
        with self._lock:
            self._failures += 1
            reopen = self._probing
            self._probing = False
            if not reopen and (self._opened_at is not None or self._failures < self._threshold):
                return
            self._opened_at = self._clock()
            self.opened += 1
            failures = self._failures
        log.warning(
            "%s failed %d times in a row: its circuit breaker is open for %.1f s",
            self.name,
            failures,
            self._cooldown_s,
        )


# -- running a call under a deadline ---------------------------------------------------


class _Task:
    """One guarded call: run on a worker, waited for, perhaps abandoned."""

    __slots__ = ("abandoned", "context", "done", "error", "fn", "value")

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn
        # Spans and other context variables of the caller follow the call.
        self.context = contextvars.copy_context()
        self.done = threading.Event()
        self.abandoned = False
        self.value: object = None
        self.error: BaseException | None = None

    def execute(self) -> None:
        """Run the call; the caller learns of it from ``done``, set by the worker."""
        try:
            self.value = self.context.run(self._call)
        except BaseException as exc:  # handed to the waiting caller, never lost
            self.error = exc

    def _call(self) -> object:
        token = _CURRENT.set(self)
        try:
            return self.fn()
        finally:
            _CURRENT.reset(token)


_CURRENT: contextvars.ContextVar[_Task | None] = contextvars.ContextVar(
    "memstrata_guarded_call", default=None
)


def checkpoint() -> None:
    """Between two engine calls of a guarded read: stop here when its caller stopped
    waiting (``BackendUnavailableError``, which nobody sees: the caller has moved on).
    Nothing outside a guarded call."""
    task = _CURRENT.get()
    if task is not None and task.abandoned:
        raise BackendUnavailableError("L3 read abandoned: past its deadline")


class _Worker(threading.Thread):
    def __init__(self, runner: DeadlineRunner, number: int) -> None:
        super().__init__(name=f"{runner.name}-{number}", daemon=True)
        self.inbox: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._runner = runner

    def run(self) -> None:
        while True:
            task = self.inbox.get()
            if task is None:  # the runner closed
                return
            task.execute()
            # Back among the idle workers before the caller wakes: its next call finds
            # this thread waiting instead of starting another.
            keep = self._runner.finished(self)
            task.done.set()
            if not keep:
                return


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What a guarded call gave: its value, or why there is none (``failure``:
    ``timeout``, ``busy`` or ``error`` with the exception)."""

    value: T | None = None
    failure: Literal["timeout", "busy", "error"] | None = None
    error: BaseException | None = None


LOAD_POLL_S = 0.05
"""How often a deadline looks again while a model load is under way."""


def _waited(task: _Task, timeout_s: float) -> bool:
    """Whether ``task`` ended within ``timeout_s``, not counting the seconds the
    process spent loading its own models meanwhile (:mod:`memstrata.loading`): a
    deadline protects the caller from a slow backend, not from this process's
    start-up."""
    started, loaded = time.monotonic(), loading_seconds()
    remaining = timeout_s
    while not task.done.wait(remaining):
        spent = time.monotonic() - started - (loading_seconds() - loaded)
        remaining = timeout_s - spent
        if remaining <= 0:
            if not loading_now():
                return False
            remaining = LOAD_POLL_S
    return True


class DeadlineRunner:
    """Runs calls on daemon worker threads and waits for each at most its deadline.

    Daemon threads, not a ``ThreadPoolExecutor``: the interpreter joins an executor's
    threads at exit, and an abandoned call on a hung backend would hold the process
    open. At most ``max_running`` calls run at once (abandoned ones included); the
    next is refused (``busy``) rather than queued behind a hung backend.
    """

    def __init__(self, *, name: str = "memstrata-l3", max_running: int = MAX_RUNNING) -> None:
        self.name = name
        self._max = max_running
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._running = 0
        self._started = 0
        self._closed = False

    @property
    def running(self) -> int:
        """Calls running now (waited for or abandoned)."""
        with self._lock:
            return self._running

    def run(self, fn: Callable[[], T], timeout_s: float | None) -> Outcome[T]:
        """``fn()`` within ``timeout_s`` (None or 0: inline, no deadline). A call made
        from inside a guarded call runs inline under the outer deadline."""
        if not timeout_s or _CURRENT.get() is not None or self._closed:
            try:
                return Outcome(fn())
            except Exception as exc:
                return Outcome(failure="error", error=exc)
        task = _Task(fn)
        worker = self._take()
        if worker is None:
            return Outcome(failure="busy")
        worker.inbox.put(task)
        if not _waited(task, timeout_s):
            task.abandoned = True
            return Outcome(failure="timeout")
        if task.error is not None:
            if not isinstance(task.error, Exception):
                raise task.error
            return Outcome(failure="error", error=task.error)
        value: T = task.value  # type: ignore[assignment]  # fn's own result
        return Outcome(value)

    def _take(self) -> _Worker | None:
        with self._lock:
            if self._running >= self._max:
                return None
            self._running += 1
            if self._idle:
                return self._idle.pop()
            self._started += 1
            number = self._started
        worker = _Worker(self, number)
        worker.start()
        return worker

    def finished(self, worker: _Worker) -> bool:
        """A worker's call ended; whether it waits for another (else it exits)."""
        with self._lock:
            self._running -= 1
            if self._closed or len(self._idle) >= IDLE_WORKERS:
                return False
            self._idle.append(worker)
            return True

    def close(self) -> None:
        """Let the idle workers exit (calls still running end on their own); later
        calls run inline."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.inbox.put(None)


# -- the reader's guard ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Guarded(Generic[T]):
    """A guarded read's value, or the reason it was skipped (``skip``)."""

    value: T | None = None
    skip: str | None = None


class ReadGuard:
    """The deadlines and breakers of one engine's reads: L3's and the embedder's.

    Only failures of the backend count: a ``BackendError`` (an unreachable server,
    an engine error) or a timeout. Anything else (bad input, a bug) is raised to the
    caller as it was, and says nothing about the backend's health.
    """

    def __init__(
        self,
        settings: LongTermSettings,
        *,
        runner: DeadlineRunner | None = None,
        clock: Callable[[], float] = time.monotonic,
        l3_remote: bool = True,
    ) -> None:
        self._settings = settings
        self._runner = runner or DeadlineRunner()
        # The deadline protects a reader from a slow remote backend. An index in this
        # process (l3_remote False: qdrant-edge) waits only on our own CPU: abandoning
        # its read frees no CPU (the call runs on to its next checkpoint) and answers
        # worse (L2's cached reads, or nothing), so it is read inline, without one;
        # its errors still count on the breaker (docs/architecture.md, "Deadlines").
        self.l3_remote = l3_remote
        self.l3_breaker = CircuitBreaker(
            "L3",
            failures=settings.breaker_failures,
            cooldown_s=settings.breaker_cooldown_s,
            clock=clock,
        )
        self.embedder_breaker = CircuitBreaker(
            "the embedder",
            failures=settings.breaker_failures,
            cooldown_s=settings.breaker_cooldown_s,
            clock=clock,
        )

    @property
    def settings(self) -> LongTermSettings:
        """The deadlines and breaker parameters in use."""
        return self._settings

    def close(self) -> None:
        """Stop the worker threads waiting for calls (the engine closes)."""
        self._runner.close()

    def states(self) -> Mapping[str, BreakerState]:
        """Each breaker's state, by backend (``l3``, ``embedder``)."""
        return {"l3": self.l3_breaker.state, "embedder": self.embedder_breaker.state}

    def l3(self, fn: Callable[[], T], deadline_s: float) -> Guarded[T]:
        """``fn()`` (L3 calls) within ``deadline_s`` when L3 is remote (else without a
        deadline), unless L3's breaker is open."""
        breaker = self.l3_breaker
        if not breaker.admit():
            return Guarded(skip=CIRCUIT_OPEN)
        outcome = self._runner.run(fn, deadline_s if self.l3_remote else None)
        if outcome.failure is None:
            breaker.succeeded()
            return Guarded(outcome.value)
        if outcome.failure == "timeout":
            breaker.failed()
            return Guarded(skip=L3_TIMEOUT)
        if outcome.failure == "busy":
            breaker.failed()
            return Guarded(skip=L3_UNAVAILABLE)
        error = outcome.error
        if isinstance(error, BackendError):
            breaker.failed()
            log.debug("L3 read failed", exc_info=error)
            return Guarded(skip=L3_UNAVAILABLE)
        breaker.released()  # the caller's input or code failed, not the backend
        assert error is not None
        raise error

    def embed(self, fn: Callable[[], T]) -> Guarded[T]:
        """``fn()`` (a query embedding) within ``embed_deadline_s``, unless the
        embedder's breaker is open. Any exception counts as the embedder's failure:
        its input was checked before it was called."""
        breaker = self.embedder_breaker
        if not breaker.admit():
            return Guarded(skip=EMBEDDER_CIRCUIT_OPEN)
        outcome = self._runner.run(fn, self._settings.embed_deadline_s)
        if outcome.failure is None:
            breaker.succeeded()
            return Guarded(outcome.value)
        breaker.failed()
        if outcome.failure == "timeout":
            return Guarded(skip=EMBEDDER_TIMEOUT)
        log.debug("query embedding failed", exc_info=outcome.error)
        return Guarded(skip=EMBEDDER_FAILED)


class GuardedCalls:
    """A reader's calls under its :class:`ReadGuard`, or inline without one (a reader
    built by hand: every error reaches its caller, as before guards existed)."""

    def __init__(self, guard: ReadGuard | None) -> None:
        self.guard = guard

    def l3(self, fn: Callable[[], T], deadline_s: float) -> Guarded[T]:
        """``fn()`` (L3 calls) within ``deadline_s``: see :meth:`ReadGuard.l3`."""
        if self.guard is None:
            return Guarded(fn())
        return self.guard.l3(fn, deadline_s)

    def embed(self, fn: Callable[[], T]) -> Guarded[T]:
        """``fn()`` (a query embedding): see :meth:`ReadGuard.embed`."""
        if self.guard is None:
            return Guarded(fn())
        return self.guard.embed(fn)


def required(got: Guarded[T], what: str) -> T:
    """The value of a guarded call whose caller has no fallback: else
    ``BackendUnavailableError`` naming ``what`` and the reason."""
    if got.skip is not None:
        raise BackendUnavailableError(f"{what}: {got.skip}")
    value: T = got.value  # type: ignore[assignment]  # set whenever skip is not
    return value
