"""``memstrata bench load``: the seed's three load scenarios (seed 000 §5.2) and a soak,
against a ``memstrata serve`` child process over REST.

The bench starts ``memstrata serve`` on a fresh data directory (embedded Valkey and
qdrant-edge), makes a writer key with the admin key the first start writes, seeds
``users`` users with a few remembered facts each, and runs, on that one service:

* ``short``: many short sessions at ``rate`` requests/s (open, cache a sensor reading
  in L2 for 60 s, a user turn, route, read the reading back, the reply, build_context,
  close: 8 requests) from ``clients`` concurrent callers;
* ``long``: few long sessions (``clients // 8``, at least 2) over many steps at
  ``rate / 10`` (observe, route, step results written and read, decide, feedback,
  build_context, a sensor series, a cached API response, remember: 13 per cycle);
* ``burst``: short sessions at ``rate / 5`` (``calm``), then x15 for ``burst_seconds``
  with every L3 read slowed by ``l3_delay_s`` (``burst``: the reader's deadlines,
  circuit breaker and L2 fallback carry it), then ``rate / 5`` again with L3 healed
  (``recovery``); long sessions run beside at ``rate / 10`` throughout.

The rates keep the seed's proportions (1000 QPS short, 100 QPS long, 200 -> 3000 QPS
burst) at the scale of the host. The L3 delay is fault injection the service is started
with (``Settings.faults``, :mod:`memstrata.testing.injected`), switched on and off by a
file during the burst. ``soak`` (``--soak SECONDS``, instead of the three) runs short
sessions at ``rate / 2`` and long ones at ``rate / 10`` and reports whether RSS, the
queue backlog and p99 stay flat: the slope per hour and the last over the first window.

Each scenario reports per operation and phase: requests, req/s, p50/p99 (from each
request's scheduled send time), errors counted by ``"<status> <code>/<type>"`` (only
typed 429/503 are allowed; anything else is ``unexpected``); the bundles' L3 skip
reasons and the items read from the L2 cache; L2 keys and expirations (the health
report's expiry rate: expired per minute over the mean key count); the write queue's
backlog (``lag``: not yet delivered; ``pending``: delivered, not acknowledged) over
time and how long it took to drain after the load; the RSS of the server process and
of its Valkey over time. The context health report of each scenario is written next to
the JSON (``load-<scenario>.health.md`` / ``.html``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memstrata.bench.load_calls import (
    ClientPool,
    Http,
    Phase,
    Stream,
    outcome_of,
    user_facts,
)
from memstrata.bench.load_report import (
    TIMELINE_COLUMNS,
    errors_of,
    soak_summary,
    stream_summary,
    timeline_summary,
)

SCENARIOS = ("short", "long", "burst")
BURST_FACTOR = 15
START_TIMEOUT_S = 180.0
DRAIN_TIMEOUT_S = 120.0
SWITCH_FILE = "l3-slow"
CALM_MIN_S = 4.0
"""The burst's calm phases last a fifth of ``seconds``, at least this (or ``seconds``)."""
ENV_PREFIX = "MEMSTRATA_"


@dataclass(frozen=True, slots=True)
class LoadOptions:
    """How big and how long (``memstrata bench load`` options; see the module doc)."""

    seconds: float = 300.0
    """Each of ``short`` and ``long``; ``burst``'s calm and recovery take a fifth each."""
    rate: float = 50.0
    """Requests/s of ``short``; the others in the seed's proportions."""
    clients: int = 32
    burst_seconds: float = 300.0
    l3_delay_s: float = 10.0
    users: int = 64
    client_processes: int = 2
    sample_s: float = 5.0
    """How often RSS, the queue, L2 and the breaker are read."""
    drain_timeout_s: float = DRAIN_TIMEOUT_S
    key_rate_per_s: int = 1000
    """The load key's rate limit (the product's default)."""
    scenarios: tuple[str, ...] = SCENARIOS
    soak_s: float = 0.0
    """Run the soak for this long instead of the scenarios (0: no soak)."""
    soak_windows: int = 10

    def __post_init__(self) -> None:
        for name in ("seconds", "rate", "burst_seconds", "sample_s", "drain_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name}: must be a number > 0")
        for name in ("clients", "users", "client_processes", "key_rate_per_s", "soak_windows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: must be an integer >= 1")
        if not (math.isfinite(self.l3_delay_s) and self.l3_delay_s > 0):
            raise ValueError("l3_delay_s: must be a number > 0")
        if not (math.isfinite(self.soak_s) and self.soak_s >= 0):
            raise ValueError("soak_s: must be a number >= 0")
        unknown = sorted(set(self.scenarios) - set(SCENARIOS))
        if unknown or (not self.scenarios and not self.soak_s):
            raise ValueError(f"scenarios: choose among {', '.join(SCENARIOS)}")


