"""`memstrata serve` loads its models before it is ready (docs/architecture.md,
"Deadlines"; /readyz 200): the first read of a fresh service never waits on them, and a
model that cannot load is known before the first request, not found by it.

The order is observed from outside: with the model cache pointing at a file, MiniLM's
ONNX graph cannot load, and the load says so in the log - falling back to torch where
the torch extra is installed, or failing the warm-up where it is not (then /healthz
names the embedder). Either line must come before the line saying the service serves:
a service loading lazily would log neither until its first read.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.service.support import free_port

WARM_FAILED = "model did not load at warm-up"
ONNX_UNAVAILABLE = "ONNX MiniLM unavailable"
LISTENING = "memstrata serving REST and MCP"


def _first_health(url: str, process: subprocess.Popen[bytes], log: Path) -> httpx.Response:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited: {log.read_text()[-2000:]}")
        try:
            # /healthz answers "starting" at once; the checks once /readyz says ready.
            if httpx.get(f"{url}/readyz", timeout=2.0).status_code == 200:
                return httpx.get(f"{url}/healthz", timeout=2.0)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"serve did not answer: {log.read_text()[-2000:]}")


def test_serve_warms_its_models_before_it_listens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "model-cache"
    cache.write_text("not a directory")  # MiniLM's graph cannot be built nor read
    monkeypatch.setenv("MEMSTRATA_MODEL_CACHE", str(cache))
    port, grpc_port = free_port(), free_port()
    log = tmp_path / "serve.log"
    command = [
        sys.executable,
        "-m",
        "memstrata.cli",
        "serve",
        "--data-dir",
        str(tmp_path / "data"),
        "--port",
        str(port),
        "--grpc-port",
        str(grpc_port),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        health = _first_health(f"http://127.0.0.1:{port}", process, log)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    text = log.read_text()
    assert LISTENING in text, text[-2000:]
    loaded_at = [text.index(line) for line in (ONNX_UNAVAILABLE, WARM_FAILED) if line in text]
    assert loaded_at, f"no model was loaded before serving: {text[-2000:]}"
    assert min(loaded_at) < text.index(LISTENING), text[-2000:]
    embedder = health.json()["checks"]["embedder"]
    assert (embedder["status"] == "ok") == (WARM_FAILED not in text), embedder
