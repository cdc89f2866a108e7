"""A scripted 14-day series of health samples, one a minute, with a known answer.

Each minute ``i`` has fixed deltas (steps, decisions, tool calls...); the samples
carry their cumulative sums, per process. The process restarts on day 10 (``proc-b``
takes its baseline sample with zero counters, as an engine does on its first call),
and the test oracle sums the deltas directly.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memstrata.clock import FakeClock
from memstrata.health import HealthSample

MINUTES = 14 * 24 * 60
WEEK_MINUTES = 7 * 24 * 60
RESTART = 10 * 24 * 60
QUERIES = {  # query -> every how many minutes it comes back low-confidence
    "where is the boiler manual": 60,
    "vibration limit for pump P-7": 90,
    "who approved the [REDACTED:email] change": 120,
    "reset token [REDACTED:api_key] rotation": 180,
    "calibration interval": 240,
    "ISO 26262 clause for sensors": 360,
}


def deltas(i: int) -> dict[str, float]:
    """What happened in minute ``i`` (between the samples ``i - 1`` and ``i``)."""
    effective = (i % 5 != 0) if i <= WEEK_MINUTES else (i % 10 != 0)
    return {
        "cer.effective": 1.0 if effective else 0.0,
        "cer.ineffective": 0.0 if effective else 1.0,
        "decisions.answer": 1.0,
        "decisions.tool": 1.0 if i % 2 == 0 else 0.0,
        "decisions.ask": 1.0 if i % 7 == 0 else 0.0,
        "tool_calls.done": 1.0 if i % 2 == 0 and i % 6 != 0 else 0.0,
        "tool_calls.cannot_complete": 1.0 if i % 6 == 0 else 0.0,
        "tool_calls.rejected": 1.0 if i % 19 == 0 else 0.0,
        "tool_calls.pending_confirmation": 1.0 if i % 11 == 0 else 0.0,
        "feedback.corrected": 1.0 if i % 13 == 0 else 0.0,
        "feedback.confirmed": 1.0 if i % 3 == 0 else 0.0,
        "fallbacks": 1.0 if i % 17 == 0 else 0.0,
        "l1.stale_writes": 1.0 if i in (12_000, 15_000) else 0.0,
    }


def gauges(i: int) -> dict[str, float]:
    sessions = 5 + i % 3
    return {
        "l1.sessions": sessions,
        "l1.bytes": sessions * 1_000,
        "l2.keys": 300,
        "l2.expired_keys": 3 * i,  # the server's counter: 3 keys expire a minute
        "l3.points.memories": 1_000 + i // 60,
        "l3.points.knowledge": 500,
    }


def hot_keys(i: int) -> dict[str, int]:
    return {f"wm:*:result:step{k}": k + 1 for k in range(12)}


def queries(i: int) -> dict[str, int]:
    return {q: 1 for q, every in QUERIES.items() if i % every == 0}


@dataclass(frozen=True)
class Script:
    start: datetime
    now: datetime
    samples: tuple[HealthSample, ...]

    def at(self, minute: int) -> datetime:
        return self.start + timedelta(minutes=minute)

    def total(self, name: str, first_minute: int, last_minute: int) -> float:
        """The oracle: the deltas of minutes ``first..last`` summed."""
        return sum(deltas(i)[name] for i in range(first_minute, last_minute + 1))


def build_script() -> Script:
    clock = FakeClock(datetime(2025, 3, 3, tzinfo=UTC))
    start = clock.now()
    sums: dict[str, float] = defaultdict(float)
    samples = []
    source = "proc-a"
    for i in range(MINUTES + 1):
        if i == RESTART + 1:  # proc-b starts: its baseline, then it counts from 0
            sums.clear()
            source = "proc-b"
            clock.advance(30)
            samples.append(
                HealthSample(
                    clock.now(), {**dict.fromkeys(deltas(0), 0.0), **gauges(i)}, source=source
                )
            )
            clock.advance(30)
        elif i > 0:
            clock.advance(60)
        if i > 0:
            for name, value in deltas(i).items():
                sums[name] += value
        samples.append(
            HealthSample(
                clock.now(),
                {**dict.fromkeys(deltas(0), 0.0), **sums, **gauges(i)},
                hot_keys=hot_keys(i),
                low_confidence_queries=queries(i),
                source=source,
            )
        )
    assert clock.now() == start + timedelta(minutes=MINUTES)
    return Script(start, clock.now(), tuple(samples))
