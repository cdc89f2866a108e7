"""LLMExtractor against a real local HTTP server that each test scripts."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memstrata.errors import ValidationError
from memstrata.extract import (
    RESPONSE_FORMAT,
    ExtractionError,
    ExtractionUnavailableError,
    LLMExtractor,
    Turn,
)
from memstrata.extract.llm import endpoint_url, redacted_url
from memstrata.testing.chat_server import Reply, ScriptedServer, completion

MakeTurn = Callable[..., Turn]

API_KEY = "sk-test-5f1d0c2a9b"
TURN_TEXT = "I moved to Chengdu, call me Zephyrine."
CITY = {
    "subject": "user",
    "attribute": "city",
    "value": "Chengdu",
    "kind": "fact",
    "confidence": 0.9,
    "importance": 0.7,
    "extras": [],
    "valid_from": None,
}
NAME = dict(CITY, attribute="name", value="Zephyrine")


Serve = Callable[..., ScriptedServer]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start a scripted server: ``serve(reply, reply, ...)``; stopped after the test."""
    servers: list[ScriptedServer] = []

    def start(*replies: Reply) -> ScriptedServer:
        server = ScriptedServer(list(replies)).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


@pytest.fixture
def delays() -> list[float]:
    return []


def extractor_for(url: str, delays: list[float], **kwargs: Any) -> LLMExtractor:
    options: dict[str, Any] = {"api_key": API_KEY, "sleep": delays.append}
    options.update(kwargs)
    return LLMExtractor(url, "test-model", **options)


def test_good_answer_and_request(serve: Serve, delays: list[float], make_turn: MakeTurn) -> None:
    server = serve(completion(json.dumps({"memories": [CITY, NAME]})))
    found = extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT))
    assert [(c.attribute, c.value) for c in found] == [("city", "Chengdu"), ("name", "Zephyrine")]
    (request,) = server.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.body["model"] == "test-model"
    assert request.body["response_format"] == RESPONSE_FORMAT
    roles = [message["role"] for message in request.body["messages"]]
    assert roles == ["system", "user"]
    assert TURN_TEXT in request.body["messages"][1]["content"]
    assert delays == []


def test_no_key_no_authorization(serve: Serve, delays: list[float], make_turn: MakeTurn) -> None:
    server = serve(completion("[]"))
    extractor = extractor_for(server.base_url + "/v1/", delays, api_key=None)
    assert extractor.extract(make_turn(TURN_TEXT)) == ()
    assert "Authorization" not in server.received[0].headers
    assert server.received[0].path == "/v1/chat/completions"


@pytest.mark.parametrize(
    "content",
    [
        f"Here is what I found:\n```json\n{json.dumps([CITY])}\n```",
        f"Sure. {json.dumps({'memories': [CITY]})} Let me know if you need more.",
        json.dumps(CITY),
    ],
    ids=["fenced", "prose", "single-object"],
)
def test_wrapped_answers(
    serve: Serve, delays: list[float], make_turn: MakeTurn, content: str
) -> None:
    server = serve(completion(content))
    found = extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT))
    assert [(c.attribute, c.value) for c in found] == [("city", "Chengdu")]


def test_malformed_answer_is_repaired(
    serve: Serve, delays: list[float], make_turn: MakeTurn
) -> None:
    broken = (
        '{"memories": ['
        + json.dumps(CITY)[:-1]
        + ', "valid_from": None,}, '
        + json.dumps(NAME)
        + ",]"
    )
    server = serve(completion(broken))
    found = extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT))
    assert [c.value for c in found] == ["Chengdu", "Zephyrine"]


