"""``memstrata serve`` with a Qdrant URL that never answers (issue 23, "Why" case 9).

The issue measured ``serve`` failing after 19 s. Here it starts (L3 marked
unavailable), and the reads answer over REST, gRPC and MCP alike: 200 with the
degraded flags (``l3_skipped``, ``l3_skip_reason``) on the bundle, the retrieval and
the trace card, never a 5xx; a search that has nothing to fall back on (the item
store's) is a typed 503.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from tests.service.support import (
    Caller,
    CallFailed,
    RunningServer,
    cli,
    free_port,
    grpc_call,
    mcp_call,
    read_timeout_s,
    rest_call,
)

from memstrata.testing.faults import SilentServer

START_LIMIT_S = 120.0
"""How long the test waits for the service to answer at all (a loaded machine)."""


def _answers(url: str) -> bool:
    try:
        # Ready, whatever /healthz says (it may well say L3 is down).
        return httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.contextmanager
def serving_without_l3(data_dir: Path, qdrant_url: str) -> Iterator[tuple[RunningServer, float]]:
    """``memstrata serve`` whose Qdrant is ``qdrant_url``, and how long it took to
    answer HTTP; an admin key of tenant ``acme`` made offline first."""
    env = {"MEMSTRATA_QDRANT_URL": qdrant_url}
    made = cli(
        "keys", "create", "--tenant", "acme", "--agent", "admin", "--role", "admin",
        "--data-dir", str(data_dir), env=env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)["key"]
    port, grpc_port = free_port(), free_port()
    log = data_dir.parent / f"{data_dir.name}.log"
    command = [
        sys.executable, "-m", "memstrata.cli", "serve", "--data-dir", str(data_dir),
        "--port", str(port), "--grpc-port", str(grpc_port),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}
        )
    try:
        while not _answers(url):
            if process.poll() is not None:
                raise AssertionError(f"serve exited: {log.read_text()[-3000:]}")
            if time.monotonic() - started > START_LIMIT_S:
                raise AssertionError(f"serve did not answer: {log.read_text()[-3000:]}")
            time.sleep(0.2)
        took = time.monotonic() - started
        yield (
            RunningServer(url, f"127.0.0.1:{grpc_port}", {"acme": key}, data_dir, process),
            took,
        )
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def degraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, float]]:
    with SilentServer() as silent:
        data_dir = tmp_path_factory.mktemp("serve-without-l3")
        with serving_without_l3(data_dir, silent.url) as running:
            yield running


@pytest.fixture(params=["rest", "grpc", "mcp"])
def call(
    request: pytest.FixtureRequest, degraded: tuple[RunningServer, float]
) -> Iterator[Callable[..., dict]]:
    server, _ = degraded
    key = server.admin_keys["acme"]
    if request.param == "grpc":
        gen = grpc_call(server, key)
        caller: Caller = next(gen)
    else:
        gen = None
        caller = rest_call(server, key) if request.param == "rest" else mcp_call(server, key)
    yield lambda name, **fields: caller(name, fields)
    if gen is not None:
        for _ in gen:
            pass


def test_serve_starts_when_qdrant_never_answers(degraded: tuple[RunningServer, float]) -> None:
    server, took = degraded
    assert server.process.poll() is None
    # Python, the model, Valkey and a 2 s wait on the silent Qdrant: far below the
    # 120 s a hung start would run into (and no failure at 19 s).
    assert took < START_LIMIT_S
    health = httpx.get(f"{server.url}/healthz", timeout=read_timeout_s()).json()
    assert health["status"] != "ok"  # L3 does not answer, and the service says so


def test_reads_answer_200_with_the_degraded_flags(call: Callable[..., dict]) -> None:
    tag = uuid.uuid4().hex[:8]
    user, sid = f"u-{tag}", f"s-{tag}"
    call("start_session", user_id=user, initial_query="plan dinner", session_id=sid)

    bundle = call("route", session_id=sid, step_intent="respond", query="what am I allergic to")
    assert bundle["l3_skipped"] is True
    assert bundle["l3_skip_reason"] in {"l3_unavailable", "circuit_open"}
    assert [item["name"] for item in bundle["items"]] == ["session"]

    found = call("retrieve", query="what am I allergic to", user_id=user, k=3)
    assert found["l3_skipped"] is True
    assert found["l3_skip_reason"] in {"l3_unavailable", "circuit_open"}

    built = call(
        "build_context",
        session_id=sid,
        step_intent="respond",
        user_input="Recommend a restaurant.",
        system_prompt="You are a travel assistant.",
    )
    assert built["messages"][-1]["content"] == "Recommend a restaurant."
    assert built["l3_skipped"] is True
    assert built["l3_skip_reason"] in {"l3_unavailable", "circuit_open"}

    decision = call(
        "decide", session_id=sid, step_intent="respond", query="allergies", question="where?"
    )
    assert decision["bundle"]["l3_skip_reason"] in {"l3_unavailable", "circuit_open"}
    cards = call("trace_cards", session_id=sid)["cards"]
    assert cards[-1]["l3_skip_reason"] in {"l3_unavailable", "circuit_open"}


def test_a_search_without_a_fallback_is_a_typed_unavailable_error(
    call: Callable[..., dict],
) -> None:
    with pytest.raises(CallFailed) as failed:
        call("store_search", namespace_prefix=["notes"], query="allergies")
    # REST 503, gRPC UNAVAILABLE, MCP -32001: the error table's row, never a 500.
    assert failed.value.code == "unavailable"
    assert failed.value.body["type"] == "BackendUnavailableError"
    assert failed.value.status in (503, -32001) or "UNAVAILABLE" in str(failed.value.status)
