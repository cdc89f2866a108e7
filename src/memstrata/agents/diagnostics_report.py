"""The diagnostics agent's scripted model: the reply of each step, and the device
report in the required format (ISO 26262-style traceability: docs/architecture.md,
"The layers").

The report has five sections (summary, temperature anomaly windows with timestamps,
vibration comparison, root cause, recommended action) and a list of sources: every
figure carries a ``[n]`` marker, and source ``n`` names the tool that produced the
figure, the trace card of that call and the L2 key the report read it from
(knowledge is cited by its point id).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memstrata.agents.fleet import ANOMALY_C, COOLANT_MIN_LPM, VIBRATION_ALARM_MM_S
from memstrata.agents.writer import ReplyRequest, ScriptedWriter
from memstrata.frozen import thaw

REPORT_SECTIONS: tuple[str, ...] = (
    "Summary",
    "Temperature anomaly windows",
    "Vibration comparison",
    "Root cause",
    "Recommended action",
)
RESULT_ITEMS: tuple[tuple[str, str], ...] = (
    ("device_result", "step1"),
    ("sensor_result", "step2"),
    ("anomaly_result", "step3"),
    ("vibration_result", "step4"),
    ("maintenance_result", "step5"),
    ("cause_result", "step6"),
)
"""The report's L2 evidence: (bundle item, step whose result it is), source order."""


@dataclass(frozen=True, slots=True)
class Source:
    """One cited source of a report."""

    number: int
    what: str
    """The tool (or ``analysis``, ``knowledge``) that produced the figures."""
    card_id: str
    ref: str
    """The L2 key or L3 point id the report read."""
    note: str = ""

    def line(self) -> str:
        card = f" · trace card {self.card_id}" if self.card_id else ""
        note = f" ({self.note})" if self.note else ""
        return f"[{self.number}] {self.what}{card} · {self.ref}{note}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "what": self.what,
            "card_id": self.card_id,
            "ref": self.ref,
            "note": self.note,
        }


def _fields(request: ReplyRequest, name: str) -> dict[str, Any]:
    value = request.value(name, {})
    return value if isinstance(value, dict) else {}


def _hms(stamp: str) -> str:
    """``08:05:10Z`` of an ISO timestamp."""
    return stamp.split("T", 1)[1] if "T" in stamp else stamp


# -- the tool steps' replies -------------------------------------------------------------


def compose_device(request: ReplyRequest) -> str:
    d = _fields(request, "device_record")
    return (
        f"{d.get('device_id')} is a {d.get('model')} pack ({d.get('capacity_kwh')} kWh, "
        f"firmware {d.get('firmware')}) at {d.get('site')}, commissioned {d.get('commissioned')}."
    )


def compose_sensors(request: ReplyRequest) -> str:
    s = _fields(request, "sensor_batch")
    return (
        f"Streamed {s.get('streams')} sensor streams of {s.get('device_id')} into L2 windows, "
        f"{s.get('readings')} readings each from {s.get('start')} to {s.get('end')}."
    )


def compose_anomalies(request: ReplyRequest) -> str:
    a = _fields(request, "anomaly_report")
    windows = a.get("windows") or []
    if not windows:
        return (
            f"No cell of {a.get('device_id')} went above the {a.get('threshold_c')} °C "
            f"threshold; the peak was {a.get('peak_c')} °C on {a.get('peak_stream')}."
        )
    spans = "; ".join(
        f"{w['stream']} reached {w['max_c']} °C from {w['start']} to {_hms(w['end'])}"
        for w in windows
    )
    return (
        f"{len(windows)} anomaly window(s) above the {a.get('threshold_c')} °C threshold on "
        f"{a.get('device_id')}: {spans}."
    )


def compose_vibration(request: ReplyRequest) -> str:
    v = _fields(request, "vibration_report")
    return (
        f"RMS velocity {v.get('rms_window_mm_s')} mm/s in the window {v.get('window_start')} "
        f"to {_hms(str(v.get('window_end')))} against {v.get('rms_baseline_mm_s')} mm/s "
        f"outside it (baseline); dominant frequency {v.get('dominant_hz')} Hz."
    )


