"""The context health report, built from recorded samples (pure; docs/architecture.md,
"Health and metrics").

Counters are cumulative per process: an increase is summed sample to sample within
each process (a drop means the process restarted and counts from 0 again), and the
first sample of a process is its baseline. The Valkey server's numbers are read by
every process alike, so they are followed across all samples instead. Gauges are
shown per time bucket: the last value of each process in the bucket, added up across
processes (the server's: the last value).

Rates (the decision layer), as :func:`memstrata.decision.decision_rates` defines them:
tool success and fallback over the tool calls that ran (``done`` or
``cannot_complete``: a held, rejected or blocked call never ran); correction and ask
over all decisions; CER = effective steps over all steps, for the last 7 days against
the 7 before (whatever ``since`` is).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Literal

from memstrata.decision.metrics import EXECUTED_OUTCOMES
from memstrata.errors import ValidationError
from memstrata.health.counters import merge, top
from memstrata.health.sample import (
    CER_EFFECTIVE,
    CER_INEFFECTIVE,
    CONTEXT_LOAD_FAILURES,
    DECISION_ROUTES,
    FALLBACKS,
    L1_BYTES,
    L1_SESSIONS,
    L1_STALE_WRITES,
    L2_EXPIRED,
    L2_KEYS,
    L3_POINTS,
    L3_SEARCH_LE,
    L3_SERVER_POINTS,
    RETRIEVALS,
    RETRIEVALS_CONFIDENT_TOP5,
    RETRIEVALS_LOW_CONFIDENCE,
    HealthSample,
    decision_name,
    feedback_name,
    is_shared,
    tool_name,
)
from memstrata.validation import DURATION_PATTERN, DURATION_REASON

WEEK = timedelta(days=7)
MAX_POINTS = 200
BUCKETS = tuple(
    timedelta(minutes=m) for m in (1, 5, 15, 30, 60, 120, 180, 360, 720, 1440, 10080, 43200, 525600)
)
CER_DAYS = 14
"""The CER chart covers at least the two weeks its week-over-week change compares."""
CER_DAYS_MAX = 366
HOT_KEYS_SHOWN = 10
QUERIES_SHOWN = 5

Series = tuple[tuple[datetime, float], ...]
"""(time, value) points, oldest first."""
Ranked = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class L1Health:
    sessions: Series
    memory_bytes: Series
    stale_writes: int
    """Compare-and-set writes refused because the state changed under them (the
    immutable-violation count: each would have overwritten a newer state)."""


@dataclass(frozen=True, slots=True)
class L2Health:
    keys: Series
    expired_per_minute: Series
    expired_per_minute_avg: float | None
    expiry_rate: float | None
    """Keys expired per minute over the mean key count (should stay < 5 %:
    docs/architecture.md, "Health and metrics")."""
    hot_keys: Ranked
    """Reads per key family, the 10 most read first."""


@dataclass(frozen=True, slots=True)
class CollectionGrowth:
    collection: str
    first: float
    last: float

    @property
    def growth(self) -> float:
        return self.last - self.first

    @property
    def growth_rate(self) -> float | None:
        return None if self.first <= 0 else self.growth / self.first


@dataclass(frozen=True, slots=True)
class Rate:
    name: str
    numerator: float
    denominator: float

    @property
    def value(self) -> float | None:
        return None if self.denominator <= 0 else self.numerator / self.denominator


NO_RATE = Rate("", 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class L3Health:
    points: Mapping[str, Series]
    growth: tuple[CollectionGrowth, ...]
    low_confidence_queries: Ranked
    """Sanitized queries skipped or answered with low confidence, 5 most frequent."""
    low_confidence_this_week: Rate = NO_RATE
    """Low-confidence retrievals over all retrievals, the last 7 days."""
    low_confidence_last_week: Rate = NO_RATE
    """The same, the 7 days before."""
    confident_top5: Rate = NO_RATE
    """Over the window: retrievals whose top 5 holds a confident item (a proxy for
    the top-5 hit rate, which needs relevance labels)."""
    context_load_failures: int | None = None
    """Over the window: routed steps that raised instead of returning a bundle (None:
    no sample in the window counts them)."""
    search_p99_s: float | None = None
    """Over the window: the L3 search latency's 99th percentile, as the upper bound of
    the histogram bucket it falls in (``inf``: beyond the last; None: no search)."""

    @property
    def low_confidence_change(self) -> float | None:
        """This week's low-confidence share minus last week's (a fraction)."""
        now, before = self.low_confidence_this_week.value, self.low_confidence_last_week.value
        return None if now is None or before is None else now - before


@dataclass(frozen=True, slots=True)
class DecisionHealth:
    cer_this_week: Rate
    cer_last_week: Rate
    cer_daily: tuple[tuple[datetime, Rate], ...]
    """One CER per day (the day ending at the time given), oldest first: every day of
    the last 14, or of the window when it is longer (at most :data:`CER_DAYS_MAX`); a
    day without steps is there too, its rate without a value."""
    rates: tuple[Rate, ...]
    """Over the report window: tool success, correction, fallback, ask."""

    @property
    def cer_change(self) -> float | None:
        """This week's CER minus last week's (a fraction; x100 for points)."""
        now, before = self.cer_this_week.value, self.cer_last_week.value
        return None if now is None or before is None else now - before


Status = Literal["ok", "flagged", "no data"]


@dataclass(frozen=True, slots=True)
class BoundCheck:
    """One bound the source articles set, checked on the report's numbers."""

    name: str
    rule: str
    """The bound, as the report states it (``< 5 %``)."""
    value: str
    """What was measured, formatted (``n/a`` without data)."""
    status: Status
    source: str
    """Where the bound comes from (``seed 000 §5.2``)."""

    @property
    def flagged(self) -> bool:
        return self.status == "flagged"


