"""Clearance on every read, and what a key may grant (docs/service.md, "Permission
levels and clearance").

A key's clearance bounds everything it reads, and every answer, a write's included:
``route``, ``build_context`` and ``shared_items`` drop items above it; ``retrieve``
drops retrieved points above it (on any collection); ``remember`` with ``wait``
reports the stored episodes and facts only to a key cleared for memories (a merged
fact holds values other memories gave); ``decide`` fills no slot from L1 for a key
below L1's level; a direct read of a layer needs a clearance of the layer's level:
L1 session state (``get_session``, ``update_session``, ``end_session``, ``inspect``)
is ``high``, L2 working memory (``get_api_response``, ``get_step_result``,
``read_series``, the pending tasks, trace cards, the feedback report) and the item
store are ``medium``. The refusal is checked before anything is looked up, so it says
nothing about whether the thing asked for exists.
"""

from __future__ import annotations

from dataclasses import replace

from memstrata.capabilities.writer import WrittenMemory
from memstrata.errors import PermissionDeniedError
from memstrata.permissions import Level, cleared, level_of_payload, rank
from memstrata.retrieval.results import RetrievalResult, RetrievedItem
from memstrata.service.auth import ROLES
from memstrata.service.capability import Call
from memstrata.sharing.items import STORE_TYPE

ITEM_STORE_LEVEL: Level = level_of_payload({"type": STORE_TYPE})
MEMORY_LEVEL: Level = level_of_payload({"type": "episode"})
"""A user's memories, episodes and facts alike (no source declares another level)."""
_ROLE_RANK: dict[str, int] = {role: index for index, role in enumerate(ROLES)}


def require(call: Call, level: Level, what: str) -> None:
    """PermissionDeniedError (field ``clearance``) unless the caller may read ``level``."""
    clearance = call.caller.clearance
    if not cleared(level, clearance):
        raise PermissionDeniedError(
            "clearance", f"{what} is {level}-level context; this key's clearance is {clearance}"
        )


def _visible(item: RetrievedItem, clearance: Level) -> RetrievedItem | None:
    if not cleared(level_of_payload(item.payload), clearance):
        return None
    facts = tuple(f for f in item.facts if cleared(level_of_payload(f.payload), clearance))
    return item if len(facts) == len(item.facts) else replace(item, facts=facts)


def cleared_retrieval(result: RetrievalResult, clearance: Level) -> RetrievalResult:
    """``result`` without the points (and the facts an episode carries) above
    ``clearance``; nothing says they were there."""
    items = [v for i in result.items if (v := _visible(i, clearance)) is not None]
    below = [v for i in result.below_threshold if (v := _visible(i, clearance)) is not None]
    unchanged = len(items) == len(result.items) and len(below) == len(result.below_threshold)
    if unchanged and all(a is b for a, b in zip(items, result.items, strict=True)):
        return result
    return replace(result, items=tuple(items), below_threshold=tuple(below))


def cleared_written(written: WrittenMemory, clearance: Level) -> WrittenMemory:
    """What a write stored, as far as ``clearance`` may read it back: nothing below
    the memories' level. A fact is withheld whole, never trimmed to the writer's own
    values: a merged fact carries what other memories said."""
    if cleared(MEMORY_LEVEL, clearance):
        return written
    return WrittenMemory(episodes=(), facts=())


def check_grant(call: Call, role: str, clearance: Level) -> None:
    """A key grants at most its own role and clearance (PermissionDeniedError naming
    the field it would exceed)."""
    caller = call.caller
    if _ROLE_RANK[role] > _ROLE_RANK[caller.role]:
        raise PermissionDeniedError(
            "role", f"a key can grant at most its own role ({caller.role}), not {role}"
        )
    if rank(clearance) > rank(caller.clearance):
        raise PermissionDeniedError(
            "clearance",
            f"a key can grant at most its own clearance ({caller.clearance}), not {clearance}",
        )
