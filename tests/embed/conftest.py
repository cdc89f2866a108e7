"""The real MiniLM model, loaded once per test session; ``@pytest.mark.torch`` tests
are skipped where the optional torch extra is not installed."""

from __future__ import annotations

import pytest

from memstrata.embed.minilm import MiniLMEmbedder, torch_available


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # The torch runtime is the optional ``ctxstrata[torch]`` extra: what compares
    # against it runs where it is installed (``make test`` installs it).
    if torch_available():
        return
    skip = pytest.mark.skip(reason="the torch extra is not installed (ctxstrata[torch])")
    for item in items:
        if item.get_closest_marker("torch") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def minilm_embedder() -> MiniLMEmbedder:
    """Loading takes seconds; every test in this directory shares one instance."""
    return MiniLMEmbedder(batch_size=4)
