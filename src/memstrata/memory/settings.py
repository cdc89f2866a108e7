"""Frozen, validated settings of the long-term memory pipeline (units in the names)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from memstrata.errors import ValidationError
from memstrata.validation import check_id, check_positive_int

# Attributes whose values accumulate as a set instead of superseding each other
# (seed 003 §6.1: complementary information merges into one complete memory). The rule
# extractor also writes health notes, things given up ("avoids"), children and pets
# one item per fact: a second allergy or a second child adds, it does not replace.
DEFAULT_MULTI_VALUED: frozenset[str] = frozenset(
    {
        "likes",
        "dislikes",
        "allergies",
        "interests",
        "health",
        "avoids",
        "children",
        "pets",
        "喜欢",
        "不喜欢",
        "过敏",
        "爱好",
    }
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


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """How the engine runs its write pipeline.

    ``background_worker=False`` leaves consuming to worker processes
    (``python -m memstrata.memory.worker --handler-factory
    memstrata.memory.handler:worker_handler``); the embedded qdrant-edge store can
    be opened by one process only, so that mode needs a Qdrant server.
    """

    queue_name: str = "memories"
    background_worker: bool = True
    worker_threads: int = 2
    """Consumer threads of the in-process worker. Two let one thread's store writes
    overlap the other's embedding (the model runs one batch at a time anyway); the
    store orders a slot's versions by their own timestamps, not by arrival."""
    batch_size: int = 100
    block_ms: int = 200
    claim_idle_ms: int = 30_000
    max_deliveries: int = 5
    max_turn_chars: int = 8_000
    """A longer observed text is split into chunks of at most this many chars."""
    max_observe_chars: int = 200_000
    """A longer observed text is rejected (ValidationError naming ``text``)."""
    queue_maxlen: int | None = 100_000
    """Acknowledged entries beyond this are trimmed from the stream."""

    def __post_init__(self) -> None:
        check_id("queue_name", self.queue_name)
        check_positive_int("batch_size", self.batch_size, maximum=10_000)
        check_positive_int("worker_threads", self.worker_threads, maximum=64)
        if isinstance(self.block_ms, bool) or not isinstance(self.block_ms, int):
            raise ValidationError("block_ms", "must be an integer")
        if self.block_ms < 0:
            raise ValidationError("block_ms", "must be >= 0")
        check_positive_int("claim_idle_ms", self.claim_idle_ms)
        check_positive_int("max_deliveries", self.max_deliveries)
        # A chunk of 8k chars of Chinese is 24 KB of UTF-8: far below the 256 KiB
        # payload limit, and short enough for an LLM extractor's context.
        check_positive_int("max_turn_chars", self.max_turn_chars, maximum=32_000)
        check_positive_int("max_observe_chars", self.max_observe_chars)
        if self.max_observe_chars < self.max_turn_chars:
            raise ValidationError("max_observe_chars", "must be >= max_turn_chars")
        if self.queue_maxlen is not None:
            check_positive_int("queue_maxlen", self.queue_maxlen)
