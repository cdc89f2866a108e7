"""``memstrata bench serve``: route and build_context in process, over REST and over gRPC.

One service (embedded backends, a fresh data directory) is seeded with a tenant, a few
sessions and ~50 remembered memories, and serves REST (uvicorn) and gRPC on loopback
from this process. Each operation is then run by ``clients`` concurrent callers for
``seconds`` per transport:

* ``in_process``: ``service.call`` on ``clients`` threads of this process (the baseline:
  no transport, no client cost);
* ``rest``: keep-alive HTTP connections (the standard library's), one per caller;
* ``grpc``: a channel per caller sending pre-serialized requests.

The REST and gRPC callers run in ``client_processes`` separate processes (spawned), so
the server does not share its GIL with them; on a small machine they still share the
CPU with it, as a client on the same host would.

Two loads:

* closed loop: each caller sends its next request when the previous one returns; the
  req/s reached is the capacity, and the latency includes queueing (at ``clients``
  callers, p50 is about clients / req/s once the CPU is saturated);
* open loop (``rate``): ``rate`` requests per second in total, spread evenly over the
  callers, each sent at its scheduled time. Latency is measured from the scheduled
  time, so a stall is charged to every request it delays (no coordinated omission).
  A request still unsent when the time is up is counted as ``missed``.

The transport overhead is the p50 over the in-process p50 of the same load.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import multiprocessing
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import orjson

from memstrata.bench.stats import percentile

OPERATIONS = ("route", "build_context")
TRANSPORTS = ("in_process", "rest", "grpc")
REMOTE = ("rest", "grpc")
SESSIONS = 8
MEMORIES = [
    "I live in Hangzhou and work as a nurse.",
    "I'm allergic to peanuts and shellfish.",
    "My budget for the trip is 5000 yuan.",
    "I prefer window seats on trains.",
    "My daughter Mia is seven years old.",
    "I drive a blue Tesla Model 3.",
    "I am learning Spanish on weekends.",
    "My favourite food is hot pot.",
    "I go running every morning at six.",
    "I usually fly with China Eastern.",
]
WARMUP_CALLS = 3
DEFAULT_CLIENT_PROCESSES = 2
AUTO_RATE_FRACTION = 0.5
START_TIMEOUT_S = 120.0

Call = Callable[[str, dict[str, Any]], object]
MakeCall = Callable[[], tuple[Call, Callable[[], None]]]


@dataclass(frozen=True, slots=True)
class Load:
    """What one group of callers does: ``indices`` are their places among all callers."""

    name: str
    sessions: tuple[str, ...]
    indices: tuple[int, ...]
    clients: int
    seconds: float
    rate: float | None  # requests per second over all callers; None: closed loop


@dataclass(frozen=True, slots=True)
class Remote:
    """Where a client process sends its calls."""

    transport: str
    target: str
    key: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _payload(name: str, session_id: str) -> dict[str, Any]:
    if name == "route":
        return {"session_id": session_id, "step_intent": "respond", "query": "my allergies"}
    return {
        "session_id": session_id,
        "step_intent": "respond",
        "user_input": "Recommend a restaurant that is safe for my allergies.",
        "system_prompt": "You are a travel assistant.",
    }


def _seed(running: Any, key: str) -> list[str]:
    """Sessions of one user and ~50 memories, flushed to L3."""
    service = running.service
    user = "bench-user"
    sessions = []
    for i in range(SESSIONS):
        started = service.call(
            "start_session",
            key,
            {"user_id": user, "initial_query": "plan a trip", "session_id": f"bench-s{i}"},
        )
        sessions.append(str(started.session_id))
    for i in range(50):
        text = f"{MEMORIES[i % len(MEMORIES)]} (note {i})"
        service.call("remember", key, {"user_id": user, "text": text})
    running.engine.flush()
    return sessions


def _run_callers(make_call: MakeCall, load: Load, ready: Callable[[], None]) -> dict[str, Any]:
    """One thread per caller of ``load``; ``ready`` returns when every group may start.

    Returns the raw outcome: latencies (s), errors, missed sends, the first error and
    the seconds from the start to the last reply.
    """
    n = len(load.indices)
    warmed = threading.Barrier(n + 1)
    start_at: list[float] = []
    go = threading.Event()
    latencies: list[list[float]] = [[] for _ in range(n)]
    errors = [0] * n
    missed = [0] * n
    first_error: list[str] = []
    interval = load.clients / load.rate if load.rate else 0.0

    def worker(slot: int) -> None:
        call, close = make_call()
        index = load.indices[slot]
        payload = _payload(load.name, load.sessions[index % len(load.sessions)])
        mine = latencies[slot]

        def once(since: float) -> None:
            try:
                call(load.name, payload)
            except Exception as exc:  # a failed call is a counted error
                errors[slot] += 1
                if not first_error:
                    first_error.append(f"{type(exc).__name__}: {str(exc)[:300]}")
                return
            mine.append(time.perf_counter() - since)

        try:
            for _ in range(WARMUP_CALLS):
                with contextlib.suppress(Exception):  # counted in the timed loop
                    call(load.name, payload)
            warmed.wait()
            go.wait()
            t0 = start_at[0]
            deadline = t0 + load.seconds
            if not load.rate:
                while time.perf_counter() < deadline:
                    once(time.perf_counter())
                return
            # Open loop: this caller's sends are evenly spaced, offset among the others.
            scheduled = t0 + interval * index / load.clients
            while scheduled < deadline:
                now = time.perf_counter()
                if now >= deadline:
                    missed[slot] += math.ceil((deadline - scheduled) / interval)
                    break
                if now < scheduled:
                    time.sleep(scheduled - now)
                once(scheduled)
                scheduled += interval
        finally:
            close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    warmed.wait()
    ready()
    start_at.append(time.perf_counter())
    go.set()
    for thread in threads:
        thread.join()
    return {
        "latencies": [s for per_caller in latencies for s in per_caller],
        "errors": sum(errors),
        "missed": sum(missed),
        "first_error": first_error[0] if first_error else None,
        "elapsed": time.perf_counter() - start_at[0],
    }


def _remote_caller(remote: Remote) -> MakeCall:
    # Lean load generators (stdlib HTTP, pre-serialized protobuf, replies not decoded):
    # on a small host the callers share the CPU with the server, and a heavy client
    # would be charged to the transport.
    if remote.transport == "rest":
        parts = urlsplit(remote.target)
        headers = {"Authorization": f"Bearer {remote.key}", "Content-Type": "application/json"}

        def make_rest() -> tuple[Call, Callable[[], None]]:
            connection = http.client.HTTPConnection(
                parts.hostname or "127.0.0.1", parts.port, timeout=60
            )

            def call(name: str, payload: dict[str, Any]) -> object:
                connection.request("POST", f"/v1/{name}", orjson.dumps(payload), headers)
                response = connection.getresponse()
                body = response.read()
                if response.status >= 400:
                    raise RuntimeError(f"{response.status}: {body[:200]!r}")
                return body

            return call, connection.close

        return make_rest

    import grpc
    from google.protobuf import json_format

    from memstrata.service.operations import BY_NAME
    from memstrata.service.proto import SERVICE_FULL_NAME, message_class, method_name

    metadata = (("authorization", f"Bearer {remote.key}"),)

    def make_grpc() -> tuple[Call, Callable[[], None]]:
        channel = grpc.insecure_channel(remote.target)
        stubs: dict[str, Any] = {}
        encoded: dict[bytes, bytes] = {}

        def call(name: str, payload: dict[str, Any]) -> object:
            stub = stubs.get(name)
            if stub is None:
                stub = stubs[name] = channel.unary_unary(
                    f"/{SERVICE_FULL_NAME}/{method_name(name)}"
                )
            cache_key = orjson.dumps([name, payload])
            request = encoded.get(cache_key)
            if request is None:
                message = json_format.ParseDict(payload, message_class(BY_NAME[name].request)())
                request = encoded[cache_key] = message.SerializeToString()
            return stub(request, metadata=metadata)

        return call, channel.close

    return make_grpc


def _client_process(remote: Remote, load: Load, barrier: Any, results: Any) -> None:
    """A spawned process: its callers, started with the others at ``barrier``."""
    try:
        outcome = _run_callers(_remote_caller(remote), load, lambda: barrier.wait(START_TIMEOUT_S))
    except BaseException as exc:  # reported to the parent, which fails the run
        with contextlib.suppress(Exception):
            barrier.abort()
        results.put({"crash": f"{type(exc).__name__}: {exc}"})
        raise
    results.put(outcome)


def _summary(outcomes: list[dict[str, Any]], rate: float | None) -> dict[str, Any]:
    samples = [s for o in outcomes for s in o["latencies"]]
    errors = sum(o["errors"] for o in outcomes)
    elapsed = max(o["elapsed"] for o in outcomes)
    result: dict[str, Any] = {}
    if rate:
        result["offered_req_per_s"] = round(rate, 1)
    result |= {
        "requests": len(samples) + errors,
        "errors": errors,
        "req_per_s": round(len(samples) / elapsed, 1),
        "p50_ms": round(percentile(samples, 50) * 1e3, 3) if samples else None,
        "p99_ms": round(percentile(samples, 99) * 1e3, 3) if samples else None,
    }
    if rate:
        result["missed"] = sum(o["missed"] for o in outcomes)
    first = next((o["first_error"] for o in outcomes if o["first_error"]), None)
    if first:
        result["first_error"] = first
    return result


def _measure_remote(remote: Remote, load: Load, processes: int) -> dict[str, Any]:
    """``load`` run from ``processes`` spawned client processes."""
    ctx = multiprocessing.get_context("spawn")
    processes = max(1, min(processes, load.clients))
    barrier = ctx.Barrier(processes + 1)
    results = ctx.Queue()
    groups = [tuple(range(p, load.clients, processes)) for p in range(processes)]
    children = [
        ctx.Process(
            target=_client_process,
            args=(remote, Load(**{**_fields(load), "indices": group}), barrier, results),
            daemon=True,
        )
        for group in groups
    ]
    for child in children:
        child.start()
    try:
        barrier.wait(START_TIMEOUT_S)
        outcomes = [results.get(timeout=load.seconds * 3 + START_TIMEOUT_S) for _ in children]
    finally:
        for child in children:
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
    crashed = [o["crash"] for o in outcomes if "crash" in o]
    if crashed:
        raise RuntimeError(f"a bench client process failed: {crashed[0]}")
    return _summary(outcomes, load.rate)


def _fields(load: Load) -> dict[str, Any]:
    return {f: getattr(load, f) for f in Load.__dataclass_fields__}


def _start_rest(running: Any) -> tuple[str, Callable[[], None]]:
    import uvicorn

    from memstrata.service.rest import create_app

    port = _free_port()
    app = create_app(running.service, mcp=False)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bench-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)

    return f"http://127.0.0.1:{port}", stop


def _with_overhead(per_transport: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    base = per_transport["in_process"]["p50_ms"]
    for transport in REMOTE:
        p50 = per_transport[transport]["p50_ms"]
        per_transport[transport]["p50_overhead_ms"] = (
            round(p50 - base, 3) if p50 is not None and base is not None else None
        )
    return per_transport


def run_serve_bench(
    clients: int = 32,
    seconds: float = 10.0,
    data_dir: Path | None = None,
    *,
    rate: float | str | None = None,
    client_processes: int = DEFAULT_CLIENT_PROCESSES,
    closed_loop: bool = True,
) -> dict[str, Any]:
    """Per load, operation and transport: requests, errors, req/s, p50/p99 ms, overhead.

    ``rate`` adds an open-loop run at that many requests per second in total, or, for
    ``"auto"``, at half the REST closed-loop req/s of each operation in this run.
    """
    from memstrata.config import Settings
    from memstrata.service.grpc_server import create_server
    from memstrata.service.server import open_service

    if clients < 1:
        raise ValueError("clients: must be at least 1")
    if client_processes < 1:
        raise ValueError("client_processes: must be at least 1")
    auto = rate == "auto"
    if auto and not closed_loop:
        raise ValueError("rate: 'auto' needs the closed loop")
    fixed_rate = None if rate is None or auto else float(rate)
    if fixed_rate is not None and not fixed_rate > 0:
        raise ValueError("rate: must be positive")
    owned = data_dir is None
    path = Path(tempfile.mkdtemp(prefix="memstrata-bench-serve-")) if owned else data_dir
    assert path is not None
    running = open_service(Settings(data_dir=path))
    stoppers: list[Callable[[], None]] = []
    try:
        key = running.keys.create("bench", "bench", "writer", rate_per_s=1_000_000).key
        sessions = tuple(_seed(running, key))
        service = running.service
        url, stop_rest = _start_rest(running)
        stoppers.append(stop_rest)
        grpc_server, grpc_port = create_server(service, "127.0.0.1:0", threads=max(clients, 4))
        grpc_server.start()
        stoppers.append(lambda: grpc_server.stop(grace=1).wait())
        remotes = {
            "rest": Remote("rest", url, key),
            "grpc": Remote("grpc", f"127.0.0.1:{grpc_port}", key),
        }

        def in_process() -> tuple[Call, Callable[[], None]]:
            return (lambda name, payload: service.call(name, key, payload)), lambda: None

        def measure(name: str, load_rate: float | None) -> dict[str, dict[str, Any]]:
            load = Load(name, sessions, tuple(range(clients)), clients, seconds, load_rate)
            per_transport = {
                "in_process": _summary([_run_callers(in_process, load, lambda: None)], load_rate)
            }
            for transport in REMOTE:
                per_transport[transport] = _measure_remote(
                    remotes[transport], load, client_processes
                )
            return _with_overhead(per_transport)

        report: dict[str, Any] = {
            "clients": clients,
            "seconds": seconds,
            "client_processes": max(1, min(client_processes, clients)),
            "cpus": os.cpu_count(),
            "memories": 50,
            "sessions": SESSIONS,
            "grpc_version": grpc.__version__,
        }
        closed: dict[str, dict[str, dict[str, Any]]] = {}
        if closed_loop:
            closed = {name: measure(name, None) for name in OPERATIONS}
            report["closed_loop"] = closed
        if rate is not None:
            opened: dict[str, Any] = {}
            for name in OPERATIONS:
                if auto:
                    load_rate = AUTO_RATE_FRACTION * closed[name]["rest"]["req_per_s"]
                else:
                    assert fixed_rate is not None
                    load_rate = fixed_rate
                opened[name] = measure(name, max(load_rate, 1.0))
            report["open_loop"] = {"rate": rate, "operations": opened}
        return report
    finally:
        for stop in reversed(stoppers):
            with contextlib.suppress(Exception):  # closing a bench server: best effort
                stop()
        running.close()
        if owned:
            shutil.rmtree(path, ignore_errors=True)