QUICK = LoadOptions(
    seconds=4.0,
    rate=20.0,
    clients=8,
    burst_seconds=4.0,
    l3_delay_s=3.0,
    users=6,
    sample_s=0.5,
    drain_timeout_s=20.0,
)
"""``--quick``: all three scenarios in well under a minute (a test's shape check)."""


def scenario_streams(name: str, o: LoadOptions) -> tuple[Stream, ...]:
    """The streams of scenario ``name`` (``soak`` too) under ``o``."""
    few = max(2, o.clients // 8)
    long_rate = o.rate / 10
    if name == "short":
        return (
            Stream("short", "short", o.clients, (Phase("steady", o.seconds, o.rate),), o.users),
        )
    if name == "long":
        return (Stream("long", "long", few, (Phase("steady", o.seconds, long_rate),), o.users),)
    if name == "burst":
        calm = max(o.seconds / 5, min(o.seconds, CALM_MIN_S))
        base = o.rate / 5
        phases = (
            Phase("calm", calm, base),
            Phase("burst", o.burst_seconds, base * BURST_FACTOR),
            Phase("recovery", calm, base),
        )
        total = calm * 2 + o.burst_seconds
        return (
            Stream("burst", "short", o.clients, phases, o.users),
            Stream("burst-long", "long", few, (Phase("steady", total, long_rate),), o.users),
        )
    if name == "soak":
        return (
            Stream("soak", "short", o.clients, (Phase("steady", o.soak_s, o.rate / 2),), o.users),
            Stream("soak-long", "long", few, (Phase("steady", o.soak_s, long_rate),), o.users),
        )
    raise ValueError(f"scenario: unknown {name!r}")


# -- the service ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    """A ``memstrata serve`` child process over a fresh data directory."""

    process: subprocess.Popen[bytes]
    data_dir: Path
    port: int
    log: Path
    switch: Path
    admin_key: str = ""
    key: str = ""

    def valkey_pid(self) -> int | None:
        lock = self.data_dir / "valkey" / "valkey.lock"
        try:
            pid = json.loads(lock.read_text() or "{}").get("server_pid")
        except (OSError, ValueError):
            return None
        return int(pid) if pid else None

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http_connection(self.port)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def call(self, name: str, payload: dict[str, Any], *, admin: bool = False) -> Any:
        """One request; a failure raises RuntimeError with its outcome."""
        http = Http("127.0.0.1", self.port, self.admin_key if admin else self.key)
        try:
            status, body = http.post(name, payload)
        finally:
            http.close()
        if status >= 400:
            raise RuntimeError(f"{name}: {outcome_of(status, body)}: {body[:300]!r}")
        return orjson.loads(body)


def http_connection(port: int) -> Any:
    import http.client

    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def start_serve(data_dir: Path, out: Path, options: LoadOptions) -> Served:
    """``memstrata serve`` on free loopback ports, with the L3 delay armed (off until
    the switch file exists); MEMSTRATA_* variables of this process are not passed on,
    so the service is the embedded default on ``data_dir``."""
    switch = out / SWITCH_FILE
    switch.unlink(missing_ok=True)
    settings = out / "load-settings.json"
    faults = {"l3_read_delay_s": options.l3_delay_s, "l3_delay_switch": str(switch)}
    settings.write_text(json.dumps({"faults": faults}))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    env["MEMSTRATA_SETTINGS"] = str(settings)
    log = out / "serve.log"
    command = [
        sys.executable, "-m", "memstrata.cli", "serve", "--data-dir", str(data_dir),
        "--port", str(port), "--grpc-port", str(_free_port()),
    ]  # fmt: skip
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
    served = Served(process, data_dir, port, log, switch)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"memstrata serve exited ({process.returncode}): {_tail(log)}")
        with contextlib.suppress(OSError):
            if served.get("/readyz")[0] == 200:  # admin.key exists once ready
                break
        if time.monotonic() > deadline:
            stop_serve(served)
            raise RuntimeError(f"memstrata serve did not start: {_tail(log)}")
        time.sleep(0.2)
    served.admin_key = (data_dir / "admin.key").read_text().strip()
    made = served.call(
        "create_key",
        {"agent": "bench-load", "role": "writer", "rate_per_s": options.key_rate_per_s},
        admin=True,
    )
    served.key = str(made["key"])
    return served


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-2000:]
    return ""