def compose_maintenance(request: ReplyRequest) -> str:
    m = _fields(request, "maintenance_record")
    tickets = ", ".join(m.get("open_tickets") or ()) or "none"
    return (
        f"Last service {m.get('last_service')}; {m.get('cycles')} cycles and "
        f"{m.get('pump_hours')} pump hours so far; open tickets: {tickets}."
    )


# -- analysis -----------------------------------------------------------------------------


def diagnosis(
    sensors: Mapping[str, Any],
    anomalies: Mapping[str, Any],
    vibration: Mapping[str, Any],
    maintenance: Mapping[str, Any],
) -> tuple[str, str]:
    """(root cause, recommended action) from the step results, by the SOP's rules."""
    device = anomalies.get("device_id") or sensors.get("device_id")
    peak = float(anomalies.get("peak_c") or 0.0)
    flow = float(sensors.get("coolant_flow_min") or 0.0)
    rms = float(vibration.get("rms_window_mm_s") or 0.0)
    tickets = ", ".join(maintenance.get("open_tickets") or ())
    if peak > ANOMALY_C and flow < COOLANT_MIN_LPM:
        return (
            f"Coolant flow fell to {flow} L/min while fast charging, under the "
            f"{COOLANT_MIN_LPM} L/min the battery cooling SOP requires, and "
            f"{anomalies.get('peak_stream')} peaked at {peak} °C.",
            f"Inspect the coolant pump and loop of {device} for a blockage, and hold fast "
            "charging until the SOP's minimum flow is restored.",
        )
    if rms > VIBRATION_ALARM_MM_S:
        also = f" With open ticket {tickets}, this" if tickets else " This"
        return (
            f"Vibration RMS reached {rms} mm/s in the anomaly window, above the "
            f"{VIBRATION_ALARM_MM_S} mm/s alarm of the vibration analysis standard."
            f"{also} points at coolant pump bearing wear, which also explains the "
            f"{peak} °C peak.",
            f"Replace the coolant pump bearing of {device} within 7 days and measure the "
            "vibration again after the repair.",
        )
    return (
        f"No fault: no cell went above {ANOMALY_C} °C and the vibration stayed under the "
        f"{VIBRATION_ALARM_MM_S} mm/s alarm.",
        f"None for {device}: keep the routine service interval.",
    )


def compose_cause(request: ReplyRequest) -> str:
    cause, action = diagnosis(
        _fields(request, "sensor_result"),
        _fields(request, "anomaly_result"),
        _fields(request, "vibration_result"),
        _fields(request, "maintenance_result"),
    )
    return f"{cause} Recommended: {action}"


# -- the report -----------------------------------------------------------------------------


def sources(request: ReplyRequest) -> dict[str, Source]:
    """The report's sources by bundle item: each step result (its tool's trace card and
    its L2 key), then the knowledge chunks."""
    out: dict[str, Source] = {}
    for name, _ in RESULT_ITEMS:
        fields = _fields(request, name)
        if not fields:
            continue
        note = (
            f"read from the L2 window {fields['hottest_series']}"
            if fields.get("hottest_series")
            else ""
        )
        out[name] = Source(
            len(out) + 1,
            str(fields.get("source", name)),
            str(fields.get("card", "")),
            request.ref(name),
            note,
        )
    for item in request.bundle.layer("L3"):
        content = thaw(item.content)
        section = content.get("section", "") if isinstance(content, dict) else ""
        out[item.name] = Source(
            len(out) + 1,
            "knowledge",
            "",
            f"L3 {item.provenance.ref}",
            f"{item.provenance.source} {section}".strip(),
        )
    return out


