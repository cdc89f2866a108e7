"""L3 knowledge: documents (the cold path) and confirmed answers (the hot path).

::

    chunker = Chunker(max_tokens=256)
    ingestor = KnowledgeIngestor(store, sanitizer, clock, manifest_dir=data_dir)
    report = ingestor.ingest([Path("docs")], tenant="acme")  # incremental re-runs
    ingestor.ingest_documents([Document("faq.md", "# FAQ ...", "markdown")], tenant="acme")

    hot = HotKnowledge(store, sanitizer, clock, reader=Retriever(store, embedder))
    hot.learn("acme", "how do I reset?", "hold the button 5 s", source="session:s1")
    hot.merge_into_knowledge("acme")  # daily: survivors move into ``knowledge``
"""

from memstrata.knowledge.chunking import DEFAULT_MAX_TOKENS, Chunk, Chunker
from memstrata.knowledge.command import report_table, rich_progress, run_ingest_command
from memstrata.knowledge.documents import Document, DocumentFormat
from memstrata.knowledge.hot import DEFAULT_TTL_S, HotKnowledge, MergeReport
from memstrata.knowledge.ingest import FileError, IngestProgress, IngestReport, KnowledgeIngestor
from memstrata.knowledge.manifest import (
    FileEntry,
    JsonManifestStore,
    Manifest,
    ManifestStore,
)
from memstrata.knowledge.parsing import SUPPORTED_SUFFIXES, DocFormat
from memstrata.knowledge.tokens import ApproxTokenizer, Tokenizer

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TTL_S",
    "SUPPORTED_SUFFIXES",
    "ApproxTokenizer",
    "Chunk",
    "Chunker",
    "DocFormat",
    "Document",
    "DocumentFormat",
    "FileEntry",
    "FileError",
    "HotKnowledge",
    "IngestProgress",
    "IngestReport",
    "JsonManifestStore",
    "KnowledgeIngestor",
    "Manifest",
    "ManifestStore",
    "MergeReport",
    "Tokenizer",
    "report_table",
    "rich_progress",
    "run_ingest_command",
]
