"""Schemathesis against the live OpenAPI of a running ``memstrata serve``.

Every generated request (valid and invalid) must get no 5xx, and every 4xx must be
the service's error body, ``{"error": {"code": ...}}``, with a code of the error table.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance
from tests.service.support import RunningServer, create_key, read_timeout_s

from memstrata.errors import ERROR_CODES
from memstrata.service.operations import OPERATIONS

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


CHECKS = [not_a_server_error, response_schema_conformance]


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
        RAN[f"{name}:{mode.value}"] += 1
        body = case.body if isinstance(case.body, dict) else {}
        response = case.call(headers=headers, timeout=read_timeout_s(name, body))
        STATUSES[response.status_code] += 1
        case.validate_response(response, checks=CHECKS, headers=headers)
        typed_error_body(response)

    run()
