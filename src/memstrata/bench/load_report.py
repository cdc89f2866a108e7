"""What ``memstrata bench load`` reports: per phase, operation and time slice from the
callers' records; RSS, queue, L2 and breaker from the sampler's timeline; and a soak's
windows with the slope and last-over-first ratio of each series."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from memstrata.bench.load_calls import OK, CallerResult, Stream, allowed
from memstrata.bench.stats import percentile

TIMELINE_COLUMNS = (
    "t_s",
    "server_rss_mib",
    "valkey_rss_mib",
    "queue_lag",
    "queue_pending",
    "queue_length",
    "queue_dead_lettered",
    "l2_keys",
    "l2_expired_total",
    "l3_breaker",
    "degraded_reads_total",
    "l3_points",
)


def _ms(samples: Sequence[float], q: float) -> float | None:
    return round(percentile(samples, q) * 1e3, 2) if samples else None


def errors_of(outcomes: Counter[str]) -> dict[str, Any]:
    """Failed requests by outcome, and how many of them are not a typed 429/503."""
    failed = {k: n for k, n in sorted(outcomes.items()) if k != OK}
    return {
        "errors": failed,
        "unexpected_errors": sum(n for k, n in failed.items() if not allowed(k)),
    }


SLICES = 10
SLICE_COLUMNS = ["from_s", "requests", "p50_ms", "p99_ms"]
"""Each phase is also summarized in ``SLICES`` equal slices of its time (by schedule)."""


def stream_summary(stream: Stream, results: Sequence[CallerResult]) -> dict[str, Any]:
    """Per phase and operation: requests, req/s, p50/p99 ms, errors by outcome; and
    each phase's slices over time."""
    phases = []
    begin = 0.0
    for p, phase in enumerate(stream.phases):
        records = [r for c in results for r in c.records if r[0] == p]
        width = phase.seconds / SLICES
        sliced: list[list[tuple[float, str]]] = [[] for _ in range(SLICES)]
        for r in records:
            k = min(SLICES - 1, max(0, int((r[2] - begin) / width)))
            sliced[k].append((r[3], r[4]))
        slices = [
            [round(k * width, 1), len(rows), _ms(good, 50), _ms(good, 99)]
            for k, rows in enumerate(sliced)
            for good in ([lat for lat, o in rows if o == OK],)
        ]
        begin += phase.seconds
        by_op: dict[str, list[tuple[float, str]]] = {}
        for _, name, _, latency, outcome in records:
            by_op.setdefault(name, []).append((latency, outcome))
        operations = {}
        for name, rows in sorted(by_op.items()):
            good = [lat for lat, o in rows if o == OK]
            operations[name] = {
                "requests": len(rows),
                "req_per_s": round(len(rows) / phase.seconds, 2),
                "p50_ms": _ms(good, 50),
                "p99_ms": _ms(good, 99),
            } | errors_of(Counter(o for _, o in rows))
        good_all = [r[3] for r in records if r[4] == OK]
        phases.append(
            {
                "name": phase.name,
                "seconds": phase.seconds,
                "offered_req_per_s": round(phase.rate, 2),
                "requests": len(records),
                "req_per_s": round(len(records) / phase.seconds, 2),
                "ok_per_s": round(len(good_all) / phase.seconds, 2),
                "missed": sum(c.missed[p] for c in results),
                "p50_ms": _ms(good_all, 50),
                "p99_ms": _ms(good_all, 99),
            }
            | errors_of(Counter(r[4] for r in records))
            | {"operations": operations, "slices": {"columns": SLICE_COLUMNS, "rows": slices}}
        )
    return {
        "script": stream.script,
        "callers": stream.callers,
        "sessions_started": sum(c.sessions for c in results),
        "sessions_completed": sum(c.completed for c in results),
        "phases": phases,
    }


def _column(rows: Sequence[tuple[float | None, ...]], name: str) -> list[tuple[float, float]]:
    i = TIMELINE_COLUMNS.index(name)
    return [(float(r[0] or 0.0), float(v)) for r in rows if len(r) > i and (v := r[i]) is not None]


def _span(points: Sequence[tuple[float, float]]) -> dict[str, float | None]:
    values = [v for _, v in points]
    if not values:
        return {"first": None, "max": None, "last": None}
    return {"first": values[0], "max": max(values), "last": values[-1]}


