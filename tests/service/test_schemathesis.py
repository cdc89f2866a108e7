"""Schemathesis against the live OpenAPI of a running ``memstrata serve``.

Every generated request (valid and invalid) must get no 5xx, a status the document
declares, a body and headers its schema allows, and every 4xx must be the service's
error body, ``{"error": {"code": ...}}``, with a code of the error table. A request
the schema calls valid must be accepted (``positive_data_acceptance``: no 400 or 422;
401, 403, 404, 409 and 429 are answers about state, not shape), except where a
check no JSON schema can state refuses it (:func:`refused_beyond_the_schema`; each
is said in the field's description).
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from tests.service.support import RunningServer, create_key, read_timeout_s

from memstrata.errors import ERROR_CODES, MemstrataError
from memstrata.gateway import Sanitizer
from memstrata.memory.exchange import parse_conversation, parse_export
from memstrata.service.operations import BY_NAME, OPERATIONS
from memstrata.service.screen import IdentifierScreen

MAX_EXAMPLES = 15

# The error table's codes, and the two routing errors the REST layer adds.
KNOWN_CODES = {code.grpc.lower() for code in ERROR_CODES.values()} | {"not_found", "unimplemented"}
RAN: collections.Counter[str] = collections.Counter()
STATUSES: collections.Counter[int] = collections.Counter()


@pytest.fixture(scope="module")
def fuzz_key(server: RunningServer) -> str:
    """An acme admin key of its own, with a rate limit no fuzzing run reaches."""
    return create_key(
        server, server.admin_keys["acme"], agent="schemathesis", role="admin", rate_per_s=1_000_000
    )


@pytest.fixture(scope="module")
def live_schema(server: RunningServer, fuzz_key: str) -> Iterator[Any]:
    loaded = schemathesis.openapi.from_url(f"{server.url}/openapi.json", timeout=read_timeout_s())
    loaded.config.headers = {"Authorization": f"Bearer {fuzz_key}"}
    yield loaded
    total = sum(RAN.values())
    pairs = len(RAN)
    print(f"\nschemathesis: {total} cases over {pairs} (operation, mode) pairs; {dict(STATUSES)}")


CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
]
POSITIVE_CHECKS = [*CHECKS, positive_data_acceptance]
SCREEN = IdentifierScreen(Sanitizer())


def refused_beyond_the_schema(name: str, body: Any) -> str | None:
    """Why the server refuses a schema-valid ``body`` of operation ``name`` for a reason
    no JSON schema states (None: it must be accepted). Each is in the field's description:
    an identifier holding a credential or personal data (the gateway's screen), a
    document name given twice, a policy's tool parameter naming no slot of it, a window
    whose ``since`` is after its ``until``, a stored value's integer beyond 64 bits."""
    if not isinstance(body, dict):
        return None
    try:
        SCREEN(BY_NAME[name].request.model_validate(body))
    except MemstrataError as exc:
        return f"screened: {exc}"
    if name == "store_put" and _beyond_64_bits(body.get("value")):
        return "an integer beyond 64 bits in the value"
    if name == "ingest_documents":
        names = [d.get("name") for d in body.get("documents", ())]
        if len(names) != len(set(names)):
            return "a document name given twice"
    if name == "register_policy":
        slots = {slot.get("name") for slot in body.get("slots", ())}
        if not set(body.get("tool_params", {}).values()) <= slots:
            return "a tool parameter naming no slot"
    if name == "import_memories":
        unread = _unreadable(body)
        if unread is not None:
            return unread
    since, until = body.get("since"), body.get("until")
    if name == "trace_cards" and since and until and _instant(since) > _instant(until):
        return "since after until"
    return None


def _beyond_64_bits(value: Any) -> bool:
    """Whether a JSON value holds an integer no 64-bit encoding keeps (orjson's range)."""
    if isinstance(value, dict):
        return any(_beyond_64_bits(v) for v in value.values())
    if isinstance(value, list):
        return any(_beyond_64_bits(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return not -(2**63) <= value < 2**64
    return False


def _unreadable(body: dict[str, Any]) -> str | None:
    """Why an import's ``content`` is no file of its ``format`` (it is read line by line,
    each error naming its line and field: no schema says what a file holds)."""
    form, content = body.get("format", "memstrata"), str(body.get("content", ""))
    try:
        if form == "memstrata":
            if body.get("user_id") is not None:
                return "an export names its users itself"
            parse_export(content.splitlines())
        elif body.get("user_id") is None:
            return "a conversation without its user"
        else:
            parse_conversation("\n".join(content.splitlines()), form)
    except MemstrataError as exc:
        return f"not a {form} file: {exc}"
    return None


def _instant(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def typed_error_body(response: Any) -> None:
    """A 4xx is ``{"error": {"code": <a code of the error table>, ...}}``."""
    if not 400 <= response.status_code < 500:
        return
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), (
        f"{response.status_code} without an error body: {response.text[:500]}"
    )
    code = body["error"].get("code")
    assert code in KNOWN_CODES, f"{response.status_code} with unknown code {code!r}"


# pytest 9 and schemathesis' own pytest plugin (``from_fixture``) disagree on node ids,
# so each operation of the capability table is a test of its own, driven by hypothesis.
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize("name", [op.name for op in OPERATIONS])
def test_live_openapi(live_schema: Any, fuzz_key: str, name: str, mode: GenerationMode) -> None:
    operation = live_schema[f"/v1/{name}"]["POST"]
    headers = {"Authorization": f"Bearer {fuzz_key}"}

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )
    def run(case: schemathesis.Case) -> None:
        positive = mode is GenerationMode.POSITIVE
        if positive:
            refused = refused_beyond_the_schema(name, case.body)
            if name == "import_memories" and refused is not None:
                # A file no schema describes (almost every generated one): checked as a
                # negative case instead, its 422 a typed error naming line and field.
                positive = False
            else:
                assume(refused is None)
        RAN[f"{name}:{mode.value}"] += 1
        body = case.body if isinstance(case.body, dict) else {}
        response = case.call(headers=headers, timeout=read_timeout_s(name, body))
        STATUSES[response.status_code] += 1
        checks = POSITIVE_CHECKS if positive else CHECKS
        case.validate_response(response, checks=checks, headers=headers)
        typed_error_body(response)

    run()
