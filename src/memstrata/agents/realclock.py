"""The diagnostics agent on the real clock (``memstrata demo diagnostics --real-clock``).

The scripted run moves a fake clock through its 39 minutes in seconds, while Valkey's
TTLs count real seconds: no L2 entry ever expires, and the health samples carry the
fake clock's dates. On the real clock with short TTLs the same agent runs batch after
batch for a few minutes: its step results and cached API answers really expire in
Valkey between batches, the hot path is the real one, and a health sample is taken
after every batch and pause (besides the engine's own one a minute), at real dates in
the data directory's Valkey. ``memstrata report --data-dir <it>`` then reports on
them: several samples, the L2 expiry rate, the decisions, tools and CER of every batch.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memstrata.agents.diagnostics import PLAN, DiagnosticsAgent
from memstrata.agents.fleet import DEVICE_IDS, Fleet
from memstrata.agents.run import AgentRun
from memstrata.agents.shared_state import side_by_side
from memstrata.agents.writer import ReplyWriter
from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import ConflictError, ValidationError
from memstrata.working.stepgraph import StepGraph, StepSpec

PLANNED_S = 15 * 60
"""The default L2 TTL the scripted plan's durations are sized against."""
MAX_MINUTES = 60.0
PAUSE_TTLS = 2.0
"""The pause between batches, in TTLs."""


def short_ttls(settings: Settings, ttl_s: float) -> Settings:
    """``settings`` with L2's TTLs shortened to ``ttl_s`` (the result floor to a quarter
    of it), so entries expire within a real-clock demo."""
    _check_positive("ttl_seconds", ttl_s)
    working = replace(
        settings.working,
        api_ttl_s=ttl_s,
        default_result_ttl_s=ttl_s,
        min_result_ttl_s=min(settings.working.min_result_ttl_s, ttl_s / 4),
    )
    return replace(settings, working=working)


def scaled_plan(ttl_s: float, plan: StepGraph = PLAN) -> StepGraph:
    """The diagnostics plan with its durations scaled from :data:`PLANNED_S` to
    ``ttl_s``: the step results' TTLs (their last dependent's estimated end x 2) shrink
    with it."""
    factor = ttl_s / PLANNED_S
    return StepGraph(
        tuple(
            StepSpec(s.step_id, max(s.duration_s * factor, 0.001), s.depends_on) for s in plan.steps
        )
    )


@dataclass(frozen=True, slots=True)
class RealClockRun:
    """What a real-clock run did: its batches (the last one in full), the samples."""

    minutes: float
    ttl_s: float
    batches: int
    samples: int
    wall_s: float
    last: AgentRun
    """The last batch (the devices side by side with the naive shared state)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "real_clock": {
                "minutes": self.minutes,
                "ttl_s": self.ttl_s,
                "batches": self.batches,
                "health_samples": self.samples,
                "wall_s": round(self.wall_s, 1),
            },
            **self.last.as_dict(),
        }


def run_real_clock(
    engine: ContextEngine,
    *,
    minutes: float,
    ttl_s: float,
    writer: ReplyWriter | None = None,
    devices: Sequence[str] = DEVICE_IDS,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> RealClockRun:
    """Run the diagnostics batch (its devices concurrently) again and again on the real
    clock for ``minutes``, pausing ``ttl_s`` between batches so what the last one left
    in L2 expires; a health sample before the first batch, after each batch and after
    each pause. ``engine`` should run on the system clock with :func:`short_ttls`."""
    check_options(minutes, ttl_s)
    plan = scaled_plan(ttl_s)
    begun = monotonic()
    deadline = begun + minutes * 60
    samples = _sample(engine)
    batches = 0
    last: AgentRun | None = None
    agent = DiagnosticsAgent(engine, writer=writer, fleet=Fleet(), plan=plan)
    run = uuid.uuid4().hex[:8]
    while last is None or monotonic() < deadline:
        batches += 1
        last = side_by_side(agent, devices, run_id=f"{run}-b{batches}")
        samples += _sample(engine)
        # What the batch left in L2 expires in the pause (Valkey counts it): a step
        # result lives about twice its plan's span, scaled to ``ttl_s``.
        sleep(PAUSE_TTLS * ttl_s)
        samples += _sample(engine)
    return RealClockRun(minutes, ttl_s, batches, samples, monotonic() - begun, last)


def check_options(minutes: float, ttl_s: float) -> None:
    """ValidationError naming ``minutes`` or ``ttl_seconds`` when out of range."""
    _check_positive("minutes", minutes)
    if minutes > MAX_MINUTES:
        raise ValidationError("minutes", f"must be at most {MAX_MINUTES:g}")
    _check_positive("ttl_seconds", ttl_s)


def _sample(engine: ContextEngine) -> int:
    """Record a health sample now: 1, or 0 when the engine's own sampler took one in
    the same millisecond."""
    try:
        engine.record_health_sample()
    except ConflictError:
        return 0
    return 1


def _check_positive(field: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValidationError(field, "must be a number > 0")
