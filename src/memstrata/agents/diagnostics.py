"""The battery-health diagnostics reference agent (docs/agents.md; docs/architecture.md,
"The layers").

A batch of devices is diagnosed in one ~40-minute session on an injected clock. Each
device is worked by its own worker (sequentially, or concurrently on threads), and
each worker owns a sub-session: its L1 state holds *its* device (``last_entity_id``),
every tool is bound to that fact by the gate, and every L2 key is under its session.
The bug behind L1's compare-and-swap (docs/architecture.md, "The layers"), the third
device's results overwriting the first's because concurrent workers mutated one shared
``last_device_id``, cannot happen: nothing is shared but the engine.

Per device, seven planned steps (their TTLs come from the plan: docs/architecture.md,
"The layers"):

1. ``device_info`` tool -> the device record;
2. ``sensor_window`` tool -> the 37 sensor streams into L2 windows (series); the
   hottest cell and the lowest coolant flow are read back from those windows;
3. ``temperature_anomalies`` tool -> the anomaly windows with timestamps;
4. ``vibration_spectrum`` tool (its read replica as the alternative) -> the vibration
   in the first anomaly window against the baseline;
5. ``maintenance_history`` tool (its first answer is an error with a key in it) ->
   the service record;
6. root cause, from the results of steps 2-5 and the SOP knowledge;
7. the report (:mod:`memstrata.agents.diagnostics_report`), from the results of
   steps 1-6, the user's report preference and the report template, every figure
   citing its trace card and L2 key.

Each step goes route -> decide -> tool -> (result into L2) -> decide -> answer ->
``check_reply``; each step's result is kept as an L2 step result for the report.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata.agents.diagnostics_report import (
    RESULT_ITEMS,
    Source,
    scripted_writer,
    sources,
)
from memstrata.agents.fleet import (
    ANOMALY_C,
    CELLS,
    DEVICE_IDS,
    STREAMS,
    VIBRATION_ALARM_MM_S,
    Fleet,
    vibration_window,
)
from memstrata.agents.loop import AgentLoop, StepRecord, Store
from memstrata.agents.run import AgentRun
from memstrata.agents.writer import ReplyRequest, ReplyWriter
from memstrata.clock import FakeClock
from memstrata.decision import Decision, Slot, StepPolicy, ToolOutcome, ToolSpec
from memstrata.engine import ContextEngine
from memstrata.knowledge.documents import Document
from memstrata.router import IntentSpec, L2Need, L3Need
from memstrata.working.keys import series_key
from memstrata.working.memory import SessionWorkingMemory
from memstrata.working.stepgraph import StepGraph, StepSpec

TENANT = "fleet"
USER = "u_789"
START = datetime(2025, 3, 24, 9, tzinfo=UTC)
REPORT_FORMAT = "pdf with charts"

SOP = f"""# Battery diagnostics SOP

## Report template
Device health report template: summary, temperature anomaly windows with timestamps, \
vibration spectrum comparison, root cause, recommended action. Reports follow ISO 26262 \
traceability: every figure cites its data source.

## Vibration analysis standard
Compare RMS velocity in mm/s over the same time window; above {VIBRATION_ALARM_MM_S} mm/s \
on the upgraded 2025 models raises an alarm. A dominant peak near 120 Hz points at pump \
bearing wear.

## Battery cooling
Coolant flow below 8 litres per minute during fast charging causes cell temperature \
spikes above {ANOMALY_C:g} degrees Celsius.
"""

INSTRUCTIONS = (
    "You are a battery-health diagnostics agent. Answer from the context items only; "
    "keep every id, timestamp and figure exactly as written. In a report, follow the "
    "template's sections and put the [n] marker of its source after every figure, with a "
    "Sources list naming each source's tool, trace card and L2 key."
)

PLAN = StepGraph(
    (
        StepSpec("step1", 60),
        StepSpec("step2", 120),
        StepSpec("step3", 120, ("step2",)),
        StepSpec("step4", 120, ("step3",)),
        StepSpec("step5", 60),
        StepSpec("step6", 120, ("step2", "step3", "step4", "step5")),
        StepSpec("step7", 180, ("step1", "step2", "step3", "step4", "step5", "step6")),
    )
)
"""One device's steps, their estimated durations (s) and what each reads."""

