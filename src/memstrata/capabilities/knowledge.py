"""Knowledge: documents a tenant shares (the cold path) and confirmed answers (the hot
path), both in L3 (:mod:`memstrata.knowledge`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from memstrata.errors import ValidationError
from memstrata.knowledge.documents import Document
from memstrata.knowledge.hot import HotKnowledge, MergeReport
from memstrata.knowledge.ingest import IngestProgress, IngestReport, KnowledgeIngestor
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.permissions import Level


class Knowledge:
    """Add, ingest and learn the knowledge a tenant's agents retrieve."""

    def __init__(
        self, longterm: LongTermStore, ingestor: KnowledgeIngestor, hot: HotKnowledge
    ) -> None:
        self._longterm = longterm
        self._ingestor = ingestor
        self._hot = hot
        # The manifest is read and saved whole by each run: one run at a time.
        self._ingest_lock = threading.Lock()
        # Tenants that confirmed knowledge in this process: consolidation merges them too.
        self._hot_tenants: set[str] = set()
        self._hot_lock = threading.Lock()

    def add_knowledge(
        self, texts: Sequence[str], *, tenant: str = "default", source: str, section: str = ""
    ) -> list[str]:
        """Store knowledge chunks shared by the tenant."""
        if isinstance(texts, str) or not texts:
            raise ValidationError("texts", "must be a non-empty sequence of strings")
        extra = {"section": section} if section else {}
        return self._longterm.add(
            "knowledge",
            [
                NewItem(text=t, tenant=tenant, type="knowledge", source=source, extra=extra)
                for t in texts
            ],
        )

    def ingest_files(
        self,
        paths: Sequence[Path],
        *,
        tenant: str = "default",
        progress: IngestProgress | None = None,
    ) -> IngestReport:
        """Markdown, HTML and text files chunked into the tenant's ``knowledge``,
        incrementally (see :meth:`ContextEngine.ingest_files`)."""
        with self._ingest_lock:
            return self._ingestor.ingest(paths, tenant=tenant, progress=progress)

    def ingest_documents(
        self,
        documents: Sequence[Document],
        *,
        tenant: str = "default",
        level: Level = "low",
        prune_missing_under: Sequence[str] = (),
        also_present: Sequence[str] = (),
    ) -> IngestReport:
        """:meth:`ingest_files` for documents given as text (see
        :meth:`ContextEngine.ingest_documents`)."""
        with self._ingest_lock:
            return self._ingestor.ingest_documents(
                documents,
                tenant=tenant,
                level=level,
                prune_missing_under=prune_missing_under,
                also_present=also_present,
            )

    def confirm_knowledge(
        self,
        query: str,
        response: str,
        *,
        tenant: str = "default",
        source: str,
        feedback: str = "user_confirmed",
    ) -> str:
        """Learn an answer the user confirmed (searchable at once, 72 h); its id."""
        pair_id = self._hot.learn(tenant, query, response, feedback=feedback, source=source)
        with self._hot_lock:
            self._hot_tenants.add(tenant)
        return pair_id

    def hot_tenants(self) -> frozenset[str]:
        """The tenants that confirmed knowledge in this process."""
        with self._hot_lock:
            return frozenset(self._hot_tenants)

    def merge_hot(self, tenant: str, *, now: datetime) -> MergeReport:
        """Expire the tenant's hot knowledge and merge the rest into ``knowledge``."""
        return self._hot.merge_into_knowledge(tenant, now=now)
