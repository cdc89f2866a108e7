"""The real MiniLM model, loaded once per test session."""

from __future__ import annotations

import pytest

from memstrata.embed.minilm import MiniLMEmbedder


@pytest.fixture(scope="session")
def minilm_embedder() -> MiniLMEmbedder:
    """Loading takes seconds; every test in this directory shares one instance."""
    return MiniLMEmbedder(batch_size=4)
