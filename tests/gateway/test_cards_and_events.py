"""Every field of a trace card and of a feedback event passes the gateway, and forget
deletes a user's cards and events from the disk (issue 31, "Why" case 2).

Each phrasing the issue found raw in a card's entities is decided through the service
(the message alone, so the card records the entities read out of it); the cards are
read back as a medium-clearance reader reads them (``trace_cards``), and the Valkey
keys and the append-only file are scanned. Then the user is forgotten, and the
cards, the events and their bytes in the AOF are gone. Real components throughout:
the embedded Valkey, qdrant-edge and the models.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.feedback.events import feedback_records
from memstrata.service.core import Service
from memstrata.service.server import open_service
from memstrata.service.wire import dump
from memstrata.testing.disk import files_holding, valkey_entries

USER = "u-cards"
SESSION = "s-cards"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
# (question, what must never be stored): each "Why" 2 phrasing with its own value.
PHRASINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "the password is": ("the password is Quokka5RavineB", ("Quokka5RavineB",)),
    "我的密码是": ("我的密码是 Lemur8CanyonQ", ("Lemur8CanyonQ",)),
    "密码为": ("密码为Otter3MeadowZ", ("Otter3MeadowZ",)),
    "我的口令是": ("我的口令是Bison6GlacierK", ("Bison6GlacierK",)),
    "my password was": ("my password was Heron4ThicketW", ("Heron4ThicketW",)),
    "json password": ('{"password": "Walrus9DuneP"}', ("Walrus9DuneP",)),
    "url credentials": (
        "connect to https://admin:Falcon2Harbor@db.example.com/orders",
        ("Falcon2Harbor",),
    ),
    "bearer": ("call it with Bearer Tk9fZq2LmX7pWv4sRb1n please", ("Tk9fZq2LmX7pWv4sRb1n",)),
    "aws secret key": (f"our aws secret access key is {AWS_SECRET}", (AWS_SECRET,)),
    "us phone": ("call me at (415) 555-0199 tomorrow", ("555-0199", "4155550199")),
}
CORRECTION_SECRET = "Puffin7SummitX"


@dataclass
class Desk:
    service: Service
    engine: ContextEngine
    data_dir: Path
    admin: str
    reader: str

    def call(self, key: str, name: str, payload: dict[str, Any]) -> Any:
        return dump(self.service.call(name, key, payload))


@pytest.fixture
def desk(engine_opener: Callable[..., ContextEngine], tmp_path: Path) -> Iterator[Desk]:
    data_dir = tmp_path / "data"
    engine = engine_opener(data_dir)
    running = open_service(Settings(data_dir=data_dir), engine=engine)
    assert running.admin_key_file is not None
    admin = running.admin_key_file.read_text().strip()
    reader = running.keys.create("default", "reader-agent", "reader", clearance="medium").key
    yield Desk(running.service, engine, data_dir, admin, reader)
    running.close()


def _aof_holding(data_dir: Path, needle: str) -> list[str]:
    return [name for name in files_holding(data_dir, needle) if "appendonly" in name]


def _wait_for_aof(data_dir: Path, needle: str) -> None:
    # The server writes its AOF from its event loop; reading the file races it briefly.
    deadline = time.monotonic() + 5.0
    while not _aof_holding(data_dir, needle):
        assert time.monotonic() < deadline, f"{needle!r} never reached the AOF"
        time.sleep(0.05)


def test_cards_and_events_keep_no_secret_and_forget_takes_them_off_the_disk(desk: Desk) -> None:
    desk.call(
        desk.admin,
        "start_session",
        {"user_id": USER, "initial_query": "hello", "session_id": SESSION},
    )
    card_ids: dict[str, str] = {}
    for label, (question, _) in PHRASINGS.items():
        decision = desk.call(desk.admin, "decide", {"session_id": SESSION, "question": question})
        card_ids[label] = decision["card_id"]
    corrected = card_ids["the password is"]
    desk.call(
        desk.admin,
        "feedback",
        {
            "card_id": corrected,
            "kind": "corrected",
            "correction": f"no, I use {CORRECTION_SECRET} as my password now",
        },
    )
    rating = {"card_id": card_ids["bearer"], "kind": "rating", "rating": 4}
    desk.call(desk.admin, "feedback", rating)
    desk.engine.flush()

    cards = desk.call(desk.reader, "trace_cards", {"session_id": SESSION})["cards"]
    assert {c["id"] for c in cards} == set(card_ids.values())
    # The scan is not blind: the cards carry entities, and the placeholders are there.
    assert any(c["entities"] for c in cards)
    read_back = str(cards)
    assert "[REDACTED:password]" in read_back
    client = desk.engine.parts.working_backend.client
    records = feedback_records(client, "default")
    assert {r.card_id for r in records} == {corrected, card_ids["bearer"]}
    valkey = "\n".join(f"{k} {v}" for k, v in valkey_entries(client).items())
    _wait_for_aof(desk.data_dir, corrected)
    leaks = []
    for label, (_, secrets) in PHRASINGS.items():
        for secret in secrets:
            if secret in read_back:
                leaks.append(f"{label}: {secret} in the cards a reader gets")
            if secret in valkey:
                leaks.append(f"{label}: {secret} in Valkey")
            files = _aof_holding(desk.data_dir, secret)
            leaks += [f"{label}: {secret} in {name}" for name in files]
    if CORRECTION_SECRET in valkey or _aof_holding(desk.data_dir, CORRECTION_SECRET):
        leaks.append("the correction's password in Valkey or the AOF")
    assert not leaks, "\n".join(leaks)
    assert all(r.user == USER for r in records)  # what forget finds them by

    desk.engine.forget(USER, tenant="default")

    assert desk.call(desk.reader, "trace_cards", {"session_id": SESSION})["cards"] == []
    assert desk.call(desk.reader, "trace_cards", {})["cards"] == []
    assert feedback_records(client, "default") == []
    desk.engine.close()  # the AOF is complete once the server is closed
    left = {card_id: _aof_holding(desk.data_dir, card_id) for card_id in card_ids.values()}
    assert not any(left.values()), left
