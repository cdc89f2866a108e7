"""Frozen, validated settings. Units live in the names.

The library never reads the environment; :func:`settings_from_env` is for the CLI,
the service and worker processes only. :func:`load_settings` reads the same settings
from a JSON file, so every process of a deployment runs with one configuration.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstrata.attributes import MULTI_VALUED
from memstrata.config_proxy import ProxySettings
from memstrata.config_types import check_field_types, unknown_key
from memstrata.errors import ConfigError, ValidationError
from memstrata.validation import check_id, check_positive_int


@dataclass(frozen=True, slots=True)
class WorkingMemorySettings:
    """L2 parameters (docs/architecture.md, "The layers", "Parameters")."""

    api_ttl_s: float = 15 * 60
    """TTL of a cached API response."""
    min_result_ttl_s: float = 60.0
    """Floor of a planned step result's TTL, however close its last dependent's end."""
    default_result_ttl_s: float = 15 * 60
    """TTL of a step result without a plan or without dependents, and of a time series
    (refreshed on every append)."""
    series_window_points: int = 1000
    """Newest points a time series keeps."""

    def __post_init__(self) -> None:
        check_field_types(self, "working.")


MAX_CONTEXT_STEPS = 8
"""How far (in turns) :attr:`LongTermSettings.context_terms` may reach."""

DEFAULT_SEARCH_THREADS = 1
"""Threads in each embedded shard's search pool (:attr:`LongTermSettings.search_threads`)."""
MAX_SEARCH_THREADS = 256


KNOT_PAIRS = ("en-zh", "zh-zh", "zh-en", "mixed-zh", "mixed-en")
"""Question language - memory language pairs the multilingual route serves (a mixed
memory counts as Chinese; English over English is MiniLM's)."""


def _tuples(value: object) -> object:
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


def _check_knots(raw: object) -> Any:
    """``multilingual_knots`` as nested tuples (a settings file gives lists): one
    entry per query language, each knot list increasing, within [0, 1]."""
    where = "longterm.multilingual_knots"
    value = _tuples(raw)
    if not isinstance(value, tuple):
        raise ConfigError(f"{where}: must be a list of [language, knots]")
    seen: set[str] = set()
    for entry in value:
        if not isinstance(entry, tuple) or len(entry) != 2 or entry[0] not in KNOT_PAIRS:
            raise ConfigError(f"{where}: each entry is [{'|'.join(KNOT_PAIRS)}, [[x, y], ...]]")
        lang, knots = entry
        if lang in seen:
            raise ConfigError(f"{where}: {lang} given twice")
        seen.add(lang)
        if not isinstance(knots, tuple) or len(knots) < 2:
            raise ConfigError(f"{where}.{lang}: at least two [x, y] knots")
        previous = (-1.0, -1.0)
        for knot in knots:
            if (
                not isinstance(knot, tuple)
                or len(knot) != 2
                or any(isinstance(v, bool) or not isinstance(v, int | float) for v in knot)
                or not all(0 <= v <= 1 for v in knot)
                or knot[0] <= previous[0]
                or knot[1] < previous[1]
            ):
                raise ConfigError(f"{where}.{lang}: knots must rise, each [x, y] in [0, 1]")
            previous = (float(knot[0]), float(knot[1]))
    return value


MULTILINGUAL_POINTS = ("auto", "all")
"""The values of :attr:`LongTermSettings.multilingual_points`."""


def _check_tenants(raw: object) -> tuple[str, ...]:
    """``cross_language_tenants`` as a tuple of tenant ids (a settings file gives a
    list), each a valid id."""
    where = "longterm.cross_language_tenants"
    value = _tuples(raw)
    if not isinstance(value, tuple):
        raise ConfigError(f"{where}: must be a list of tenant ids")
    for i, tenant in enumerate(value):
        try:
            check_id("tenant", tenant)
        except ValidationError as exc:
            raise ConfigError(f"{where}[{i}]: {exc.reason}") from exc
    return tuple(dict.fromkeys(value))


