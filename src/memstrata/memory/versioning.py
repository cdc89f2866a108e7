"""Versioning rules (pure) and the Redis slot record that arbitrates writers.

Each fact slot ``(tenant, user, subject, attribute)`` has one Redis hash,
``<prefix>:{<tenant>:<user>}:slot:<slot>`` (the hash tag keeps a user's slots on
one cluster node), holding:

* ``rev``     - bumped by every committed change; the compare-and-swap token,
* ``version`` - the last version number handed out (versions are 1..N, no gaps),
* ``v:<n>``   - the point id that received version ``n`` (the version log),
* ``active_id`` / ``active_from`` / ``active_hash`` - the active version.

The record is the source of truth for which point is active: L3 is rewritten
only after a writer wins the swap, so a crash in between is repaired from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from memstrata.config import MemorySettings
from memstrata.errors import BackendError
from memstrata.memory.units import MemoryUnit

_PLURAL_ES = re.compile(r"(?:ch|sh|ss|x|o)es$")
WriteAction = Literal["inserted", "superseded", "merged", "deduplicated", "ignored_older"]

# Compare-and-swap on ``rev``: one round trip, atomic on a server and on a cluster
# node alike (a single key), and no connection held between read and commit the
# way WATCH would. An empty value deletes the field.
CAS_SCRIPT = """
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then rev = '0' end
if rev ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'rev', tostring(tonumber(rev) + 1))
for i = 2, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
"""


def slot_key(prefix: str, tenant: str, user: str, slot: str) -> str:
    """The Redis key of one slot record (tenant and user are validated ids: no braces)."""
    return f"{prefix}:{{{tenant}:{user}}}:slot:{slot}"


def tenants_key(prefix: str) -> str:
    """A set of the tenants that ever wrote a memory (consolidation walks them)."""
    return f"{prefix}:tenants"


@dataclass(frozen=True, slots=True)
class SlotState:
    """One slot record as read from Redis (``rev`` 0: no record yet)."""

    rev: int = 0
    version: int = 0
    active_id: str | None = None
    active_from: datetime | None = None
    active_hash: str | None = None
    log: tuple[tuple[int, str], ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[Any, Any]) -> SlotState:
        """Parse an HGETALL reply (bytes or str)."""
        data = {_s(k): _s(v) for k, v in raw.items()}
        try:
            active_from = data.get("active_from")
            log = sorted(
                (int(k[2:]), v) for k, v in data.items() if k.startswith("v:") and k[2:].isdigit()
            )
            return cls(
                rev=int(data.get("rev", "0")),
                version=int(data.get("version", "0")),
                active_id=data.get("active_id") or None,
                active_from=None
                if not active_from
                else datetime.fromtimestamp(float(active_from), UTC),
                active_hash=data.get("active_hash") or None,
                log=tuple(log),
            )
        except ValueError as exc:
            raise BackendError(f"corrupt memory slot record: {exc}") from exc

    def id_of_version(self, version: int) -> str | None:
        """The point id the log recorded for ``version``."""
        return dict(self.log).get(version)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def active_fields(unit: MemoryUnit | None) -> dict[str, str]:
    """Slot-record fields naming ``unit`` as active (all empty: no active version)."""
    if unit is None:
        return {"active_id": "", "active_from": "", "active_hash": ""}
    assert unit.id is not None
    return {
        "active_id": unit.id,
        "active_from": repr(unit.valid_from.timestamp()),
        "active_hash": unit.content_hash,
    }


@dataclass(frozen=True, slots=True)
class Decision:
    """What a fact write does, decided from the slot's active version.

    ``final`` is the unit to store under the new version (``None`` for a dedupe);
    ``becomes_active`` says whether it replaces the active version.
    """

    action: WriteAction
    final: MemoryUnit | None
    becomes_active: bool


def value_items(value: str, separator: str) -> tuple[str, ...]:
    """The items of a multi-valued value, stripped, first occurrence kept."""
    seen: dict[str, str] = {}
    for part in value.split(separator.strip()):
        item = part.strip()
        if item and item.casefold() not in seen:
            seen[item.casefold()] = item
    return tuple(seen.values())


def item_key(value: str) -> str:
    """How two items of a set are told apart: case, spacing and an English plural
    ("Peanuts" / "peanut") do not count."""
    key = " ".join(value.casefold().split()).strip(" .,;:!?。，；！？")
    if key.isascii():
        if _PLURAL_ES.search(key):
            key = key[:-2]
        elif key.endswith("s") and not key.endswith("ss") and len(key) > 3:
            key = key[:-1]
    return key


_NOT_ALNUM = re.compile(r"[\W_]+")
_DIGITS = re.compile(r"\d+")
_SAME_TEXT = 0.5
"""Character-bigram Dice overlap below which two values are different words."""


def _grams(text: str) -> set[str]:
    if len(text) < 2:
        return {text} if text else set()
    return {text[i : i + 2] for i in range(len(text) - 1)}


def lexically_distinct(old: str, new: str) -> bool:
    """Whether two values of a slot are different values whatever their cosine: they
    hold different numbers ("30号" / "32号", "$800" / "$1,800"), or share under half
    their character bigrams (spacing, case and punctuation aside: "e-mail" / "email"
    and "short, concise" / "short and concise" stay rephrasings)."""
    a = _NOT_ALNUM.sub("", old.casefold())
    b = _NOT_ALNUM.sub("", new.casefold())
    if _DIGITS.findall(a) != _DIGITS.findall(b):
        return True
    grams_a, grams_b = _grams(a), _grams(b)
    if not grams_a or not grams_b:
        return grams_a != grams_b
    return 2 * len(grams_a & grams_b) / (len(grams_a) + len(grams_b)) < _SAME_TEXT


def merged_value(old: str, new: str, separator: str) -> str | None:
    """Union of the two values' items, old first; ``None`` when ``new`` adds nothing."""
    old_items = value_items(old, separator)
    known = {item.casefold() for item in old_items}
    added = [item for item in value_items(new, separator) if item.casefold() not in known]
    if not added:
        return None
    return separator.join([*old_items, *added])


