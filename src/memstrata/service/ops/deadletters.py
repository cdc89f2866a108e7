"""The write queue's dead letters of the caller's tenant: list and replay."""

from __future__ import annotations

from typing import Any

from memstrata.errors import NotFoundError
from memstrata.service import wire as m
from memstrata.service.capability import Call, Operation
from memstrata.write.entries import DeadLetter


def dead_letter_out(letter: DeadLetter) -> m.DeadLetterOut:
    """The wire form: what and why, never the entry's content."""
    return m.DeadLetterOut(
        dead_id=letter.dead_id,
        entry_id=letter.source_id,
        kind=letter.kind,
        user_id=letter.user,
        error=letter.error,
        reason=letter.reason or f"failed with {letter.error}",
        deliveries=letter.deliveries,
        dead_at=letter.dead_at_ms / 1000,
    )


def _list(call: Call, req: m.DeadLettersRequest) -> m.DeadLetterList:
    found = call.engine.dead_letters(tenant=call.caller.tenant, after=req.after, limit=req.limit)
    last = found[-1].dead_id if len(found) == req.limit else None
    return m.DeadLetterList(dead_letters=[dead_letter_out(d) for d in found], next_after=last)


def _replay(call: Call, req: m.DeadLetterRef) -> m.ReplayedOut:
    entry_id = call.engine.replay_dead_letter(req.dead_id, tenant=call.caller.tenant)
    return m.ReplayedOut(dead_id=req.dead_id, entry_id=entry_id)


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "list_dead_letters",
        "Entries of the caller's tenant the write queue gave up on (input that can never "
        "be stored), oldest first, each with its reason.",
        m.DeadLettersRequest,
        m.DeadLetterList,
        "admin",
        _list,
    ),
    Operation(
        "replay_dead_letter",
        "Put a dead letter of the caller's tenant back on the write stream and remove it "
        "from the dead letters.",
        m.DeadLetterRef,
        m.ReplayedOut,
        "admin",
        _replay,
        (NotFoundError,),
    ),
)