@dataclass(frozen=True, slots=True)
class LongTermSettings:
    """L3 parameters (docs/architecture.md, "The layers", "Parameters")."""

    dense_top_n: int = 50
    """Dense candidates of one plain hybrid search (fewer when it asks for few items)."""
    sparse_top_n: int = 50
    """BM25 candidates of one plain hybrid search (likewise)."""
    hnsw_ef: int = 256
    """HNSW search breadth: higher finds more of the true nearest neighbours, slower."""
    fusion: str = "rrf"  # "rrf" | "normalized"
    # Confidence (docs/architecture.md, "Confidence"): the source design's 0.72 / 0.65
    # were calibrated for a larger model; these are calibrated for the default
    # all-MiniLM-L6-v2 by `memstrata eval locomo` (docs/benchmarks.md, "How the
    # defaults were chosen").
    low_confidence_cosine: float = 0.36
    """An L3 item whose calibrated confidence (:mod:`memstrata.retrieval.confidence`;
    its cosine where it is not graded) is below this is flagged low-confidence (the
    prompt says so)."""
    skip_below_cosine: float = 0.27
    """An L3 item below this (every signal calls it unrelated) is reported, never
    served; when every item of a read is below it, L3 is skipped for that read."""
    adjacent_blend: float = 0.1
    """Weight of the adjacent turns' vectors in a conversation turn's dense vector
    (:mod:`memstrata.longterm.adjacent`; 0 turns it off): a short reply is found by
    what it answers (docs/benchmarks.md, "How the defaults were chosen")."""
    context_terms: tuple[float, ...] = (0.5, 0.35)
    """Discounts of the terms of the turns 1, 2, ... steps away added to a conversation
    turn's BM25 vector (:func:`memstrata.longterm.adjacent.add_context_terms`; empty
    turns it off); the turn's own words keep their full weight (docs/benchmarks.md,
    "How the defaults were chosen")."""
    window_words: int = 150
    """Long texts get extra dense keys (:mod:`memstrata.memory.episodes`): the dense
    model reads only the first ~256 word pieces (~190 English words) of a text, so an
    episode longer than ``window_words`` words is also indexed by windows of
    ``window_words`` words every ``window_stride_words`` words after its start, each
    a dense-only point naming its episode; retrieval scores the episode by the best
    of its own vector and its windows. 0 turns windows off. An assistant's answers
    are often this long (docs/benchmarks.md, "How the defaults were chosen")."""
    window_stride_words: int = 100
    """Words from one window's start to the next one's."""
    max_windows: int = 32
    """Windows per episode at most (a 32,000-character text has ~50 at the defaults)."""
    search_threads: int = DEFAULT_SEARCH_THREADS
    """Threads in each embedded qdrant-edge shard's search pool, which reads a query's
    segments in parallel. One by default: the engine's own default (8 per shard) spins
    on the caller's CPUs and costs more than it gains on a small machine
    (docs/benchmarks.md, "How the defaults were chosen"). Raise it on a many-core
    machine whose tenants span several large segments."""
    # Deadlines and the degraded mode (docs/service.md, "When L3 is slow or down").
    search_deadline_s: float = 2.0
    """Longest one single-route read of L3 may take (a plain hybrid search, one
    intent need's search with its episode links, an item-store page, the write
    path's duplicate search). Past it the read is abandoned: the router answers
    from L2 and L1, a plain search raises ``BackendUnavailableError``. 0 turns the
    deadline off."""
    read_deadline_s: float = 5.0
    """Longest the L3 part of one multi-route retrieval (``retrieve``,
    ``build_context``) may take, all its engine calls together; past it the
    retrieval is served from the cached retrievals in L2. 0 turns it off."""
    embed_deadline_s: float = 10.0
    """Longest the query embedding of one read may take (the first call loads the
    model: give it room); past it, or when the embedder raises, the read ranks by
    BM25 alone and says so. 0 turns it off."""
    breaker_failures: int = 5
    """Consecutive L3 (or embedder) failures and timeouts that open its circuit
    breaker: while open, reads skip it at once instead of waiting on it again."""
    breaker_cooldown_s: float = 30.0
    """How long an open breaker stays open; then one read probes the backend, and
    its success closes the breaker (its failure opens it again)."""
    fallback_ttl_s: float = 3600.0
    """How long the last retrievals of a user (and a tenant's knowledge reads) are
    kept in L2 to answer from while L3 is unavailable."""
    fallback_items: int = 64
    """Retrieved items kept per user and collection for that fallback (the newest);
    0 keeps none."""
    server_timeout_s: float = 10.0
    """Timeout of each request to a Qdrant server (``qdrant_url``): bounds writes
    and the background calls a deadline abandoned."""
    # The multilingual dense route (docs/architecture.md, "Languages").
    multilingual: bool = True
    """Embed every L3 text with a second model that puts Chinese and English in one
    space (multilingual USE v3, stored as the ``multilingual`` vector) and route
    Chinese, mixed and cross-language questions through it. False: MiniLM and BM25
    only (English-only deployments: one model fewer to load, one embedding less a write)."""
    multilingual_points: str = "auto"  # "auto" | "all"
    """Which points get the ``multilingual`` vector when written (with ``multilingual``
    on). ``auto``: a Chinese or mixed text, and every point of a cross-language tenant
    (configured in ``cross_language_tenants``, or detected: it has a Chinese or mixed
    point, or asked a Chinese or mixed question); an English point of any other tenant
    is written with MiniLM and BM25 only, and gets the vector in the background once
    its tenant turns cross-language (docs/architecture.md, "Languages"). ``all``:
    every point, in the same write (one second embedding per text)."""
    cross_language_tenants: tuple[str, ...] = ()
    """Tenants whose every point gets the ``multilingual`` vector in the same write
    (known to mix languages: no background catch-up, no first-question wait)."""
    multilingual_knots: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = (
        ("en-zh", ((0.0, 0.0), (0.25, 0.27), (0.305, 0.36), (0.49, 0.63), (1.0, 1.0))),
        ("zh-zh", ((0.0, 0.0), (0.28, 0.27), (0.314, 0.36), (0.448, 0.63), (1.0, 1.0))),
        ("zh-en", ((0.0, 0.0), (0.235, 0.27), (0.27, 0.36), (0.44, 0.63), (1.0, 1.0))),
        ("mixed-zh", ((0.0, 0.0), (0.33, 0.27), (0.387, 0.36), (0.447, 0.63), (1.0, 1.0))),
        ("mixed-en", ((0.0, 0.0), (0.235, 0.27), (0.27, 0.36), (0.44, 0.63), (1.0, 1.0))),
    )
    """Per question language and memory language (``zh-en``: a Chinese question, an
    English memory; a mixed memory counts as Chinese), the multilingual route's cosine
    mapped onto MiniLM's scale: ``(multilingual cosine, MiniLM-scale cosine)`` knots,
    increasing, joined by straight lines. Every confidence threshold
    (``low_confidence_cosine``, ``skip_below_cosine``, the decision thresholds) is
    read against the mapped value, so each keeps its meaning whichever route measured
    it (docs/benchmarks.md, "Languages": how the knots were chosen)."""
    multilingual_cross_weight: float = 1.0
    """Weight of an English question's cross-language route (the multilingual vector
    over Chinese and mixed points only) against the raw query route."""
    multilingual_sparse_weight: float = 0.15
    """Weight of BM25 in a Chinese or mixed question's routes (the English routes use
    ``retrieval.sparse_weight``): BM25 is divided by the route's best score, and in
    Chinese the best may share only a character or two with the question."""

    def __post_init__(self) -> None:
        # The knots and the tenants take lists too and name the entry at fault.
        check_field_types(self, "longterm.", skip=("multilingual_knots", "cross_language_tenants"))
        if not isinstance(self.multilingual, bool):
            raise ConfigError("longterm.multilingual: must be true or false")
        if self.multilingual_points not in MULTILINGUAL_POINTS:
            raise ConfigError(
                "longterm.multilingual_points: must be one of "
                f"{', '.join(MULTILINGUAL_POINTS)}, got {self.multilingual_points!r}"
            )
        object.__setattr__(
            self, "cross_language_tenants", _check_tenants(self.cross_language_tenants)
        )
        object.__setattr__(self, "multilingual_knots", _check_knots(self.multilingual_knots))
        for name in ("multilingual_cross_weight", "multilingual_sparse_weight"):
            weight = getattr(self, name)
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not 0 <= weight <= 4
            ):
                raise ConfigError(f"longterm.{name}: must be a number in [0, 4]")
        for name in ("search_deadline_s", "read_deadline_s", "embed_deadline_s"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value <= 3600
            ):
                raise ConfigError(f"longterm.{name}: must be a number of seconds in [0, 3600]")
        for name in ("breaker_cooldown_s", "fallback_ttl_s", "server_timeout_s"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 < value <= 86_400
            ):
                raise ConfigError(f"longterm.{name}: must be a number of seconds in (0, 86400]")
        for name, low, high in (("breaker_failures", 1, 1000), ("fallback_items", 0, 1000)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"longterm.{name}: must be an int in {low}..{high}")
        threads = self.search_threads
        if (
            isinstance(threads, bool)
            or not isinstance(threads, int)
            or not 1 <= threads <= MAX_SEARCH_THREADS
        ):
            raise ConfigError(f"longterm.search_threads: must be an int in 1..{MAX_SEARCH_THREADS}")
        for name, low in (("window_words", 0), ("window_stride_words", 1), ("max_windows", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000:
                raise ConfigError(f"longterm.{name}: must be an int in {low}..10000")
        if self.window_words and self.window_stride_words > self.window_words:
            raise ConfigError("longterm.window_stride_words: must not exceed window_words")
        value = self.adjacent_blend
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError("longterm.adjacent_blend: must be a number in [0, 1]")
        terms = self.context_terms
        if (
            not isinstance(terms, tuple)
            or len(terms) > MAX_CONTEXT_STEPS
            or any(
                isinstance(w, bool) or not isinstance(w, int | float) or not 0 <= w <= 1
                for w in terms
            )
        ):
            raise ConfigError(
                f"longterm.context_terms: must be a tuple of at most {MAX_CONTEXT_STEPS} "
                "numbers in [0, 1]"
            )


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    """Multi-route retrieval (docs/architecture.md, "The reader").

    Which data and command each default was chosen with: docs/benchmarks.md, "How the
    defaults were chosen". Confidence thresholds live in :class:`LongTermSettings`.
    """

    route_depth: int = 200
    """Dense and BM25 candidates of the raw-query route: fewer lose evidence, more
    cost latency for little gain."""
    secondary_route_depth: int = 50
    """Dense and BM25 candidates of the entity and intent routes: weighted below the
    raw query, only their best few can place."""
    window_depth: int = 50
    """Window keys of long episodes (``LongTermSettings.window_words``) searched with
    the raw query's dense route; each lends its cosine to its episode (the best
    counts). 0: windows are not searched."""
    pool_size: int = 200
    """Merged candidates that get payloads, context and the adjustments: a small pool
    leaves out evidence the adjustments would have raised."""
    dense_weight: float = 1.0
    """Weight of the cosine in a route's fusion."""
    sparse_weight: float = 1.0
    """Weight of BM25 in a route's fusion. BM25 is divided by the route's best BM25
    score; cosine is used as is."""
    entity_route_weight: float = 0.3
    """Entities alone score below the full query (merge keeps the best); the route
    matters for terse queries."""
    intent_route_weight: float = 0.4
    """Weight of the recent-conversation route against the raw query."""
    decay_per_day: float = 0.96
    """Time decay per day of a memory's age (0.96: half in about 17 days)."""
    decay_weight: float = 0.05
    """0 turns time decay off, 1 is pure ``decay_per_day ** age``. Low by default: a
    question is as likely about long ago as about last week; recency of facts is
    handled by versioning, not by decay."""
    importance_weight: float = 0.2
    """A score is multiplied by ``1 + importance_weight * (importance - 0.5)``."""
    type_weights: tuple[tuple[str, float], ...] = (("preference", 1.1), ("summary", 0.9))
    """Multiplier per memory type (1 for the types not named)."""
    neighbor_weight: float = 0.3
    """Share of the best adjacent turn's score (same ``thread``, ``seq`` +-1) added:
    an answer often sits in the reply to the turn that matches the question."""
    thread_weight: float = 0.7
    """Share of the mean of the thread's best three scores added (topic locality)."""
    time_boost: float = 0.6
    """Multiplier bonus for memories observed inside the question's time window."""
    time_slack_days: float = 3.0
    """Days the question's time window is widened by on each side."""
    time_filter: bool = False
    """Filter to the time window instead of boosting (misses undated paraphrases)."""
    question_penalty: float = 0.2
    """A memory that is only a question ("what did you do?") rarely holds the answer."""
    short_penalty: float = 0.1
    """Share taken off the score of a text shorter than ``short_words`` words."""
    short_words: int = 8
    small_talk_penalty: float = 0.5
    """Share taken off the score of small talk ("Thanks, that's all for today.", 好的,
    再见: :mod:`memstrata.extract.smalltalk`), unless the question is small talk or asks
    how a conversation ended. Kept whole, it no longer competes with facts."""
    entity_field_boost: float = 0.2
    """Bonus when an entity of the query equals one of ``entity_fields`` of the item.
    Kept small: the boost follows the question's speaker, right or wrong, so a
    question with a false premise about who said something is misled by a large one
    (docs/benchmarks.md, "How the defaults were chosen")."""
    entity_fields: tuple[str, ...] = ("speaker",)
    """Payload fields an entity of the query is matched against."""
    redundancy_penalty: float = 0.2
    """Maximal marginal relevance over the best 2k: an item's score is lowered by this
    share times its cosine to the closest better item (0 turns it off). Ten
    restatements of one event are one memory and nine missing ones
    (docs/benchmarks.md, "How the defaults were chosen")."""
    rerank_weight: float = 0.0
    """Weight of the reranker's score against the retrieval score (0: no reranker)."""

    def __post_init__(self) -> None:
        check_field_types(self, "retrieval.")
        for name in ("route_depth", "secondary_route_depth", "pool_size", "short_words"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
                raise ConfigError(f"retrieval.{name}: must be an int in 1..1000")
        depth = self.window_depth
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 1000:
            raise ConfigError("retrieval.window_depth: must be an int in 0..1000")
        for name in (
            "dense_weight",
            "sparse_weight",
            "entity_route_weight",
            "intent_route_weight",
            "importance_weight",
            "neighbor_weight",
            "thread_weight",
            "time_boost",
            "time_slack_days",
            "entity_field_boost",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ConfigError(f"retrieval.{name}: must be a number >= 0")
        for name in (
            "decay_per_day",
            "decay_weight",
            "question_penalty",
            "short_penalty",
            "small_talk_penalty",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ConfigError(f"retrieval.{name}: must be a number in [0, 1]")
        if (
            isinstance(self.redundancy_penalty, bool)
            or not isinstance(self.redundancy_penalty, int | float)
            or not 0 <= self.redundancy_penalty <= 1
        ):
            raise ConfigError("retrieval.redundancy_penalty: must be a number in [0, 1]")
        if not 0 <= self.rerank_weight <= 1:
            raise ConfigError("retrieval.rerank_weight: must be a number in [0, 1]")
        for type_name, weight in self.type_weights:
            if not isinstance(type_name, str) or not weight >= 0:
                raise ConfigError("retrieval.type_weights: pairs of (type, weight >= 0)")


# Attributes whose values accumulate as a set instead of superseding each other
# (complementary information merges into one complete memory: docs/architecture.md,
# "The writer"): the attribute registry's set-valued attributes.
DEFAULT_MULTI_VALUED: frozenset[str] = MULTI_VALUED


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
    """Retention decay per day since the last access (docs/architecture.md, "Upkeep")."""
    access_importance_step: float = 0.05
    """An access moves importance this fraction of the way to 1."""
    compress_after_days: float = 30.0
    """Consolidation compresses only events older than this..."""
    compress_below_retention: float = 0.2
    """... whose retention fell below this (pinned events never)."""
    history_horizon_days: float = 180.0
    """Superseded versions closed longer ago than this move to cold storage."""
    forget_below_retention: float = 0.01
    """A unit whose retention fell below this has faded: consolidation moves it to cold
    storage (pinned units never)."""
    redis_prefix: str = "mv"
    """First part of every Redis key (two stores can share one server)."""

    def __post_init__(self) -> None:
        check_field_types(self, "memory.")
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
    (``python -m memstrata.worker --handler-factory
    memstrata.write.handle:worker_handler``); the embedded qdrant-edge store can
    be opened by one process only, so that mode needs a Qdrant server.
    """

    queue_name: str = "memories"
    background_worker: bool = True
    worker_threads: int = 2
    """Consumer threads of the in-process worker. Two let one thread's store writes
    overlap the other's embedding (the model runs one batch at a time anyway); the
    store orders a slot's versions by their own timestamps, not by arrival."""
    batch_size: int = 100
    """Queue entries a worker reads (and embeds together) at a time."""
    block_ms: int = 200
    """How long a worker's read waits for new entries."""
    claim_idle_ms: int = 30_000
    """Entries pending this long (a consumer died holding them) are claimed by another."""
    max_deliveries: int = 5
    """Deliveries of an entry before it moves to the dead-letter stream."""
    max_turn_chars: int = 8_000
    """A longer observed text is split into chunks of at most this many chars."""
    max_observe_chars: int = 200_000
    """A longer observed text is rejected (ValidationError naming ``text``)."""
    queue_maxlen: int | None = 100_000
    """Acknowledged entries beyond this are trimmed from the stream."""

    def __post_init__(self) -> None:
        check_field_types(self, "pipeline.")
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


def _check_model_endpoint(section: str, base_url: str | None, timeout_s: float) -> None:
    """An OpenAI-compatible endpoint setting: an http(s) URL (or none) and a timeout."""
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{section}.llm_base_url: must be an http(s) URL")
    if not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ConfigError(f"{section}.timeout_s: must be a number > 0")


@dataclass(frozen=True, slots=True)
class ExtractorSettings:
    """Which extractor turns episodes into facts: the rule-based one by default, or an
    OpenAI-compatible chat endpoint (its key from ``MEMSTRATA_LLM_API_KEY`` only,
    never a setting: it would show in files and process lists)."""

    llm_base_url: str | None = None
    llm_model: str = "default"
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        check_field_types(self, "extractor.")
        _check_model_endpoint("extractor", self.llm_base_url, self.timeout_s)


TRACING_EXPORTERS = ("none", "console", "otlp")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        return False


@dataclass(frozen=True, slots=True)
class TracingSettings:
    """OpenTelemetry spans per pipeline stage (:mod:`memstrata.tracing`), off by
    default. ``console`` prints finished spans to stdout; ``otlp`` sends them with the
    ``opentelemetry-exporter-otlp`` package (not a dependency: install it; it reads
    its endpoint from the standard ``OTEL_EXPORTER_OTLP_*`` variables). Spans carry
    ids, counts, intent names and timings, never a text."""

    exporter: str = "none"
    service_name: str = "memstrata"

    def __post_init__(self) -> None:
        check_field_types(self, "tracing.")
        if self.exporter not in TRACING_EXPORTERS:
            raise ConfigError(f"tracing.exporter: must be one of {', '.join(TRACING_EXPORTERS)}")
        if self.exporter == "otlp" and not any(
            _importable(f"opentelemetry.exporter.otlp.proto.{kind}.trace_exporter")
            for kind in ("http", "grpc")
        ):
            raise ConfigError(
                "tracing.exporter: 'otlp' needs the opentelemetry-exporter-otlp-proto-http "
                "(or -grpc) package, which is not installed"
            )
        if not isinstance(self.service_name, str) or not self.service_name.strip():
            raise ConfigError("tracing.service_name: must be a non-empty string")


@dataclass(frozen=True, slots=True)
class DecisionSettings:
    """The decision layer (:mod:`memstrata.decision`): the confidence an answer needs
    per risk level, how long trace cards are kept, and an optional OpenAI-compatible
    endpoint whose model makes the judgment and checks replies (its key from
    ``MEMSTRATA_LLM_API_KEY`` only; the rules decide whenever it fails)."""

    threshold_low: float = 0.36
    """Confidence a low-risk answer needs (the default low-confidence cosine)."""
    threshold_medium: float = 0.5
    threshold_high: float = 0.72
    """Confidence a high-risk answer needs (docs/architecture.md, "Confidence")."""
    card_retention_s: int = 30 * 86_400
    """How long a trace card is kept."""
    max_cards: int = 100_000
    """Trace cards kept per tenant at most (the oldest go first)."""
    llm_base_url: str | None = None
    llm_model: str = "default"
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        check_field_types(self, "decision.")
        _check_model_endpoint("decision", self.llm_base_url, self.timeout_s)
        for name in ("card_retention_s", "max_cards"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"decision.{name}: must be an integer > 0")


@dataclass(frozen=True, slots=True)
class IntentSettings:
    """How a message sent without a step intent is understood
    (:mod:`memstrata.router.recognize`): its intent is recognized among the registered
    ones from their examples in the multilingual embedding space, or by an
    OpenAI-compatible chat model when ``llm_base_url`` is set (its key from
    ``MEMSTRATA_LLM_API_KEY``; the examples answer whenever it fails). Under
    ``min_confidence`` the message goes to ``fallback``."""

    min_confidence: float = 0.4
    """Below this the message falls back (chosen on the dev split of ``memstrata eval
    intents``: docs/benchmarks.md)."""
    lexical_weight: float = 0.0
    """The share of the words a message and an example have in common in their score
    (the rest is their cosine); 0: the cosine alone, which the blend did not beat on
    the dev split."""
    top_examples: int = 2
    """An intent's score is the mean of its closest this many examples' scores."""
    fallback: str = "respond"
    """The general conversational intent a message no intent fits is routed to."""
    llm_base_url: str | None = None
    llm_model: str = "default"
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        check_field_types(self, "intents.")
        _check_model_endpoint("intents", self.llm_base_url, self.timeout_s)
        for name in ("min_confidence", "lexical_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"intents.{name}: must be a number")
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"intents.{name}: must be within [0, 1]")
        if not isinstance(self.fallback, str) or not self.fallback:
            raise ConfigError("intents.fallback: must be an intent name")
        top = self.top_examples
        if isinstance(top, bool) or not isinstance(top, int) or top <= 0:
            raise ConfigError("intents.top_examples: must be an integer > 0")


@dataclass(frozen=True, slots=True)
class FaultSettings:
    """FAULT INJECTION for load benchmarks and drills (``memstrata bench load``), off by
    default: never set it in a deployment. With ``l3_read_delay_s`` every read of the
    long-term store (searches, retrieves, scrolls, counts; writes pass) waits that
    long first, as a slow Qdrant would, so the reader's deadlines, circuit breaker and
    L2 fallback carry the load (docs/service.md, "When L3 is slow or down"). The
    process logs a warning at start while it is set."""

    l3_read_delay_s: float = 0.0
    """Seconds every L3 read waits before it runs; 0: no fault."""
    l3_delay_switch: Path | None = None
    """With a delay: it applies only while this file exists, so a drill turns it on
    and off from outside the running process; None: always."""

    def __post_init__(self) -> None:
        check_field_types(self, "faults.")
        delay = self.l3_read_delay_s
        if isinstance(delay, bool) or not isinstance(delay, int | float):
            raise ValidationError("l3_read_delay_s", "must be a number")
        if not (math.isfinite(delay) and delay >= 0):
            raise ValidationError("l3_read_delay_s", "must be a finite number >= 0")
        if self.l3_delay_switch is not None and not isinstance(self.l3_delay_switch, Path):
            raise ValidationError("l3_delay_switch", "must be a path")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the engine (and a worker process) needs to start."""

    data_dir: Path = field(default_factory=lambda: Path(".memstrata"))
    redis_url: str | None = None
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    working: WorkingMemorySettings = field(default_factory=WorkingMemorySettings)
    longterm: LongTermSettings = field(default_factory=LongTermSettings)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)
    extractor: ExtractorSettings = field(default_factory=ExtractorSettings)
    tracing: TracingSettings = field(default_factory=TracingSettings)
    decision: DecisionSettings = field(default_factory=DecisionSettings)
    intents: IntentSettings = field(default_factory=IntentSettings)
    faults: FaultSettings = field(default_factory=FaultSettings)
    """Fault injection for benchmarks and drills only (off by default)."""
    proxy: ProxySettings = field(default_factory=ProxySettings)
    """The OpenAI-compatible proxy's upstream and model windows (docs/service.md)."""
    redact_logs: bool = True
    """Sanitize every log record of the process (a record factory), not only ours."""

    def __post_init__(self) -> None:
        check_field_types(self, "")
        if self.longterm.fusion not in ("rrf", "normalized"):
            raise ConfigError(
                f"longterm.fusion: must be 'rrf' or 'normalized', got {self.longterm.fusion!r}"
            )
        if self.working.series_window_points <= 0:
            raise ConfigError("working.series_window_points: must be > 0")
        if self.working.api_ttl_s <= 0:
            raise ConfigError("working.api_ttl_s: must be > 0")
        if self.redis_url is not None and not self.redis_url.startswith(
            ("redis://", "rediss://", "unix://", "redis+cluster://")
        ):
            raise ConfigError(f"redis_url: unsupported scheme in {self.redis_url!r}")


def settings_from_env(
    env: Mapping[str, str] | None = None, *, data_dir: Path | None = None
) -> Settings:
    """Build settings from ``MEMSTRATA_*`` variables (CLI, service, workers only).

    ``MEMSTRATA_SETTINGS`` names a JSON file (:func:`load_settings`) read first; the
    other variables override what it says. ``MEMSTRATA_OTEL`` (``console`` or
    ``otlp``) turns tracing on (:class:`TracingSettings`).
    """
    source = os.environ if env is None else env
    path = source.get("MEMSTRATA_SETTINGS")
    base = load_settings(Path(path)) if path else Settings()
    changes: dict[str, Any] = {}
    if data_dir is not None or source.get("MEMSTRATA_DATA_DIR"):
        changes["data_dir"] = data_dir or Path(source["MEMSTRATA_DATA_DIR"])
    for name, variable in (
        ("redis_url", "MEMSTRATA_REDIS_URL"),
        ("qdrant_url", "MEMSTRATA_QDRANT_URL"),
        ("qdrant_api_key", "MEMSTRATA_QDRANT_API_KEY"),
    ):
        if source.get(variable):
            changes[name] = source[variable]
    if source.get("MEMSTRATA_OTEL"):
        changes["tracing"] = dataclasses.replace(base.tracing, exporter=source["MEMSTRATA_OTEL"])
    return dataclasses.replace(base, **changes) if changes else base


def load_settings(path: Path) -> Settings:
    """Settings from a JSON file: an object whose keys are :class:`Settings` fields,
    sections as nested objects (``{"longterm": {"adjacent_blend": 0.1}}``); what it
    leaves out keeps its default. Unknown keys, wrongly typed and bad values raise
    ConfigError naming the key (:func:`settings_from_dict`)."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"settings file {path}: {exc}") from exc
    return settings_from_dict(raw)


def settings_from_dict(raw: object) -> Settings:
    """Settings from a JSON-shaped value, as a settings file holds it: every field's
    type is checked here (a number where a number is wanted, a list for a tuple, a
    string for a path), so a wrong one fails at load, not at the first read; an
    unknown key is refused with the closest known name."""
    settings = _build(Settings, raw, "")
    assert isinstance(settings, Settings)
    return settings


def _build(cls: type[Any], raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where or 'settings'}: must be a JSON object, got {raw!r:.80}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = f"{where}.{key}" if where else key
        if key not in fields:
            raise unknown_key(name, key, fields)
        values[key] = _value(hints[key], value, name)
    try:
        return cls(**values)
    except ValidationError as exc:
        raise ConfigError(f"{where + '.' if where else ''}{exc.field}: {exc.reason}") from exc


def _value(hint: Any, value: Any, name: str) -> Any:
    """A JSON value as the field's type wants it (sections, paths, tuples, sets); a
    value of another JSON type is passed on as it is, for the section's type check
    to name."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value, name)
    origin = typing.get_origin(hint)
    if hint is Path or (
        origin in (typing.Union, types.UnionType) and Path in typing.get_args(hint)
    ):
        return Path(value) if isinstance(value, str) else value
    if origin is tuple and isinstance(value, list):
        return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    if origin is frozenset and isinstance(value, list):
        try:
            return frozenset(value)
        except TypeError:  # an unhashable item (a list, an object): not a string
            return value
    return value