def decide(
    unit: MemoryUnit,
    active: MemoryUnit | None,
    *,
    cosine: float | None,
    merge: bool,
    settings: MemorySettings,
    replaces: bool = False,
) -> Decision:
    """The rule, in order:

    1. same content as the active version -> deduplicated;
    2. ``replaces`` (an explicit correction, or what a removal leaves of a set): the
       unit supersedes the active version whatever their cosine, and replaces a set
       rather than adding to it - except that the values one correcting turn states
       together form the set (a second unit from the active version's own turn adds);
    3. a multi-valued attribute (or ``merge=True``) -> the union of both values
       becomes the new active version (deduplicated when nothing is new);
    4. dense cosine to the active version >= ``near_duplicate_cosine`` -> deduplicated,
       unless the two values are :func:`lexically_distinct` (a short value's embedding is
       mostly the slot's template, so "柜员" / "客户经理" or "重庆" / "贵阳" sit above
       the threshold while being a real change);
    5. observed validity older than the active version's -> kept as history only;
    6. otherwise the new value supersedes (or is inserted when the slot is empty).
    """
    if active is None:
        return Decision("inserted", replace(unit, active=True, valid_to=None), True)
    if unit.content_hash == active.content_hash:
        return Decision("deduplicated", None, False)
    multi = merge or unit.attribute.casefold() in settings.multi_valued_attributes
    same_turn = (
        unit.source.turn_id is not None
        and unit.source.session_id == active.source.session_id
        and unit.source.turn_id == active.source.turn_id
    )
    if replaces and not (multi and same_turn):
        if unit.valid_from < active.valid_from:
            return Decision("ignored_older", replace(unit, active=False, valid_to=None), False)
        return Decision("superseded", replace(unit, active=True, valid_to=None), True)
    if multi:
        value = merged_value(active.value, unit.value, settings.value_separator)
        if value is None:
            return Decision("deduplicated", None, False)
        final = replace(
            unit,
            value=value,
            valid_from=max(unit.valid_from, active.valid_from),
            importance=max(unit.importance, active.importance),
            pinned=unit.pinned or active.pinned,
            extras=tuple(dict.fromkeys((*active.extras, *unit.extras))),
            active=True,
            valid_to=None,
        )
        return Decision("merged", final, True)
    near = cosine is not None and cosine >= settings.near_duplicate_cosine
    if near and not lexically_distinct(active.value, unit.value):
        return Decision("deduplicated", None, False)
    if unit.valid_from < active.valid_from:
        return Decision("ignored_older", replace(unit, active=False, valid_to=None), False)
    return Decision("superseded", replace(unit, active=True, valid_to=None), True)


def older_valid_to(valid_from: datetime, later: Iterable[datetime]) -> datetime | None:
    """End of a back-dated version: the first later version's start."""
    starts = [start for start in later if start > valid_from]
    return min(starts) if starts else None


def version_at(versions: Sequence[MemoryUnit], at: datetime) -> MemoryUnit | None:
    """The version whose ``[valid_from, valid_to)`` holds ``at``.

    Back-dated inserts can overlap an older version's open interval; the latest
    start wins (then the higher version), which is what was believed true at ``at``.
    """
    holding = [
        u for u in versions if u.valid_from <= at and (u.valid_to is None or at < u.valid_to)
    ]
    if not holding:
        return None
    return max(holding, key=lambda u: (u.valid_from, u.version))


def valid_at(payload: Mapping[str, Any], at: float) -> bool:
    """The one as-of rule: whether a memory point counts when memory is read as it
    stood at epoch ``at``. It had been said by then (``created_at``) and, for a fact
    version, was valid then (``[valid_from_ts, valid_to_ts)``); episodes and events
    have no validity interval and count once said."""
    created = _epoch(payload.get("created_at"))
    if created is not None and created > at:
        return False
    start, end = _epoch(payload.get("valid_from_ts")), _epoch(payload.get("valid_to_ts"))
    if start is not None and start > at:
        return False
    return end is None or at < end


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
