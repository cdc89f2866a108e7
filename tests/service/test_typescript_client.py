"""The TypeScript client (clients/typescript) is generated from the checked-in OpenAPI
document: the document must be the one the service serves, and every code of the error
table must have an error class there. Its own tests (`make test-ts`, `node --test`)
call every operation against a live ``memstrata serve``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from memstrata.errors import ERROR_CODES
from memstrata.service import openapi
from memstrata.service.operations import OPERATIONS

CLIENT = Path(__file__).parents[2] / "clients" / "typescript"


def test_the_checked_in_document_is_what_is_served() -> None:
    checked_in = openapi.TARGET.read_text(encoding="utf-8")
    assert checked_in == openapi.text(), "regenerate: make generate"


def test_the_document_has_every_operation_under_its_name() -> None:
    document = json.loads(openapi.TARGET.read_text(encoding="utf-8"))
    ids = {
        operation["operationId"]: (path, method)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    assert {op.name: (f"/v1/{op.name}", "post") for op in OPERATIONS}.items() <= ids.items()


def test_every_error_code_has_a_typescript_class() -> None:
    source = (CLIENT / "src" / "errors.ts").read_text(encoding="utf-8")
    table = re.search(r"ERROR_CLASSES[^=]*=\s*\{(?P<body>[^}]*)\}", source)
    assert table is not None
    mapped = dict(re.findall(r"^\s*(\w+):\s*(\w+),", table["body"], re.MULTILINE))
    # The error table's codes, an unexpected error's ("internal") and the routing
    # errors' (an unknown path, a wrong method).
    codes = {code.grpc.lower() for code in ERROR_CODES.values()}
    assert codes | {"internal", "not_found", "unimplemented"} <= set(mapped)
    for name in set(mapped.values()):
        assert re.search(rf"^export class {name} extends \w+", source, re.MULTILINE), name