@pytest.mark.parametrize(
    "reply",
    [
        completion("I'm sorry, I can't extract memories from this."),
        Reply(body=b"<html><body>Bad gateway</body></html>"),
        completion('[{"kind": "opinion"}]'),
    ],
    ids=["prose", "html", "only-invalid"],
)
def test_garbage_is_an_error(
    serve: Serve,
    delays: list[float],
    make_turn: MakeTurn,
    caplog: pytest.LogCaptureFixture,
    reply: Reply,
) -> None:
    server = serve(reply)
    extractor = extractor_for(server.base_url, delays)
    caplog.set_level(logging.DEBUG, logger="memstrata.extract")
    with pytest.raises(ExtractionError, match="unusable answer") as info:
        extractor.extract(make_turn(TURN_TEXT))
    assert not isinstance(info.value, ExtractionUnavailableError)
    assert server.base_url in str(info.value)
    assert "unusable answer" in caplog.text
    assert len(server.received) == 1  # an answer is not retried
    assert TURN_TEXT not in caplog.text


def test_invalid_candidate_is_dropped_and_logged(
    serve: Serve, delays: list[float], make_turn: MakeTurn, caplog: pytest.LogCaptureFixture
) -> None:
    bad = dict(CITY, confidence=7, value="Zephyrine-corrupted")
    server = serve(completion(json.dumps({"memories": [CITY, bad, NAME]})))
    caplog.set_level(logging.DEBUG, logger="memstrata.extract")
    found = extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT))
    assert [c.value for c in found] == ["Chengdu", "Zephyrine"]
    assert "dropped invalid candidate" in caplog.text
    assert "field=confidence" in caplog.text
    assert "corrupted" not in caplog.text


def test_500_then_200_is_retried(serve: Serve, delays: list[float], make_turn: MakeTurn) -> None:
    server = serve(Reply(500, b"oops"), completion(json.dumps([CITY])))
    found = extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT))
    assert [c.value for c in found] == ["Chengdu"]
    assert len(server.received) == 2
    assert server.received[0].body == server.received[1].body
    assert delays == [0.5]


def test_429_backs_off_exponentially(
    serve: Serve, delays: list[float], make_turn: MakeTurn
) -> None:
    server = serve(Reply(429), Reply(429), Reply(503), completion("[]"))
    assert extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT)) == ()
    assert len(server.received) == 4
    assert delays == [0.5, 1.0, 2.0]


def test_retry_after_is_honoured_and_capped(
    serve: Serve, delays: list[float], make_turn: MakeTurn
) -> None:
    server = serve(
        Reply(429, headers={"Retry-After": "3"}),
        Reply(429, headers={"Retry-After": "120"}),
        completion("[]"),
    )
    extractor_for(server.base_url, delays, max_backoff_s=10).extract(make_turn(TURN_TEXT))
    assert delays == [3.0, 10.0]


def test_retries_run_out(serve: Serve, delays: list[float], make_turn: MakeTurn) -> None:
    server = serve(*[Reply(502)] * 5)
    with pytest.raises(
        ExtractionError, match=r"kept failing after 3 attempt\(s\): HTTP 502"
    ) as info:
        extractor_for(server.base_url, delays, max_retries=2).extract(make_turn(TURN_TEXT))
    assert not isinstance(info.value, ExtractionUnavailableError)
    assert len(server.received) == 3
    assert delays == [0.5, 1.0]


def test_client_errors_are_not_retried(
    serve: Serve, delays: list[float], make_turn: MakeTurn
) -> None:
    server = serve(Reply(401, b'{"error": "bad key sk-test-5f1d0c2a9b"}'))
    with pytest.raises(ExtractionError, match="HTTP 401") as info:
        extractor_for(server.base_url, delays).extract(make_turn(TURN_TEXT))
    assert API_KEY not in str(info.value)
    assert len(server.received) == 1
    assert delays == []


def test_timeout_is_retried(serve: Serve, delays: list[float], make_turn: MakeTurn) -> None:
    server = serve(Reply(delay_s=1.0, body=b"late"), completion(json.dumps([CITY])))
    started = time.monotonic()
    found = extractor_for(server.base_url, delays, timeout_s=0.2).extract(make_turn(TURN_TEXT))
    assert [c.value for c in found] == ["Chengdu"]
    assert len(server.received) == 2
    assert delays == [0.5]
    assert time.monotonic() - started < 1.0  # did not wait for the slow answer


