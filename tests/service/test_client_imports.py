"""The client is light: importing it imports no engine module and no model runtime."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "memstrata.engine",
    "memstrata.capabilities",
    "memstrata.wiring",
    "memstrata.service.core",
    "memstrata.service.capability",
    "memstrata.service.operations",
    "memstrata.service.ops",
    "torch",
    "sentence_transformers",
    "qdrant_edge",
)


def test_importing_the_client_imports_no_engine() -> None:
    probe = "import json, sys\nimport memstrata.client\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(done.stdout)
    heavy = [n for n in loaded if any(n == h or n.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
