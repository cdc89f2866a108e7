"""Each text a write embeds is embedded once per model (issue 33: "writes embed twice").

A batch often holds one text several times (a turn said again, the same fact from two
turns, the duplicate check of a restatement), and two worker threads' batches often
share texts; none of it may cost the models a second pass over the same text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memstrata.bench.write import generate_turns
from memstrata.config import PipelineSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.engine import ContextEngine
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.testing.embedders import CountingEmbedder, HashEmbedder
from memstrata.wiring import build_stack
from memstrata.write.handle import WriteHandler
from memstrata.write.payloads import KIND_TURN, turn_payload

from .test_handle import entry, episode

StoreFactory = Any  # tests/conftest.py: make_store


def test_a_batch_embeds_each_text_once_whatever_the_embedder_caches(
    make_store: StoreFactory,
) -> None:
    """A turn said twice and a fact restated (the second one goes through the
    duplicate check against the first): one row of the model per distinct text, with
    an embedder that caches nothing."""
    model = CountingEmbedder(HashEmbedder(64))
    env = make_store(embedder=model)
    handler = WriteHandler(env.store, embedder=model)
    said = [
        "I live in Hangzhou.",
        "I prefer green tea.",
        "I live in Hangzhou.",
        "I prefer green tea.",
        "My order ORD-2025-000123 cost 45 yuan.",
    ]
    model.texts.clear()
    handler(
        [
            entry(i, KIND_TURN, turn_payload(episode(text, i + 1, tenant=env.tenant)))
            for i, text in enumerate(said)
        ]
    )
    assert model.repeated() == {}
    assert set(said) <= set(model.texts)  # every turn was embedded, once
    facts = list(env.longterm.iter_records(MEMORIES, Filter(tenant=env.tenant, types=("fact",))))
    assert {r.payload["value"] for r in facts} >= {"Hangzhou", "green tea"}
    assert handler.stats().episodes_written == 5


def test_two_workers_embed_each_text_once_per_model(tmp_path: Path) -> None:
    """The product's wiring (each model behind its LRU cache), two worker threads
    whose batches share texts (the bench's generator: many users say the same
    things), facts superseding each other: the models below the caches see each
    text once - MiniLM and the multilingual USE alike."""
    minilm = CountingEmbedder(MiniLMEmbedder())
    second = CountingEmbedder(MultilingualEmbedder())
    stack = build_stack(
        Settings(data_dir=tmp_path / "data"),
        embedder=CachedEmbedder(minilm),
        multilingual=CachedEmbedder(second),
        pipeline=PipelineSettings(batch_size=16, worker_threads=2),
    )
    turns = generate_turns(240)
    with ContextEngine(stack) as engine:
        for user in sorted({user for user, _ in turns}):
            engine.start_session(user, "bench", tenant="t", session_id=f"s-{user}")
        minilm.texts.clear()
        second.texts.clear()
        for user, text in turns:
            assert engine.observe(f"s-{user}", "user", text).queued
        engine.flush(timeout_s=300)
        stats = engine.write_stats().handler
    assert stats.episodes_written == 240 and stats.units_written >= 200
    assert {text for _, text in turns} <= set(minilm.texts)
    assert second.texts  # the Chinese turns at least had the second vector
    assert minilm.repeated() == {}
    assert second.repeated() == {}