def test_unreachable_endpoint(
    delays: list[float], make_turn: MakeTurn, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    caplog.set_level(logging.DEBUG, logger="memstrata.extract")
    started = time.monotonic()
    with pytest.raises(ExtractionUnavailableError) as info:
        extractor_for(url, delays).extract(make_turn(TURN_TEXT))
    assert time.monotonic() - started < 2.0
    assert f"{url}/v1/chat/completions is unreachable after 4 attempt(s)" in str(info.value)
    assert delays == [0.5, 1.0, 2.0]
    assert caplog.text.count("failed") == 4
    assert API_KEY not in caplog.text
    assert TURN_TEXT not in caplog.text


def test_secrets_stay_out_of_logs_and_repr(
    serve: Serve, delays: list[float], make_turn: MakeTurn, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(Reply(500), completion(json.dumps([CITY])))
    caplog.set_level(logging.DEBUG)
    extractor = extractor_for(server.base_url, delays)
    extractor.extract(make_turn(TURN_TEXT))
    assert "candidates=1" in caplog.text
    assert f"text_chars={len(TURN_TEXT)}" in caplog.text
    for secret in (API_KEY, TURN_TEXT, "Chengdu"):
        assert secret not in caplog.text
    assert API_KEY not in repr(extractor)


def test_url_helpers() -> None:
    assert endpoint_url("https://api.openai.com/v1") == "https://api.openai.com/v1/chat/completions"
    assert endpoint_url("http://h:8000/") == "http://h:8000/v1/chat/completions"
    assert endpoint_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
    assert redacted_url("https://user:pw@h:8443/v1?api-key=x") == "https://h:8443/v1"


@pytest.mark.parametrize(
    ("kwargs", "field_name"),
    [
        ({"base_url": "ftp://h"}, "base_url"),
        ({"base_url": "not a url"}, "base_url"),
        ({"model": ""}, "model"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"max_retries": -1}, "max_retries"),
        ({"backoff_s": -1}, "backoff_s"),
    ],
)
def test_constructor_validates(kwargs: dict[str, Any], field_name: str) -> None:
    options: dict[str, Any] = {"base_url": "http://127.0.0.1:1", "model": "m"}
    options.update(kwargs)
    with pytest.raises(ValidationError) as info:
        LLMExtractor(**options)
    assert info.value.field == field_name


def test_a_model_s_facts_are_read_for_corrections_and_removals(
    serve: Serve, delays: list[float], make_turn: MakeTurn
) -> None:
    # The model states facts only; the turn's correction and removal are read as the
    # rules read them (issue 25), so a configured model corrects like the default.
    shellfish = {"subject": "user", "attribute": "allergies", "value": "shellfish", "kind": "fact"}
    server = serve(
        completion(json.dumps({"memories": [shellfish]})),
        completion(json.dumps({"memories": [{**shellfish, "value": "海鲜"}]})),
    )
    extractor = extractor_for(server.base_url, delays)
    found = extractor.extract(make_turn("Sorry, I got that wrong: shellfish, not peanuts."))
    assert [(c.attribute, c.value, c.change) for c in found] == [
        ("allergies", "shellfish", "correct"),
        ("allergies", "peanuts", "remove"),
    ]
    found = extractor.extract(make_turn("我对海鲜过敏，不是花生。"))
    assert [(c.attribute, c.value, c.change) for c in found] == [
        ("allergies", "海鲜", "state"),
        ("allergies", "花生", "remove"),
    ]


def test_a_model_s_turn_taking_back_a_language_or_channel_removes_it(
    serve: Serve, delays: list[float], make_turn: MakeTurn
) -> None:
    # The model states nothing for these; the rules' removals still apply (issue 25).
    server = serve(
        completion(json.dumps({"memories": []})), completion(json.dumps({"memories": []}))
    )
    extractor = extractor_for(server.base_url, delays)
    found = extractor.extract(make_turn("I don't speak French anymore."))
    assert [(c.attribute, c.value, c.change) for c in found] == [
        ("languages_spoken", "French", "remove")
    ]
    found = extractor.extract(make_turn("别打电话了。"))
    assert [(c.attribute, c.value, c.change) for c in found] == [
        ("contact_channels", "phone", "remove"),
        ("contact_channel", "phone", "remove"),
    ]
