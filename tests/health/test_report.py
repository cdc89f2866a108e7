"""The report built from the scripted 14 days: every number against the oracle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.health.scripted import QUERIES, WEEK_MINUTES, Script

from memstrata.errors import ValidationError
from memstrata.health import (
    HealthSample,
    build_report,
    parse_duration,
    render_html,
    render_markdown,
)
from memstrata.health.report import increase, increments

WEEK = timedelta(days=7)


def test_cer_week_over_week(script: Script) -> None:
    report = build_report(script.samples, script.now, WEEK)
    d = report.decisions
    last_minute = 2 * WEEK_MINUTES
    assert d.cer_this_week.numerator == script.total("cer.effective", WEEK_MINUTES + 1, last_minute)
    assert d.cer_this_week.denominator == WEEK_MINUTES
    assert d.cer_last_week.numerator == script.total("cer.effective", 1, WEEK_MINUTES)
    assert d.cer_last_week.denominator == WEEK_MINUTES
    assert d.cer_this_week.value == pytest.approx(0.9)
    assert d.cer_last_week.value == pytest.approx(0.8)
    assert d.cer_change == pytest.approx(0.1)
    # Day by day: the first 7 days at 80 %, the last 7 at 90 %.
    assert [round(rate.value or 0, 3) for _, rate in d.cer_daily] == [0.8] * 7 + [0.9] * 7


def test_decision_rates_over_the_window(script: Script) -> None:
    report = build_report(script.samples, script.now, WEEK)
    first, last = WEEK_MINUTES + 1, 2 * WEEK_MINUTES
    decisions = sum(script.total(f"decisions.{r}", first, last) for r in ("answer", "tool", "ask"))
    executed = script.total("tool_calls.done", first, last) + script.total(
        "tool_calls.cannot_complete", first, last
    )
    rates = {rate.name: rate for rate in report.decisions.rates}
    assert rates["tool success"].numerator == script.total("tool_calls.done", first, last)
    # Calls that ran: neither held, rejected nor blocked ones (decision_rates' rule).
    assert rates["tool success"].denominator == executed
    assert rates["fallback"].numerator == script.total("fallbacks", first, last)
    assert rates["fallback"].denominator == executed
    assert rates["correction"].numerator == script.total("feedback.corrected", first, last)
    assert rates["ask"].numerator == script.total("decisions.ask", first, last)
    for name in ("correction", "ask"):
        assert rates[name].denominator == decisions
    assert rates["tool success"].value == pytest.approx(2 / 3, abs=1e-3)


def test_layers(script: Script) -> None:
    report = build_report(script.samples, script.now, WEEK)
    assert report.samples == WEEK_MINUTES + 1  # one a minute, and proc-b's baseline
    assert report.sources == 2
    assert report.bucket == timedelta(hours=1)
    # L1: the two stale writes of this week; open sessions per hour.
    assert report.l1.stale_writes == 2
    assert len(report.l1.sessions) == 168
    # Each hour ends on 5 to 7 sessions (proc-a's last hour and proc-b's first are apart).
    assert {v for _, v in report.l1.sessions} <= {5.0, 6.0, 7.0}
    # L2: 3 keys expire a minute out of 300.
    assert report.l2.expired_per_minute_avg == pytest.approx(3.0)
    assert report.l2.expiry_rate == pytest.approx(0.01)
    assert {round(v, 6) for _, v in report.l2.expired_per_minute} == {3.0}
    # Top 10 hot keys, most read first, counts summed over the window's samples.
    assert report.l2.hot_keys == tuple(
        (f"wm:*:result:step{k}", (k + 1) * WEEK_MINUTES) for k in range(11, 1, -1)
    )
    # L3: memories grow one point an hour.
    growth = {g.collection: g for g in report.l3.growth}
    assert growth["knowledge"].growth == 0
    assert growth["memories"].last == 1_000 + 2 * WEEK_MINUTES // 60
    assert growth["memories"].growth == pytest.approx(167, abs=1)
    # Top 5 low-confidence queries, most frequent first.
    expected = sorted(QUERIES, key=lambda q: QUERIES[q])[:5]
    assert [q for q, _ in report.l3.low_confidence_queries] == expected
    every = QUERIES[expected[0]]
    assert report.l3.low_confidence_queries[0][1] == WEEK_MINUTES // every


def test_markdown_and_html_carry_the_numbers(script: Script) -> None:
    report = build_report(script.samples, script.now, WEEK)
    markdown = render_markdown(report)
    assert "| this week | 90.0% | 9,072 / 10,080 |" in markdown
    assert "| last week | 80.0% | 8,064 / 10,080 |" in markdown
    assert "+10.0 pts" in markdown
    assert "`wm:*:result:step11`" in markdown
    assert "**2**" in markdown  # stale writes
    page = render_html(report)
    assert page.count('<svg class="chart"') == 9
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "https://" not in page


def test_a_shorter_window_uses_finer_buckets(script: Script) -> None:
    report = build_report(script.samples, script.now, timedelta(hours=24))
    assert report.bucket == timedelta(minutes=15)
    assert len(report.l2.keys) == 96
    assert report.decisions.cer_this_week.value == pytest.approx(0.9)  # still a week


def test_counter_restarts_and_the_shared_counter() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)

    def sample(minute: int, source: str, **values: float) -> HealthSample:
        return HealthSample(t0 + timedelta(minutes=minute), values, source=source)

    samples = [
        sample(0, "a", fallbacks=10, **{"l2.expired_keys": 100}),
        sample(1, "b", fallbacks=50, **{"l2.expired_keys": 104}),
        sample(2, "a", fallbacks=12, **{"l2.expired_keys": 110}),
        sample(3, "b", fallbacks=55, **{"l2.expired_keys": 111}),
        sample(4, "a", fallbacks=3, **{"l2.expired_keys": 115}),  # a restarted: +3
    ]
    fallbacks = increments(samples, "fallbacks")
    assert [inc for _, inc in fallbacks] == [2, 5, 3]
    expired = increments(samples, "l2.expired_keys")  # one server, whichever process read it
    assert [inc for _, inc in expired] == [4, 6, 1, 4]
    assert increase(expired, t0, t0 + timedelta(minutes=2)) == 10


def test_gauges_add_up_processes_but_not_the_server() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    samples = [
        HealthSample(t0 + timedelta(seconds=10), {"l1.sessions": 3, "l2.keys": 40}, source="a"),
        HealthSample(t0 + timedelta(seconds=20), {"l1.sessions": 4, "l2.keys": 41}, source="b"),
        HealthSample(t0 + timedelta(seconds=30), {"l1.sessions": 5, "l2.keys": 42}, source="a"),
    ]
    report = build_report(samples, t0 + timedelta(minutes=30), timedelta(minutes=30))
    assert report.bucket == timedelta(minutes=1)
    assert [v for _, v in report.l1.sessions] == [9.0]  # a's last (5) + b's last (4)
    assert [v for _, v in report.l2.keys] == [42.0]  # one server: its last reading


def test_l3_points_add_up_embedded_indexes_but_not_a_qdrant_server() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)

    def at(second: int, source: str, **values: float) -> HealthSample:
        return HealthSample(t0 + timedelta(seconds=second), values, source=source)

    embedded = [at(10, "a", **{"l3.points.memories": 7}), at(20, "b", **{"l3.points.memories": 5})]
    server = [
        at(10, "a", **{"l3.server_points.memories": 100}),
        at(20, "b", **{"l3.server_points.memories": 101}),
    ]
    window = timedelta(minutes=30)
    own = build_report(embedded, t0 + window, window).l3
    assert [v for _, v in own.points["memories"]] == [12.0]  # two processes' own shards
    shared = build_report(server, t0 + window, window).l3
    assert [v for _, v in shared.points["memories"]] == [101.0]  # one server, read twice
    assert [(g.collection, g.last) for g in shared.growth] == [("memories", 101.0)]


def test_samples_outside_the_window_and_empty_reports() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    report = build_report([], now, WEEK)
    assert report.samples == 0 and report.decisions.cer_this_week.value is None
    assert "n/a" in render_markdown(report)
    assert render_html(report).count('<svg class="chart"') == 9
    future = HealthSample(now + timedelta(minutes=1), {"l2.keys": 5})
    assert build_report([future], now, WEEK).l2.keys == ()


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("24h", 86400), ("7d", 604800), ("2w", 1209600)]
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


# Past six digits a timedelta may not hold it; digits are ASCII (the wire says the same).
@pytest.mark.parametrize("text", ["", "7", "0d", "-1d", "7y", "d7", "9999999w", "\u0663d", " 7d"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_duration(text)