def timeline_summary(rows: Sequence[tuple[float | None, ...]]) -> dict[str, Any]:
    """RSS, queue backlog, L2 expiry and the L3 breaker over the rows of one scenario."""
    backlog_points = [
        (float(r[0] or 0.0), float((r[3] or 0) + (r[4] or 0)))
        for r in rows
        if r[3] is not None or r[4] is not None
    ]
    keys = _column(rows, "l2_keys")
    expired = _column(rows, "l2_expired_total")
    l2: dict[str, Any] = {"keys": _span(keys)}
    if len(expired) >= 2 and expired[-1][0] > expired[0][0]:
        minutes = (expired[-1][0] - expired[0][0]) / 60
        per_minute = (expired[-1][1] - expired[0][1]) / minutes
        mean_keys = sum(v for _, v in keys) / len(keys) if keys else 0.0
        l2 |= {
            "expired": expired[-1][1] - expired[0][1],
            "expired_per_minute": round(per_minute, 2),
            "expiry_rate": round(per_minute / mean_keys, 4) if mean_keys else None,
        }
    breaker = _column(rows, "l3_breaker")
    degraded = _column(rows, "degraded_reads_total")
    return {
        "rss_mib": {
            "server": _span(_column(rows, "server_rss_mib")),
            "valkey": _span(_column(rows, "valkey_rss_mib")),
        },
        "queue_backlog": _span(backlog_points),
        "queue_dead_lettered": _span(_column(rows, "queue_dead_lettered")),
        "l3_points": _span(_column(rows, "l3_points")),
        "l2": l2,
        "l3_breaker_not_closed_share": (
            round(sum(1 for _, v in breaker if v > 0) / len(breaker), 3) if breaker else None
        ),
        "degraded_reads": (degraded[-1][1] - degraded[0][1]) if len(degraded) >= 2 else None,
    }


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, value), per hour."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return None
    return round(sum((t - mx) * (v - my) for t, v in points) / var * 3600, 3)


FLAT = {"server_rss_mib": 1.10, "valkey_rss_mib": 1.10, "p99_ms": 1.5}
"""Last-window over first-window ratios under which a soak series counts as flat."""
FLAT_BACKLOG_ENTRIES = 100.0
"""The queue backlog is flat when its last window's mean is within this of the first's."""


def soak_summary(
    rows: Sequence[tuple[float | None, ...]],
    results: Sequence[CallerResult],
    seconds: float,
    windows_n: int,
) -> dict[str, Any]:
    """Per window: p50/p99 of every request, mean RSS and backlog; then for each series
    its slope per hour, the last window over the first, and whether it stayed flat."""
    width = seconds / windows_n
    windows: list[dict[str, float | None]] = []
    for w in range(windows_n):
        lo, hi = w * width, (w + 1) * width
        lat = [r[3] for c in results for r in c.records if lo <= r[2] < hi and r[4] == OK]
        inside = [r for r in rows if r[0] is not None and lo <= float(r[0]) < hi]

        def mean(name: str, inside: list[tuple[float | None, ...]] = inside) -> float | None:
            values = [v for _, v in _column(inside, name)]
            return round(sum(values) / len(values), 1) if values else None

        lags = [float((r[3] or 0) + (r[4] or 0)) for r in inside if r[3] is not None]
        windows.append(
            {
                "from_s": round(lo, 1),
                "p50_ms": _ms(lat, 50),
                "p99_ms": _ms(lat, 99),
                "server_rss_mib": mean("server_rss_mib"),
                "valkey_rss_mib": mean("valkey_rss_mib"),
                "queue_backlog": round(sum(lags) / len(lags), 1) if lags else None,
                "l3_points": mean("l3_points"),
            }
        )
    trends: dict[str, Any] = {}
    for name in ("server_rss_mib", "valkey_rss_mib", "queue_backlog", "p99_ms", "l3_points"):
        series = [
            (float(w["from_s"] or 0.0) + width / 2, float(v))
            for w in windows
            if (v := w[name]) is not None
        ]
        first, last = (series[0][1], series[-1][1]) if series else (None, None)
        ratio = round(last / first, 3) if first and last is not None else None
        if name == "l3_points":  # stored data: it grows by design, RSS is judged beside it
            flat = None
        elif name == "queue_backlog":
            flat = None if first is None or last is None else last - first <= FLAT_BACKLOG_ENTRIES
        else:
            flat = None if ratio is None else ratio <= FLAT[name]
        trends[name] = {
            "first_window": first,
            "last_window": last,
            "last_over_first": ratio,
            "slope_per_hour": slope_per_hour(series),
            "flat": flat,
        }
    return {"windows": windows, "trends": trends}
