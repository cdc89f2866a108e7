"""The health report as an operator reads it (issue 25): immutable violations are only
the writes that were refused, every day of the CER chart has its bar, the L3 legend
names every collection, and each seed bound the report can check is flagged."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.health import HealthSample, build_report, render_html
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
