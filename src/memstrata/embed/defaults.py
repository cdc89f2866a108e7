"""The dense embedder every entry point uses unless given another."""

from __future__ import annotations

from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder


def default_embedder(*, batch_size: int = 64) -> CachedEmbedder:
    """Bundled all-MiniLM-L6-v2 (ONNX Runtime, torch as fallback) behind an LRU cache
    of recent texts: agents repeat queries and entity names step after step."""
    return CachedEmbedder(MiniLMEmbedder(batch_size=batch_size))
