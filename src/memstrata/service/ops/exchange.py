"""Export and import (docs/service.md, "Export and import"): a user's or the tenant's
memory as one versioned JSON Lines file, and such a file, or a conversation, read
back in under the caller's tenant. Both need an admin key cleared for memories:
they move a user's whole memory at once."""

from __future__ import annotations

from typing import Any

from memstrata.errors import FlushTimeoutError
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import Call, Operation
from memstrata.service.ops.clearance import MEMORY_LEVEL, require


def _export(call: Call, req: m.ExportRequest) -> m.ExportOut:
    require(call, MEMORY_LEVEL, "a user's memory")
    lines = list(call.engine.export_memories(req.user_id, tenant=call.caller.tenant))
    return m.ExportOut(jsonl="".join(f"{line}\n" for line in lines), lines=len(lines))


def _import(call: Call, req: m.ImportRequest) -> m.ImportReportOut:
    require(call, MEMORY_LEVEL, "a user's memory")
    report = call.engine.import_memories(
        req.content.splitlines(),
        format=req.format,
        user_id=req.user_id,
        tenant=call.caller.tenant,
    )
    if req.wait and req.format != "memstrata":
        call.engine.flush()
    return convert.to_wire(report, m.ImportReportOut)


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "export_memories",
        "A user's memory (or, without user_id, the tenant's) as one versioned JSON Lines "
        "file: episodes, every fact version with validity and provenance, preferences.",
        m.ExportRequest,
        m.ExportOut,
        "admin",
        _export,
    ),
    Operation(
        "import_memories",
        "Read an export file into the caller's tenant (idempotent; ids, dates and history "
        "kept), or a conversation (OpenAI messages, JSON Lines messages) through the normal "
        "write path; the whole file is checked before anything is written.",
        m.ImportRequest,
        m.ImportReportOut,
        "admin",
        _import,
        (FlushTimeoutError,),
    ),
)