_DEVICE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"device_id": {"type": "string", "pattern": "^D[0-9]{3,}$"}},
    "required": ["device_id"],
    "additionalProperties": False,
}
_WINDOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "device_id": {"type": "string", "pattern": "^D[0-9]{3,}$"},
        "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "format": "date-time"},
    },
    "required": ["device_id", "start", "end"],
    "additionalProperties": False,
}
_BOUND = {"device_id": "l1.last_entity_id"}
TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("device_info", "The device's record.", _DEVICE_SCHEMA, bound=_BOUND),
    ToolSpec(
        "sensor_window", "The raw readings of the 37 sensor streams.", _DEVICE_SCHEMA, bound=_BOUND
    ),
    ToolSpec(
        "temperature_anomalies",
        "Cell temperature windows above 45 °C.",
        _DEVICE_SCHEMA,
        bound=_BOUND,
    ),
    ToolSpec(
        "vibration_spectrum",
        "Vibration RMS and dominant frequency in a window against the rest.",
        _WINDOW_SCHEMA,
        alternatives=("vibration_spectrum_replica",),
        bound=_BOUND,
    ),
    ToolSpec(
        "vibration_spectrum_replica",
        "The vibration API's read replica.",
        _WINDOW_SCHEMA,
        bound=_BOUND,
    ),
    ToolSpec("maintenance_history", "The service record.", _DEVICE_SCHEMA, bound=_BOUND),
)

_L1 = ("session_id", "user_id", "initial_query", "current_step", "last_entity_id")
_DEVICE_SLOT = Slot("device_id", ("l1.last_entity_id",), "Which device should I look at?")
_NO_DATA = Slot(
    "details",
    ("given.details",),
    "None of the device's data could be loaded: check its data sources, then run the "
    "diagnosis again.",
)

# The vibration standard: cited by the analysis step and by the report.
_SOP_VIBRATION = L3Need(
    "knowledge",
    query="vibration analysis standard RMS velocity alarm",
    k=1,
    per_user=False,
    label="sop_vibration",
)


def _api_intent(name: str, label: str, *extra: L2Need) -> IntentSpec:
    return IntentSpec(
        name,
        l1=_L1,
        l2=(L2Need("api", name, {"device_id": "$last_entity_id"}, label=label), *extra),
        examples=EXAMPLES[name],
    )


def _result(label: str, step: str) -> L2Need:
    return L2Need("result", step, label=label)


# What an engineer might ask for at each step, in Chinese and English: a message sent
# without a step intent is matched against them (memstrata.router.recognize).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "device_info": (
        "What device is this?",
        "Show the device's model, serial number and firmware.",
        "Look up the record of BAT-0199.",
        "When was this pack commissioned?",
        "这是哪台设备？",
        "查一下这台设备的型号和序列号。",
        "看看 BAT-0199 的设备信息。",
        "这个电池包什么时候投入使用的？",
        "Pull up this unit's details.",
        "What hardware and firmware does it have?",
        "Basic information about the device, please.",
        "Who makes this pack?",
        "调一下这台设备的详情。",
        "这台设备的基本情况是什么？",
    ),
    "sensor_window": (
        "Read the sensors for this device.",
        "Give me the raw readings from all streams.",
        "Load the latest telemetry window.",
        "What are the current sensor values?",
        "读一下这台设备的传感器。",
        "把所有通道的原始读数给我。",
        "加载最近一段遥测数据。",
        "传感器现在的数值是多少？",
        "Show me the telemetry.",
        "Export the sensor streams from the last half hour.",
        "What is the coolant flow reading?",
        "I want the raw data from the pack.",
        "导出最近半小时的传感器数据。",
        "冷却液流量读数是多少？",
    ),
    "temperature_anomalies": (
        "Did any cell run too hot?",
        "Show the periods above the temperature limit.",
        "Were there thermal anomalies while charging?",
        "When did the temperature spike?",
        "有电芯温度过高吗？",
        "哪些时间段温度超过上限了？",
        "充电时出现过热异常吗？",
        "温度什么时候突然升高的？",
        "Has it overheated at any point?",
        "设备有没有过热过？",
        "List the time windows where cells were over the limit.",
        "Find any readings above 45 °C.",
        "找出超过温度上限的读数。",
    ),
    "vibration_spectrum": (
        "Check the vibration levels.",
        "Show the vibration frequency spectrum.",
        "Is the vibration higher than the baseline?",
        "What's the RMS vibration velocity?",
        "检查一下振动情况。",
        "看看振动的频谱。",
        "振动比基线高吗？",
        "振动速度的有效值是多少？",
        "Analyse the vibration in that window.",
        "Any peaks in the vibration frequency?",
        "分析一下那个时间段的振动。",
    ),
    "maintenance_history": (
        "What maintenance has this device had?",
        "When was the last repair?",
        "Show the service records.",
        "Was any part replaced before?",
        "这台设备做过哪些保养？",
        "上一次维修是什么时候？",
        "看一下检修记录。",
        "以前有没有换过零件？",
        "List the repairs on this pack.",
        "Open the service log.",
        "Has any component been swapped out?",
        "What did the last inspection find?",
        "打开维修日志。",
        "换过哪些部件？",
        "列一下这台设备的维修。",
    ),
}

