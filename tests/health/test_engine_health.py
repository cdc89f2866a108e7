"""The engine records health samples itself, counts hot keys and low-confidence
queries, and no secret or PII it saw reaches Valkey or the report."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.health import HEALTH_STREAM, build_sample, render_html, render_markdown
from memstrata.health.sampler import EngineReadings, sample_values
from memstrata.working.backend import BackendInfo

EMAIL = "maria.lopez@example.com"
API_KEY = "sk_live_51HxQz8Kp2mWv7Rt9YbN3cLd"
SECRET_QUERY = f"why did the zebra invoice from {EMAIL} fail with key {API_KEY}"


def _stream(engine: ContextEngine) -> list[tuple[str, dict[str, str]]]:
    client = engine.parts.working_memory.backend.client  # type: ignore[attr-defined]
    assert isinstance(client, redis.Redis)
    return client.xrange(HEALTH_STREAM)  # type: ignore[return-value]


def test_samples_hot_keys_and_sanitized_queries(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    clock = FakeClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    engine = engine_opener(clock=clock)
    engine.add_knowledge(
        ["Boiler B-2 must be descaled every 90 days.", "Pump P-7 vibration limit: 3.5 mm/s."],
        source="manual",
    )
    # The first retrieval takes the first sample, at once.
    result = engine.retrieve(SECRET_QUERY, collection="knowledge")
    assert result.l3_skipped or result.items[0].low_confidence
    assert len(_stream(engine)) == 1

    session = engine.start_session("u1", "check the pumps")
    wm = engine.working(session.session_id)
    wm.put_step_result("step5", {"device": "P-7"})
    wm.put_api_response("https://api.example/readings", {"device": "P-7"}, {"mm_s": 3.1})
    for _ in range(3):
        wm.get_step_result("step5")
    wm.get_api_response("https://api.example/readings", {"device": "P-7"})
    other = engine.working(engine.start_session("u2", "x").session_id)
    other.put_step_result("step5", {"device": "B-2"})
    other.get_step_result("step5")

    # A stale compare-and-set write: refused, counted.
    stale = engine.session(session.session_id)
    engine.update_session(session.session_id, lambda s: dataclasses.replace(s, current_step=1))
    assert not engine.parts.sessions.compare_and_set(
        stale, dataclasses.replace(stale, current_step=9)
    )

    clock.advance(30)  # not due yet: no sample, no Valkey round trip
    engine.retrieve(SECRET_QUERY, collection="knowledge")
    assert len(_stream(engine)) == 1
    clock.advance(31)  # a minute since the first: the next call samples
    engine.retrieve("what is the vibration limit of pump P-7", collection="knowledge")
    stream = _stream(engine)
    assert len(stream) == 2

    report = engine.health_report(since=timedelta(hours=1))
    assert report.samples == 2
    assert dict(report.l2.hot_keys)["wm:*:result:step5"] == 4
    assert dict(report.l2.hot_keys)["wm:*:api:*"] == 1
    assert report.l1.stale_writes == 1
    assert report.l1.sessions[-1][1] == 2
    assert report.l1.memory_bytes[-1][1] > 100
    queries = dict(report.l3.low_confidence_queries)
    assert len(queries) == 1
    ((query, count),) = queries.items()
    assert count == 2
    assert "[REDACTED:" in query and "zebra invoice" in query

    # Neither the email nor the key reached Valkey, the Markdown or the page.
    raw = repr(stream)
    markdown, page = render_markdown(report), render_html(report)
    for text in (raw, markdown, page):
        assert EMAIL not in text and API_KEY not in text
        assert "maria.lopez" not in text and "sk_live" not in text
    assert "zebra invoice" in markdown and "zebra invoice" in page
    sample = engine.record_health_sample()  # explicit samples also reset the schedule
    assert sample.values["l3.points.knowledge"] == 2
    assert sample.values["l2.keys"] > 0


def test_auto_sampling_is_cheap_when_not_due(engine_opener: Callable[..., ContextEngine]) -> None:
    clock = FakeClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    engine = engine_opener(clock=clock)
    session = engine.start_session("u1", "hello")
    engine.route(session.session_id, "respond")  # takes the first sample
    n = 2_000
    started = time.perf_counter()
    for _ in range(n):
        engine._upkeep.health_tick()
    per_call_us = (time.perf_counter() - started) / n * 1e6
    print(f"\nhealth tick when not due: {per_call_us:.2f} us")
    assert per_call_us < 50
    assert len(_stream(engine)) == 1


def test_key_families_of_preferences_and_series(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    clock = FakeClock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC))
    engine = engine_opener(clock=clock)
    engine.set_preference("maria.lopez@example.com", "ui_color", "blue", 0.9)
    engine.get_preference("maria.lopez@example.com", "ui_color")
    wm = engine.working(engine.start_session("u1", "x").session_id)
    wm.append_series("temperature", [(1.0, 20.5)])
    wm.read_series("temperature")
    wm.pending()
    # A step id may be an email (ids allow '@'): the family passes the gateway too.
    wm.put_step_result("bob@example.com", {"a": 1})
    wm.get_step_result("bob@example.com")
    engine.record_health_sample()
    hot = dict(engine.health_report(since=timedelta(minutes=5)).l2.hot_keys)
    assert hot["pref:*:ui_color"] == 1
    assert hot["wm:*:ts:temperature"] == 1
    assert hot["wm:*:pending_tasks"] == 1
    assert not any("example.com" in k for k in hot)
    assert "maria" not in repr(_stream(engine)) and "bob@" not in repr(_stream(engine))


def test_sample_values_read_the_decision_counters() -> None:
    def entries(**by_label: float) -> list[dict[str, Any]]:
        out = []
        for key, value in by_label.items():
            label, _, val = key.partition("__")
            out.append({"labels": {label: val}, "value": value})
        return out

    metrics = {
        "memstrata_decisions_total": entries(route__answer=7, route__tool=3, route__ask=1),
        "memstrata_tool_calls_total": entries(outcome__done=2, outcome__blocked=1),
        "memstrata_fallbacks_total": [{"labels": {}, "value": 4.0}],
        "memstrata_feedback_total": entries(kind__corrected=2),
        "memstrata_cer_steps_total": entries(effective__true=9, effective__false=1),
    }
    info = BackendInfo("redis", 1, 12, 1_000, 5, 0, 0)
    readings = EngineReadings(3, 900, 0, info, {"memories": 10}, metrics)
    values = sample_values(readings)
    assert values["decisions.answer"] == 7 and values["decisions.ask"] == 1
    assert values["tool_calls.done"] == 2 and values["tool_calls.rejected"] == 0
    assert values["fallbacks"] == 4 and values["feedback.corrected"] == 2
    assert values["cer.effective"] == 9 and values["cer.ineffective"] == 1
    assert values["l2.keys"] == 12 and values["l2.expired_keys"] == 5
    assert values["l3.points.memories"] == 10
    on_a_server = sample_values(dataclasses.replace(readings, points_shared=True))
    assert (
        on_a_server["l3.server_points.memories"] == 10 and "l3.points.memories" not in on_a_server
    )
    # Missing counters (an engine without the decision layer) read as 0.
    empty = sample_values(dataclasses.replace(readings, metrics={}))
    assert empty["decisions.answer"] == 0 and empty["cer.effective"] == 0
    hot = {f"wm:*:result:s{i}": i for i in range(100)}
    sample = build_sample(
        datetime(2025, 1, 1, tzinfo=UTC),
        readings,
        hot_keys=hot,
        low_confidence_queries={},
        source="p",
    )
    assert len(sample.hot_keys) == 50 and next(iter(sorted(sample.hot_keys.values()))) == 50


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(minutes=-1), 7])
def test_health_report_rejects_bad_windows(
    engine_opener: Callable[..., ContextEngine], bad: Any
) -> None:
    from memstrata.errors import ValidationError

    engine = engine_opener(clock=FakeClock())
    with pytest.raises(ValidationError):
        engine.health_report(since=bad)
