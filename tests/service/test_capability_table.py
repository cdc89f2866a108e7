"""The capability table is the one source: each transport has exactly its operations,
named and shaped like it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from google.protobuf import descriptor

from memstrata.errors import ERROR_CODES, MemstrataError, error_code_of
from memstrata.service import proto
from memstrata.service.mcp import tools
from memstrata.service.operations import OPERATIONS, Operation

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    from memstrata.service.rest import create_app

    app = create_app(service=None, mcp=False)  # type: ignore[arg-type]  # schema only
    with TestClient(app) as client:
        document: dict[str, Any] = client.get("/openapi.json").json()
    return document


def _schema_ref(schema: dict[str, Any]) -> str:
    return str(schema["$ref"]).rsplit("/", 1)[-1]


def test_operation_names_are_unique_and_snake_case() -> None:
    names = [op.name for op in OPERATIONS]
    assert len(names) == len(set(names))
    assert all(n.isidentifier() and n == n.lower() for n in names)


def test_rest_has_every_operation_with_its_models(openapi: dict[str, Any]) -> None:
    assert openapi["openapi"].startswith("3.1")
    paths = openapi["paths"]
    assert set(paths) == {f"/v1/{op.name}" for op in OPERATIONS}
    for op in OPERATIONS:
        post = paths[f"/v1/{op.name}"]["post"]
        assert post["operationId"] == op.name
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert _schema_ref(body) == op.request.__name__
        ok = post["responses"]["200"]["content"]["application/json"]["schema"]
        assert _schema_ref(ok) == op.response.__name__
        # Every error the operation may raise is documented with its status.
        documented = {int(code) for code in post["responses"] if code != "200"}
        assert {error_code_of(e).http for e in op.all_errors} <= documented


def test_rest_schemas_are_the_models(openapi: dict[str, Any]) -> None:
    schemas = openapi["components"]["schemas"]
    for op in OPERATIONS:
        for model in (op.request, op.response):
            assert set(schemas[model.__name__].get("properties", {})) == set(model.model_fields)


def _grpc_field_names(message: descriptor.Descriptor) -> set[str]:
    return {f.name for f in message.fields}


def test_grpc_has_every_operation_with_its_models() -> None:
    service = proto.POOL.FindServiceByName(proto.SERVICE_FULL_NAME)
    assert {m.name for m in service.methods} == {proto.method_name(op.name) for op in OPERATIONS}
    for op in OPERATIONS:
        method = service.FindMethodByName(proto.method_name(op.name))
        assert method.input_type.name == op.request.__name__
        assert method.output_type.name == op.response.__name__
        for model, message in ((op.request, method.input_type), (op.response, method.output_type)):
            assert _grpc_field_names(message) == set(model.model_fields), model.__name__


def test_the_checked_in_proto_is_what_is_served() -> None:
    checked_in = (ROOT / "proto" / proto.PROTO_FILE).read_text()
    assert checked_in == proto.proto_text(), "regenerate: python -m memstrata.service.proto"


def test_mcp_has_every_operation_with_its_schema() -> None:
    listed = {tool.name: tool for tool in tools()}
    assert set(listed) == {op.name for op in OPERATIONS}
    for op in OPERATIONS:
        assert listed[op.name].input_schema == op.request.model_json_schema()


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_every_declared_error_has_codes_for_each_transport(op: Operation[Any, Any]) -> None:
    for error in op.all_errors:
        assert issubclass(error, MemstrataError)
        code = error_code_of(error)
        assert 400 <= code.http < 600 and code.grpc and code.mcp < 0
    assert MemstrataError in ERROR_CODES