INTENTS: tuple[IntentSpec, ...] = (
    _api_intent("device_info", "device_record"),
    _api_intent(
        "sensor_window",
        "sensor_batch",
        L2Need("series", "coolant_flow", label="coolant_window"),
        L2Need("series", "vibration_rms", label="vibration_window"),
    ),
    _api_intent("temperature_anomalies", "anomaly_report"),
    _api_intent("vibration_spectrum", "vibration_report"),
    _api_intent("maintenance_history", "maintenance_record"),
    IntentSpec(
        "root_cause",
        l1=_L1,
        l2=tuple(_result(label, step) for label, step in RESULT_ITEMS[1:5]),
        l3=(
            L3Need(
                "knowledge",
                query="coolant flow during fast charging and cell temperature spikes",
                k=1,
                per_user=False,
                label="sop_cooling",
            ),
            _SOP_VIBRATION,
        ),
        examples=(
            "What caused the problem?",
            "Why is this battery failing?",
            "Find the reason for the overheating.",
            "Which fault explains these results?",
            "问题是什么原因造成的？",
            "这块电池为什么出故障？",
            "找出过热的原因。",
            "哪个故障能解释这些结果？",
            "What made the pack get so hot?",
            "Do a root cause analysis.",
            "Is low coolant flow the reason?",
            "为什么温度会升得这么高？",
            "做一下根因分析。",
            "是不是冷却不足导致的？",
            "Why is the battery running hot?",
            "What's causing the cells to heat up?",
            "Explain why the temperature jumped.",
            "为什么电池会发热？",
            "温度突然升高是什么导致的？",
        ),
    ),
    IntentSpec(
        "device_report",
        l1=_L1,
        l2=(
            *(_result(label, step) for label, step in RESULT_ITEMS),
            L2Need("preference", "report_format", label="report_preference"),
        ),
        l3=(
            L3Need(
                "knowledge",
                query="device health report template",
                k=1,
                per_user=False,
                label="template",
            ),
            _SOP_VIBRATION,
        ),
        examples=(
            "Write up the report.",
            "Create the health report for this battery.",
            "Summarize everything in a report.",
            "Produce the final diagnosis document.",
            "写一份报告。",
            "生成这块电池的健康报告。",
            "把结论整理成报告。",
            "出一份最终的诊断文档。",
            "Prepare the device diagnosis report.",
            "出一份设备诊断报告。",
        ),
    ),
)


def _tool_policy(name: str, label: str, *extra: Slot, **params: str) -> StepPolicy:
    return StepPolicy(
        name,
        risk="medium",
        evidence=(label,),
        slots=(_DEVICE_SLOT, *extra),
        tool=name,
        tool_params={"device_id": "device_id", **params},
    )