def stop_serve(served: Served) -> int | None:
    """SIGTERM (the clean stop), then its Valkey if it outlived it; the exit status."""
    valkey = served.valkey_pid()
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGTERM)
    try:
        code = served.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        served.process.kill()
        code = served.process.wait()
    if valkey is not None and _alive(valkey):
        with contextlib.suppress(ProcessLookupError):
            os.kill(valkey, signal.SIGTERM)
    served.switch.unlink(missing_ok=True)
    return code


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- what the sampler reads ---------------------------------------------------------------


def rss_mib(pid: int | None) -> float | None:
    """Resident set size of ``pid`` (Linux ``/proc``), None when unknown."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


_METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> name (with its labels as written) -> value; and each name's
    sum over its labels under the bare name."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _METRIC.match(line.strip())
        if match is None or line.startswith("#"):
            continue
        name, labels, raw = match.groups()
        try:
            value = float(raw)
        except ValueError:
            continue
        if labels:
            found[name + labels] = value
            found[name] = found.get(name, 0.0) + value
        else:
            found[name] = value
    return found


class Sampler:
    """A thread reading RSS, ``/healthz`` and ``/metrics`` every ``interval_s``."""

    def __init__(self, served: Served, interval_s: float, t0: float) -> None:
        self._served = served
        self._interval = interval_s
        self._t0 = t0
        self.rows: list[tuple[float | None, ...]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-load-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def sample(self) -> tuple[float | None, ...]:
        served = self._served
        queue: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            _, body = served.get("/healthz")
            queue = orjson.loads(body)["checks"]["write_queue"]
        metrics: dict[str, float] = {}
        with contextlib.suppress(Exception):
            metrics = parse_metrics(served.get("/metrics")[1].decode())
        row = (
            round(time.monotonic() - self._t0, 2),
            rss_mib(served.process.pid),
            rss_mib(served.valkey_pid()),
            queue.get("lag"),
            queue.get("pending"),
            queue.get("length"),
            queue.get("dead_lettered"),
            metrics.get("memstrata_l2_keys"),
            metrics.get("memstrata_l2_expired_keys_total"),
            metrics.get('memstrata_breaker_state{backend="l3"}'),
            # Absent from a scrape until the first degraded read: 0 then.
            metrics.get("memstrata_degraded_reads_total", 0.0) if metrics else None,
            # RSS grows with the data the load stores: read it beside the points.
            metrics.get("memstrata_l3_points"),
        )
        self.rows.append(row)
        return row

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a sample is best effort
                self.sample()
            self._stop.wait(self._interval)


# -- running streams ----------------------------------------------------------------------


def seed(served: Served, users: int, timeout_s: float) -> dict[str, Any]:
    """Each user's facts remembered, one step of each kind warmed up, the queue drained."""
    began = time.monotonic()
    for user in range(users):
        for fact in user_facts(user)[:3]:
            served.call("remember", {"user_id": f"user-{user}", "text": fact})
    sid = "warmup"
    served.call("start_session", {"user_id": "user-0", "initial_query": "hi", "session_id": sid})
    served.call("route", {"session_id": sid, "step_intent": "respond", "query": "my budget"})
    served.call(
        "build_context",
        {"session_id": sid, "step_intent": "respond", "user_input": "hi", "system_prompt": "."},
    )
    served.call("end_session", {"session_id": sid})
    drained = wait_drained(served, timeout_s)
    return {"users": users, "facts": users * 3, "seconds": round(time.monotonic() - began, 2)} | {
        "drained": drained is not None
    }


def backlog(served: Served) -> int | None:
    """Queue entries not yet stored (undelivered + unacknowledged), None when unknown."""
    with contextlib.suppress(Exception):
        queue = orjson.loads(served.get("/healthz")[1])["checks"]["write_queue"]
        return int(queue.get("lag") or 0) + int(queue.get("pending") or 0)
    return None


