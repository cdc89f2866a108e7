"""The scripted agent session behind ``memstrata demo``.

A battery-health diagnosis agent (docs/architecture.md, "The layers") runs a few steps and
every layer does its job: L1 tracks the step and the device, L2 caches an API
response, keeps a sensor window and shares a step result between steps, a
preference and a knowledge base feed the report, and a secret in a tool response
is redacted before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memstrata.cer import StepOutcome, cer_summary, context_loaded, context_used
from memstrata.context import BuiltContext, ToolResult, Turn, item_text
from memstrata.engine import ContextEngine
from memstrata.router import ContextBundle
from memstrata.working.stepgraph import StepGraph, StepSpec

TENANT = "demo"
USER = "u_789"

KNOWLEDGE: tuple[tuple[str, str], ...] = (
    (
        "report_template",
        "Device health report template: summary, temperature anomaly windows with "
        "timestamps, vibration spectrum comparison, root cause, recommended action. "
        "Reports follow ISO 26262 traceability: every figure cites its data source.",
    ),
    (
        "vibration_analysis",
        "Vibration analysis standard: compare RMS velocity in mm/s over the same time "
        "window on both devices; above 3.5 mm/s on the upgraded 2025 models raises an alarm.",
    ),
    (
        "temperature_calibration",
        "Temperature sensor calibration: recalibrate when the offset against the "
        "reference probe exceeds 0.5 degrees Celsius for more than ten minutes.",
    ),
    (
        "battery_cooling",
        "Battery pack cooling: coolant flow below 8 litres per minute during fast "
        "charging causes cell temperature spikes above 45 degrees Celsius.",
    ),
)

MEMORIES: tuple[str, ...] = (
    "The user prefers reports with charts and a one-paragraph executive summary.",
    "The user manages the Hangzhou battery plant fleet, devices D123 to D180.",
    "My staging API key is sk-proj-Zx81KqLmN0pQrStUvWxYz1234567890abcd, keep it handy.",
)


SYSTEM_PROMPT = (
    "You are a battery-health diagnosis agent. Answer from the context below; cite "
    "the source of every figure; ask when the context does not cover the question."
)


@dataclass(frozen=True, slots=True)
class DemoStep:
    """One step of the scripted session: the context it was given, what the scripted
    agent answered, and whether that context was loaded and used (CER)."""

    title: str
    bundle: ContextBundle
    output: str
    outcome: StepOutcome


@dataclass(frozen=True, slots=True)
class DemoResult:
    steps: tuple[DemoStep, ...]
    redactions: tuple[dict[str, Any], ...]
    stored_memories: tuple[str, ...]
    series_points_kept: int
    step5_ttl_before_s: float | None
    step5_ttl_after_s: float | None
    context: BuiltContext
    """The step-7 model call assembled by the token-budgeted context builder."""
    cer: dict[str, float | int | None]


def run_demo(engine: ContextEngine) -> DemoResult:
    """Run the scripted session on ``engine`` and return what each step saw."""
    for section, text in KNOWLEDGE:
        engine.add_knowledge([text], tenant=TENANT, source=f"sop/{section}", section=section)
    receipts = [engine.remember(USER, text, tenant=TENANT) for text in MEMORIES]
    engine.flush()
    engine.set_preference(USER, "report_format", "pdf with charts", 0.92, tenant=TENANT)

    state = engine.start_session(
        USER,
        "Find device D123's temperature anomalies last week, compare the vibration "
        "spectrum of D456 over the same window, then write a difference report.",
        tenant=TENANT,
    )
    sid = state.session_id
    wm = engine.working(sid)
    wm.plan_steps(
        StepGraph(
            (
                StepSpec("step1", 30),
                StepSpec("step4", 60, ("step1",)),
                StepSpec("step5", 120, ("step4",)),
                StepSpec("step7", 90, ("step5",)),
            )
        )
    )
    steps: list[DemoStep] = []

    # Step 1: fetch sensor data for D123. The tool's response carries a token: it is
    # redacted by the gateway before L2 stores it.
    state = engine.update_session(sid, lambda s: s.advance().with_entity("D123"))
    response = {
        "device_id": "D123",
        "status": "ok",
        "max_temp_c": 47.2,
        "anomaly_window": ["2025-03-24T08:00:00Z", "2025-03-24T09:30:00Z"],
        "debug": "retry with Authorization: Bearer "
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1Xzc4OSJ9.c2lnbmF0dXJlX2RlbW8",
    }
    wm.put_api_response("sensor_api", {"device_id": "D123"}, response)
    state = engine.update_session(sid, lambda s: s.with_api_result("success", response))
    base = state.started_at.timestamp() - 1500
    wm.append_series("temperature", [(base + i, 30 + (i % 40) * 0.4) for i in range(1500)])
    threshold = engine.settings.longterm.low_confidence_cosine
    bundle = engine.route(sid, "fetch_sensor_data")
    # The scripted agent's answer: what an LLM would say from this context.
    output = (
        "D123 peaked at 47.2 C between 2025-03-24T08:00:00Z and 2025-03-24T09:30:00Z "
        "(source: sensor_api); the temperature window holds the last readings."
    )
    steps.append(_step("step 1 - fetch_sensor_data (D123)", bundle, output, threshold))

    # Step 5: the analysis result that step 7 depends on, with a TTL from the plan.
    state = engine.update_session(sid, lambda s: s.advance(4).with_entity("D456"))
    wm.put_step_result(
        "step5",
        {
            "device_a": "D123",
            "device_b": "D456",
            "alert_ts": "2025-03-24T08:22:00Z",
            "rms_delta_mm_s": 1.7,
        },
    )
    ttl_before = wm.get_step_result("step5").ttl_remaining_s

    # Step 7: the report. Reading step5 as its dependent extends step5's TTL.
    state = engine.update_session(sid, lambda s: s.advance(2))
    bundle = engine.route(sid, "generate_report", "report with charts for the battery devices")
    ttl_after = wm.get_step_result("step5").ttl_remaining_s
    output = (
        "Difference report (pdf with charts, per the user's preference): D123's alert at "
        "2025-03-24T08:22:00Z, RMS velocity delta 1.7 mm/s against D456; structure per "
        "the device health report template (summary, anomaly windows, root cause)."
    )
    steps.append(_step("step 7 - generate_report", bundle, output, threshold))
    context = engine.build_context(
        sid,
        "generate_report",
        "Write the difference report for D123 and D456 with charts.",
        system_prompt=SYSTEM_PROMPT,
        model="gpt-4o",
        history=(
            Turn("user", state.initial_query),
            Turn("assistant", "Fetched D123: peak 47.2 C, window 08:00-09:30Z on 2025-03-24."),
        ),
        tool_results=(
            ToolResult("call_7", "vibration_api", '{"device": "D456", "rms_mm_s": 3.1}'),
        ),
    )

    redactions = tuple(e.to_dict() for e in engine.audit_events())
    # What L3 holds of the remembered texts: each episode and the facts read from it.
    written = [engine.written(receipt, tenant=TENANT) for receipt in receipts]
    stored = tuple(
        text
        for memory in written
        for text in (*(e.text for e in memory.episodes), *(u.text for u in memory.facts))
    )
    return DemoResult(
        steps=tuple(steps),
        redactions=redactions,
        stored_memories=stored,
        series_points_kept=len(wm.read_series("temperature")),
        step5_ttl_before_s=ttl_before,
        step5_ttl_after_s=ttl_after,
        context=context,
        cer=cer_summary([step.outcome for step in steps]),
    )


def _step(title: str, bundle: ContextBundle, output: str, threshold: float) -> DemoStep:
    """The step with its CER outcome (docs/architecture.md, "Health and metrics"): loaded =
    every L2 key the intent
    needs is present and unexpired and L3 (when asked) returned a confident item;
    used = the agent's output reflects some loaded L2/L3 content."""
    l2_items = bundle.layer("L2")
    required = [m.ref for m in bundle.missing if m.layer == "L2"] + [
        i.provenance.ref for i in l2_items
    ]
    asked_l3 = bool(bundle.layer("L3")) or any(m.layer == "L3" for m in bundle.missing)
    loaded = context_loaded(
        required_l2_keys=required,
        present_l2_keys=[i.provenance.ref for i in l2_items],
        l3_confidences=[i.provenance.relevance for i in bundle.layer("L3")] if asked_l3 else None,
        threshold=threshold,
    )
    pieces = [item_text(item.content) for item in (*l2_items, *bundle.layer("L3"))]
    used = context_used(pieces, output, min_overlap=0.3)
    return DemoStep(title, bundle, output, StepOutcome(loaded, used, title))
