"""Deadlines and circuit breakers of the reader (memstrata.retrieval.guard).

Timing is asserted only where a bound is the point, and then generously: a call that
would take 60 s answers within the deadline plus a margin a busy machine meets. The
breaker runs on a fake monotonic clock, so cool-downs need no sleeping.
"""

from __future__ import annotations

import threading
import time

import pytest

from memstrata.config import LongTermSettings
from memstrata.errors import BackendError, BackendUnavailableError, ValidationError
from memstrata.retrieval.guard import (
    CIRCUIT_OPEN,
    EMBEDDER_CIRCUIT_OPEN,
    EMBEDDER_FAILED,
    EMBEDDER_TIMEOUT,
    L3_TIMEOUT,
    L3_UNAVAILABLE,
    CircuitBreaker,
    DeadlineRunner,
    ReadGuard,
    checkpoint,
)

HANG_S = 60.0
"""What a hung call would take: every bound below is far from it."""
MARGIN_S = 20.0
"""Deadline plus this is what a busy two-core machine is allowed."""


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_opens_after_consecutive_failures_and_probes_after_the_cooldown() -> None:
    clock = FakeMonotonic()
    breaker = CircuitBreaker("L3", failures=3, cooldown_s=30, clock=clock)
    for _ in range(2):
        assert breaker.admit()
        breaker.failed()
    assert breaker.state == "closed"
    breaker.succeeded()  # a success in between starts the count again
    for _ in range(3):
        assert breaker.admit()
        breaker.failed()
    assert breaker.state == "open" and breaker.opened == 1
    assert not breaker.admit()
    clock.now += 29.9
    assert not breaker.admit()
    clock.now += 0.2
    assert breaker.state == "half_open"
    assert breaker.admit()  # the probe
    assert not breaker.admit()  # only one at a time
    breaker.failed()  # the probe failed: open again for a whole cooldown
    assert breaker.state == "open" and breaker.opened == 2
    clock.now += 30.0
    assert breaker.admit()
    breaker.succeeded()
    assert breaker.state == "closed" and breaker.admit()


def test_a_probe_that_says_nothing_of_the_backend_hands_its_turn_on() -> None:
    clock = FakeMonotonic()
    breaker = CircuitBreaker("L3", failures=1, cooldown_s=1, clock=clock)
    breaker.admit()
    breaker.failed()
    clock.now += 2
    assert breaker.admit()
    breaker.released()
    assert breaker.state == "half_open" and breaker.admit()


@pytest.mark.parametrize(("name", "value"), [("failures", 0), ("cooldown_s", 0)])
def test_breaker_parameters_are_checked(name: str, value: float) -> None:
    args = {"failures": 3, "cooldown_s": 1.0, name: value}
    with pytest.raises(ValidationError) as raised:
        CircuitBreaker("L3", failures=int(args["failures"]), cooldown_s=args["cooldown_s"])
    assert raised.value.field == name


def test_a_call_past_its_deadline_is_abandoned_and_stops_at_its_next_checkpoint() -> None:
    runner = DeadlineRunner(name="test-runner")
    release = threading.Event()
    after: list[str] = []

    def slow() -> str:
        release.wait(HANG_S)
        checkpoint()  # the caller has moved on: nothing after this runs
        after.append("ran on")
        return "late"

    started = time.monotonic()
    outcome = runner.run(slow, 0.2)
    assert outcome.failure == "timeout" and outcome.value is None
    assert time.monotonic() - started < 0.2 + MARGIN_S
    release.set()
    for _ in range(200):
        if runner.running == 0:
            break
        time.sleep(0.05)
    assert runner.running == 0 and after == []


def test_values_and_errors_come_back_to_the_caller() -> None:
    runner = DeadlineRunner(name="test-runner")
    assert runner.run(lambda: 42, 5.0).value == 42
    failure = runner.run(lambda: 1 / 0, 5.0)
    assert failure.failure == "error" and isinstance(failure.error, ZeroDivisionError)
    assert runner.run(lambda: "inline", 0).value == "inline"  # 0: no deadline


def test_calls_beyond_the_limit_are_refused_not_queued_behind_a_hung_backend() -> None:
    runner = DeadlineRunner(name="test-runner", max_running=2)
    release = threading.Event()
    try:
        for _ in range(2):
            assert runner.run(lambda: release.wait(HANG_S), 0.05).failure == "timeout"
        assert runner.run(lambda: 1, 5.0).failure == "busy"
    finally:
        release.set()


def test_a_guarded_call_inside_a_guarded_call_runs_under_the_outer_deadline() -> None:
    runner = DeadlineRunner(name="test-runner")
    names: list[str] = []

    def inner() -> str:
        names.append(threading.current_thread().name)
        return "inner"

    def outer() -> str | None:
        names.append(threading.current_thread().name)
        return runner.run(inner, 5.0).value

    assert runner.run(outer, 5.0).value == "inner"
    assert names[0] == names[1]  # no second thread hop


def _guard(**settings: float) -> tuple[ReadGuard, FakeMonotonic]:
    clock = FakeMonotonic()
    config = LongTermSettings(breaker_failures=2, breaker_cooldown_s=30, **settings)  # type: ignore[arg-type]
    return ReadGuard(config, clock=clock), clock


def test_the_guard_names_why_l3_was_skipped_and_stops_calling_it_once_open() -> None:
    guard, clock = _guard()
    calls = 0
    release = threading.Event()

    def hung() -> None:
        nonlocal calls
        calls += 1
        release.wait(HANG_S)

    def unreachable() -> None:
        nonlocal calls
        calls += 1
        raise BackendUnavailableError("connection refused")

    try:
        assert guard.l3(hung, 0.1).skip == L3_TIMEOUT
        assert guard.l3(unreachable, 5.0).skip == L3_UNAVAILABLE
        assert guard.states()["l3"] == "open"
        assert guard.l3(unreachable, 5.0).skip == CIRCUIT_OPEN
        assert calls == 2
        clock.now += 31
        assert guard.l3(lambda: "back", 5.0).value == "back"  # the probe closes it
        assert guard.states()["l3"] == "closed"
    finally:
        release.set()


def test_bad_input_reaches_the_caller_and_says_nothing_of_l3() -> None:
    guard, _ = _guard()

    def refused() -> None:
        raise ValidationError("query", "must not be empty")

    for _ in range(3):
        with pytest.raises(ValidationError):
            guard.l3(refused, 5.0)
    assert guard.states()["l3"] == "closed"


def test_the_embedder_fails_raising_or_hanging_and_has_its_own_breaker() -> None:
    guard, _ = _guard(embed_deadline_s=2.0)
    release = threading.Event()

    def broken() -> None:
        raise BackendError("model endpoint: 500")

    try:
        assert guard.embed(broken).skip == EMBEDDER_FAILED
        assert guard.embed(lambda: release.wait(HANG_S)).skip == EMBEDDER_TIMEOUT
        assert guard.embed(lambda: 1).skip == EMBEDDER_CIRCUIT_OPEN
        assert guard.states() == {"l3": "closed", "embedder": "open"}
    finally:
        release.set()


def test_a_closed_runner_lets_its_threads_go_and_runs_what_comes_inline() -> None:
    runner = DeadlineRunner(name="closing-runner")
    assert runner.run(threading.current_thread, 5.0).value is not threading.current_thread()

    def workers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("closing-runner")]

    assert workers()
    runner.close()
    for _ in range(200):
        if not workers():
            break
        time.sleep(0.05)
    assert workers() == []
    assert runner.run(threading.current_thread, 5.0).value is threading.current_thread()
