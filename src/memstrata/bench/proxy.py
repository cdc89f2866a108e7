"""``memstrata bench proxy``: the latency the OpenAI-compatible proxy adds.

One fake upstream (:mod:`memstrata.testing.fake_openai`, loopback, a fixed reply) is
called the same way twice in one run, with the official ``openai`` client: directly
(the baseline) and through ``memstrata proxy``'s app (uvicorn on loopback, over a fresh
data directory with ~50 memories of the user). Calls alternate between the two, so a
machine's slow moment is shared. The proxy's share is everything it does per call:
the key check, the session, ``build_context`` (retrieval, routing, packing within the
model's window), the forward, and observing the user turn and the reply.

The clients run in this process, one call at a time (no concurrency): the added
latency of one call, not the proxy's capacity. ``build_context_in_process`` is the
context step alone (``service.call``, no HTTP), the largest part of what is added.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memstrata.bench.stats import percentile

USER = "bench-user"
SESSION = "bench-proxy"
MEMORIES = (
    "I live in Hangzhou and work as a nurse.",
    "I'm allergic to peanuts and shellfish.",
    "My budget for the trip is 5000 yuan.",
    "I prefer window seats on trains.",
    "My daughter Mia is seven years old.",
)
QUESTION = "Recommend a restaurant near the station that is safe for my allergies."
SYSTEM = "You are a travel assistant."
WARMUP_CALLS = 5


def _stats(samples_s: list[float]) -> dict[str, float]:
    return {f"p{q}_ms": round(percentile(samples_s, q) * 1e3, 3) for q in (50, 95, 99)}


@contextlib.contextmanager
def _uvicorn(app: Any) -> Iterator[str]:
    import uvicorn

    from memstrata.testing.valkey import free_port

    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bench-proxy", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _caller(client: Any, stream: bool) -> Callable[[], None]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]

    def whole() -> None:
        client.chat.completions.create(model="gpt-4o", messages=messages)

    def streamed() -> None:
        for _ in client.chat.completions.create(model="gpt-4o", messages=messages, stream=True):
            pass

    return streamed if stream else whole


def _measure(direct: Callable[[], None], proxied: Callable[[], None], n: int) -> dict[str, Any]:
    for _ in range(WARMUP_CALLS):
        direct()
        proxied()
    times: dict[str, list[float]] = {"direct": [], "proxy": []}
    for _ in range(n):
        for name, call in (("direct", direct), ("proxy", proxied)):
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    base, through = _stats(times["direct"]), _stats(times["proxy"])
    return {
        "direct": base,
        "proxy": through,
        "added_ms": {k: round(through[k] - base[k], 3) for k in base},
        "ratio": {k: round(through[k] / base[k], 2) if base[k] else None for k in base},
    }


def _context_times(service: Any, key: str, n: int) -> list[float]:
    payload = {
        "session_id": SESSION,
        "user_input": QUESTION,
        "system_prompt": SYSTEM,
        "model": "gpt-4o",
    }
    times = []
    for index in range(WARMUP_CALLS + n):
        started = time.perf_counter()
        service.call("build_context", key, payload)
        if index >= WARMUP_CALLS:
            times.append(time.perf_counter() - started)
    return times


def run_proxy_bench(
    requests: int = 200, data_dir: Path | None = None, *, progress: Any = None
) -> dict[str, Any]:
    """Direct vs through the proxy, whole and streamed: p50/p95/p99 ms, added ms, ratio."""
    import openai

    from memstrata.config import Settings
    from memstrata.config_proxy import ProxySettings
    from memstrata.service.proxy.routes import create_proxy_app
    from memstrata.service.server import open_service
    from memstrata.testing.fake_openai import FakeUpstream

    if requests < 1:
        raise ValueError("requests: must be at least 1")
    owned = data_dir is None
    path = Path(tempfile.mkdtemp(prefix="memstrata-bench-proxy-")) if owned else data_dir
    assert path is not None
    running = open_service(Settings(data_dir=path))
    try:
        running.engine.warm()
        key = running.keys.create("bench", "bench", "writer", rate_per_s=1_000_000).key
        for i in range(50):
            text = f"{MEMORIES[i % len(MEMORIES)]} (note {i})"
            running.service.call("remember", key, {"user_id": USER, "text": text})
        running.engine.flush()
        running.service.call(
            "start_session",
            key,
            {"user_id": USER, "initial_query": QUESTION, "session_id": SESSION},
        )
        with FakeUpstream() as fake:
            app = create_proxy_app(running.service, ProxySettings(upstream=fake.url))
            with _uvicorn(app) as url:
                common = {"api_key": "sk-bench", "max_retries": 0, "timeout": 60.0}
                direct = openai.OpenAI(base_url=fake.url, **common)  # type: ignore[arg-type]
                proxied = openai.OpenAI(
                    base_url=f"{url}/v1",
                    default_headers={
                        "X-API-Key": key,
                        "X-Memstrata-User": USER,
                        "X-Memstrata-Session": SESSION,
                    },
                    **common,  # type: ignore[arg-type]
                )
                report: dict[str, Any] = {
                    "requests": requests,
                    "memories": 50,
                    "cpus": os.cpu_count(),
                    "load_average": [round(x, 2) for x in os.getloadavg()],
                    "openai_version": openai.__version__,
                }
                # For reading the added latency: the context step alone, in process.
                report["build_context_in_process"] = _stats(
                    _context_times(running.service, key, requests)
                )
                for stream in (False, True):
                    name = "streamed" if stream else "whole"
                    if progress is not None:
                        progress.print(f"bench proxy: {requests} {name} calls each way")
                    report[name] = _measure(
                        _caller(direct, stream), _caller(proxied, stream), requests
                    )
                direct.close()
                proxied.close()
        return report
    finally:
        running.close()
        if owned:
            shutil.rmtree(path, ignore_errors=True)
