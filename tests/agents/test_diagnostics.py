"""The battery-health diagnostics reference agent on the real engine, and seed 000
§4.2's bug: with one shared, mutable ``last_device_id``, the third device's results
overwrite the first's; with memstrata's per-worker immutable L1 state behind the
router, the same interleaving keeps every device's readings its own."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agents.helpers import valkey_dump

from memstrata import ContextEngine
from memstrata.agents import AgentRun, DiagnosticsAgent
from memstrata.agents.diagnostics import START, TENANT
from memstrata.agents.diagnostics_report import REPORT_SECTIONS
from memstrata.agents.fleet import API_KEY, BEARER, DEVICE_IDS, Fleet
from memstrata.agents.shared_state import Interleaving, naive_batch
from memstrata.clock import FakeClock
from memstrata.testing.disk import files_holding

Factory = Callable[..., ContextEngine]


def test_shared_mutable_state_lets_the_third_device_overwrite_the_first() -> None:
    fleet = Fleet()
    first, _second, third = DEVICE_IDS
    returned, results = naive_batch(fleet, DEVICE_IDS)
    assert returned[0]["device_id"] == first
    assert returned[0]["data_of"] == third  # device 1's result is device 3's
    assert returned[0]["peak_c"] == fleet.temperature_anomalies({"device_id": third})["peak_c"]
    assert set(results) == {third}  # the first two devices' results are gone


def run_diagnostics(
    engine_opener: Factory, tmp_path: Path, **options: Any
) -> tuple[ContextEngine, DiagnosticsAgent, AgentRun]:
    clock = FakeClock(START)
    engine = engine_opener(data_dir=tmp_path / "data", clock=clock)
    agent = DiagnosticsAgent(engine, clock=clock, run_id="t")
    return engine, agent, agent.run(**options)


def expected(fleet: Fleet, device: str) -> dict[str, Any]:
    anomalies = fleet.temperature_anomalies({"device_id": device})
    return {"peak_c": anomalies["peak_c"], "windows": anomalies["windows"]}


def test_memstrata_keeps_each_device_apart_under_the_same_interleaving(
    engine_opener: Factory, tmp_path: Path
) -> None:
    schedule = Interleaving(DEVICE_IDS)

    def hook(device: str, step: str) -> None:
        if step == "start":
            schedule.before_select(device)
        elif step == "selected":
            schedule.after_select(device)

    engine, _agent, run = run_diagnostics(engine_opener, tmp_path, concurrent=True, on_step=hook)
    reports = run.extras["reports"]
    assert list(reports) == list(DEVICE_IDS)
    truth = Fleet()
    for device in DEVICE_IDS:
        report = reports[device]
        assert report["device_id"] == device and report["figures"]["device_id"] == device
        assert {k: report["figures"][k] for k in ("peak_c", "windows")} == expected(truth, device)
        assert report["text"].startswith(f"# Battery health report: {device}\n")
        for other in set(DEVICE_IDS) - {device}:
            assert other not in report["text"]
        # Every tool call of the device's session was for the device, by the gate.
        cards = [engine.trace_card(card_id, tenant=TENANT) for card_id in report["cards"]]
        called = [c for c in cards if c.tool is not None]
        assert len(called) == 5
        assert all(c.params["device_id"] == device for c in called)
        assert all(c.tool_outcome == "done" for c in called)
    assert run.rates.tool_success_rate == 1.0 and run.rates.cer == 1.0


def test_the_report_has_the_required_format_and_cites_every_figure(
    engine_opener: Factory, tmp_path: Path
) -> None:
    engine, _agent, run = run_diagnostics(engine_opener, tmp_path)
    assert run.extras["session_minutes"] == 39.0  # the 40-minute session, on the clock
    truth = Fleet()
    figure = re.compile(r"(?<![\w.:-])\d+(?:\.\d+)?(?![\w])")
    for device, report in run.extras["reports"].items():
        text: str = report["text"]
        headings = re.findall(r"^## (.+)$", text, flags=re.M)
        assert headings == [*REPORT_SECTIONS, "Sources"]
        body, _, source_text = text.partition("\n## Sources\n")
        sections = body.split("\n## ", 1)[1]
        for line in sections.splitlines():
            if line.startswith(tuple(REPORT_SECTIONS)) or not line.strip():
                continue
            if figure.search(line) or re.search(r"\d{4}-\d\d-\d\dT", line):
                assert re.search(r"\[\d+\]", line), f"{device}: uncited figure in {line!r}"
        # Each marker resolves to a source: the tool's trace card and the L2 key read.
        sources = {s["number"]: s for s in report["sources"]}
        cited = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
        assert cited <= set(sources)
        for number in cited:
            source = sources[number]
            assert f"[{number}] {source['what']}" in source_text
            if source["what"] == "knowledge":
                assert source["ref"].startswith("L3 ")
                continue
            card = engine.trace_card(source["card_id"], tenant=TENANT)
            assert card.session_id == report["session_id"]
            assert source["ref"].startswith(f"L2 wm:{{{report['session_id']}}}:result:step")
        tools = {s["what"] for s in report["sources"]}
        assert {"device_info", "sensor_window", "temperature_anomalies"} <= tools
        assert {"maintenance_history", "analysis", "knowledge"} <= tools
        # The figures are the fleet's.
        anomalies = truth.temperature_anomalies({"device_id": device})
        for window in anomalies["windows"]:
            assert f"- {window['start']} to {window['end']}: {window['stream']} reached " in text
            assert f"reached {window['max_c']} °C [" in text
        assert f"{anomalies['peak_c']} °C on {anomalies['peak_stream']}" in text
        # The step results outlived the 13 minutes of their session (plan TTLs).
        ttls = report["ttl_at_report_s"]
        assert set(ttls) == {f"step{n}" for n in range(1, 7)}
        assert all(ttl is not None and ttl > 0 for ttl in ttls.values())
    reports = run.extras["reports"]
    assert "Coolant flow fell to 6.4 L/min" in reports["D123"]["text"]
    assert "vibration_spectrum_replica" in reports["D456"]["text"]  # the fallback answered
    assert "No fault" in reports["D789"]["text"]

    report_steps = [s for s in run.steps if s.intent == "device_report"]
    assert len(report_steps) == 3
    for step in report_steps:
        assert step.check is not None and step.check.consistent and step.check.effective
        assert step.decision is not None and step.decision.risk == "high"
    rates = run.rates
    assert rates.decisions == 36 and rates.ask_rate == 0.0
    assert rates.tool_success_rate == 1.0 and rates.fallback_rate == 1 / 15
    assert rates.cer == 1.0 and run.cer() == {
        "cer": 1.0,
        "loaded_rate": 1.0,
        "used_rate": 1.0,
        "steps": 21,
    }


def test_tools_are_bound_to_the_sessions_device(engine_opener: Factory, tmp_path: Path) -> None:
    engine, agent, run = run_diagnostics(engine_opener, tmp_path, devices=("D123",))
    first = run.steps[0]
    assert first.moves[0].decision.tool == "device_info"
    blocked = engine.call_tool(
        first.moves[0].decision.card_id,
        tenant=TENANT,
        tool="device_info",
        params={"device_id": "D456"},
    )
    assert blocked.outcome == "blocked" and "device_id" in blocked.message
    assert ("device_info", "D456") not in agent.fleet.calls


def test_leaked_credentials_reach_no_reply_card_or_store(
    engine_opener: Factory, tmp_path: Path
) -> None:
    engine, _agent, run = run_diagnostics(engine_opener, tmp_path)
    failed = [
        attempt
        for step in run.steps
        for move in step.moves
        if move.outcome is not None
        for attempt in move.outcome.attempts
        if not attempt.ok
    ]
    assert len(failed) == 3 + 2  # maintenance once per device, vibration twice for D456
    assert all("[REDACTED:" in attempt.error for attempt in failed)
    documents = [json.dumps(run.as_dict(), default=str)]
    documents += [json.dumps([c.as_dict() for c in engine.trace_cards(tenant=TENANT, limit=1000)])]
    documents.append(valkey_dump(engine))
    for secret in (API_KEY, BEARER):
        for document in documents:
            assert secret not in document
    engine.close()
    for secret in (API_KEY, BEARER):
        assert files_holding(tmp_path / "data", secret) == []


def test_a_device_without_data_is_never_diagnosed(engine_opener: Factory, tmp_path: Path) -> None:
    """Every API fails for an unknown device: each tool ends in an honest "cannot
    complete", and the root cause and the report ask instead of inventing a verdict."""
    _engine, _agent, run = run_diagnostics(engine_opener, tmp_path, devices=("D999",))
    assert [s.route for s in run.steps] == ["tool"] * 5 + ["ask", "ask"]
    assert all(s.reply == "This cannot be completed right now." for s in run.steps[:5])
    report = run.extras["reports"]["D999"]
    assert report["text"].startswith("None of the device's data could be loaded")
    assert "No fault" not in json.dumps(run.as_dict())
    assert run.rates.tool_success_rate == 0.0 and run.rates.fallback_rate == 1.0
    assert run.rates.cer is None and run.cer()["steps"] == 0
