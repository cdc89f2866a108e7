"""The two VectorIndex adapters, built the same way for every contract-style test."""

from __future__ import annotations

import warnings
from pathlib import Path

from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.qdrant_server import QdrantServerIndex

ADAPTERS = ("edge", "server")
"""qdrant-edge embedded, and QdrantServerIndex over qdrant-client's local mode."""

LOCAL_MODE_WARNINGS = (
    "ignore:Payload indexes have no effect:UserWarning",
    "ignore:Local mode performs exact:UserWarning",
)
"""Local mode (the server's stand-in) warns that payload indexes and hnsw_ef are
no-ops there: expected of a test double, only noise in test output."""


def make_index(kind: str, path: Path) -> VectorIndex:
    """A fresh adapter of ``kind`` ('edge' under ``path``, or 'server' in memory)."""
    if kind == "edge":
        return EdgeIndex(path / "edge")
    if kind != "server":
        raise ValueError(f"kind: must be one of {ADAPTERS}")
    from qdrant_client import QdrantClient

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QdrantServerIndex(QdrantClient(location=":memory:"))
