"""The engine's in-process metrics: exact counts after real calls, and the text exposition."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memstrata.context import ContextBudget, Turn
from memstrata.engine import ContextEngine
from memstrata.errors import UnknownIntentError
from memstrata.metrics import sample_value
from memstrata.router import IntentSpec
from memstrata.router.intents import L2Need

SYSTEM = "You are a helpful assistant."
QUESTION = "What kind of tea do I like?"


def value(engine: ContextEngine, name: str, **labels: str) -> float:
    return sample_value(engine.metrics(), name, **labels)


def test_counts_are_exact_after_retrieve_route_and_build_context(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    engine = engine_opener()
    engine.remember("u1", "My favourite tea is jasmine green tea from Fujian.", tenant="acme")
    engine.flush()
    assert value(engine, "memstrata_retrieval_requests_total") == 0

    result = engine.retrieve(QUESTION, tenant="acme", user="u1")
    assert result.items
    snap = engine.metrics()
    assert sample_value(snap, "memstrata_retrieval_requests_total", collection="memories") == 1
    assert sample_value(snap, "memstrata_retrieval_duration_seconds_count") == 1
    assert sample_value(snap, "memstrata_retrieval_duration_seconds_sum") > 0
    assert sample_value(snap, "memstrata_retrieval_empty_total") == 0
    confident = any(
        i.cosine >= engine.settings.longterm.low_confidence_cosine for i in result.items[:5]
    )
    assert sample_value(snap, "memstrata_retrieval_confident_top5_total") == int(confident)
    assert sample_value(snap, "memstrata_route_requests_total") == 0

    # an empty retrieval (another tenant holds nothing) is counted as empty
    assert not engine.retrieve(QUESTION, tenant="nobody", user="u1").items
    assert value(engine, "memstrata_retrieval_requests_total") == 2
    assert value(engine, "memstrata_retrieval_empty_total") == 1

    engine.register_intent(
        IntentSpec("chat", l1=("session_id", "user_id"), l2=(L2Need("preference", "diet"),))
    )
    state = engine.start_session("u1", "tea talk", tenant="acme", session_id="m1")
    bundle = engine.route(state, "chat", QUESTION)
    l2_misses = sum(1 for m in bundle.missing if m.layer == "L2")
    assert l2_misses == 1
    snap = engine.metrics()
    assert sample_value(snap, "memstrata_route_requests_total", intent="chat") == 1
    assert sample_value(snap, "memstrata_route_duration_seconds_count", intent="chat") == 1
    assert sample_value(snap, "memstrata_route_l2_misses_total", intent="chat") == 1
    assert sample_value(snap, "memstrata_context_load_failures_total") == 0

    with pytest.raises(UnknownIntentError):
        engine.route(state, "no-such-intent", QUESTION)
    assert value(engine, "memstrata_context_load_failures_total", intent="unknown") == 1

    built = engine.build_context(state, "chat", QUESTION, system_prompt=SYSTEM)
    snap = engine.metrics()
    assert sample_value(snap, "memstrata_context_requests_total") == 1
    assert sample_value(snap, "memstrata_context_tokens_count") == 1
    assert sample_value(snap, "memstrata_context_tokens_sum") == built.total_tokens
    assert sample_value(snap, "memstrata_context_truncated_total") == 0
    assert sample_value(snap, "memstrata_context_compressed_total") == 0
    for usage in built.sections:
        assert (
            sample_value(
                snap, "memstrata_context_section_budget_share_count", section=usage.section
            )
            == 1
        )
    # build_context routes and retrieves through the engine: both are counted
    assert sample_value(snap, "memstrata_route_requests_total", intent="chat") == 2
    assert sample_value(snap, "memstrata_retrieval_requests_total") == 3

    # the layers' gauges are read at scrape time
    assert sample_value(snap, "memstrata_l2_keys") >= 1
    assert "memstrata_ingest_queue_length" in snap
    assert sample_value(snap, "memstrata_ingest_queue_pending") == 0

    text = engine.metrics_text().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in (
        "memstrata_retrieval_requests",
        "memstrata_retrieval_duration_seconds",
        "memstrata_retrieval_empty",
        "memstrata_retrieval_l3_skipped",
        "memstrata_retrieval_confident_top5",
        "memstrata_context_requests",
        "memstrata_context_tokens",
        "memstrata_context_section_budget_share",
        "memstrata_context_truncated",
        "memstrata_context_compressed",
        "memstrata_route_requests",
        "memstrata_route_duration_seconds",
        "memstrata_route_l2_misses",
        "memstrata_context_load_failures",
        "memstrata_l2_keys",
        "memstrata_ingest_queue_length",
    ):
        assert name in families, name
    assert families["memstrata_retrieval_duration_seconds"].type == "histogram"


def test_truncation_and_compression_are_counted(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    engine = engine_opener()
    engine.register_intent(IntentSpec("chat", l1=("session_id", "user_id")))
    state = engine.start_session("u1", "long talk", tenant="acme", session_id="m2")
    history = tuple(
        Turn("user" if i % 2 == 0 else "assistant", f"Turn {i}: gift number {i}.", id=f"t{i}")
        for i in range(40)
    )
    budget = ContextBudget(window_tokens=700, max_output_tokens=150, buffer_tokens=50)
    built = engine.build_context(
        state, "chat", QUESTION, system_prompt=SYSTEM, history=history, budget=budget
    )
    truncated = any(d.reason == "over_budget" for d in built.dropped)
    compressed = built.summary is not None
    assert truncated or compressed
    assert value(engine, "memstrata_context_truncated_total") == int(truncated)
    assert value(engine, "memstrata_context_compressed_total") == int(compressed)


def test_engines_have_separate_registries(
    engine_opener: Callable[..., ContextEngine], tmp_path: Path
) -> None:
    first = engine_opener(tmp_path / "first")
    second = engine_opener(tmp_path / "second")
    assert first.metrics_registry() is not second.metrics_registry()
    first.retrieve(QUESTION, tenant="acme")
    assert value(first, "memstrata_retrieval_requests_total") == 1
    assert value(second, "memstrata_retrieval_requests_total") == 0