@dataclass(frozen=True, slots=True)
class HealthReport:
    generated_at: datetime
    since: timedelta
    start: datetime
    samples: int
    sources: int
    bucket: timedelta
    l1: L1Health
    l2: L2Health
    l3: L3Health
    decisions: DecisionHealth
    checks: tuple[BoundCheck, ...] = ()
    """Every bound the report can check, in report order (:func:`check_bounds`)."""

    @property
    def flags(self) -> tuple[BoundCheck, ...]:
        """The bounds this report's numbers break."""
        return tuple(c for c in self.checks if c.flagged)


# -- durations ------------------------------------------------------------------------

_DURATION = re.compile(DURATION_PATTERN)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``30m``, ``24h``, ``7d``, ``2w`` (``s`` too) as a timedelta."""
    found = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise ValidationError("since", DURATION_REASON)
    return timedelta(seconds=int(text[:-1]) * _UNIT_S[text[-1]])


def format_duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNIT_S[unit] == 0:
            return f"{seconds // _UNIT_S[unit]}{unit}"
    return f"{seconds}s"


# -- arithmetic over samples -----------------------------------------------------------


def increments(samples: Sequence[HealthSample], name: str) -> list[tuple[datetime, float]]:
    """Each sample's increase of counter ``name`` since the one before it (per process
    unless the server's); a drop is a restart, so the new value is the increase."""
    last: dict[str, float] = {}
    out: list[tuple[datetime, float]] = []
    shared = is_shared(name)
    for sample in samples:
        value = sample.values.get(name)
        if value is None:
            continue
        owner = "" if shared else sample.source
        before = last.get(owner)
        last[owner] = value
        if before is not None:
            out.append((sample.at, value - before if value >= before else value))
    return out


def increase(incs: Iterable[tuple[datetime, float]], start: datetime, end: datetime) -> float:
    """The increase over ``(start, end]``."""
    return sum(inc for at, inc in incs if start < at <= end)


def _bucket_for(span: timedelta) -> timedelta:
    for size in BUCKETS:
        if span / size <= MAX_POINTS:
            return size
    return BUCKETS[-1]


def _bucket_of(at: datetime, start: datetime, size: timedelta) -> int:
    """Bucket ``i`` covers ``(start + i * size, start + (i + 1) * size]`` (``start``
    itself falls in the first)."""
    return max(0, math.ceil((at - start) / size) - 1)


def _bucket_end(index: int, start: datetime, size: timedelta, now: datetime) -> datetime:
    return min(now, start + size * (index + 1))


def gauge_series(
    samples: Sequence[HealthSample], name: str, start: datetime, now: datetime, size: timedelta
) -> Series:
    """The gauge per bucket: each process's last value, summed (the server's: last)."""
    buckets: dict[int, dict[str, float]] = defaultdict(dict)
    shared = is_shared(name)
    for sample in samples:
        value = sample.values.get(name)
        if value is None or not start <= sample.at <= now:
            continue
        buckets[_bucket_of(sample.at, start, size)]["" if shared else sample.source] = value
    return tuple(
        (_bucket_end(i, start, size, now), float(sum(by_source.values())))
        for i, by_source in sorted(buckets.items())
    )


