"""Frozen, validated settings of the long-term memory pipeline (units in the names)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from memstrata.errors import ValidationError
from memstrata.validation import check_id, check_positive_int

# Attributes whose values accumulate as a set instead of superseding each other
# (seed 003 §6.1: complementary information merges into one complete memory).
DEFAULT_MULTI_VALUED: frozenset[str] = frozenset(
    {"likes", "dislikes", "allergies", "interests", "喜欢", "不喜欢", "过敏", "爱好"}
)


def _check_fraction(name: str, value: float, *, low_open: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(name, "must be a finite number")
    if not 0.0 <= value <= 1.0 or (low_open and value == 0.0):
        raise ValidationError(name, "must be within (0, 1]" if low_open else "within [0, 1]")


def _check_non_negative(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(name, "must be a finite number")
    if value < 0:
        raise ValidationError(name, "must be >= 0")


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """Versioning, dedupe, forgetting and consolidation parameters."""

    near_duplicate_cosine: float = 0.92
    """A new value in the same slot at least this close (dense cosine) to the
    active one only refreshes it."""
    multi_valued_attributes: frozenset[str] = field(default=DEFAULT_MULTI_VALUED)
    """Casefolded attribute names whose values accumulate as a set."""
    value_separator: str = "; "
    """Joins the items of a multi-valued attribute's value."""
    max_write_attempts: int = 400
    """Optimistic-commit attempts per write before ``ConflictError``."""
    retry_backoff_max_s: float = 0.02
    """Upper bound of the jittered sleep between two attempts."""
    decay_per_day: float = 0.96
    access_importance_step: float = 0.05
    """An access moves importance this fraction of the way to 1."""
    compress_after_days: float = 30.0
    compress_below_retention: float = 0.2
    history_horizon_days: float = 180.0
    forget_below_retention: float = 0.01
    redis_prefix: str = "mv"
    """First part of every Redis key (two stores can share one server)."""

    def __post_init__(self) -> None:
        _check_fraction("near_duplicate_cosine", self.near_duplicate_cosine, low_open=True)
        if not isinstance(self.multi_valued_attributes, frozenset) or any(
            not isinstance(a, str) or a != a.casefold() for a in self.multi_valued_attributes
        ):
            raise ValidationError(
                "multi_valued_attributes", "must be a frozenset of casefolded names"
            )
        if not isinstance(self.value_separator, str) or not self.value_separator.strip():
            raise ValidationError("value_separator", "must contain a visible character")
        check_positive_int("max_write_attempts", self.max_write_attempts)
        _check_non_negative("retry_backoff_max_s", self.retry_backoff_max_s)
        _check_fraction("decay_per_day", self.decay_per_day, low_open=True)
        _check_fraction("access_importance_step", self.access_importance_step)
        _check_non_negative("compress_after_days", self.compress_after_days)
        _check_fraction("compress_below_retention", self.compress_below_retention)
        _check_non_negative("history_horizon_days", self.history_horizon_days)
        _check_fraction("forget_below_retention", self.forget_below_retention)
        check_id("redis_prefix", self.redis_prefix)
