"""The battery fleet behind the diagnostics agent's five internal APIs, simulated.

Deterministic: every device's 37 sensor streams over the examined shift are a pure
function of the device's profile, so every API answer, and so every figure of a
report, can be recomputed and checked. Thread-safe: the APIs are called by
concurrent workers.

The five APIs (tools bound to the session's device): ``device_info``,
``sensor_window`` (the raw readings of the 37 streams), ``temperature_anomalies``
(cell temperatures above 45 °C), ``vibration_spectrum`` (with a read replica as its
alternative) and ``maintenance_history``. Like real ones they misbehave: the
maintenance API's first answer per device is an error whose body carries an API key,
the vibration API is down for one device, and every device record carries a bearer
token in a debug field. The gateway must keep all of it out of the context.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

SHIFT_START = datetime(2025, 3, 24, 8, tzinfo=UTC)
"""The examined shift: 30 minutes of readings every 10 seconds."""
POINTS = 180
INTERVAL_S = 10
ANOMALY_C = 45.0
"""A cell above this is an anomaly (the battery cooling SOP's spike level)."""
VIBRATION_ALARM_MM_S = 3.5
COOLANT_MIN_LPM = 8.0
CELLS = 16
STREAMS: tuple[str, ...] = (
    *(f"cell_temp_{n:02d}" for n in range(1, CELLS + 1)),
    *(f"cell_voltage_{n:02d}" for n in range(1, CELLS + 1)),
    "pack_current",
    "coolant_flow",
    "coolant_temp",
    "vibration_rms",
    "ambient_temp",
)
"""The 37 sensor streams of a pack (docs/architecture.md, "The layers")."""

# Fake credentials the APIs leak (built from parts so secret scanners see no key).
API_KEY = "sk_" + "live_51Mq8rTYZ2fleetKEY7ghiJKL9xyz"
BEARER = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJmbGVldCJ9.ZmxlZXRfZGVtb19zaWc"


@dataclass(frozen=True, slots=True)
class Bump:
    """A fast-charging episode: the hot cell peaks at ``peak_c`` at point ``center``."""

    center: int
    half_width: int
    peak_c: float


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    """What a device's data and records are made from."""

    device_id: str
    model: str
    firmware: str
    commissioned: str
    capacity_kwh: int
    site: str
    hot_cell: int
    bumps: tuple[Bump, ...]
    coolant_lpm: float
    coolant_dip_lpm: float
    rms_mm_s: float
    rms_charging_mm_s: float
    dominant_hz: int
    last_service: str
    cycles: int
    pump_hours: int
    open_tickets: tuple[str, ...] = ()


DEVICES: tuple[DeviceProfile, ...] = (
    DeviceProfile(
        "D123",
        "BP-2025",
        "4.2.1",
        "2024-05-02",
        96,
        "Hangzhou plant, line 2",
        hot_cell=7,
        bumps=(Bump(36, 30, 47.2), Bump(126, 24, 46.1)),
        coolant_lpm=9.2,
        coolant_dip_lpm=6.4,
        rms_mm_s=2.0,
        rms_charging_mm_s=2.2,
        dominant_hz=48,
        last_service="2024-11-12",
        cycles=812,
        pump_hours=5200,
    ),
    DeviceProfile(
        "D456",
        "BP-2025",
        "4.1.9",
        "2023-09-18",
        96,
        "Hangzhou plant, line 3",
        hot_cell=12,
        bumps=(Bump(90, 20, 45.6),),
        coolant_lpm=8.6,
        coolant_dip_lpm=8.3,
        rms_mm_s=2.3,
        rms_charging_mm_s=4.1,
        dominant_hz=118,
        last_service="2024-06-30",
        cycles=1430,
        pump_hours=9800,
        open_tickets=("T-2231 coolant pump noise",),
    ),
    DeviceProfile(
        "D789",
        "BP-2024",
        "3.8.4",
        "2024-01-15",
        82,
        "Ningbo depot",
        hot_cell=3,
        bumps=(Bump(60, 18, 39.5),),
        coolant_lpm=9.1,
        coolant_dip_lpm=9.0,
        rms_mm_s=1.7,
        rms_charging_mm_s=1.8,
        dominant_hz=52,
        last_service="2025-01-20",
        cycles=640,
        pump_hours=3900,
    ),
)
DEVICE_IDS: tuple[str, ...] = tuple(d.device_id for d in DEVICES)


def timestamp(index: int) -> float:
    """Epoch seconds of reading ``index`` of the shift."""
    return SHIFT_START.timestamp() + index * INTERVAL_S


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _charging(profile: DeviceProfile, i: int) -> Bump | None:
    return next((b for b in profile.bumps if abs(i - b.center) <= b.half_width), None)


def reading(profile: DeviceProfile, stream: str, i: int) -> float:
    """One reading of one stream (pure)."""
    bump = _charging(profile, i)
    if stream.startswith("cell_temp_"):
        cell = int(stream.rsplit("_", 1)[1])
        value = 30.0 + 0.01 * i + 0.3 * ((cell * 7 + i) % 5) / 4
        if bump is not None:
            top = bump.peak_c if cell == profile.hot_cell else bump.peak_c - 6.0
            value = max(value, top - (top - 36.0) * abs(i - bump.center) / bump.half_width)
        return round(value, 1)
    if stream.startswith("cell_voltage_"):
        cell = int(stream.rsplit("_", 1)[1])
        return round(3.70 + 0.002 * ((cell + i) % 7) - (0.05 if bump else 0.0), 3)
    if stream == "pack_current":
        return 180.0 if bump else 60.0
    if stream == "coolant_flow":
        return profile.coolant_dip_lpm if bump else profile.coolant_lpm
    if stream == "coolant_temp":
        return round(24.0 + (3.0 if bump else 0.0) + 0.1 * (i % 3), 1)
    if stream == "vibration_rms":
        return profile.rms_charging_mm_s if bump else profile.rms_mm_s
    if stream == "ambient_temp":
        return 18.0
    raise KeyError(stream)


def series(profile: DeviceProfile, stream: str) -> list[tuple[float, float]]:
    """The shift's readings of one stream: (epoch seconds, value), oldest first."""
    return [(timestamp(i), reading(profile, stream, i)) for i in range(POINTS)]


def anomaly_windows(profile: DeviceProfile) -> list[dict[str, Any]]:
    """Runs of readings above :data:`ANOMALY_C`, per cell, in time order."""
    windows = []
    for cell in range(1, CELLS + 1):
        stream = f"cell_temp_{cell:02d}"
        values = [reading(profile, stream, i) for i in range(POINTS)]
        i = 0
        while i < POINTS:
            if values[i] <= ANOMALY_C:
                i += 1
                continue
            start = i
            while i < POINTS and values[i] > ANOMALY_C:
                i += 1
            windows.append(
                {
                    "start": iso(timestamp(start)),
                    "end": iso(timestamp(i - 1)),
                    "stream": stream,
                    "max_c": max(values[start:i]),
                }
            )
    return sorted(windows, key=lambda w: (w["start"], w["stream"]))


class Fleet:
    """The five internal APIs over the simulated fleet; every call is logged."""

    def __init__(self, devices: tuple[DeviceProfile, ...] = DEVICES) -> None:
        self._devices = {d.device_id: d for d in devices}
        self._lock = threading.Lock()
        self.calls: list[tuple[str, str]] = []
        """(api, device id) of every call, in order."""
        self._maintenance_failed: set[str] = set()
        self.vibration_down: frozenset[str] = frozenset({"D456"})
        """Devices whose primary vibration API is down (the replica answers)."""

    def profile(self, device_id: str) -> DeviceProfile:
        try:
            return self._devices[device_id]
        except KeyError:
            raise LookupError(f"no device {device_id}") from None

    def _log(self, api: str, params: Mapping[str, Any]) -> DeviceProfile:
        device_id = str(params["device_id"])
        with self._lock:
            self.calls.append((api, device_id))
        return self.profile(device_id)

    def device_info(self, params: Mapping[str, Any]) -> dict[str, Any]:
        p = self._log("device_info", params)
        return {
            "device_id": p.device_id,
            "model": p.model,
            "firmware": p.firmware,
            "commissioned": p.commissioned,
            "capacity_kwh": p.capacity_kwh,
            "site": p.site,
            "debug": f"fetched with Authorization: Bearer {BEARER}",
        }

    def sensor_window(self, params: Mapping[str, Any]) -> dict[str, Any]:
        p = self._log("sensor_window", params)
        return {
            "device_id": p.device_id,
            "start": iso(timestamp(0)),
            "end": iso(timestamp(POINTS - 1)),
            "interval_s": INTERVAL_S,
            "readings": {stream: series(p, stream) for stream in STREAMS},
        }

    def temperature_anomalies(self, params: Mapping[str, Any]) -> dict[str, Any]:
        p = self._log("temperature_anomalies", params)
        windows = anomaly_windows(p)
        hottest = max(
            (reading(p, f"cell_temp_{c:02d}", i), f"cell_temp_{c:02d}")
            for c in range(1, CELLS + 1)
            for i in range(POINTS)
        )
        return {
            "device_id": p.device_id,
            "threshold_c": ANOMALY_C,
            "windows": windows,
            "peak_c": hottest[0],
            "peak_stream": hottest[1],
        }

    def vibration_spectrum(self, params: Mapping[str, Any]) -> dict[str, Any]:
        p = self._log("vibration_spectrum", params)
        if p.device_id in self.vibration_down:
            raise ConnectionError(f"vibration-api 503 for X-Api-Key: {API_KEY}")
        return self._spectrum(p, params)

    def vibration_spectrum_replica(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self._spectrum(self._log("vibration_spectrum_replica", params), params)

    def _spectrum(self, p: DeviceProfile, params: Mapping[str, Any]) -> dict[str, Any]:
        start, end = _epoch(params["start"]), _epoch(params["end"])
        inside = [v for t, v in series(p, "vibration_rms") if start <= t <= end]
        outside = [v for t, v in series(p, "vibration_rms") if not start <= t <= end]
        rms_in = round(sum(inside) / len(inside), 2) if inside else 0.0
        rms_out = round(sum(outside) / len(outside), 2) if outside else 0.0
        return {
            "device_id": p.device_id,
            "window_start": params["start"],
            "window_end": params["end"],
            "rms_window_mm_s": rms_in,
            "rms_baseline_mm_s": rms_out,
            "dominant_hz": p.dominant_hz,
        }

    def maintenance_history(self, params: Mapping[str, Any]) -> dict[str, Any]:
        p = self._log("maintenance_history", params)
        with self._lock:
            first = p.device_id not in self._maintenance_failed
            self._maintenance_failed.add(p.device_id)
        if first:
            raise RuntimeError(f'maintenance-api 401: {{"error": "invalid api_key: {API_KEY}"}}')
        return {
            "device_id": p.device_id,
            "last_service": p.last_service,
            "cycles": p.cycles,
            "pump_hours": p.pump_hours,
            "open_tickets": list(p.open_tickets),
        }


def _epoch(value: Any) -> float:
    text = str(value)
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def vibration_window(windows: list[dict[str, Any]]) -> tuple[str, str]:
    """The window whose vibration is compared: the first anomaly window, or, with none,
    the shift's middle five minutes."""
    if windows:
        return str(windows[0]["start"]), str(windows[0]["end"])
    middle = timestamp(POINTS // 2)
    return iso(middle - 150), iso(middle + timedelta(seconds=150).total_seconds())
