"""Dense embedders: the protocol, the bundled MiniLM model and a query cache."""

from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.protocol import Embedder

__all__ = ["CachedEmbedder", "Embedder", "MiniLMEmbedder"]
