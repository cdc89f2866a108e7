"""The phrasings and encodings the second hostile round stored verbatim (issue 31, "Why"
case 3), through the service's ``remember`` and ``confirm_knowledge``: none of the
values reaches Valkey, the append-only file or qdrant-edge's payload and WAL files;
and identifiers with a card or ID number glued to a prefix are refused, naming the
field. Real components: the embedded Valkey, qdrant-edge and the models.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError
from memstrata.service.core import Service
from memstrata.service.server import open_service
from memstrata.service.wire import dump
from memstrata.testing.disk import files_holding, valkey_entries

MARKER = "harmless-marker-31c7"
# (text, the values that must never be stored as they are).
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "password, a line break, the value": (
        "Here are the router details. password:\nKestrel4Lagoon",
        ("Kestrel4Lagoon",),
    ),
    "my passcode is": ("my passcode is 602913, do not share it", ("602913",)),
    "I use X as my password": ("I use Marmot7Willow as my password", ("Marmot7Willow",)),
    "zero-width space in the cue": ("pass\u200bword: Gecko2Fjord", ("Gecko2Fjord",)),
    "full-width letters": (
        "ｍｙ ｐａｓｓｗｏｒｄ ｉｓ Ｐｅｌｉｃａｎ８Ｃｏｖｅ",
        ("Ｐｅｌｉｃａｎ８Ｃｏｖｅ", "Pelican8Cove"),
    ),
    "full-width at sign": (
        "write to zhang.min＠example.com about it",
        ("zhang.min＠example.com", "zhang.min@example.com"),
    ),
    "resident ID with spaces": ("我的身份证号是 110105 19491231 002X", ("110105 19491231 002X",)),
}


@dataclass
class Desk:
    service: Service
    engine: ContextEngine
    data_dir: Path
    admin: str

    def call(self, name: str, payload: dict[str, Any]) -> Any:
        return dump(self.service.call(name, self.admin, payload))


@pytest.fixture
def desk(engine_opener: Callable[..., ContextEngine], tmp_path: Path) -> Iterator[Desk]:
    data_dir = tmp_path / "data"
    engine = engine_opener(data_dir)
    running = open_service(Settings(data_dir=data_dir), engine=engine)
    assert running.admin_key_file is not None
    admin = running.admin_key_file.read_text().strip()
    yield Desk(running.service, engine, data_dir, admin)
    running.close()


def test_no_phrasing_or_encoding_reaches_valkey_the_aof_or_qdrant(desk: Desk) -> None:
    for label, (text, _) in CASES.items():
        desk.call("remember", {"user_id": "u-enc", "text": f"{text} {MARKER}", "wait": True})
        desk.call(
            "confirm_knowledge",
            {"query": f"what about {label}?", "response": f"{text} {MARKER}", "source": "chat"},
        )
    desk.engine.flush()
    valkey = "\n".join(
        f"{k} {v}" for k, v in valkey_entries(desk.engine.parts.working_backend.client).items()
    )
    desk.engine.close()  # the AOF and the shards on disk are complete once closed
    # The scans are not blind: the marker travelled with every text into each store.
    assert MARKER in valkey
    marked = files_holding(desk.data_dir, MARKER)
    assert any("appendonly" in name for name in marked), marked
    assert any(name.startswith("qdrant") for name in marked), marked
    leaks = []
    for label, (_, secrets) in CASES.items():
        for secret in secrets:
            for needle in {secret, unicodedata.normalize("NFKC", secret)}:
                if needle in valkey:
                    leaks.append(f"{label}: {needle!r} in Valkey")
                leaks += [
                    f"{label}: {needle!r} in {f}" for f in files_holding(desk.data_dir, needle)
                ]
    assert not leaks, "\n".join(leaks)


@pytest.mark.parametrize(
    ("operation", "payload", "field"),
    [
        (
            "append_series",
            {"metric": "m-4539148803430007", "points": [{"timestamp": 1.0, "value": 2}]},
            "metric",
        ),
        ("remember", {"user_id": "u6217003360000000009", "text": "I like tea"}, "user_id"),
        ("remember", {"user_id": "u-11010519491231002X", "text": "I like tea"}, "user_id"),
    ],
)
def test_an_identifier_with_a_card_or_id_number_glued_in_is_refused(
    desk: Desk, operation: str, payload: dict[str, Any], field: str
) -> None:
    desk.call("start_session", {"user_id": "u-id", "initial_query": "hi", "session_id": "s-id"})
    if operation == "append_series":
        payload = {"session_id": "s-id", **payload}
    with pytest.raises(ValidationError) as refused:
        desk.call(operation, payload)
    assert refused.value.field == field
    number = payload.get("metric") or payload["user_id"]
    held = "\n".join(
        f"{k} {v}" for k, v in valkey_entries(desk.engine.parts.working_backend.client).items()
    )
    assert number not in held
