"""Oversized, invalid and hostile input; a queue that is down; an LLM that talks garbage."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.errors import ValidationError
from memstrata.extract import LLMExtractor, RuleExtractor
from memstrata.longterm.points import Filter
from memstrata.memory.codec import UNIT_TYPES
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.working import RedisBackend
from memstrata.write.entries import QueueEntry
from memstrata.write.handle import HandlerStats
from memstrata.write.queue import WriteQueue
from memstrata.write.submit import PipelineSettings, WritePipeline, split_text

OpenEngine = Callable[..., ContextEngine]

TEXT = "I live in Hangzhou and I work as a nurse."


def test_long_turns_are_chunked_and_huge_ones_rejected(open_engine: OpenEngine) -> None:
    engine = open_engine(pipeline=PipelineSettings(max_turn_chars=2_000, max_observe_chars=20_000))
    engine.start_session("u-big", "hi", session_id="s-big")
    filler = "The weather report said nothing new today. " * 120  # ~5.3k chars
    receipt = engine.observe("s-big", "user", f"{filler}\n\nI live in Ningbo.")
    assert receipt.queued and receipt.chunks == 3 and len(receipt.entry_ids) == 3
    engine.flush(30)
    city = engine.parts.memory.active_fact("default", "u-big", "user", "city")
    assert city is not None and city.value == "Ningbo" and city.source.turn_id == "t1.3"
    with pytest.raises(ValidationError) as info:
        engine.observe("s-big", "user", "x" * 20_001)
    assert info.value.field == "text"
    assert engine.session("s-big").turns_observed == 1  # a rejected turn leaves L1 alone


def test_split_text_cuts_at_sentence_and_paragraph_breaks() -> None:
    text = "First sentence here. Second one follows!\n\n第三句话。第四句话？" * 3
    chunks = split_text(text, 40)
    assert all(0 < len(c) <= 40 for c in chunks)
    assert "".join(chunks).replace(" ", "").replace("\n", "") == text.replace(" ", "").replace(
        "\n", ""
    )
    assert all(c.endswith(("。", "？", "!", ".")) for c in chunks[:-1])
    assert split_text("abcdefghij", 4) == ("abcd", "efgh", "ij")  # no break: cut hard


def test_invalid_arguments_name_the_field(engine: ContextEngine, clock: FakeClock) -> None:
    engine.start_session("u-bad", "hi", session_id="s-bad")
    with pytest.raises(ValidationError, match="role"):
        engine.observe("s-bad", "narrator", TEXT)
    with pytest.raises(ValidationError, match="text"):
        engine.observe("s-bad", "user", "   ")
    with pytest.raises(ValidationError, match="session_id"):
        engine.observe("bad session", "user", TEXT)
    with pytest.raises(ValidationError, match="importance"):
        MemoryUnit(
            subject="user",
            attribute="city",
            value="Hangzhou",
            kind="fact",
            source=UnitSource(tenant="default", user="u-bad"),
            observed_at=clock.now(),
            valid_from=clock.now(),
            importance=1.5,
        )
    foreign = MemoryUnit(
        subject="user",
        attribute="city",
        value="Hangzhou",
        kind="fact",
        source=UnitSource(tenant="other", user="u-bad"),
        observed_at=clock.now(),
        valid_from=clock.now(),
    )
    with pytest.raises(ValidationError, match=r"unit\.source"):
        engine.remember("u-bad", foreign)


def test_remember_writes_units_and_texts_directly(engine: ContextEngine, clock: FakeClock) -> None:
    unit = MemoryUnit(
        subject="user",
        attribute="contact_channel",
        value="email li.wei@example.com",
        kind="fact",
        source=UnitSource(tenant="default", user="u-direct"),
        observed_at=clock.now(),
        valid_from=clock.now(),
    )
    assert engine.remember("u-direct", unit).queued
    assert engine.remember("u-direct", "Prefers invoices on the first Monday.").queued
    assert engine.remember("u-direct", "ok").queued  # no filter on direct writes
    engine.flush(30)
    contact = engine.parts.memory.active_fact("default", "u-direct", "user", "contact_channel")
    assert contact is not None and "li.wei@example.com" not in contact.value
    # A text is kept whole as an episode, whether or not a fact was found in it.
    flt = Filter(tenant="default", user="u-direct", types=("episode",))
    notes = sorted(r.payload["text"] for r in engine.parts.longterm.iter_records("memories", flt))
    assert notes == ["Prefers invoices on the first Monday.", "ok"]


def test_a_queue_that_is_down_never_breaks_the_step(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dead = RedisBackend.from_url(f"unix://{tmp_path}/no-such.sock", socket_timeout_s=0.5)
    pipeline = WritePipeline(
        WriteQueue(dead.client, "memories"),
        _NeverCalled(),
        PipelineSettings(),
    )
    turn = Episode(
        id=turn_episode_id("default", "s#0", 1),
        text=TEXT,
        role="user",
        tenant="default",
        user="u",
        source="turn:s/t1",
        session_id="s",
        turn_id="t1",
        thread="s#0",
        seq=1,
        observed_at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    with caplog.at_level(logging.WARNING):
        receipt = pipeline.submit_turn([turn])
    assert not receipt.queued and receipt.entry_ids == ()
    assert receipt.error == "BackendUnavailableError"
    stats = pipeline.stats()
    assert (stats.enqueued, stats.enqueue_failures, stats.queue) == (0, 1, None)
    assert "could not enqueue" in caplog.text and "Hangzhou" not in caplog.text
    dead.close()


class _NeverCalled:
    extractor = RuleExtractor()

    def stats(self) -> HandlerStats:
        return HandlerStats()

    def __call__(self, entries: Sequence[QueueEntry], /) -> None:
        raise AssertionError("nothing may be written")


class _Garbage(BaseHTTPRequestHandler):
    """Answers every chat completion with a message that is not the JSON asked for."""

    answers: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = self.answers.pop(0) if self.answers else b"{not json"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads caplog."""


