"""One forward pass of MiniLM per distinct query text in ``route()``, ``retrieve()`` and
``build_context()`` (issue 33): the sentence vector and the token vectors (the entity
route pools the question's own tokens) come from the same run and are cached together,
and the router's knowledge need reads the vector retrieve() computed, whichever of the
two asks first. Real engine (embedded Valkey, qdrant-edge, the real MiniLM) behind a
counting wrapper."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.engine import ContextEngine
from memstrata.router import IntentSpec, L3Need
from memstrata.testing.embedders import CountingTokenEmbedder

# Names make the entity route run (its vector is pooled from the question's tokens).
QUESTION = "What did Caroline tell Melanie about the pottery class in Boston?"
OTHER = "Where does Melanie go running on weekends?"


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[ContextEngine, CountingTokenEmbedder]]:
    counting = CountingTokenEmbedder(MiniLMEmbedder())
    engine = ContextEngine.open(
        Settings(data_dir=tmp_path / "data"), embedder=CachedEmbedder(counting)
    )
    try:
        yield engine, counting
    finally:
        engine.close()


def _seed(engine: ContextEngine, tenant: str, user: str) -> None:
    for text in (
        "Caroline told Melanie the pottery class in Boston starts in May.",
        "Melanie runs along the river every Saturday morning.",
    ):
        engine.remember(user, text, tenant=tenant)
    engine.add_knowledge(
        ["Pottery classes at the Boston studio run on Tuesdays."], tenant=tenant, source="kb"
    )
    engine.flush()


@pytest.mark.parametrize("memories_first", [True, False])
def test_route_embeds_the_question_once(
    counted: tuple[ContextEngine, CountingTokenEmbedder], memories_first: bool
) -> None:
    engine, counting = counted
    tenant, user = f"t-{uuid.uuid4().hex[:8]}", "u1"
    _seed(engine, tenant, user)
    memories = L3Need("memories", k=3, label="memory")
    knowledge = L3Need("knowledge", k=2, per_user=False, label="kb")
    intent = f"ask_{uuid.uuid4().hex[:6]}"
    needs = (memories, knowledge) if memories_first else (knowledge, memories)
    engine.register_intent(IntentSpec(name=intent, l3=needs))
    session = engine.start_session(user, "hello", tenant=tenant)
    counting.texts.clear()
    bundle = engine.route(session, intent, QUESTION)
    assert any(item.name.startswith("memory") for item in bundle.items)
    assert counting.texts[QUESTION] == 1, counting.texts
    assert counting.repeated() == {}
    counting.texts.clear()
    engine.route(session, intent, QUESTION)  # the next step asks the same: no pass
    assert counting.texts[QUESTION] == 0


def test_retrieve_and_build_context_embed_each_text_once(
    counted: tuple[ContextEngine, CountingTokenEmbedder],
) -> None:
    engine, counting = counted
    tenant, user = f"t-{uuid.uuid4().hex[:8]}", "u1"
    _seed(engine, tenant, user)
    counting.texts.clear()
    result = engine.retrieve(QUESTION, tenant=tenant, user=user)
    assert result.items
    assert counting.texts[QUESTION] == 1, counting.texts
    session = engine.start_session(user, "hello", tenant=tenant)
    counting.texts.clear()
    engine.build_context(session, None, OTHER, system_prompt="You help.")
    assert counting.texts[OTHER] == 1, counting.texts
    assert counting.repeated() == {}


def test_a_query_alone_gives_the_batch_vector_bit_for_bit() -> None:
    """The sentence vector taken from the token pass is the one ``embed`` gives, so
    stored points and searches are unchanged."""
    model = MiniLMEmbedder()
    texts = ["x", QUESTION, "我喜欢杭州的西湖", "I moved to Berlin last year for work " * 40]
    for text in texts:
        cache = CachedEmbedder(model)
        np.testing.assert_array_equal(cache.embed([text])[0], model.embed([text])[0])
        tokens = cache.embed_tokens(text)
        assert tokens is not None
        np.testing.assert_array_equal(tokens.pooled(), model.embed([text])[0])
