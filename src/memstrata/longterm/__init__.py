"""L3 long-term memory and knowledge: hybrid dense + BM25 retrieval on Qdrant."""

from typing import TYPE_CHECKING, Any

from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import (
    COLLECTIONS,
    HOT_KNOWLEDGE,
    KNOWLEDGE,
    MEMORIES,
    Filter,
    Hit,
    Point,
    Record,
    ScoredPoint,
    SparseVector,
)
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder, tokenize

if TYPE_CHECKING:
    from memstrata.longterm.qdrant_server import QdrantServerIndex


def __getattr__(name: str) -> Any:
    # qdrant-client takes ~1.6 s to import; only users of a Qdrant server pay for it.
    if name == "QdrantServerIndex":
        from memstrata.longterm.qdrant_server import QdrantServerIndex

        return QdrantServerIndex
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COLLECTIONS",
    "HOT_KNOWLEDGE",
    "KNOWLEDGE",
    "MEMORIES",
    "Bm25Encoder",
    "EdgeIndex",
    "Filter",
    "Hit",
    "LongTermStore",
    "NewItem",
    "Point",
    "QdrantServerIndex",
    "Record",
    "ScoredPoint",
    "SparseVector",
    "VectorIndex",
    "tokenize",
]
