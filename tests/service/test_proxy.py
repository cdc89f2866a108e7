"""The OpenAI-compatible proxy through the official ``openai`` client, against a real
``memstrata serve --upstream`` (and ``memstrata proxy``) and a local fake upstream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionUserMessageParam
from tests.service.support import (
    START_TIMEOUT_S,
    CallFailed,
    RunningServer,
    cli,
    create_key,
    free_port,
    read_timeout_s,
    rest_call,
    running_server,
    wait_ready,
)

from memstrata.service.workers import WORKER_HEADER, worker_of
from memstrata.testing.fake_openai import DEFAULT_REPLY, FakeUpstream
from memstrata.testing.faults import SilentServer

CALLER_MODEL_KEY = "sk-callers-own-upstream-key"
FACT = "My flight to Lisbon leaves on March 14 from gate B7 and I am allergic to peanuts."
HISTORY: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "You are a careful travel assistant."},
    {"role": "user", "content": "Hi, I need help with my trip."},
    {"role": "assistant", "content": "Of course. What would you like to know?"},
]
ASKED = "When does my flight to Lisbon leave?"
QUESTION: ChatCompletionUserMessageParam = {"role": "user", "content": ASKED}
# A proxied call is a build_context, the upstream's answer and two observes: the
# build_context deadline, scaled for a busy machine, is well past all of them here.
PROXIED_TIMEOUT_S = read_timeout_s("build_context")


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@contextmanager
def _settings_file(path: Path, proxy: dict[str, Any]) -> Iterator[None]:
    path.write_text(json.dumps({"proxy": proxy}))
    before = os.environ.get("MEMSTRATA_SETTINGS")
    os.environ["MEMSTRATA_SETTINGS"] = str(path)
    try:
        yield
    finally:
        if before is None:
            del os.environ["MEMSTRATA_SETTINGS"]
        else:
            os.environ["MEMSTRATA_SETTINGS"] = before


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream
) -> Iterator[RunningServer]:
    root = tmp_path_factory.mktemp("proxy")
    # A short upstream timeout (the slow model's test); the upstream from --upstream.
    with (
        _settings_file(root / "settings.json", {"timeout_s": 2.0}),
        running_server(root / "data", "--upstream", upstream.url) as running,
    ):
        call = rest_call(running, running.admin_keys["acme"])
        call("remember", {"user_id": "ann", "text": FACT, "wait": True})
        yield running


def client(
    server: RunningServer, key: str | None, user: str | None = "ann", **headers: str
) -> openai.OpenAI:
    extra = {"X-Memstrata-User": user} if user else {}
    if key is not None:
        extra["X-API-Key"] = key
    return openai.OpenAI(
        base_url=f"{server.url}/v1",
        api_key=CALLER_MODEL_KEY,
        default_headers={**extra, **headers},
        max_retries=0,
        timeout=PROXIED_TIMEOUT_S,
    )


def _texts(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def test_whole_answer_carries_memories_keeps_history_and_is_observed(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    messages = [*HISTORY, QUESTION]
    raw = client(server, server.admin_keys["acme"]).chat.completions.with_raw_response.create(
        model="gpt-4o",
        messages=messages,
    )
    sent = upstream.last()
    # The memory went into the caller's system message, before the caller's own text.
    system = sent.body["messages"][0]
    assert system["role"] == "system"
    assert "Lisbon" in system["content"] and "March 14" in system["content"]
    assert system["content"].endswith(HISTORY[0]["content"])
    # Everything else as the caller sent it: the history, the question, the caller's key.
    assert sent.body["messages"][1:] == messages[1:]
    assert sent.headers["authorization"] == f"Bearer {CALLER_MODEL_KEY}"
    assert not any(name.lower() == "x-api-key" for name in sent.headers)
    assert not any(name.lower().startswith("x-memstrata") for name in sent.headers)
    # The answer is the upstream's, byte for byte (as the fake answers it directly).
    direct = httpx.post(
        f"{upstream.url}/chat/completions", json=sent.body, timeout=read_timeout_s()
    )
    assert raw.http_response.content == direct.content
    assert raw.parse().choices[0].message.content == DEFAULT_REPLY
    assert raw.headers["x-request-id"] == "req-fake"
    assert int(raw.headers["x-memstrata-memories"]) >= 1
    assert raw.headers["x-memstrata-observed"] == "user, assistant"
    session = raw.headers["x-memstrata-session"]
    call = rest_call(server, server.admin_keys["acme"])
    roles = [turn["role"] for turn in call("get_session", {"session_id": session})["history"]]
    assert roles == ["user", "assistant"]
    # The turn and the reply reach long-term memory through the normal write path.
    call("flush", {})
    found = call("retrieve", {"query": "have a good trip gate B7", "user_id": "ann", "k": 20})
    assert any("have a good trip" in item["text"] for item in found["items"])


def test_a_session_named_in_the_header_is_continued(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    key = server.admin_keys["acme"]
    first = client(server, key, **{"X-Memstrata-Session": "trip-1"})
    for _ in range(2):
        raw = first.chat.completions.with_raw_response.create(model="gpt-4o", messages=[QUESTION])
        assert raw.headers["x-memstrata-session"] == "trip-1"
    state = rest_call(server, key)("get_session", {"session_id": "trip-1"})
    assert state["user_id"] == "ann"
    assert [t["role"] for t in state["history"]] == ["user", "assistant"] * 2


def test_without_a_system_message_one_is_added(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    client(server, server.admin_keys["acme"]).chat.completions.create(
        model="gpt-4o",
        messages=[QUESTION],
    )
    sent = upstream.last().body["messages"]
    assert sent[0]["role"] == "system" and "Lisbon" in sent[0]["content"]
    assert sent[1:] == [QUESTION]


def test_streamed_answer_passes_through_as_it_arrives_and_is_observed(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    upstream.gate.clear()
    with client(server, server.admin_keys["acme"]).chat.completions.with_streaming_response.create(
        model="gated",
        messages=[*HISTORY, QUESTION],
        stream=True,
    ) as response:
        session = response.headers["x-memstrata-session"]
        chunks = response.parse()
        # The first chunk arrives while the upstream holds the rest back: not buffered.
        first = next(iter(chunks))
        upstream.gate.set()
        parts = [first.choices[0].delta.content or ""]
        parts += [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(parts) == DEFAULT_REPLY
    sent = upstream.last().body
    assert sent["stream"] is True and "Lisbon" in sent["messages"][0]["content"]
    call = rest_call(server, server.admin_keys["acme"])
    deadline = time.monotonic() + 30
    roles: list[str] = []
    while time.monotonic() < deadline:  # the reply is observed once the stream has ended
        roles = [t["role"] for t in call("get_session", {"session_id": session})["history"]]
        if roles == ["user", "assistant"]:
            break
        time.sleep(0.1)
    assert roles == ["user", "assistant"]
    call("flush", {})
    found = call("retrieve", {"query": "have a good trip gate B7", "user_id": "ann", "k": 20})
    assert any("have a good trip" in item["text"] for item in found["items"])


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_upstream_errors_pass_through_with_their_status_and_body(
    server: RunningServer, status: int, error: type[openai.APIStatusError]
) -> None:
    with pytest.raises(error) as info:
        client(server, server.admin_keys["acme"]).chat.completions.create(
            model=f"error-{status}",
            messages=[QUESTION],
        )
    assert info.value.status_code == status
    assert info.value.body == {
        "message": f"fake upstream error {status}",
        "type": "invalid_request_error" if status < 500 else "server_error",
        "param": None,
        "code": f"fake_{status}",
    }


def test_an_upstream_that_does_not_answer_in_time_is_a_504(server: RunningServer) -> None:
    with pytest.raises(openai.APIStatusError) as info:
        client(server, server.admin_keys["acme"]).chat.completions.create(
            model="slow",
            messages=[QUESTION],
        )
    assert info.value.status_code == 504
    body = info.value.response.json()["error"]
    assert body["type"] == "UpstreamTimeoutError" and body["field"] == "upstream"


@pytest.mark.parametrize("key", [None, "msk_notakey", "not-even-shaped"])
def test_a_missing_or_invalid_memstrata_key_is_refused(
    server: RunningServer, upstream: FakeUpstream, key: str | None
) -> None:
    before = len(upstream.received)
    with pytest.raises(openai.AuthenticationError) as info:
        client(server, key).chat.completions.create(model="gpt-4o", messages=[QUESTION])
    assert info.value.status_code == 401
    assert len(upstream.received) == before  # nothing went upstream


def test_the_end_user_is_required(server: RunningServer) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as info:
        client(server, server.admin_keys["acme"], user=None).chat.completions.create(
            model="gpt-4o",
            messages=[QUESTION],
        )
    assert info.value.response.json()["error"]["field"] == "user"


def test_the_request_user_field_names_the_end_user(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    client(server, server.admin_keys["acme"], user=None).chat.completions.create(
        model="gpt-4o",
        messages=[QUESTION],
        user="ann",
    )
    assert "Lisbon" in upstream.last().body["messages"][0]["content"]


def test_another_tenants_user_sees_nothing_of_the_first(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    raw = client(server, server.admin_keys["globex"]).chat.completions.with_raw_response.create(
        model="gpt-4o",
        messages=[QUESTION],
    )
    sent = upstream.last().body
    for word in ("Lisbon", "March 14", "peanuts", "B7", "good trip"):
        assert word not in _texts(sent).replace(ASKED, "")
    assert raw.headers["x-memstrata-memories"] == "0"  # no stored memory of ann here
    assert sent["messages"][1:] == [QUESTION]
    # Nor is the first tenant's session reachable.
    with pytest.raises(CallFailed):
        session = raw.headers["x-memstrata-session"]
        rest_call(server, server.admin_keys["acme"])("get_session", {"session_id": session})


def test_a_low_clearance_key_gets_no_memory_above_its_clearance(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    # ann's memories are held at the default level, above a "low" key's clearance: the
    # proxy builds the context with the key's clearance, as build_context does.
    admin = server.admin_keys["acme"]
    assert rest_call(server, admin)("list_memories", {"user_id": "ann"})["items"]
    low = create_key(server, admin, agent="low-app", role="writer", clearance="low")
    raw = client(server, low).chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[QUESTION]
    )
    sent = upstream.last().body
    for word in ("March 14", "peanuts", "B7"):
        assert word not in _texts(sent).replace(ASKED, "")
    assert raw.headers["x-memstrata-memories"] == "0"
    assert raw.parse().choices[0].message.content == DEFAULT_REPLY


@contextmanager
def _proxy_command(
    data_dir: Path, upstream: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    made = cli("keys", "create", "--tenant", "acme", "--agent", "app", "--role", "writer",
               "--data-dir", str(data_dir), env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)["key"]
    port = free_port()
    log = data_dir.parent / "proxy.log"
    command = [sys.executable, "-m", "memstrata.cli", "proxy", "--upstream", upstream,
               "--data-dir", str(data_dir), "--port", str(port)]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, log)
        yield url, key
    finally:
        process.terminate()
        try:
            process.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()


def test_memstrata_proxy_answers_an_unreachable_upstream_with_a_typed_502(
    tmp_path: Path,
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with _proxy_command(tmp_path / "data", dead) as (url, key):
        proxied = openai.OpenAI(
            base_url=f"{url}/v1",
            api_key=CALLER_MODEL_KEY,
            default_headers={"X-API-Key": key, "X-Memstrata-User": "bob"},
            max_retries=0,
        )
        with pytest.raises(openai.APIStatusError) as info:
            proxied.chat.completions.create(model="gpt-4o", messages=[QUESTION])
        assert info.value.status_code == 502
        body = info.value.response.json()["error"]
        assert body["type"] == "UpstreamError" and body["field"] == "upstream"
        assert dead in body["message"]
        assert info.value.response.headers["x-memstrata-session"]


def _failed_observes(server: RunningServer) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=read_timeout_s()).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("memstrata_service_requests_total{")
        and 'operation="observe"' in line
        and 'transport="proxy"' in line
        and 'code="ok"' not in line
    )


def test_a_reply_that_cannot_be_observed_is_answered_and_says_why(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    # A reply over observe's 100,000 characters: the caller still gets it whole, and
    # the answer (whole: a header; streamed: the log and the metric) says it was not kept.
    upstream.reply = "long " * 25_000
    try:
        proxied = client(server, server.admin_keys["acme"])
        raw = proxied.chat.completions.with_raw_response.create(
            model="gpt-4o",
            messages=[QUESTION],
        )
        assert raw.parse().choices[0].message.content == upstream.reply
        observed = raw.headers["x-memstrata-observed"]
        assert observed.startswith("assistant: not observed: ValidationError: text")
        before = _failed_observes(server)
        with proxied.chat.completions.with_streaming_response.create(
            model="gpt-4o",
            messages=[QUESTION],
            stream=True,
        ) as response:
            parts = [c.choices[0].delta.content or "" for c in response.parse() if c.choices]
        assert "".join(parts) == upstream.reply
        deadline = time.monotonic() + 30
        while _failed_observes(server) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _failed_observes(server) == before + 1
    finally:
        upstream.reply = DEFAULT_REPLY


def test_with_workers_the_front_routes_the_proxy_by_the_memstrata_key(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    # Authorization holds the caller's upstream key: routing by it would send every
    # proxied call to worker 0, away from its tenant's sessions and memories.
    with running_server(tmp_path / "data", "--workers", "2", "--upstream", upstream.url) as front:
        for tenant in ("acme", "globex"):
            key = front.admin_keys[tenant]
            raw = client(front, key).chat.completions.with_raw_response.create(
                model="gpt-4o", messages=[QUESTION]
            )
            assert raw.headers[WORKER_HEADER] == str(worker_of(tenant, 2))
            session = raw.headers["x-memstrata-session"]
            state = rest_call(front, key)("get_session", {"session_id": session})
            assert [t["role"] for t in state["history"]] == ["user", "assistant"]


def test_without_long_term_memory_the_call_is_forwarded_and_says_why(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    # A Qdrant that never answers: the reads skip L3, the call still goes upstream,
    # and the answer says what was left out.
    with (
        SilentServer() as silent,
        _proxy_command(tmp_path / "data", upstream.url, {"MEMSTRATA_QDRANT_URL": silent.url}) as (
            url,
            key,
        ),
    ):
        proxied = openai.OpenAI(
            base_url=f"{url}/v1",
            api_key=CALLER_MODEL_KEY,
            default_headers={"X-API-Key": key, "X-Memstrata-User": "carol"},
            max_retries=0,
            timeout=PROXIED_TIMEOUT_S,
        )
        raw = proxied.chat.completions.with_raw_response.create(model="gpt-4o", messages=[QUESTION])
        assert raw.parse().choices[0].message.content == DEFAULT_REPLY
        degraded = raw.headers["x-memstrata-degraded"]
        assert "l3_skip_reason" in degraded, degraded
        assert upstream.last().body["messages"][-1] == QUESTION


def test_a_reader_key_cannot_write_the_turn_and_is_refused(
    server: RunningServer, upstream: FakeUpstream
) -> None:
    reader = create_key(server, server.admin_keys["acme"], agent="viewer", role="reader")
    before = len(upstream.received)
    with pytest.raises(openai.PermissionDeniedError) as info:
        client(server, reader).chat.completions.create(model="gpt-4o", messages=[QUESTION])
    assert info.value.status_code == 403
    assert len(upstream.received) == before
