"""``route()`` when L3 is slow or down, and when the query embedder fails, on the real
backends (embedded Valkey, qdrant-edge, MiniLM) behind fault-injecting doubles
(``memstrata.testing.faults``).

From the user's side: the step is answered from L2 and L1 within its deadline (the
intent's L2 items, the user's cached reads, the user's preferences) and the bundle
says L3 was skipped and why. From the backend's side: once the breaker is open, no
read reaches L3. Timing is asserted only where the bound is the point: a 2 s
deadline against an index that would take 60 s, with a margin any busy machine meets.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memstrata.config import LongTermSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.engine import ContextEngine
from memstrata.retrieval.fallback import CACHED_ROUTE
from memstrata.router import ContextBundle, IntentSpec, L2Need, L3Need
from memstrata.testing.faults import FaultyEmbedder, FaultyIndex
from memstrata.wiring import build_stack, open_index

HANG_S = 60.0
DEADLINE_S = 2.0
MARGIN_S = 20.0
QUESTION = "what am I allergic to"
FACTS = ("I am allergic to peanuts.", "I live in Chengdu with my two cats.")


@dataclass
class Faulty:
    engine: ContextEngine
    index: FaultyIndex
    embedder: FaultyEmbedder
    user: str


@pytest.fixture
def faulty(tmp_path: Path, minilm: CachedEmbedder) -> Iterator[Faulty]:
    settings = Settings(
        data_dir=tmp_path / "data",
        longterm=LongTermSettings(
            search_deadline_s=DEADLINE_S,
            read_deadline_s=DEADLINE_S,
            embed_deadline_s=DEADLINE_S,
            breaker_failures=2,
            breaker_cooldown_s=600,
            low_confidence_cosine=0.6,
            skip_below_cosine=0.1,
        ),
    )
    index = FaultyIndex(open_index(settings))
    embedder = FaultyEmbedder(minilm)
    engine = ContextEngine(build_stack(settings, index=index, embedder=embedder))
    user = f"u-{uuid.uuid4().hex[:8]}"
    try:
        for text in FACTS:
            engine.remember(user, text)
        engine.flush()
        yield Faulty(engine, index, embedder, user)
    finally:
        index.heal()
        embedder.heal()
        engine.close()


def _l3(bundle: ContextBundle) -> list[str]:
    return [str(item.content["text"]) for item in bundle.layer("L3")]


def _intent(faulty: Faulty) -> str:
    """An intent with an L2 API result, a knowledge need and a memories need."""
    name = f"diagnose_{uuid.uuid4().hex[:6]}"
    faulty.engine.register_intent(
        IntentSpec(
            name,
            l2=(L2Need("api", "sensor_api", {"device": "D1"}, label="reading"),),
            l3=(
                L3Need("knowledge", query="allergy policy", per_user=False, label="policy"),
                L3Need("memories", k=3, label="memory"),
            ),
        )
    )
    return name


def test_a_slow_l3_is_answered_from_l2_and_l1_within_the_deadline(faulty: Faulty) -> None:
    engine = faulty.engine
    engine.add_knowledge(
        ["Allergy policy: ask about allergies before any food order."], source="sop/food"
    )
    engine.set_preference(faulty.user, "diet", "vegetarian", 0.9)
    name = _intent(faulty)
    state = engine.start_session(faulty.user, "order lunch")
    engine.working(state.session_id).put_api_response("sensor_api", {"device": "D1"}, {"t": 21})
    healthy = engine.route(state, name, QUESTION)
    assert not healthy.l3_skipped and any("peanuts" in t for t in _l3(healthy))

    faulty.index.slow(HANG_S)
    started = time.monotonic()
    bundle = engine.route(state, name, QUESTION)
    assert time.monotonic() - started < 2 * DEADLINE_S + MARGIN_S
    assert bundle.l3_skipped and bundle.l3_skip_reason == "l3_timeout"
    # L1 and the intent's L2 item as always; the cached reads; the user's preferences.
    assert bundle.item("session").provenance.layer == "L1"
    assert bundle.item("reading").content == {"t": 21}
    cached = bundle.layer("L3")
    texts = _l3(bundle)
    assert any("peanuts" in t for t in texts) and any("Allergy policy" in t for t in texts)
    assert all(item.provenance.source == CACHED_ROUTE for item in cached)
    assert bundle.item("preference_diet").content["value"] == "vegetarian"
    assert bundle.as_dict()["l3_skip_reason"] == "l3_timeout"


def test_once_the_breaker_is_open_l3_is_not_called_at_all(faulty: Faulty) -> None:
    engine = faulty.engine
    state = engine.start_session(faulty.user, "chat")
    engine.route(state, "respond", QUESTION)
    faulty.index.fail()
    reasons = [engine.route(state, "respond", QUESTION).l3_skip_reason for _ in range(2)]
    assert reasons == ["l3_unavailable", "l3_unavailable"]
    calls = faulty.index.calls
    for _ in range(5):
        bundle = engine.route(state, "respond", QUESTION)
        assert bundle.l3_skip_reason == "circuit_open"
        assert any("peanuts" in t for t in _l3(bundle))
    assert faulty.index.calls == calls


def test_the_first_need_l3_failed_skips_l3_for_the_rest_of_the_step(faulty: Faulty) -> None:
    name = _intent(faulty)
    state = faulty.engine.start_session(faulty.user, "order lunch")
    faulty.index.slow(HANG_S)
    started = time.monotonic()
    bundle = faulty.engine.route(state, name, QUESTION)
    # Two needs, one deadline: the second need never waited on L3.
    assert time.monotonic() - started < 2 * DEADLINE_S + MARGIN_S
    assert bundle.l3_skip_reason == "l3_timeout"
    assert faulty.index.calls >= 1
    reasons = {m.name: m.reason for m in bundle.missing if m.layer == "L3"}
    assert "l3_timeout" in reasons["policy"] and "l3_timeout" in reasons["memory"]


def test_a_failing_embedder_leaves_bm25_alone_flagged(faulty: Faulty) -> None:
    state = faulty.engine.start_session(faulty.user, "chat")
    faulty.embedder.fail()
    bundle = faulty.engine.route(state, "respond", "peanuts")
    assert bundle.dense_skip_reason == "embedder_failed" and not bundle.l3_skipped
    items = bundle.layer("L3")
    assert any("peanuts" in t for t in _l3(bundle))
    assert all(item.provenance.low_confidence for item in items)


def test_a_hanging_embedder_is_not_waited_for(faulty: Faulty) -> None:
    state = faulty.engine.start_session(faulty.user, "chat")
    faulty.embedder.slow(HANG_S)
    started = time.monotonic()
    bundle = faulty.engine.route(state, "respond", "peanuts allergy")
    assert time.monotonic() - started < DEADLINE_S + MARGIN_S
    assert bundle.dense_skip_reason == "embedder_timeout"
    assert any("peanuts" in t for t in _l3(bundle))
