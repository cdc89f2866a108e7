"""Permission levels on every piece of context (docs/architecture.md, "Safety").

L1 session state is ``high``; L2 working memory is ``medium`` (its fields already
masked by the gateway); an L3 point carries the level its source declared (payload
``level``), else ``low`` for knowledge and ``medium`` for a user's memories (and for
the items of the item store). A caller with clearance C is given only items whose
level is at most C, whichever way it reads them: a bundle, a retrieval, or a direct
read of L1 (a session's state) or L2 (its working memory), which needs a clearance of
the layer's level.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from memstrata.errors import ValidationError

Level = Literal["low", "medium", "high"]
LEVELS: tuple[Level, ...] = ("low", "medium", "high")
_RANK = {level: rank for rank, level in enumerate(LEVELS)}
PUBLIC_TYPES = frozenset({"knowledge", "hot_knowledge"})
L1_LEVEL: Level = "high"
"""L1 session state: what the user is doing right now."""
L2_LEVEL: Level = "medium"
"""L2 working memory: API responses, step results, sensor windows, pending tasks,
trace cards (their sensitive fields masked by the gateway)."""


def check_level(field: str, value: Any) -> Level:
    if value not in _RANK:
        raise ValidationError(field, f"must be one of {', '.join(LEVELS)}")
    level: Level = value
    return level


def rank(level: Level) -> int:
    """The order of ``level``: low 0, medium 1, high 2."""
    return _RANK[level]


def cleared(level: Level, clearance: Level) -> bool:
    """Whether a caller with ``clearance`` may see an item of ``level``."""
    return _RANK[level] <= _RANK[clearance]


def level_of_payload(payload: Mapping[str, Any]) -> Level:
    """The level of an L3 point: the one its source declared, else by its type."""
    declared = payload.get("level")
    if declared in _RANK:
        level: Level = declared
        return level
    return "low" if payload.get("type") in PUBLIC_TYPES else "medium"
