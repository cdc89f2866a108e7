"""L3 long-term memory and knowledge: hybrid dense + BM25 retrieval on Qdrant."""

from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.models import (
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
from memstrata.longterm.qdrant_server import QdrantServerIndex
from memstrata.longterm.sparse import Bm25Encoder, tokenize
from memstrata.longterm.store import LongTermStore, NewItem

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
