"""The one place every L2 key is built (pure functions, no I/O).

Session keys carry a Redis Cluster hash tag, ``wm:{<session_id>}:...``, so all of
one session's keys hash to the same slot: multi-key transactions stay legal on a
cluster and a session lives on exactly one node. Preference keys are tagged by
user the same way, and so are the reader's cached reads
(``recall:{<tenant>:<user>}:``, what it answers from while L3 is unavailable). Ids
pass :func:`~memstrata.validation.check_id`, whose alphabet excludes braces and
colons, so no id can close the tag early or forge a suffix.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from memstrata.errors import ValidationError
from memstrata.validation import check_id, check_text

WM_PREFIX = "wm"
PREF_PREFIX = "pref"
RECALL_PREFIX = "recall"

# Suffixes a caller can never produce as a preference type: check_id requires the
# first character to be a letter or digit, so "_index" cannot collide.
_PREF_INDEX_SUFFIX = "_index"


def _plain(value: Any) -> Any:
    """What orjson writes for the two non-JSON types it accepts, so both paths agree."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The slow path, and the judge of everything orjson's fast path does not settle: one
# encoder for every call (json.dumps with options builds a new one each time).
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_plain
)
# Datetimes and dataclasses (orjson would write them, the standard encoder refuses
# them) and str/int/dict subclasses go to the slow path too: both paths accept and
# refuse the same values, and write them the same way.
_FAST_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def canonical_json(field: str, value: Any) -> str:
    """Serialize ``value`` deterministically (sorted keys, no spaces, no NaN).

    orjson first: this runs for every key and value of an L2 call, and with the
    standard encoder alone the L2 bench's overhead ratio was 1.31 (1.22 with orjson,
    docs/benchmarks.md). orjson writes NaN and infinities as
    ``null`` and refuses non-string keys and integers beyond 64 bits, so any output
    holding ``null``, and any value it refuses, is judged by the standard encoder
    instead. Raises :class:`ValidationError` naming ``field`` when ``value`` is not
    plain JSON.
    """
    try:
        data = orjson.dumps(value, option=_FAST_OPTIONS)
    except orjson.JSONEncodeError:
        pass
    else:
        if b"null" not in data:
            return data.decode()
    try:
        return _CANONICAL.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(field, f"must be JSON-serializable: {exc}") from exc


def session_prefix(session_id: str) -> str:
    """``wm:{<session_id>}:`` - the prefix every key of one session starts with."""
    return f"{WM_PREFIX}:{{{check_id('session_id', session_id)}}}:"


def endpoint_hash(endpoint: str, params: Mapping[str, Any]) -> str:
    """SHA-256 hex of the endpoint and the canonical JSON of its parameters."""
    check_text("endpoint", endpoint, max_chars=2048)
    if not isinstance(params, Mapping):
        raise ValidationError("params", f"must be a mapping, got {type(params).__name__}")
    payload = endpoint + "\n" + canonical_json("params", dict(params))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def api_key(session_id: str, endpoint: str, params: Mapping[str, Any]) -> str:
    """String key caching one API response."""
    return api_key_under(session_prefix(session_id), endpoint, params)


def api_key_under(prefix: str, endpoint: str, params: Mapping[str, Any]) -> str:
    """:func:`api_key` for a :func:`session_prefix` the caller already validated."""
    return f"{prefix}api:{endpoint_hash(endpoint, params)}"


def result_key(session_id: str, step_id: str) -> str:
    """Hash key holding one step's intermediate result."""
    return f"{session_prefix(session_id)}result:{check_id('step_id', step_id)}"


def series_key(session_id: str, metric: str) -> str:
    """Sorted-set key of one metric's time series (score = timestamp)."""
    return f"{session_prefix(session_id)}ts:{check_id('metric', metric)}"


def pending_key(session_id: str) -> str:
    """Set key of the session's pending asynchronous task ids (no TTL)."""
    return f"{session_prefix(session_id)}pending_tasks"


def plan_key(session_id: str) -> str:
    """String key of the session's stored step graph (drives result TTLs)."""
    return f"{session_prefix(session_id)}plan"


def plan_extensions_key(session_id: str) -> str:
    """Hash key of the stored plan's read extensions: ``extension_field`` -> TTL in ms."""
    return f"{session_prefix(session_id)}plan_ext"


# Written with every plan so the table exists even when no step has a dependent.
PLAN_EXTENSIONS_MARKER = "*"


def extension_field(step_id: str, reader_step: str) -> str:
    """The plan extensions field for ``reader_step`` reading ``step_id``'s result
    (``>`` is outside the id alphabet, so no two pairs share a field)."""
    return f"{step_id}>{reader_step}"


def pref_owner(tenant: str, user_id: str) -> str:
    """``pref:{<tenant>:<user>}:`` - every preference key of one user of one tenant
    starts with it (two tenants' users of the same id never share one)."""
    return f"{PREF_PREFIX}:{{{check_id('tenant', tenant)}:{check_id('user_id', user_id)}}}:"


def pref_key(tenant: str, user_id: str, pref_type: str) -> str:
    """Hash key of one structured user preference."""
    return f"{pref_owner(tenant, user_id)}{check_id('pref_type', pref_type)}"


def pref_users_prefix(tenant: str) -> str:
    """``pref:{<tenant>:`` - every preference key of every user of one tenant."""
    return f"{PREF_PREFIX}:{{{check_id('tenant', tenant)}:"


def pref_index_user(tenant: str, key: str) -> str | None:
    """The user whose preference index ``key`` is (None: another kind of key). Ids
    hold no ``:`` nor ``}``, so the user is what stands between the prefix and ``}:``."""
    prefix, suffix = pref_users_prefix(tenant), f"}}:{_PREF_INDEX_SUFFIX}"
    if not (key.startswith(prefix) and key.endswith(suffix)):
        return None
    return key[len(prefix) : -len(suffix)]


def pref_index_key(tenant: str, user_id: str) -> str:
    """Set key listing a user's preference types; same slot as the preferences."""
    return f"{pref_owner(tenant, user_id)}{_PREF_INDEX_SUFFIX}"


def recall_key(tenant: str, user: str | None, collection: str) -> str:
    """Sorted-set key of the last items read from one L3 collection for one user
    (``recall:{<tenant>:<user>}:<collection>``), or for a whole tenant when ``user``
    is None (``recall:{<tenant>}:<collection>``: shared knowledge reads). Member: one
    item's JSON, score: when it was read. Served while L3 is unavailable
    (:mod:`memstrata.working.recall`)."""
    owner = check_id("tenant", tenant)
    if user is not None:
        owner = f"{owner}:{check_id('user', user)}"
    return f"{RECALL_PREFIX}:{{{owner}}}:{check_id('collection', collection)}"


def recall_prefix() -> str:
    """What every :func:`recall_key` starts with (a forget drops them all)."""
    return f"{RECALL_PREFIX}:"


def seconds_to_ms(field: str, seconds: float) -> int:
    """Convert a TTL in seconds to whole milliseconds (at least 1)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValidationError(field, f"must be a number, got {type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValidationError(field, "must be a finite number > 0")
    return max(1, math.ceil(seconds * 1000))
