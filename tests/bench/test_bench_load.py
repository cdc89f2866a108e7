"""``memstrata bench load``: the quick run's report (shape, only typed 429/503, the
burst carried by the L3 fallback), its pure summaries, and the fault-injection hook the
service is started with (off by default)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memstrata.bench.load import (
    QUICK,
    SCENARIOS,
    LoadOptions,
    parse_metrics,
    run_load_bench,
    scenario_streams,
)
from memstrata.bench.load_calls import CallerResult, allowed, outcome_of
from memstrata.bench.load_report import SLICES, TIMELINE_COLUMNS, slope_per_hour, soak_summary
from memstrata.config import FaultSettings, Settings, load_settings
from memstrata.errors import ConfigError, ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.testing.injected import SlowReadsIndex
from memstrata.wiring import open_index

OUTAGE = {"l3_timeout", "circuit_open", "l3_unavailable"}


def test_quick_run_reports_every_scenario_with_only_typed_429_and_503(tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = run_load_bench(QUICK, out)

    assert report["unexpected_errors"] == 0
    assert report["serve_exit_code"] == 0  # SIGTERM stops it cleanly
    assert report["seed"]["drained"] is True
    assert json.loads((out / "load.json").read_text())["scenarios"].keys() == set(SCENARIOS)
    scenarios = report["scenarios"]
    assert list(scenarios) == list(SCENARIOS)
    for name, scenario in scenarios.items():
        assert scenario["unexpected_errors"] == 0, (name, scenario["errors"])
        assert all(allowed(outcome) for outcome in scenario["errors"]), scenario["errors"]
        streams = scenario_streams(name, QUICK)
        assert list(scenario["streams"]) == [s.name for s in streams]
        answered = 0
        for stream in streams:
            summary = scenario["streams"][stream.name]
            assert summary["callers"] == stream.callers
            assert summary["sessions_started"] >= 1
            assert [p["name"] for p in summary["phases"]] == [p.name for p in stream.phases]
            for phase in summary["phases"]:
                # Every scheduled request was sent or counted as missed.
                assert phase["requests"] + phase["missed"] > 0
                slices = phase["slices"]["rows"]
                assert len(slices) == SLICES
                assert sum(n for _, n, _, _ in slices) == phase["requests"]
                for op, stats in phase["operations"].items():
                    assert stats["requests"] > 0, op
                    assert all(allowed(o) for o in stats["errors"]), (op, stats["errors"])
                answered += phase["requests"]
        assert answered > 0
        timeline = scenario["timeline"]
        assert timeline["columns"] == list(TIMELINE_COLUMNS)
        assert timeline["rows"] and all(len(r) == len(TIMELINE_COLUMNS) for r in timeline["rows"])
        assert scenario["rss_mib"]["server"]["max"] > 0
        assert scenario["rss_mib"]["valkey"]["max"] > 0
        assert scenario["queue_backlog"]["max"] is not None
        assert scenario["queue_dead_lettered"]["max"] == 0  # no write given up on
        assert scenario["l2"]["keys"]["max"] > 0
        health = scenario["health_report"]
        assert Path(health["markdown"]).read_text().startswith("# Context health report")
        assert Path(health["html"]).is_file()
        assert health["samples"] >= 1
    short = scenarios["short"]["streams"]["short"]["phases"][0]["operations"]
    assert {"start_session", "observe", "route", "build_context", "end_session"} <= set(short)
    long = scenarios["long"]["streams"]["long"]["phases"][0]["operations"]
    assert {"start_session", "observe", "route"} <= set(long)  # a cycle takes 13 steps
    # The burst's L3 reads waited longer than their deadline: the fallback answered them.
    burst = scenarios["burst"]
    assert burst["l3_delay_s"] == QUICK.l3_delay_s
    assert set(burst["fallback"]["l3_skip_reasons"]) & OUTAGE
    assert burst["degraded_reads"] > 0
    assert not (out / "l3-slow").exists()  # the switch is off again


def test_options_refuse_bad_values_naming_them() -> None:
    with pytest.raises(ValueError, match="rate"):
        LoadOptions(rate=0)
    with pytest.raises(ValueError, match="clients"):
        LoadOptions(clients=0)
    with pytest.raises(ValueError, match="scenarios"):
        LoadOptions(scenarios=("short", "flood"))
    with pytest.raises(ValueError, match="soak_s"):
        LoadOptions(soak_s=-1)


def test_scenarios_keep_the_seeds_proportions() -> None:
    o = LoadOptions(rate=50, seconds=300, burst_seconds=300, clients=32)
    (short,) = scenario_streams("short", o)
    (long,) = scenario_streams("long", o)
    burst, beside = scenario_streams("burst", o)
    assert short.phases[0].rate == 50 and long.phases[0].rate == 5  # 1000 : 100 QPS
    assert [p.rate for p in burst.phases] == [10, 150, 10]  # 200 -> 3000 QPS
    assert [p.seconds for p in burst.phases] == [60, 300, 60]
    assert long.callers == 4 and beside.seconds == burst.seconds


def test_outcomes_are_typed_or_unexpected() -> None:
    typed = b'{"error": {"code": "resource_exhausted", "type": "RateLimitedError"}}'
    assert outcome_of(200, b"{}") == "ok"
    assert outcome_of(429, typed) == "429 resource_exhausted/RateLimitedError"
    assert allowed("429 resource_exhausted/RateLimitedError")
    assert allowed("503 unavailable/WriteNotQueuedError")
    assert not allowed(outcome_of(503, b"<html>bad gateway</html>"))  # untyped
    assert not allowed("404 not_found/ContextMissError")
    assert not allowed("500 internal/BackendError")
    assert not allowed("transport ConnectionResetError")


def test_metrics_are_read_with_and_without_labels() -> None:
    text = (
        "# HELP memstrata_l2_keys Keys\n"
        "memstrata_l2_keys 22.0\n"
        'memstrata_breaker_state{backend="l3"} 2.0\n'
        'memstrata_degraded_reads_total{operation="route",reason="l3_timeout"} 3.0\n'
        'memstrata_degraded_reads_total{operation="retrieve",reason="circuit_open"} 4.0\n'
    )
    found = parse_metrics(text)
    assert found["memstrata_l2_keys"] == 22.0
    assert found['memstrata_breaker_state{backend="l3"}'] == 2.0
    assert found["memstrata_degraded_reads_total"] == 7.0


def _caller(latencies: list[tuple[float, float]]) -> CallerResult:
    records = [(0, "route", t, latency, "ok") for t, latency in latencies]
    return CallerResult("soak", records, [0], 1, 1, Counter(), 0)


def test_soak_trends_tell_flat_from_growing() -> None:
    flat_rows = [(float(t), 500.0, 8.0, 0, 0, 10, 0, 50, 0, 0, 0) for t in range(0, 90, 5)]
    growing_rows = [
        (float(t), 500.0 + 4 * t, 8.0, t * 10, 0, 10, 0, 50, 0, 0, 0) for t in range(0, 90, 5)
    ]
    steady = _caller([(t + 0.5, 0.010) for t in range(90)])
    slowing = _caller([(t + 0.5, 0.010 * (1 + t / 10)) for t in range(90)])

    flat = soak_summary(flat_rows, [steady], 90, 3)["trends"]
    assert [w["from_s"] for w in soak_summary(flat_rows, [steady], 90, 3)["windows"]] == [0, 30, 60]
    assert flat["server_rss_mib"]["last_over_first"] == 1.0
    assert flat["server_rss_mib"]["slope_per_hour"] == 0
    assert all(flat[name]["flat"] for name in flat if name != "l3_points")
    assert flat["l3_points"]["flat"] is None  # stored data grows by design

    grown = soak_summary(growing_rows, [slowing], 90, 3)["trends"]
    assert grown["server_rss_mib"]["flat"] is False
    assert grown["server_rss_mib"]["slope_per_hour"] == pytest.approx(4 * 3600)
    assert grown["queue_backlog"]["flat"] is False
    assert grown["p99_ms"]["flat"] is False and grown["p99_ms"]["last_over_first"] > 1.5
    assert grown["valkey_rss_mib"]["flat"] is True


def test_slope_needs_two_points() -> None:
    assert slope_per_hour([(0.0, 1.0)]) is None
    assert slope_per_hour([(0.0, 1.0), (3600.0, 3.0)]) == 2.0


# -- the fault-injection hook (Settings.faults) -------------------------------------------


def test_faults_are_off_by_default_and_validated() -> None:
    assert Settings().faults.l3_read_delay_s == 0
    with pytest.raises(ValidationError) as caught:
        FaultSettings(l3_read_delay_s=-1)
    assert caught.value.field == "l3_read_delay_s"
    with pytest.raises(ValidationError):
        FaultSettings(l3_read_delay_s=float("nan"))


def test_a_settings_file_names_the_bad_fault_field(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"faults": {"l3_read_delay_s": "slow"}}))
    with pytest.raises(ConfigError, match=r"faults\.l3_read_delay_s"):
        load_settings(path)
    path.write_text(json.dumps({"faults": {"l3_read_delay_s": 2, "l3_delay_switch": "/x/on"}}))
    faults = load_settings(path).faults
    assert faults.l3_read_delay_s == 2 and faults.l3_delay_switch == Path("/x/on")


def test_open_index_slows_reads_only_when_the_settings_ask(tmp_path: Path) -> None:
    plain = open_index(Settings(data_dir=tmp_path / "plain"))
    try:
        assert isinstance(plain, EdgeIndex)
    finally:
        plain.close()
    switch = tmp_path / "slow-now"
    faults = FaultSettings(l3_read_delay_s=0.01, l3_delay_switch=switch)
    index = open_index(Settings(data_dir=tmp_path / "faulty", faults=faults))
    try:
        assert isinstance(index, SlowReadsIndex)
        index.ensure_collections(8)
        everyone = Filter(tenant="default")
        # Switch off: reads go straight to the engine, its answer cache included.
        assert index.count(MEMORIES, everyone) == 0
        assert index.calls == 0 and not index.active
        assert index.answer_generation(MEMORIES) == index.inner.answer_generation(MEMORIES)
        # Switch on: every read passes the fault (and no answer may be reused).
        switch.touch()
        assert index.active
        assert index.count(MEMORIES, everyone) == 0
        assert index.calls == 1
        assert index.answer_generation(MEMORIES) is None
        switch.unlink()
        assert index.count(MEMORIES, everyone) == 0 and index.calls == 1
        # What the protocol leaves optional is still the engine's.
        assert index.check_room_to_purge == index.inner.check_room_to_purge  # type: ignore[attr-defined]
    finally:
        index.close()
