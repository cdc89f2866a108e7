"""The health report as an operator reads it (issue 25): immutable violations are only
the writes that were refused, every day of the CER chart has its bar, the L3 legend
names every collection, and each seed bound the report can check is flagged."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.health import HealthSample, build_report, render_html, render_markdown
from memstrata.longterm.points import COLLECTIONS
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


class _Svg(HTMLParser):
    """One chart of a rendered page: its size, its bars, its texts with their x."""

    def __init__(self, series: str) -> None:
        super().__init__()
        self._series = series
        self._inside = False
        self._text_x: float | None = None
        self.width = 0.0
        self.bars: list[dict[str, str]] = []
        self.texts: list[tuple[float, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg":
            self._inside = a.get("data-series") == self._series
            if self._inside:
                self.width = float(a["width"])
        elif self._inside and tag == "rect" and "bar" in a.get("class", "").split():
            self.bars.append(a)
        elif self._inside and tag == "text":
            self._text_x = float(a["x"])

    def handle_data(self, data: str) -> None:
        if self._inside and self._text_x is not None:
            self.texts.append((self._text_x, data))
            self._text_x = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._inside = False


def _chart(page: str, series: str) -> _Svg:
    parsed = _Svg(series)
    parsed.feed(page)
    assert parsed.width, f"no chart {series}"
    return parsed


NOW = datetime(2025, 6, 16, 12, 0, tzinfo=UTC)
CHAR_W = 5.5
"""About the width of one character of a 10 px sans-serif label."""


def _cer_samples(days_ago: int, effective: int, steps: int) -> list[HealthSample]:
    """A baseline and one sample ``days_ago`` days back with its CER steps."""
    at = NOW - timedelta(days=days_ago, hours=1)
    zero = {"cer.effective": 0.0, "cer.ineffective": 0.0}
    counted = {"cer.effective": float(effective), "cer.ineffective": float(steps - effective)}
    return [
        HealthSample(at - timedelta(minutes=1), zero, source="p"),
        HealthSample(at, counted, source="p"),
    ]


@pytest.mark.parametrize(("since", "days"), [(timedelta(days=1), 14), (timedelta(days=30), 30)])
def test_cer_per_day_has_one_bar_for_every_day(since: timedelta, days: int) -> None:
    """Steps on one day only: the chart still has a bar per day of the window, the
    days without steps as empty bars (before: one bar, 14 days whatever the window)."""
    report = build_report(_cer_samples(0, 9, 10), NOW, since)
    assert len(report.decisions.cer_daily) == days
    chart = _chart(render_html(report), "decisions.cer_daily")
    assert len(chart.bars) == days
    empty = [b for b in chart.bars if "empty" in b["class"].split()]
    assert len(empty) == days - 1
    filled = [b for b in chart.bars if b not in empty]
    assert float(filled[0]["height"]) > 100  # 90 % of the plot
    assert float(filled[0]["x"]) == max(float(b["x"]) for b in chart.bars)  # today, last
    assert all(float(b["x"]) + float(b["width"]) <= chart.width for b in chart.bars)


def test_the_l3_legend_names_every_collection_inside_the_chart(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    """The engine's four collections, the cold one included, each named in the legend
    within the chart (before: the fourth, ``memories_cold``, was drawn off its edge)."""
    clock = FakeClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    engine = engine_opener(clock=clock)
    engine.add_knowledge(["Pump P-7 vibration limit: 3.5 mm/s."], source="manual")
    engine.record_health_sample()
    clock.advance(61)
    engine.record_health_sample()
    report = engine.health_report(since=timedelta(hours=1))
    assert set(report.l3.points) == set(COLLECTIONS)
    chart = _chart(render_html(report), "l3.points")
    for collection in COLLECTIONS:
        (x,) = [x for x, text in chart.texts if text == collection]
        assert x + CHAR_W * len(collection) <= chart.width, collection


def _two_weeks(*, healthy: bool) -> list[HealthSample]:
    """Hourly samples over 14 days. Unhealthy: 30 % of L2's keys expire a minute, CER
    drops from 90 % to 80 %, the low-confidence share rises from 10 % to 30 %, half
    the retrievals have a confident top 5, one context fails to load, 2 % of the L3
    searches take over 100 ms (up to 250)."""
    start = NOW - timedelta(days=14)
    samples = []
    totals = dict.fromkeys(
        (
            "l2.expired_keys",
            "cer.effective",
            "cer.ineffective",
            "retrievals",
            "retrievals.low_confidence",
            "retrievals.confident_top5",
            "context.load_failures",
            *(f"l3.search_le.{le}" for le in ("0.0025", "0.1", "0.25", "+Inf")),
        ),
        0.0,
    )
    for hour in range(14 * 24 + 1):
        at = start + timedelta(hours=hour)
        this_week = at > NOW - timedelta(days=7)
        if hour:
            totals["l2.expired_keys"] += 60 * (1 if healthy else 30)
            good = 9 if healthy or not this_week else 8
            totals["cer.effective"] += good
            totals["cer.ineffective"] += 10 - good
            totals["retrievals"] += 10
            totals["retrievals.low_confidence"] += 1 if healthy or not this_week else 3
            totals["retrievals.confident_top5"] += 9 if healthy else 5
            if not healthy and hour == 14 * 24:
                totals["context.load_failures"] += 1
            fast = 100 if healthy else 98  # of 100 searches, the rest at <= 250 ms
            totals["l3.search_le.0.0025"] += fast
            totals["l3.search_le.0.1"] += fast
            totals["l3.search_le.0.25"] += 100
            totals["l3.search_le.+Inf"] += 100
        values = {"l2.keys": 100.0, "l1.stale_writes": 0.0, **totals}
        samples.append(HealthSample(at, values, source="p"))
    return samples


def test_every_seed_bound_is_flagged_in_the_text_and_the_page() -> None:
    report = build_report(_two_weeks(healthy=False), NOW, timedelta(days=7))
    assert report.l2.expiry_rate == pytest.approx(0.30)
    flagged = {c.name: c for c in report.flags}
    assert set(flagged) == {
        "L2 expiry rate (expired per minute / keys)",
        "context load failures",
        "CER week over week",
        "low-confidence share of retrievals, week over week",
        "retrievals with a confident top 5 (top-5 hit proxy)",
        "L3 search latency p99",
    }
    assert flagged["L2 expiry rate (expired per minute / keys)"].value == "30.00%"
    assert flagged["CER week over week"].value == "-10.0 pts"
    assert flagged["low-confidence share of retrievals, week over week"].value == "+20.0 pts"
    assert flagged["L3 search latency p99"].value == "<= 250 ms"
    assert {c.name: c.status for c in report.checks}[
        "immutable violations (stale writes refused)"
    ] == "ok"

    markdown = render_markdown(report)
    assert "**6 bound(s) flagged:" in markdown
    assert "| L2 expiry rate (expired per minute / keys) | < 5 % | 30.00% | **FLAGGED** |" in (
        markdown
    )
    page = render_html(report)
    assert '<p class="flags bad">6 bound(s) flagged:' in page
    rows = re.findall(r'<tr class="check flagged"><td>([^<]+)</td>', page)
    assert set(rows) == set(flagged)


def test_a_healthy_window_flags_nothing_and_no_data_is_not_ok() -> None:
    report = build_report(_two_weeks(healthy=True), NOW, timedelta(days=7))
    assert report.flags == ()
    assert {c.status for c in report.checks} == {"ok"}
    assert "No bound flagged." in render_markdown(report)
    assert '<p class="flags good">No bound flagged.</p>' in render_html(report)
    # Without samples, a bound is not met: it is unknown.
    empty = build_report([], NOW, timedelta(days=7))
    assert {c.status for c in empty.checks} == {"no data"}


def test_the_engine_records_what_the_retrieval_bounds_need(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    """Through the engine: a week of confident retrievals, then a week where most
    are low-confidence: the share's rise is flagged, in English and Chinese queries."""
    clock = FakeClock(NOW - timedelta(days=14))
    engine = engine_opener(clock=clock)
    engine.add_knowledge(
        ["Pump P-7 vibration limit: 3.5 mm/s.", "泵 P-7 的振动限值为 3.5 毫米每秒。"],
        source="manual",
    )
    engine.record_health_sample()
    clock.advance(3600)
    for query in ("pump P-7 vibration limit", "泵 P-7 的振动限值", "vibration limit of P-7"):
        engine.retrieve(query, collection="knowledge")
    engine.record_health_sample()
    clock.advance(8 * 86_400)
    engine.record_health_sample()
    clock.advance(3600)
    for query in ("zebra invoice colour", "斑马发票的颜色", "pump P-7 vibration limit"):
        engine.retrieve(query, collection="knowledge")
    engine.record_health_sample()
    report = engine.health_report(since=timedelta(days=7))
    l3 = report.l3
    assert l3.low_confidence_this_week.denominator == 3
    assert l3.low_confidence_last_week.denominator == 3
    assert l3.low_confidence_this_week.numerator > l3.low_confidence_last_week.numerator
    assert "low-confidence share of retrievals, week over week" in {c.name for c in report.flags}
    assert "low-confidence share of retrievals, week over week" in render_markdown(report)
    assert l3.search_p99_s is not None  # the searches' latency was recorded


def test_memstrata_report_prints_the_flags(
    engine_opener: Callable[..., ContextEngine], tmp_path: Path
) -> None:
    """The CLI names each flagged bound (and --json lists them), so a scheduled run's
    log shows a broken bound without opening the page."""
    data, out = tmp_path / "data", tmp_path / "out"
    engine = engine_opener(data_dir=data)
    sid = engine.start_session("u1", "check the pumps").session_id
    engine.record_health_sample()
    stale = engine.session(sid)
    engine.update_session(sid, lambda s: dataclasses.replace(s, current_step=1))
    assert not engine.parts.sessions.compare_and_set(
        stale, dataclasses.replace(stale, current_step=9)
    )
    engine.record_health_sample()
    engine.close()

    from memstrata.cli import app

    args = ["report", "--since", "24h", "--out", str(out), "--data-dir", str(data)]
    printed = CliRunner().invoke(app, [*args, "--json"])
    assert printed.exit_code == 0, printed.output
    flags = json.loads(printed.stdout)["flags"]
    assert "immutable violations (stale writes refused): 1 (bound: = 0, seed 000 §5.3)" in flags
    # The CLI's report is a new process: its baseline is its own first sample.
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "FLAGGED immutable violations (stale writes refused): 1" in text.stdout
