"""Writes the service's OpenAPI document to ``clients/typescript/openapi.json``.

The TypeScript SDK's types and methods are generated from this file (``npm run
generate`` in ``clients/typescript``); ``python -m memstrata.service.openapi`` rewrites it
(``make generate`` runs both), and a test fails when it is stale or differs from what a
running ``memstrata serve`` serves at ``/openapi.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from memstrata.service.core import Service
from memstrata.service.rest import create_app

TARGET = Path(__file__).parents[3] / "clients" / "typescript" / "openapi.json"


def document() -> dict[str, Any]:
    """The document ``memstrata serve`` serves at ``/openapi.json``.

    Built from the REST app's routes alone: no engine is started, because the document
    depends only on the capability table and the wire models (the app's endpoints,
    which would call the service, are never invoked here).
    """
    app = create_app(cast(Service, None), mcp=False)
    return app.openapi()


def text() -> str:
    """The document as the checked-in file holds it: sorted keys, two-space indent."""
    return json.dumps(document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # pragma: no cover - regenerates the checked-in document
    TARGET.write_text(text(), encoding="utf-8")