POLICIES: tuple[StepPolicy, ...] = (
    _tool_policy("device_info", "device_record"),
    _tool_policy("sensor_window", "sensor_batch"),
    _tool_policy("temperature_anomalies", "anomaly_report"),
    _tool_policy(
        "vibration_spectrum",
        "vibration_report",
        Slot("window_start", ("given.window_start",), "Which window should I compare?"),
        Slot("window_end", ("given.window_end",), "Until when?"),
        start="window_start",
        end="window_end",
    ),
    _tool_policy("maintenance_history", "maintenance_record"),
    # The SOP chunks are context, not evidence: knowledge alone diagnoses no device.
    StepPolicy(
        "root_cause",
        risk="medium",
        evidence=tuple(label for label, _ in RESULT_ITEMS[1:5]),
        slots=(_NO_DATA,),
    ),
    StepPolicy(
        "device_report",
        risk="high",
        evidence=tuple(label for label, _ in RESULT_ITEMS),
        slots=(_NO_DATA,),
    ),
)

StepHook = Callable[[str, str], None]
"""Called as ``hook(device_id, step)``: ``start`` before the worker's session takes
its device, ``selected`` once it holds it, then ``step<N>`` after each step (a test
forces an interleaving of the workers with it)."""


@dataclass(frozen=True, slots=True)
class DeviceReport:
    """One device's report and what it was made from."""

    device_id: str
    session_id: str
    text: str
    figures: Mapping[str, Any]
    """The figures the report states, as the step results held them."""
    sources: tuple[Source, ...]
    ttl_at_report_s: Mapping[str, float | None] = field(default_factory=dict)
    """Each step result's TTL (s) once the report had read it."""
    cards: tuple[str, ...] = ()
    """Every trace card of the device's session."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "device_id": self.device_id,
            "session_id": self.session_id,
            "text": self.text,
            "figures": dict(self.figures),
            "sources": [s.as_dict() for s in self.sources],
            "ttl_at_report_s": dict(self.ttl_at_report_s),
            "cards": list(self.cards),
        }


class DiagnosticsAgent:
    """The diagnostics agent on ``engine``; ``clock`` (the engine's fake clock) moves
    each step's planned duration."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        writer: ReplyWriter | None = None,
        clock: FakeClock | None = None,
        fleet: Fleet | None = None,
        run_id: str | None = None,
        plan: StepGraph = PLAN,
    ) -> None:
        self._engine = engine
        self._clock = clock
        self._plan = plan
        self.fleet = fleet or Fleet()
        self._run = run_id or uuid.uuid4().hex[:8]
        scripted = scripted_writer()
        self._loop = AgentLoop(
            engine,
            tenant=TENANT,
            policies={p.intent: p for p in POLICIES},
            writer=writer or scripted,
            fallback=scripted,
            instructions=INSTRUCTIONS,
        )
        self._writer_name = (writer or scripted).name
        self._ready = False

    def setup(self) -> None:
        """Register the intents, policies and the five APIs (and the replica); ingest
        the SOP; set the user's report preference."""
        if self._ready:
            return
        for spec in INTENTS:
            self._engine.register_intent(spec, replace=True)
        for policy in POLICIES:
            self._engine.register_policy(policy, replace=True)
        for tool in TOOLS:
            self._engine.register_tool(tool, getattr(self.fleet, tool.name), replace=True)
        report = self._engine.ingest_documents(
            [Document("sop/battery-diagnostics.md", SOP, "markdown")], tenant=TENANT
        )
        if report.errors:
            raise RuntimeError(f"the SOP could not be ingested: {report.errors}")
        self._engine.set_preference(USER, "report_format", REPORT_FORMAT, 0.92, tenant=TENANT)
        self._ready = True

    def run(
        self,
        devices: Sequence[str] = DEVICE_IDS,
        *,
        concurrent: bool = False,
        on_step: StepHook | None = None,
        run_id: str | None = None,
    ) -> AgentRun:
        """Diagnose ``devices``: one worker each, on threads when ``concurrent``.
        ``run_id`` names this batch's sessions (the agent's own by default): a batch
        run again needs a new one."""
        self.setup()
        batch = run_id or self._run
        started = self._clock.now() if self._clock is not None else None
        if concurrent:
            with ThreadPoolExecutor(max_workers=len(devices)) as pool:
                done = list(pool.map(lambda d: self._device(d, on_step, batch), devices))
        else:
            done = [self._device(device, on_step, batch) for device in devices]
        minutes = (
            None
            if started is None or self._clock is None
            else round((self._clock.now() - started).total_seconds() / 60, 1)
        )
        return AgentRun(
            "diagnostics",
            TENANT,
            self._writer_name,
            tuple(step for steps, _ in done for step in steps),
            self._engine.decision_rates(),
            {
                "session_minutes": minutes,
                "reports": {report.device_id: report.as_dict() for _, report in done},
                "api_calls": len(self.fleet.calls),
            },
        )

    # -- one device ------------------------------------------------------------------

    def _device(
        self, device: str, on_step: StepHook | None, batch: str
    ) -> tuple[list[StepRecord], DeviceReport]:
        hook = on_step or _no_hook
        sid = f"diag-{batch}-{device}"
        self._engine.start_session(
            USER,
            f"Diagnose battery device {device}: temperature anomalies, vibration, root cause, "
            "and a report.",
            tenant=TENANT,
            session_id=sid,
        )
        wm = self._engine.working(sid)
        wm.plan_steps(self._plan)
        hook(device, "start")
        self._engine.update_session(sid, lambda s: s.with_entity(device))
        hook(device, "selected")
        steps: list[StepRecord] = []
        results: dict[str, dict[str, Any]] = {}

        def tool_step(number: int, intent: str, store: Store, **given: Any) -> StepRecord:
            self._engine.update_session(sid, lambda s: s.advance())
            step = self._loop.step(
                sid,
                intent,
                f"{intent.replace('_', ' ')} for {device}",
                title=f"{device} step{number} {intent}",
                given=given or None,
                store=store,
            )
            steps.append(step)
            self._tick(self._plan.spec(f"step{number}").duration_s)
            hook(device, f"step{number}")
            return step

        tool_step(1, "device_info", self._keep("step1", results, _device_fields))
        tool_step(2, "sensor_window", self._sensors(results))
        tool_step(3, "temperature_anomalies", self._keep("step3", results, _anomaly_fields))
        start, end = vibration_window(results.get("step3", {}).get("windows", []))
        tool_step(
            4,
            "vibration_spectrum",
            self._keep("step4", results, _vibration_fields),
            window_start=start,
            window_end=end,
        )
        tool_step(5, "maintenance_history", self._keep("step5", results, _maintenance_fields))

        self._engine.update_session(sid, lambda s: s.advance())
        cause = self._loop.step(
            sid, "root_cause", f"root cause for {device}", title=f"{device} step6 root_cause"
        )
        steps.append(cause)
        if cause.route == "answer":
            root, action = _split_cause(cause.reply)
            kept = {"root_cause": root, "action": action, "source": "analysis"}
            wm.put_step_result("step6", {"device_id": device, **kept, "card": cause.card_id})
        self._tick(PLAN.spec("step6").duration_s)
        hook(device, "step6")

        self._engine.update_session(sid, lambda s: s.advance())
        report = self._loop.step(
            sid,
            "device_report",
            f"Write the health report for {device}.",
            title=f"{device} step7 device_report",
        )
        steps.append(report)
        ttls = {
            key.key.rsplit(":", 1)[-1]: key.ttl_remaining_s
            for key in wm.keys()  # noqa: SIM118 - a method, not a dict
            if ":result:" in key.key
        }
        self._tick(PLAN.spec("step7").duration_s)
        hook(device, "step7")
        if report.route == "answer":  # the engineer accepts the report
            report = self._loop.feedback(report, "confirmed")
            steps[-1] = report
        cited = tuple(_report_sources(report))
        figures = {
            "device_id": results.get("step1", {}).get("device_id"),
            "peak_c": results.get("step3", {}).get("peak_c"),
            "windows": results.get("step3", {}).get("windows"),
            "hottest_c": results.get("step2", {}).get("hottest_c"),
            "coolant_flow_min": results.get("step2", {}).get("coolant_flow_min"),
            "rms_window_mm_s": results.get("step4", {}).get("rms_window_mm_s"),
            "cycles": results.get("step5", {}).get("cycles"),
        }
        cards = tuple(card.id for card in self._engine.trace_cards(tenant=TENANT, session_id=sid))
        self._engine.end_session(sid)
        return steps, DeviceReport(device, sid, report.reply, figures, cited, ttls, cards)

    # -- what each tool's result becomes in L2 ----------------------------------------

    def _keep(
        self,
        step: str,
        results: dict[str, dict[str, Any]],
        fields: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> Store:
        """Cache the API answer for the step's intent and keep the step's result."""

        def store(wm: SessionWorkingMemory, decision: Decision, outcome: ToolOutcome) -> None:
            answer = dict(outcome.result)
            device = str(decision.params["device_id"])
            if decision.tool is not None:
                wm.put_api_response(decision.tool, {"device_id": device}, answer)
            kept = {
                **fields(answer),
                "device_id": device,
                "source": outcome.tool,
                "card": decision.card_id,
            }
            results[step] = wm.put_step_result(step, kept).value

        return store

    def _sensors(self, results: dict[str, dict[str, Any]]) -> Store:
        """The raw readings go into one L2 window per stream; the hottest cell and the
        lowest coolant flow are read back from those windows."""

        def store(wm: SessionWorkingMemory, decision: Decision, outcome: ToolOutcome) -> None:
            answer = dict(outcome.result)
            readings: dict[str, list[tuple[float, float]]] = answer["readings"]
            for stream in STREAMS:
                wm.append_series(stream, readings[stream])
            device = str(decision.params["device_id"])
            wm.put_api_response(
                "sensor_window",
                {"device_id": device},
                {
                    "device_id": device,
                    "streams": len(readings),
                    "readings": len(readings[STREAMS[0]]),
                    "start": answer["start"],
                    "end": answer["end"],
                },
            )
            hottest = max(
                (point.value, f"cell_temp_{cell:02d}", point.timestamp)
                for cell in range(1, CELLS + 1)
                for point in wm.read_series(f"cell_temp_{cell:02d}")
            )
            flow = min(point.value for point in wm.read_series("coolant_flow"))
            kept = {
                "device_id": device,
                "streams": len(readings),
                "hottest_c": hottest[0],
                "hottest_stream": hottest[1],
                "hottest_at": datetime.fromtimestamp(hottest[2], UTC).isoformat(),
                "hottest_series": series_key(wm.session_id, hottest[1]),
                "coolant_flow_min": flow,
                "source": outcome.tool,
                "card": decision.card_id,
            }
            results["step2"] = wm.put_step_result("step2", kept).value

        return store

    def _tick(self, seconds: float) -> None:
        if self._clock is not None:
            self._clock.advance(timedelta(seconds=seconds))


def _no_hook(device: str, step: str) -> None:
    return None


def _device_fields(answer: dict[str, Any]) -> dict[str, Any]:
    keep = ("model", "firmware", "commissioned", "capacity_kwh", "site")
    return {k: answer[k] for k in keep}


def _anomaly_fields(answer: dict[str, Any]) -> dict[str, Any]:
    keep = ("threshold_c", "windows", "peak_c", "peak_stream")
    return {k: answer[k] for k in keep}


def _vibration_fields(answer: dict[str, Any]) -> dict[str, Any]:
    keep = ("window_start", "window_end", "rms_window_mm_s", "rms_baseline_mm_s", "dominant_hz")
    return {k: answer[k] for k in keep}


def _maintenance_fields(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: answer[k] for k in ("last_service", "cycles", "pump_hours", "open_tickets")}


def _split_cause(reply: str) -> tuple[str, str]:
    """(root cause, action) of the root-cause step's reply."""
    cause, _, action = reply.partition(" Recommended: ")
    return cause.strip(), action.strip() or "See the root cause."


def _report_sources(step: StepRecord) -> list[Source]:
    if step.bundle is None:
        return []
    request = ReplyRequest(step.intent, step.said, step.bundle, ())
    return list(sources(request).values())