def rate_series(
    incs: Sequence[tuple[datetime, float]], start: datetime, now: datetime, size: timedelta
) -> Series:
    """A counter's increase per minute, per bucket."""
    buckets: dict[int, float] = defaultdict(float)
    for at, inc in incs:
        if start < at <= now:
            buckets[_bucket_of(at, start, size)] += inc
    out = []
    for i, total in sorted(buckets.items()):
        begin = start + size * i
        minutes = (_bucket_end(i, start, size, now) - begin).total_seconds() / 60
        out.append((_bucket_end(i, start, size, now), total / minutes if minutes > 0 else 0.0))
    return tuple(out)


def _ranked(counts: Iterable[Mapping[str, int]], n: int) -> Ranked:
    return tuple(top(merge(*counts), n).items())


class _Increments:
    """Each counter's increments, computed once per name."""

    def __init__(self, samples: Sequence[HealthSample]) -> None:
        self._samples = samples
        self._by_name: dict[str, list[tuple[datetime, float]]] = {}

    def __call__(self, name: str) -> list[tuple[datetime, float]]:
        found = self._by_name.get(name)
        if found is None:
            found = self._by_name[name] = increments(self._samples, name)
        return found

    def rate(
        self,
        name: str,
        numerator: Sequence[str],
        denominator: Sequence[str],
        start: datetime,
        end: datetime,
    ) -> Rate:
        def total(names: Sequence[str]) -> float:
            return sum(increase(self(n), start, end) for n in names)

        return Rate(name, total(numerator), total(denominator))


# -- the report -----------------------------------------------------------------------


def _l3_points(window: Sequence[HealthSample], gauge: Callable[[str], Series]) -> dict[str, Series]:
    """Points per collection: the embedded indexes' (one per process, added up) and a
    Qdrant server's (one count, whichever process read it), together per bucket."""
    by_collection: dict[str, dict[datetime, float]] = {}
    for prefix in (L3_POINTS, L3_SERVER_POINTS):
        names = {n for s in window for n in s.values if n.startswith(prefix)}
        for name in sorted(names):
            totals = by_collection.setdefault(name[len(prefix) :], {})
            for at, value in gauge(name):
                totals[at] = totals.get(at, 0.0) + value
    return {c: tuple(sorted(totals.items())) for c, totals in sorted(by_collection.items())}


def build_report(samples: Sequence[HealthSample], now: datetime, since: timedelta) -> HealthReport:
    """The report over ``(now - since, now]``; ``samples`` should reach back 14 days
    (week-over-week CER) and may hold older or newer ones, which are ignored."""
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise ValidationError("now", "must be a timezone-aware datetime")
    if not isinstance(since, timedelta) or since <= timedelta(0):
        raise ValidationError("since", "must be a positive timedelta")
    ordered = sorted((s for s in samples if s.at <= now), key=lambda s: s.at)
    start = now - since
    window = [s for s in ordered if s.at > start]
    size = _bucket_for(since)

    def gauge(name: str) -> Series:
        return gauge_series(ordered, name, start, now, size)

    l1 = L1Health(
        sessions=gauge(L1_SESSIONS),
        memory_bytes=gauge(L1_BYTES),
        stale_writes=round(increase(increments(ordered, L1_STALE_WRITES), start, now)),
    )
    l2 = _l2(ordered, window, start, now, size)
    points = _l3_points(window, gauge)
    incs = _Increments(ordered)

    def low_confidence(begin: datetime, end: datetime) -> Rate:
        return incs.rate("low confidence", (RETRIEVALS_LOW_CONFIDENCE,), (RETRIEVALS,), begin, end)

    l3 = L3Health(
        points=MappingProxyType(points),
        growth=tuple(
            CollectionGrowth(c, series[0][1], series[-1][1])
            for c, series in points.items()
            if series
        ),
        low_confidence_queries=_ranked((s.low_confidence_queries for s in window), QUERIES_SHOWN),
        low_confidence_this_week=low_confidence(now - WEEK, now),
        low_confidence_last_week=low_confidence(now - 2 * WEEK, now - WEEK),
        confident_top5=incs.rate(
            "confident top 5", (RETRIEVALS_CONFIDENT_TOP5,), (RETRIEVALS,), start, now
        ),
        context_load_failures=(
            round(increase(incs(CONTEXT_LOAD_FAILURES), start, now))
            if any(CONTEXT_LOAD_FAILURES in s.values for s in window)
            else None
        ),
        search_p99_s=_p99(window, incs, start, now),
    )
    report = HealthReport(
        generated_at=now,
        since=since,
        start=start,
        samples=len(window),
        sources=len({s.source for s in window}),
        bucket=size,
        l1=l1,
        l2=l2,
        l3=l3,
        decisions=_decisions(ordered, start, now, cer_days(since)),
    )
    return replace(report, checks=check_bounds(report))


