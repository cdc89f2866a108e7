"""The health report as an operator reads it (issue 25): immutable violations are only
the writes that were refused, every day of the CER chart has its bar, the L3 legend
names every collection, and each seed bound the report can check is flagged."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.session.state import SessionState


def test_update_retries_are_not_immutable_violations(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    """A compare-and-swap retry inside ``update_session`` loses no update: the report
    counts no violation for it; a direct stale write that is refused does count."""
    clock = FakeClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    engine = engine_opener(clock=clock)
    sid = engine.start_session("u1", "check the pumps").session_id
    engine.record_health_sample()  # the baseline: counters count from here
    clock.advance(61)
    nested: list[SessionState] = []

    def step(s: SessionState) -> SessionState:
        if not nested:  # another writer gets in between this read and its swap
            nested.append(
                engine.update_session(sid, lambda t: dataclasses.replace(t, current_step=5))
            )
        return dataclasses.replace(s, current_step=s.current_step + 1)

    engine.update_session(sid, step)
    assert engine.session(sid).current_step == 6  # the retry applied to the newer state
    engine.record_health_sample()
    report = engine.health_report(since=timedelta(hours=1))
    assert report.l1.stale_writes == 0

    # A stale write that is refused (its update is not applied) is a violation.
    stale = engine.session(sid)
    engine.update_session(sid, lambda s: dataclasses.replace(s, current_step=7))
    assert not engine.parts.sessions.compare_and_set(
        stale, dataclasses.replace(stale, current_step=9)
    )
    clock.advance(61)
    engine.record_health_sample()
    assert engine.health_report(since=timedelta(hours=1)).l1.stale_writes == 1
