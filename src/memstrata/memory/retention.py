"""Retention: how a memory fades with time unless it is used (pure arithmetic; deletion
is `memstrata.upkeep.forget`; docs/architecture.md, "Upkeep").

``retention = importance x decay ** age_days``: with the default 0.96 per day a
memory loses half its weight in about 17 days unless it is used again. Age runs
from the last access (or the observation when never accessed), so using a memory
keeps it alive; pinned memories never decay.
"""

from __future__ import annotations

from datetime import datetime

from memstrata.memory.units import MemoryUnit

DEFAULT_DECAY_PER_DAY = 0.96
DEFAULT_ACCESS_STEP = 0.05
_SECONDS_PER_DAY = 86_400.0


def age_days(unit: MemoryUnit, now: datetime) -> float:
    """Days since the unit was last used (or observed); never negative."""
    reference = unit.last_accessed or unit.observed_at
    return max(0.0, (now - reference).total_seconds() / _SECONDS_PER_DAY)


def retention_score(
    unit: MemoryUnit, now: datetime, *, decay_per_day: float = DEFAULT_DECAY_PER_DAY
) -> float:
    """``importance x decay ** age_days``; a pinned unit keeps its full importance."""
    if unit.pinned:
        return unit.importance
    return float(unit.importance * decay_per_day ** age_days(unit, now))


def bumped_importance(importance: float, *, step: float = DEFAULT_ACCESS_STEP) -> float:
    """Importance after one access: ``step`` of the way to 1 (bounded, never above 1)."""
    return min(1.0, importance + step * (1.0 - importance))


def has_faded(
    unit: MemoryUnit,
    now: datetime,
    *,
    floor: float,
    decay_per_day: float = DEFAULT_DECAY_PER_DAY,
) -> bool:
    """True when an unpinned unit's retention fell below ``floor``."""
    return not unit.pinned and retention_score(unit, now, decay_per_day=decay_per_day) < floor