def _p99(
    window: Sequence[HealthSample], incs: _Increments, start: datetime, now: datetime
) -> float | None:
    """The upper bound of the L3 search latency bucket holding the 99th percentile of
    the window's searches (None: no search in it)."""
    names = {n for s in window for n in s.values if n.startswith(L3_SEARCH_LE)}
    counts = sorted(
        (float(name[len(L3_SEARCH_LE) :]), increase(incs(name), start, now)) for name in names
    )
    total = counts[-1][1] if counts else 0.0  # the +Inf bucket: every search
    if total <= 0:
        return None
    return next(bound for bound, count in counts if count >= P99 * total)


# -- the bounds -------------------------------------------------------------------------

P99 = 0.99
L3_SEARCH_P99_BOUND_S = 0.1
"""Seed 000 §5.2: L3's search latency p99 should stay under 100 ms."""

L2_EXPIRY_BOUND = 0.05
"""Seed 000 §5.2: L2's expired keys should grow by < 5 % a minute."""
CONFIDENT_TOP5_BOUND = 0.70
"""Seed 003 §5.3: under 70 % top-5 hits, fix writing and retrieval first."""


def _check(name: str, rule: str, value: str, flagged: bool | None, source: str) -> BoundCheck:
    status: Status = "no data" if flagged is None else "flagged" if flagged else "ok"
    return BoundCheck(name, rule, value, status, source)


def _points(change: float | None) -> str:
    return "n/a" if change is None else f"{change * 100:+.1f} pts"


def check_bounds(report: HealthReport) -> tuple[BoundCheck, ...]:
    """Every bound of the source articles the report has the numbers for; a bound
    without data in the window is ``no data``, never ``ok``."""
    r = report
    sampled = r.samples > 0
    expiry = r.l2.expiry_rate
    cer_change = r.decisions.cer_change
    low_change = r.l3.low_confidence_change
    top5 = r.l3.confident_top5.value
    failures = r.l3.context_load_failures
    p99 = r.l3.search_p99_s
    return (
        _check(
            "immutable violations (stale writes refused)",
            "= 0",
            str(r.l1.stale_writes) if sampled else "n/a",
            r.l1.stale_writes > 0 if sampled else None,
            "seed 000 §5.3",
        ),
        _check(
            "L2 expiry rate (expired per minute / keys)",
            f"< {L2_EXPIRY_BOUND * 100:.0f} %",
            percent(expiry, 2),
            None if expiry is None else expiry >= L2_EXPIRY_BOUND,
            "seed 000 §5.2",
        ),
        _check(
            "context load failures",
            "= 0",
            number(failures),
            None if failures is None else failures > 0,
            "seed 000 §5.2",
        ),
        _check(
            "L3 search latency p99",
            f"< {L3_SEARCH_P99_BOUND_S * 1000:.0f} ms",
            latency(p99),
            None if p99 is None else p99 > L3_SEARCH_P99_BOUND_S,
            "seed 000 §5.2",
        ),
        _check(
            "CER week over week",
            "not down",
            _points(cer_change),
            None if cer_change is None else cer_change < 0,
            "seed 000 §5.3",
        ),
        _check(
            "low-confidence share of retrievals, week over week",
            "not up",
            _points(low_change),
            None if low_change is None else low_change > 0,
            "seed 003 §4.3, §6.2",
        ),
        _check(
            "retrievals with a confident top 5 (top-5 hit proxy)",
            f">= {CONFIDENT_TOP5_BOUND * 100:.0f} %",
            percent(top5),
            None if top5 is None else top5 < CONFIDENT_TOP5_BOUND,
            "seed 003 §5.3",
        ),
    )