def wait_drained(served: Served, timeout_s: float) -> float | None:
    """Seconds until the write queue's backlog is 0, None past ``timeout_s``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if backlog(served) == 0:
            return round(time.monotonic() - began, 2)
        time.sleep(0.25)
    return None


def health_report(served: Served, seconds: float, out: Path, name: str) -> dict[str, Any]:
    """The context health report of the last ``seconds``, written beside the JSON."""
    since = f"{max(1, math.ceil(seconds))}s"
    try:
        report = served.call("health_report", {"since": since}, admin=True)
    except RuntimeError as exc:
        return {"error": str(exc)}
    markdown = out / f"load-{name}.health.md"
    html = out / f"load-{name}.health.html"
    markdown.write_text(report["markdown"])
    html.write_text(report["html"])
    found = re.search(
        r"\| expiry rate \(expired per minute / keys\) \| ([^|]+) \|", report["markdown"]
    )
    return {
        "since": since,
        "samples": report["samples"],
        "markdown": str(markdown),
        "html": str(html),
        "l2_expiry_rate": found.group(1).strip() if found else None,
    }


# -- the run ------------------------------------------------------------------------------


@dataclass
class _Run:
    served: Served
    pool: ClientPool
    sampler: Sampler
    t0: float
    out: Path
    options: LoadOptions
    scenarios: dict[str, Any] = field(default_factory=dict)


def _scenario(run: _Run, name: str, progress: Callable[[str], None]) -> dict[str, Any]:
    o = run.options
    streams = scenario_streams(name, o)
    served = run.served
    at: list[tuple[float, Callable[[], None]]] = []
    if name == "burst":
        calm, burst = streams[0].phases[0].seconds, streams[0].phases[1].seconds
        at = [
            (calm, served.switch.touch),
            (calm + burst, lambda: served.switch.unlink(missing_ok=True)),
        ]
    progress(f"scenario {name}: {max(s.seconds for s in streams):.0f} s")
    try:
        start, results = run.pool.run(served.port, served.key, streams, at)
    finally:
        served.switch.unlink(missing_ok=True)
    seconds = max(s.seconds for s in streams)
    end = start + seconds
    at_end = backlog(served)
    drained = wait_drained(served, o.drain_timeout_s)
    rows = [
        r for r in run.sampler.rows if r[0] is not None and start - run.t0 <= r[0] <= end - run.t0
    ]
    rows = [(round(float(r[0] or 0.0) - (start - run.t0), 2), *r[1:]) for r in rows]
    outcomes = Counter(r[4] for c in results for r in c.records)
    skips: Counter[str] = Counter()
    for c in results:
        skips.update(c.l3_skips)
    report: dict[str, Any] = {
        "seconds": seconds,
        "streams": {
            s.name: stream_summary(s, [c for c in results if c.stream == s.name]) for s in streams
        },
        **errors_of(outcomes),
        "fallback": {
            "l3_skip_reasons": dict(sorted(skips.items())),
            "l2_cache_items": sum(c.l2_cache_items for c in results),
        },
        **timeline_summary(rows),
        "queue_backlog_at_end": at_end,
        "queue_drained_after_s": drained,
        "health_report": health_report(served, seconds, run.out, name),
        "timeline": {"columns": list(TIMELINE_COLUMNS), "rows": rows},
    }
    if name == "burst":
        report["l3_delay_s"] = o.l3_delay_s
    if name == "soak":
        report["soak"] = soak_summary(rows, results, o.soak_s, o.soak_windows)
    return report


def run_load_bench(
    options: LoadOptions,
    out: Path,
    *,
    keep_data: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Start the service, seed it, run the scenarios (or the soak), stop it; the report
    is also written to ``out/load.json`` (``soak.json``)."""
    out.mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="memstrata-bench-load-"))
    names = ("soak",) if options.soak_s else options.scenarios
    report: dict[str, Any] = {
        "options": {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in ((f, getattr(options, f)) for f in LoadOptions.__dataclass_fields__)
        },
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
    }
    # The client processes start beside the service: each spawn takes seconds.
    pool = ClientPool(min(options.client_processes, options.clients))
    try:
        progress("starting memstrata serve")
        began = time.monotonic()
        served = start_serve(data_dir, out, options)
        t0 = time.monotonic()
        report["serve_start_s"] = round(t0 - began, 2)
        sampler = Sampler(served, options.sample_s, t0).start()
        run = _Run(served, pool, sampler, t0, out, options)
        try:
            progress("seeding")
            report["seed"] = seed(served, options.users, max(options.drain_timeout_s, 60.0))
            for name in names:
                run.scenarios[name] = _scenario(run, name, progress)
        finally:
            sampler.stop()
            report["serve_exit_code"] = stop_serve(served)
    finally:
        pool.close()
        report["load_average_after"] = os.getloadavg()
        if keep_data:
            report["data_dir"] = str(data_dir)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    report["scenarios"] = run.scenarios
    report["unexpected_errors"] = sum(s["unexpected_errors"] for s in run.scenarios.values())
    target = out / ("soak.json" if options.soak_s else "load.json")
    target.write_text(json.dumps(report, indent=1, default=str))
    report["json"] = str(target)
    return report
