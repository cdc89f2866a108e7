"""The engine is the API: sessions, knowledge, consolidation and preferences as engine
methods, on the real embedded backends."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import memstrata
from memstrata import ConsolidationResult, Document, EngineParts, MergeReport
from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.errors import ContextMissError, NotFoundError, ValidationError

Factory = Callable[..., ContextEngine]
SECRET = "sk-proj-AbCdEf0123456789AbCdEf0123456789AbCd"
GUIDE = (
    "# Pump guide\n\nThe pump moves coolant.\n\n## Alarm\n\n"
    "Raise an alarm above 3.5 mm/s of RMS velocity.\n"
)


def test_end_session_closes_l1_and_leaves_l2_to_its_ttls(engine: ContextEngine) -> None:
    engine.start_session("u1", "go", session_id="s-end")
    engine.working("s-end").put_api_response("ep", {}, {"ok": True})
    state = engine.update_session("s-end", lambda s: s.advance(2))
    ended = engine.end_session("s-end")
    assert ended == state and ended.current_step == 2
    with pytest.raises(NotFoundError):
        engine.session("s-end")
    with pytest.raises(NotFoundError):
        engine.end_session("s-end")
    report = engine.inspect("s-end")
    assert report["l1"] is None and len(report["l2"]) == 1
    assert report["l2"][0]["ttl_remaining_s"] > 0
    with pytest.raises(ValidationError) as err:
        engine.end_session("bad id")
    assert err.value.field == "session_id"


def test_ingest_documents_adds_updates_skips_and_sanitizes(
    engine: ContextEngine, tmp_path: Path
) -> None:
    guide = Document("sop/pump.md", GUIDE, "markdown")
    ops = Document("sop/ops.txt", f"Deploy\n\nexport OPENAI_API_KEY={SECRET}", "text")
    first = engine.ingest_documents([guide, ops], tenant="acme")
    assert (first.files_added, first.chunks_added, first.errors) == (2, 3, ())
    again = engine.ingest_documents([guide, ops], tenant="acme")
    assert (again.files_skipped, again.chunks_added) == (2, 0)
    edited = Document("sop/pump.md", GUIDE.replace("3.5", "4.0"), "markdown")
    changed = engine.ingest_documents([edited], tenant="acme")
    assert (changed.files_updated, changed.chunks_added, changed.chunks_deleted) == (1, 1, 1)

    hits = engine.search("u1", "when to raise an alarm", tenant="acme", collection="knowledge")
    assert "4.0 mm/s" in hits[0].payload["text"] and hits[0].payload["source"] == "sop/pump.md"
    stored = engine.search("u1", "deploy key", tenant="acme", collection="knowledge", k=10)
    texts = " ".join(h.payload["text"] for h in stored)
    assert "[REDACTED:api_key]" in texts and SECRET not in texts
    assert "api_key" in {e.kind.value for e in engine.audit_events()}
    # Another tenant sees none of it; the manifest lives under the data directory.
    assert engine.search("u1", "alarm", tenant="other", collection="knowledge") == []
    manifest = (Path(engine.settings.data_dir) / "knowledge_manifest.json").read_text()
    assert "sop/pump.md" in manifest and SECRET not in manifest

    with pytest.raises(ValidationError) as err:
        Document("../escape.md", "x", "markdown")
    assert err.value.field == "name"
    with pytest.raises(ValidationError) as err:
        engine.ingest_documents([guide, guide], tenant="acme")
    assert err.value.field == "documents[1].name"
    with pytest.raises(ValidationError) as err:
        engine.ingest_documents([guide], tenant="no spaces")
    assert err.value.field == "tenant"


def test_ingest_files_shares_the_manifest_with_documents(
    engine: ContextEngine, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "pump.md").write_text(GUIDE, encoding="utf-8")
    calls: list[tuple[str, int, int]] = []
    first = engine.ingest_files([docs], progress=lambda *call: calls.append(call))
    assert (first.files_added, first.chunks_added) == (1, 2)
    assert calls == [("pump.md", 0, 1), ("", 1, 1)]
    # A document named like the file is another entry, not the file's.
    engine.ingest_documents([Document("pump.md", GUIDE, "markdown")])
    assert engine.ingest_files([docs]).files_skipped == 1
    hits = engine.search("u1", "alarm velocity", collection="knowledge", k=10)
    assert sum("3.5 mm/s" in h.payload["text"] for h in hits) == 2


def test_confirmed_knowledge_is_searchable_then_merged_by_consolidate(
    engine_factory: Factory,
) -> None:
    clock = FakeClock(datetime(2025, 3, 1, tzinfo=UTC))
    engine = engine_factory(clock=clock)
    pair_id = engine.confirm_knowledge(
        "How do I reset the D123 controller?",
        "Hold the reset button for 5 seconds; token " + SECRET,
        tenant="acme",
        source="session:s1",
    )
    hot = engine.search("u1", "reset the controller", tenant="acme", collection="hot_knowledge")
    assert [h.id for h in hot] == [pair_id]
    assert "Hold the reset button" in hot[0].payload["text"]
    assert SECRET not in hot[0].payload["text"]
    with pytest.raises(ValidationError) as err:
        engine.confirm_knowledge("q?", "a.", tenant="acme", source="s", feedback="thumbs_down")
    assert err.value.field == "feedback"

    # acme wrote no memory: it is consolidated because it confirmed knowledge here.
    result = engine.consolidate()
    assert isinstance(result, ConsolidationResult)
    assert result.hot_knowledge["acme"] == MergeReport(merged=1, duplicates=0, expired=0)
    assert set(result.hot_knowledge) == {"acme", "default"}
    assert result.as_dict()["hot_knowledge"]["acme"]["merged"] == 1
    assert set(result.as_dict()["memories"]) >= {"merged_duplicates", "cold_faded"}
    assert engine.search("u1", "reset", tenant="acme", collection="hot_knowledge") == []
    merged = engine.search("u1", "reset the controller", tenant="acme", collection="knowledge")
    assert merged and "Hold the reset button" in merged[0].payload["text"]

    # An item older than its TTL is expired, not merged; tenants can be named.
    engine.confirm_knowledge("Where is the manual?", "In the wiki.", tenant="acme", source="s2")
    clock.advance(timedelta(hours=73))
    later = engine.consolidate(tenants=["acme"])
    assert later.hot_knowledge == {"acme": MergeReport(merged=0, duplicates=0, expired=1)}
    with pytest.raises(ValidationError) as err:
        engine.consolidate(tenants="acme")
    assert err.value.field == "tenants"


def test_preferences_through_the_engine(engine: ContextEngine) -> None:
    when = datetime(2025, 3, 1, tzinfo=UTC)
    stored = engine.set_preference("u1", "report_format", "pdf", 0.9, when, tenant="acme")
    engine.set_preference("u1", "language", {"code": "zh"}, 0.7, tenant="acme")
    assert engine.get_preference("u1", "report_format", tenant="acme") == stored
    assert stored.value == "pdf" and stored.confidence == 0.9 and stored.last_updated == when
    assert [p.pref_type for p in engine.list_preferences("u1", tenant="acme")] == [
        "language",
        "report_format",
    ]
    assert engine.list_preferences("u1") == ()  # another tenant
    with pytest.raises(ContextMissError):
        engine.get_preference("u1", "report_format")
    with pytest.raises(ValidationError) as err:
        engine.set_preference("u1", "x", "y", 1.5, tenant="acme")
    assert err.value.field == "confidence"


def test_counts_and_the_parts_extension_point(engine: ContextEngine) -> None:
    engine.remember("u1", "I live in Chengdu.", tenant="acme")
    engine.flush()
    assert engine.count_memories("acme", types=("episode",)) == 1
    assert engine.count_memories("acme", user="u1") >= 2  # the episode and the fact
    assert engine.count_memories("acme", user="u2") == 0
    with pytest.raises(ValidationError):
        engine.count_memories("acme", types="episode")  # type: ignore[arg-type]
    parts = engine.parts
    assert isinstance(parts, EngineParts) and parts is engine.parts
    assert parts.settings is engine.settings and parts.memory is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        parts.clock = FakeClock()  # type: ignore[misc]
    for name in ("longterm", "memory", "router", "sanitizer", "working_memory", "audit"):
        assert not hasattr(engine, name), f"engine.{name} is public again"
    assert memstrata.EngineParts is EngineParts