@pytest.fixture
def garbage_llm() -> Iterator[str]:
    city = {"subject": "user", "attribute": "city", "value": "Chengdu", "kind": "fact",
            "confidence": 0.9, "importance": 0.5}  # fmt: skip
    # One valid candidate next to one with an impossible confidence.
    content = {
        "candidates": [city, {**city, "attribute": "job", "value": "nurse", "confidence": 7}]
    }
    _Garbage.answers = [
        json.dumps(
            {"choices": [{"message": {"content": "I think the user lives in ¯\\_(ツ)_/¯"}}]}
        ).encode(),
        b"<html>502 bad gateway</html>",
        json.dumps({"choices": [{"message": {"content": json.dumps(content)}}]}).encode(),
    ]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_llm_answering_garbage_writes_no_fact_and_logs_no_text(
    open_engine: OpenEngine, garbage_llm: str, caplog: pytest.LogCaptureFixture
) -> None:
    extractor = LLMExtractor(garbage_llm, "test-model", max_retries=0, sleep=lambda s: None)
    engine = open_engine(extractor=extractor)
    engine.start_session("u-llm", "hi", session_id="s-llm")
    caplog.set_level(logging.INFO)
    for text in ("I live in Hangzhou.", "I work as a nurse.", "I moved to Chengdu."):
        assert engine.observe("s-llm", "user", text).queued
    engine.flush(30)
    stats = engine.write_stats().handler
    assert stats.turns_kept == 3 and stats.units_written == 1
    assert stats.extraction_failures == 2
    # Only the valid candidate of the third answer became a unit; nothing corrupted,
    # and every turn is still kept as said.
    assert engine.count_memories("default", user="u-llm", types=UNIT_TYPES) == 1
    assert engine.count_memories("default", user="u-llm", types=("episode",)) == 3
    city = engine.parts.memory.active_fact("default", "u-llm", "user", "city")
    assert city is not None and city.value == "Chengdu" and city.source.confidence == 0.9
    assert engine.parts.memory.active_fact("default", "u-llm", "user", "job") is None
    failures = [r for r in caplog.records if "extraction failed" in r.getMessage()]
    assert len(failures) == 2 and all("ExtractionError" in r.getMessage() for r in failures)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "unusable answer" in logged  # the scan below reads real log lines
    for text in ("Hangzhou", "nurse", "Chengdu"):
        assert text not in logged


def test_the_rule_extractor_is_the_default(engine: ContextEngine) -> None:
    assert isinstance(engine.parts.pipeline.handler.extractor, RuleExtractor)