def _l2(
    ordered: Sequence[HealthSample],
    window: Sequence[HealthSample],
    start: datetime,
    now: datetime,
    size: timedelta,
) -> L2Health:
    keys = gauge_series(ordered, L2_KEYS, start, now, size)
    expired = increments(ordered, L2_EXPIRED)
    covered = [at for at, _ in expired if start < at <= now]
    avg: float | None = None
    rate: float | None = None
    if covered:
        first = max(start, ordered[0].at)
        minutes = (covered[-1] - first).total_seconds() / 60
        if minutes > 0:
            avg = increase(expired, start, now) / minutes
            mean_keys = sum(v for _, v in keys) / len(keys) if keys else 0.0
            rate = avg / mean_keys if mean_keys > 0 else None
    return L2Health(
        keys=keys,
        expired_per_minute=rate_series(expired, start, now, size),
        expired_per_minute_avg=avg,
        expiry_rate=rate,
        hot_keys=_ranked((s.hot_keys for s in window), HOT_KEYS_SHOWN),
    )


def cer_days(since: timedelta) -> int:
    """How many days the CER-per-day chart shows for a window of ``since``."""
    return min(CER_DAYS_MAX, max(CER_DAYS, math.ceil(since / timedelta(days=1))))


def _decisions(
    ordered: Sequence[HealthSample], start: datetime, now: datetime, days: int
) -> DecisionHealth:
    steps = (CER_EFFECTIVE, CER_INEFFECTIVE)
    decisions = tuple(decision_name(r) for r in DECISION_ROUTES)

    incs = _Increments(ordered)

    def cer(begin: datetime, end: datetime) -> Rate:
        return incs.rate("cer", (CER_EFFECTIVE,), steps, begin, end)

    daily = tuple(
        (now - timedelta(days=d), cer(now - timedelta(days=d + 1), now - timedelta(days=d)))
        for d in range(days - 1, -1, -1)
    )
    executed = tuple(tool_name(o) for o in EXECUTED_OUTCOMES)
    rates = (
        incs.rate("tool success", (tool_name("done"),), executed, start, now),
        incs.rate("correction", (feedback_name("corrected"),), decisions, start, now),
        incs.rate("fallback", (FALLBACKS,), executed, start, now),
        incs.rate("ask", (decision_name("ask"),), decisions, start, now),
    )
    return DecisionHealth(
        cer_this_week=cer(now - WEEK, now),
        cer_last_week=cer(now - 2 * WEEK, now - WEEK),
        cer_daily=daily,
        rates=rates,
    )


# -- Markdown -------------------------------------------------------------------------


def percent(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value * 100:.{digits}f}%"


def latency(seconds: float | None) -> str:
    """A histogram bucket's upper bound as a latency: ``<= 2.5 ms``."""
    if seconds is None:
        return "n/a"
    if math.isinf(seconds):
        return "beyond the last bucket"
    return f"<= {seconds * 1000:g} ms"


def number(value: float | None) -> str:
    if value is None:
        return "n/a"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def size_bytes(value: float | None) -> str:
    if value is None:
        return "n/a"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GiB"  # pragma: no cover - the loop always returns


def _md(text: str) -> str:
    """Table-cell text: pipes and backticks escaped, one line."""
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def _last(series: Series) -> float | None:
    return series[-1][1] if series else None


def _span(series: Series, fmt: Callable[[float | None], str] = number) -> str:
    if not series:
        return "n/a"
    values = [v for _, v in series]
    return f"{fmt(min(values))} - {fmt(max(values))}"


# -- table rows, shared by the Markdown and the HTML ------------------------------------

GROWTH_COLUMNS = ("collection", "points at start", "points now", "growth", "growth %")


def growth_rows(report: HealthReport) -> list[tuple[str, ...]]:
    return [
        (g.collection, number(g.first), number(g.last), f"{g.growth:+,.0f}", percent(g.growth_rate))
        for g in report.l3.growth
    ]


def rate_row(label: str, rate: Rate) -> tuple[str, str, str]:
    return (label, percent(rate.value), f"{number(rate.numerator)} / {number(rate.denominator)}")


def cer_rows(report: HealthReport) -> list[tuple[str, str, str]]:
    d = report.decisions
    change = d.cer_change
    return [
        rate_row("this week", d.cer_this_week),
        rate_row("last week", d.cer_last_week),
        ("week over week", "n/a" if change is None else f"{change * 100:+.1f} pts", ""),
    ]


def rate_rows(report: HealthReport) -> list[tuple[str, str, str]]:
    return [rate_row(rate.name, rate) for rate in report.decisions.rates]


