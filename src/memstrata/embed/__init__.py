"""Dense embedders: the protocols, the bundled MiniLM model and a query cache."""

from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.protocol import Embedder, TokenEmbedder
from memstrata.embed.tokens import TokenVectors

__all__ = ["CachedEmbedder", "Embedder", "MiniLMEmbedder", "TokenEmbedder", "TokenVectors"]
