"""A suite that passes on a busy machine (issue 34): no test client gives up before the
server would. At load 5-7, four service tests died on the client's fixed 60 s read
timeout while the server was still serving within its own deadlines (a ``forget`` that
waits up to 300 s by default, a ``flush`` up to 60 s, reads up to their deadlines)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tests.service.support import (
    LOAD_FACTOR,
    SESSION_TIMEOUT_S,
    read_timeout_s,
    server_deadline_s,
)

from memstrata.config import Settings
from memstrata.service.capability import Operation
from memstrata.service.operations import OPERATIONS

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_operations_read_timeout_is_well_past_the_servers_deadline(
    op: Operation[Any, Any],
) -> None:
    name, request = op.name, op.request
    longterm = Settings().longterm
    own = longterm.read_deadline_s + longterm.embed_deadline_s
    assert server_deadline_s(name, {}) >= own
    assert read_timeout_s(name, {}) >= LOAD_FACTOR * server_deadline_s(name, {}) >= 2 * own
    if "timeout_s" in request.model_fields:  # it waits: as long as it is asked, or its default
        default = request.model_fields["timeout_s"].default
        assert read_timeout_s(name, {}) > LOAD_FACTOR * default
        longest = max(m.le for m in request.model_fields["timeout_s"].metadata if hasattr(m, "le"))
        assert read_timeout_s(name, {"timeout_s": longest}) > LOAD_FACTOR * longest
    assert read_timeout_s("flush", {}) <= SESSION_TIMEOUT_S


def test_the_deadlines_follow_the_settings_the_server_runs_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = server_deadline_s("retrieve", {})
    settings = tmp_path / "settings.json"
    settings.write_text('{"longterm": {"read_deadline_s": 100}}')
    monkeypatch.setenv("MEMSTRATA_SETTINGS", str(settings))  # what `serve` inherits
    assert server_deadline_s("retrieve", {}) == before + 100 - Settings().longterm.read_deadline_s


# A literal client timeout (a number given as `timeout`) or a Client left at its default
# one: each is a guess that a busy machine proves wrong. Probes in a retry loop (/healthz,
# /readyz)
# and waits on a subprocess are not client read timeouts.
_LITERAL = re.compile(r"\btimeout=\d")
_DEFAULT_CLIENT = re.compile(r"\b(?:Async)?Client\(server\.url\b(?![^\n]*timeout_s=)")
_NOT_A_READ = re.compile(r"healthz|readyz|\.wait\(|capture_output|subprocess")


def test_no_service_test_uses_a_fixed_or_default_client_timeout() -> None:
    found = [
        f"{path.relative_to(HERE)}:{number}: {line.strip()}"
        for path in sorted(HERE.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if (_LITERAL.search(line) or _DEFAULT_CLIENT.search(line)) and not _NOT_A_READ.search(line)
    ]
    assert found == []