CHECK_COLUMNS = ("bound", "rule", "value", "status", "source")


def check_rows(report: HealthReport) -> list[tuple[str, str, str, str, str]]:
    return [(c.name, c.rule, c.value, c.status, c.source) for c in report.checks]


def flags_line(report: HealthReport) -> str:
    """One line: the bounds broken, with their values, or that none is."""
    flags = report.flags
    if not flags:
        return "No bound flagged."
    listed = "; ".join(f"{f.name}: {f.value} (bound: {f.rule})" for f in flags)
    return f"{len(flags)} bound(s) flagged: {listed}."


def retrieval_rows(report: HealthReport) -> list[tuple[str, str, str]]:
    l3 = report.l3
    return [
        rate_row("low-confidence share, this week", l3.low_confidence_this_week),
        rate_row("low-confidence share, last week", l3.low_confidence_last_week),
        ("low-confidence share, week over week", _points(l3.low_confidence_change), ""),
        rate_row(f"confident top 5 (last {format_duration(report.since)})", l3.confident_top5),
        ("context load failures", number(l3.context_load_failures), ""),
        ("L3 search latency p99 (histogram bucket)", latency(l3.search_p99_s), ""),
    ]


def render_markdown(report: HealthReport) -> str:
    """``context_health_report.md``."""
    r = report
    lines = [
        "# Context health report",
        "",
        f"Generated {r.generated_at.isoformat(timespec='seconds')} for the last "
        f"{format_duration(r.since)} (from {r.start.isoformat(timespec='seconds')}): "
        f"{r.samples:,} samples from {r.sources} process(es), charts in "
        f"{format_duration(r.bucket)} buckets.",
        "",
        "## Bounds",
        "",
        f"**{_md(flags_line(r))}**" if r.flags else flags_line(r),
        "",
        *_table(
            CHECK_COLUMNS,
            [
                (c.name, c.rule, c.value, "**FLAGGED**" if c.flagged else c.status, c.source)
                for c in r.checks
            ],
        ),
        "",
        "## L1 - session state",
        "",
        "| measure | now | range |",
        "| --- | ---: | ---: |",
        f"| open sessions | {number(_last(r.l1.sessions))} | {_span(r.l1.sessions)} |",
        f"| approx. L1 memory | {size_bytes(_last(r.l1.memory_bytes))} | "
        f"{_span(r.l1.memory_bytes, size_bytes)} |",
        "",
        f"Immutable violations (stale compare-and-set writes refused): "
        f"**{r.l1.stale_writes}** (should be 0).",
        "",
        "## L2 - working memory",
        "",
        "| measure | value |",
        "| --- | ---: |",
        f"| keys now | {number(_last(r.l2.keys))} |",
        f"| keys (range) | {_span(r.l2.keys)} |",
        f"| expired keys per minute (mean) | {number(r.l2.expired_per_minute_avg)} |",
        f"| expiry rate (expired per minute / keys) | {percent(r.l2.expiry_rate, 2)} |",
        "",
        f"### Top {HOT_KEYS_SHOWN} hot keys (reads per key family)",
        "",
    ]
    total_reads = sum(n for _, n in r.l2.hot_keys) or 1
    lines += _table(
        ("#", "key family", "reads", "share"),
        [
            (str(i), f"`{_md(k)}`", f"{n:,}", percent(n / total_reads))
            for i, (k, n) in enumerate(r.l2.hot_keys, 1)
        ],
    )
    lines += [
        "",
        "## L3 - long-term memory",
        "",
    ]
    lines += _table(GROWTH_COLUMNS, growth_rows(r))
    lines += [""]
    lines += _table(("retrievals", "value", "count / of"), retrieval_rows(r))
    lines += ["", f"### Top {QUERIES_SHOWN} low-confidence queries (review these)", ""]
    lines += _table(
        ("#", "query (sanitized)", "count"),
        [(str(i), _md(q), f"{n:,}") for i, (q, n) in enumerate(r.l3.low_confidence_queries, 1)],
    )
    lines += ["", "## Decisions", ""]
    lines += _table(("CER (context effectiveness rate)", "value", "effective / steps"), cer_rows(r))
    lines += [""]
    lines += _table(
        (f"rate (last {format_duration(r.since)})", "value", "count / of"), rate_rows(r)
    )
    lines += [""]
    return "\n".join(lines)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ["_none recorded_"]
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
