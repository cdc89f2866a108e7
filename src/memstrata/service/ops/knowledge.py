"""Knowledge: documents in, confirmed question/answer pairs (hot knowledge)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from memstrata.errors import (
    ValidationError,
)
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import (
    Call,
    Operation,
)


def _ingest_documents(call: Call, req: m.IngestDocumentsRequest) -> m.IngestReportOut:
    documents = convert.documents_in(req.documents)
    for index, doc in enumerate(req.documents):
        if ".." in PurePosixPath(doc.name).parts:
            raise ValidationError(f"documents[{index}].name", "must not contain '..'")
    if not req.documents and not req.prune_missing_under:
        raise ValidationError("documents", "give documents, or prune_missing_under")
    report = call.engine.ingest_documents(
        documents,
        tenant=call.caller.tenant,
        level=req.level,
        prune_missing_under=req.prune_missing_under,
        also_present=req.also_present,
    )
    return convert.ingest_out(report)


def _confirm_knowledge(call: Call, req: m.ConfirmKnowledgeRequest) -> m.IdOut:
    return m.IdOut(
        id=call.engine.confirm_knowledge(
            req.query, req.response, tenant=call.caller.tenant, source=req.source
        )
    )


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "ingest_documents",
        "Chunk documents into the tenant's knowledge (by hash); with prune_missing_under, "
        "remove those of a folder no longer in it.",
        m.IngestDocumentsRequest,
        m.IngestReportOut,
        "writer",
        _ingest_documents,
    ),
    Operation(
        "confirm_knowledge",
        "Learn a confirmed question/answer pair (hot knowledge).",
        m.ConfirmKnowledgeRequest,
        m.IdOut,
        "writer",
        _confirm_knowledge,
    ),
)