def compose_report(request: ReplyRequest) -> str:
    """The device report (Markdown): header, the five sections, the sources."""
    cite = sources(request)

    def at(name: str) -> str:
        return f"[{cite[name].number}]" if name in cite else "[?]"

    device = _fields(request, "device_result")
    sensors = _fields(request, "sensor_result")
    anomalies = _fields(request, "anomaly_result")
    vibration = _fields(request, "vibration_result")
    maintenance = _fields(request, "maintenance_result")
    cause = _fields(request, "cause_result")
    preference = request.value("report_preference", {})
    fmt = preference.get("value") if isinstance(preference, dict) else None
    device_id = device.get("device_id") or anomalies.get("device_id")
    windows = anomalies.get("windows") or []
    lines = [
        f"# Battery health report: {device_id}",
        f"Session {request.bundle.session_id}, written {request.bundle.built_at.isoformat()}"
        + (f"; format: {fmt} (the user's preference)" if fmt else ""),
        f"Structure: the device health report template {_knowledge(cite, 'template')}; "
        "every figure cites its source.",
        "",
        "## Summary",
        f"{device_id} ({device.get('model')}, {device.get('capacity_kwh')} kWh, firmware "
        f"{device.get('firmware')}) {at('device_result')}: {len(windows)} temperature "
        f"anomaly window(s) in the examined shift {at('anomaly_result')}.",
        f"The hottest reading in the L2 windows was {sensors.get('hottest_c')} °C on "
        f"{sensors.get('hottest_stream')} {at('sensor_result')}.",
        f"{cause.get('root_cause')} {at('cause_result')}",
        "",
        "## Temperature anomaly windows",
    ]
    if windows:
        lines.extend(
            f"- {w['start']} to {w['end']}: {w['stream']} reached {w['max_c']} °C "
            f"{at('anomaly_result')}"
            for w in windows
        )
    else:
        lines.append(
            f"- None above the {anomalies.get('threshold_c')} °C threshold; peak "
            f"{anomalies.get('peak_c')} °C {at('anomaly_result')}"
        )
    lines += [
        "",
        "## Vibration comparison",
        f"RMS velocity {vibration.get('rms_window_mm_s')} mm/s in the window "
        f"{vibration.get('window_start')} to {vibration.get('window_end')} against "
        f"{vibration.get('rms_baseline_mm_s')} mm/s outside it (baseline) "
        f"{at('vibration_result')}.",
        f"Dominant frequency {vibration.get('dominant_hz')} Hz {at('vibration_result')}; "
        f"the alarm is at {VIBRATION_ALARM_MM_S} mm/s {_knowledge(cite, 'vibration')}.",
        "",
        "## Root cause",
        f"{cause.get('root_cause')} {at('cause_result')}",
        f"Service record: last service {maintenance.get('last_service')}, "
        f"{maintenance.get('cycles')} cycles, {maintenance.get('pump_hours')} pump hours "
        f"{at('maintenance_result')}.",
        "",
        "## Recommended action",
        f"{cause.get('action')} {at('cause_result')}",
        "",
        "## Sources",
        *(source.line() for source in cite.values()),
    ]
    return "\n".join(lines)


def _knowledge(cite: Mapping[str, Source], topic: str) -> str:
    """The marker of the first knowledge chunk about ``topic`` (any chunk if none)."""
    chunks = [s for s in cite.values() if s.what == "knowledge"]
    chosen = next((s for s in chunks if topic in s.note.casefold()), chunks[0] if chunks else None)
    return f"[{chosen.number}]" if chosen else ""


COMPOSERS = {
    "device_info": compose_device,
    "sensor_window": compose_sensors,
    "temperature_anomalies": compose_anomalies,
    "vibration_spectrum": compose_vibration,
    "maintenance_history": compose_maintenance,
    "root_cause": compose_cause,
    "device_report": compose_report,
}


def scripted_writer() -> ScriptedWriter:
    """The diagnostics agent's deterministic reply writer."""
    return ScriptedWriter(COMPOSERS)
