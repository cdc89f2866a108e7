"""The OpenAPI document says how to authenticate and what the server checks, and a
wrong method is answered 405 with ``Allow`` (RFC 9110)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.service.support import RunningServer, read_timeout_s

from memstrata.service.operations import OPERATIONS


@pytest.fixture(scope="module")
def document(server: RunningServer) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/openapi.json", timeout=read_timeout_s())
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def _schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = document["components"]["schemas"][name]
    return found


def _property(document: dict[str, Any], model: str, field: str) -> dict[str, Any]:
    """A property's schema, its ``anyOf`` with null (an optional field) unwrapped."""
    prop: dict[str, Any] = _schema(document, model)["properties"][field]
    for option in prop.get("anyOf", ()):
        if option.get("type") != "null":
            return dict(option)
    return prop


def test_every_operation_needs_a_key_and_says_how(document: dict[str, Any]) -> None:
    schemes = document.get("components", {}).get("securitySchemes", {})
    assert set(schemes) == {"bearer", "apiKey"}
    assert schemes["bearer"]["type"] == "http" and schemes["bearer"]["scheme"] == "bearer"
    assert schemes["apiKey"]["in"] == "header" and schemes["apiKey"]["name"] == "X-API-Key"
    for op in OPERATIONS:
        operation = document["paths"][f"/v1/{op.name}"]["post"]
        assert operation["security"] == [{"bearer": []}, {"apiKey": []}], op.name
        assert "401" in operation["responses"], op.name
    # Anything else in the document is open (health, metrics): it claims no key.
    for path, item in document["paths"].items():
        if not path.startswith("/v1/"):
            assert all("security" not in operation for operation in item.values()), path


def test_swagger_ui_is_served_from_the_document(server: RunningServer) -> None:
    page = httpx.get(f"{server.url}/docs", timeout=read_timeout_s())
    assert page.status_code == 200 and "/openapi.json" in page.text


def test_identifiers_carry_the_servers_own_checks(document: dict[str, Any]) -> None:
    # The very constants the server's checks compile (one source).
    from memstrata.validation import (
        ID_PATTERN,
        NAME_PATTERN,
        NONBLANK_PATTERN,
        STORE_LABEL_PATTERN,
        UUID_PATTERN,
    )

    for model, field in [
        ("StartSessionRequest", "user_id"),
        ("StartSessionRequest", "session_id"),
        ("CheckReplyRequest", "card_id"),
        ("ToolSpecModel", "name"),
        ("CreateNamespaceRequest", "namespace"),
        ("GrantRequest", "agent"),
    ]:
        assert _property(document, model, field)["pattern"] == ID_PATTERN, (model, field)
    assert _property(document, "CreateKeyRequest", "agent")["pattern"] == NAME_PATTERN
    assert _property(document, "CreateKeyRequest", "tenant")["pattern"] == NAME_PATTERN
    assert _property(document, "ObserveRequest", "text")["pattern"] == NONBLANK_PATTERN
    ids = _property(document, "RestoreRequest", "ids")["items"]
    assert ids["format"] == "uuid" and ids["pattern"] == UUID_PATTERN
    label = _schema(document, "StorePutRequest")["properties"]["namespace"]["items"]
    assert label["pattern"] == STORE_LABEL_PATTERN
    since = _property(document, "TraceCardsRequest", "since")
    assert since["format"] == "date-time"
    from memstrata.validation import MAX_CORRECTION_CHARS, MAX_REPLY_CHARS, MAX_SPEAKER_CHARS

    for model, field, limit in [
        ("FeedbackRequest", "correction", MAX_CORRECTION_CHARS),
        ("CheckReplyRequest", "reply", MAX_REPLY_CHARS),
        ("ObserveRequest", "speaker", MAX_SPEAKER_CHARS),
    ]:
        prop = _property(document, model, field)
        assert (prop["maxLength"], prop["pattern"]) == (limit, NONBLANK_PATTERN), (model, field)
    rating = _property(document, "FeedbackRequest", "rating")
    assert (rating["minimum"], rating["maximum"]) == (1, 5)


def test_fields_that_depend_on_each_other_say_so(document: dict[str, Any]) -> None:
    forget = _schema(document, "ForgetRequest")["allOf"][0]["anyOf"]
    assert [branch["required"] for branch in forget] == [["user_id"], ["ids"], ["store_namespace"]]
    feedback = _schema(document, "FeedbackRequest")["allOf"]
    assert [rule["if"]["properties"]["kind"]["const"] for rule in feedback] == [
        "rating",
        "corrected",
    ]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("TRACE", "/v1/observe"),
        ("PUT", "/v1/observe"),
        ("GET", "/v1/observe"),
        ("DELETE", "/v1/start_session"),
        ("POST", "/healthz"),
    ],
)
def test_a_wrong_method_is_405_with_allow(server: RunningServer, method: str, path: str) -> None:
    response = httpx.request(method, f"{server.url}{path}", timeout=read_timeout_s())
    assert response.status_code == 405
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert "GET" in allowed if path == "/healthz" else allowed == {"POST"}
    assert response.json()["error"]["code"] == "unimplemented"
