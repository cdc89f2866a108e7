"""L2 working memory: validation, keys and JSON written once above a KVBackend.

:class:`WorkingMemory` owns preferences and hands out :class:`SessionWorkingMemory`
views. A view is bound to one session id and builds every key from it, so there is
no call that takes a raw key or another session's id: cross-session reads are
impossible by construction rather than by a runtime check.

Step-result TTLs (docs/architecture.md, "The layers"): with a stored plan
(:meth:`plan_steps`), a result must survive until its last dependent's estimated end
x 2, counted from when the plan was stored, and never less than
``min_result_ttl_s``; a step without dependents, or any step when there is no plan,
gets ``default_result_ttl_s``. When a dependent reads the result, the TTL is raised
(PEXPIRE GT, never lowered) to cover the estimated time from that reader's start to
the last dependent's end, x 2. That extension depends on the plan alone, so
:meth:`plan_steps` stores it for every (step, dependent) pair beside the plan, and a
dependent read takes the result and its extension in one round trip.

Every value passes the optional sanitizing gateway before it is validated and
encoded; bad input raises ValidationError naming the field before anything is
written.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from memstrata.clock import Clock
from memstrata.config import WorkingMemorySettings
from memstrata.errors import BackendError, ContextMissError, ValidationError
from memstrata.validation import check_id, check_positive_int
from memstrata.working import keys as K
from memstrata.working.backend import BackendInfo, KVBackend
from memstrata.working.stepgraph import TTL_SAFETY_FACTOR, StepGraph
from memstrata.working.values import (
    STORED_AT_FIELD,
    Preference,
    SeriesPoint,
    StoredPlan,
    WorkingItem,
    WorkingKey,
    check_fields,
    check_timestamp,
    decode_envelope,
    decode_point,
    decode_value,
    encode_envelope,
    encode_fields,
    encode_point,
    encode_value,
    split_meta,
    ttl_seconds,
)

MAX_WINDOW_POINTS = 1_000_000


class ValueSanitizer(Protocol):
    """The gateway role working memory needs (``memstrata.gateway.Sanitizer`` fits)."""

    def value(self, obj: Any, *, location: str) -> Any:
        """Return ``obj`` with credentials and PII replaced; never mutates it."""
        ...


class _NoSanitizer:
    def value(self, obj: Any, *, location: str) -> Any:
        return obj


ReadHook = Callable[[str], None]
"""Called with the key of each L2 read (the health report's hot keys)."""


def _no_read_hook(key: str) -> None:
    return None


class WorkingMemory:
    """Entry point of L2: session views and user preferences over one backend."""

    def __init__(
        self,
        backend: KVBackend,
        settings: WorkingMemorySettings,
        clock: Clock,
        *,
        sanitizer: ValueSanitizer | None = None,
    ) -> None:
        self._backend = backend
        self._settings = settings
        self._clock = clock
        # Every value written to L2 passes the gateway first (docs/architecture.md, "Safety").
        self._sanitizer: ValueSanitizer = sanitizer or _NoSanitizer()
        self._on_read: ReadHook = _no_read_hook

    def watch_reads(self, on_read: ReadHook | None) -> None:
        """Call ``on_read(key)`` on each read from views made from now on (None: stop)."""
        self._on_read = on_read or _no_read_hook

    @property
    def backend(self) -> KVBackend:
        """The storage backend (for health checks and metrics)."""
        return self._backend

    @property
    def settings(self) -> WorkingMemorySettings:
        """The L2 parameters in force."""
        return self._settings

    def session(self, session_id: str) -> SessionWorkingMemory:
        """A view that can only address ``session_id``'s keys."""
        return SessionWorkingMemory(
            self._backend,
            self._settings,
            self._clock,
            session_id,
            sanitizer=self._sanitizer,
            on_read=self._on_read,
        )

    def set_preference(
        self,
        user_id: str,
        pref_type: str,
        value: Any,
        confidence: float,
        updated_at: datetime | None = None,
        *,
        tenant: str = "default",
    ) -> Preference:
        """Store a preference of ``tenant``'s user (replacing any previous one) and
        index its type."""
        key = K.pref_key(tenant, user_id, pref_type)
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            raise ValidationError(
                "confidence", f"must be a number, got {type(confidence).__name__}"
            )
        if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
            raise ValidationError("confidence", "must be within [0, 1]")
        when = self._clock.now() if updated_at is None else updated_at
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValidationError("updated_at", "must be a timezone-aware datetime")
        clean = self._sanitizer.value(value, location=f"L2:{key}")
        fields = {
            "value": encode_value("value", clean),
            "confidence": repr(float(confidence)),
            "last_updated": when.isoformat(),
        }
        # The index set shares the user's hash tag, so hash and index change together.
        self._backend.write_hash(
            key, fields, None, replace=True, index=(K.pref_index_key(tenant, user_id), pref_type)
        )
        return Preference(user_id, pref_type, json.loads(fields["value"]), float(confidence), when)

    def get_preference(
        self, user_id: str, pref_type: str, *, tenant: str = "default"
    ) -> Preference:
        """Read one preference of ``tenant``'s user; ContextMissError when absent."""
        key = K.pref_key(tenant, user_id, pref_type)
        self._on_read(key)
        found = self._backend.read_fields(key)  # preferences never expire: no TTL read
        if found is None:
            raise ContextMissError(key)
        return _decode_preference(key, user_id, pref_type, found)

    def list_preferences(self, user_id: str, *, tenant: str = "default") -> tuple[Preference, ...]:
        """Every preference of ``tenant``'s user ``user_id``, ordered by type."""
        index = K.pref_index_key(tenant, user_id)
        out = []
        for pref_type in sorted(self._backend.set_members(index)):
            key = K.pref_key(tenant, user_id, pref_type)
            self._on_read(key)
            found = self._backend.read_fields(key)
            if found is not None:
                out.append(_decode_preference(key, user_id, pref_type, found))
        return tuple(out)

    def preference_users(self, *, tenant: str = "default") -> tuple[str, ...]:
        """The users of ``tenant`` that hold a preference, sorted (a whole-tenant
        export must not miss a user with no long-term memory)."""
        found = self._backend.scan_prefix(K.pref_users_prefix(tenant))
        users = {K.pref_index_user(tenant, key) for key in found}
        return tuple(sorted(u for u in users if u))

    def ping(self) -> bool:
        """True when the backend answers."""
        return self._backend.ping()

    def info(self) -> BackendInfo:
        """Backend counters for metrics."""
        return self._backend.info()

    def close(self) -> None:
        """Release the backend's connections."""
        self._backend.close()


@functools.lru_cache(maxsize=1024)
def _parse_plan(key: str, text: str) -> StoredPlan:
    """Plans are read on every dependent step; parsing and validating one is cached
    by its stored text (StoredPlan is immutable, so sharing it is safe)."""
    raw = decode_value(key, text)
    try:
        return StoredPlan(
            StepGraph.from_json(raw["graph"]), datetime.fromisoformat(raw["stored_at"])
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BackendError(f"corrupt plan stored at {key}") from exc


def _extension_table(graph: StepGraph) -> dict[str, str]:
    """Every (step, dependent) pair's TTL on read in ms, and the table's marker."""
    table = {K.PLAN_EXTENSIONS_MARKER: ""}
    for step_id in graph.step_ids:
        for reader in graph.dependents(step_id):
            ext_s = graph.extension_on_read_s(step_id, reader)
            if ext_s is not None and ext_s > 0:
                table[K.extension_field(step_id, reader)] = str(K.seconds_to_ms("ttl_s", ext_s))
    return table


def _decode_preference(key: str, user_id: str, pref_type: str, raw: dict[str, str]) -> Preference:
    try:
        return Preference(
            user_id=user_id,
            pref_type=pref_type,
            value=decode_value(key, raw["value"]),
            confidence=float(raw["confidence"]),
            last_updated=datetime.fromisoformat(raw["last_updated"]),
        )
    except (KeyError, ValueError) as exc:
        raise BackendError(f"corrupt preference stored at {key}") from exc


class SessionWorkingMemory:
    """One session's slice of L2; build it with :meth:`WorkingMemory.session`."""

    def __init__(
        self,
        backend: KVBackend,
        settings: WorkingMemorySettings,
        clock: Clock,
        session_id: str,
        *,
        sanitizer: ValueSanitizer | None = None,
        on_read: ReadHook | None = None,
    ) -> None:
        self._session_id = check_id("session_id", session_id)
        # Built and validated once: every call of this view addresses this prefix only.
        self._prefix = K.session_prefix(self._session_id)
        self._backend = backend
        self._settings = settings
        self._clock = clock
        self._sanitizer: ValueSanitizer = sanitizer or _NoSanitizer()
        self._on_read: ReadHook = on_read or _no_read_hook

    @property
    def session_id(self) -> str:
        """The only session this view can address."""
        return self._session_id

    # -- API response cache ------------------------------------------------------------
    def put_api_response(
        self, endpoint: str, params: Mapping[str, Any], value: Any, ttl_s: float | None = None
    ) -> WorkingItem:
        """Cache a tool/API response (default TTL ``settings.api_ttl_s``).

        The returned item holds the value as it went to the store (after the gateway),
        not a copy read back: decoding what was just encoded cost ~15 % of a write.
        """
        key = K.api_key_under(self._prefix, endpoint, params)
        ttl_ms = K.seconds_to_ms("ttl_s", self._settings.api_ttl_s if ttl_s is None else ttl_s)
        clean = self._sanitizer.value(value, location=f"L2:{key}")
        text = encode_value("value", clean)
        now = self._clock.now()
        self._backend.set_string(key, encode_envelope(text, now, ttl_ms), ttl_ms)
        return WorkingItem(key, clean, ttl_ms / 1000, now)

    def get_api_response(self, endpoint: str, params: Mapping[str, Any]) -> WorkingItem:
        """Read a cached response; ContextMissError when missing or expired."""
        key = K.api_key_under(self._prefix, endpoint, params)
        self._on_read(key)
        text = self._backend.get_value(key)
        if text is None:
            raise ContextMissError(key)
        value, stored_at, ttl_ms = decode_envelope(key, text)
        if ttl_ms is None or stored_at is None:  # written without a TTL record: ask the server
            return WorkingItem(key, value, ttl_seconds(self._backend.pttl(key)), stored_at)
        age_s = (self._clock.now() - stored_at).total_seconds()
        return WorkingItem(key, value, max(0.0, ttl_ms / 1000 - age_s), stored_at)

    # -- step plan and results -------------------------------------------------------
    def plan_steps(self, graph: StepGraph) -> StoredPlan:
        """Store the step graph; result TTLs are measured from now."""
        if not isinstance(graph, StepGraph):
            raise ValidationError("graph", f"must be a StepGraph, got {type(graph).__name__}")
        now = self._clock.now()
        payload = json.dumps({"stored_at": now.isoformat(), "graph": graph.to_json()})
        # The plan must outlive every result it sizes.
        ttl_s = max(self._settings.default_result_ttl_s, TTL_SAFETY_FACTOR * graph.makespan_s())
        ttl_ms = K.seconds_to_ms("ttl_s", ttl_s)
        # Extensions first: a reader that finds the plan but no table falls back to
        # reading the plan, so a failure between the two writes loses nothing.
        self._backend.write_hash(
            K.plan_extensions_key(self._session_id), _extension_table(graph), ttl_ms
        )
        self._backend.set_string(K.plan_key(self._session_id), payload, ttl_ms)
        return StoredPlan(graph, now)

    def get_plan(self) -> StoredPlan:
        """The stored plan; ContextMissError when none (or it expired)."""
        key = K.plan_key(self._session_id)
        self._on_read(key)
        plan = self._load_plan()
        if plan is None:
            raise ContextMissError(key)
        return plan

    def _load_plan(self) -> StoredPlan | None:
        key = K.plan_key(self._session_id)
        text = self._backend.get_value(key)
        if text is None:
            return None
        return _parse_plan(key, text)

    def result_ttl_s(self, step_id: str) -> float:
        """TTL in seconds a result of ``step_id`` written now gets (see the module docs)."""
        check_id("step_id", step_id)
        plan = self._load_plan()
        return self._result_ttl_s(plan, step_id)

    def _result_ttl_s(self, plan: StoredPlan | None, step_id: str) -> float:
        s = self._settings
        if plan is None or step_id not in plan.graph.step_ids:
            return s.default_result_ttl_s
        deadline = plan.graph.result_deadline_s(step_id)
        if deadline is None:
            return s.default_result_ttl_s
        elapsed = (self._clock.now() - plan.stored_at).total_seconds()
        # The 1 ms floor keeps a zero min_result_ttl_s from producing a non-positive TTL.
        return max(s.min_result_ttl_s, deadline - elapsed, 0.001)

    def put_step_result(self, step_id: str, fields: Mapping[str, Any]) -> WorkingItem:
        """Store a step's result hash; its TTL comes from the plan's dependents."""
        key = K.result_key(self._session_id, step_id)
        clean = self._sanitizer.value(dict(check_fields(fields)), location=f"L2:{key}")
        encoded = encode_fields(clean)
        ttl_s = self._result_ttl_s(self._load_plan(), step_id)
        now = self._clock.now()
        stored = {**encoded, STORED_AT_FIELD: now.isoformat()}
        self._backend.write_hash(key, stored, K.seconds_to_ms("ttl_s", ttl_s))
        return WorkingItem(key, {k: json.loads(v) for k, v in encoded.items()}, ttl_s, now)

    def get_step_result(self, step_id: str, reader_step: str | None = None) -> WorkingItem:
        """Read a step result; a dependent ``reader_step`` extends its TTL (never shortens)."""
        key = K.result_key(self._session_id, step_id)
        self._on_read(key)
        if reader_step is None:
            found = self._backend.read_hash(key)
        else:
            check_id("reader_step", reader_step)
            found = self._read_extending(key, step_id, reader_step)
        if found is None:
            raise ContextMissError(key)
        raw, ttl_ms = found
        value, stored_at = split_meta(key, raw)
        return WorkingItem(key, value, ttl_seconds(ttl_ms), stored_at)

    def _read_extending(
        self, key: str, step_id: str, reader_step: str
    ) -> tuple[dict[str, str], int] | None:
        """The result and its TTL after ``reader_step``'s extension: one round trip
        with the plan's extension table, three for a plan stored without one."""
        minimum = self._settings.min_result_ttl_s
        plan_key = K.plan_key(self._session_id)
        found, source = self._backend.read_hash_extending(
            key,
            K.plan_extensions_key(self._session_id),
            K.extension_field(step_id, reader_step),
            K.seconds_to_ms("min_result_ttl_s", minimum) if minimum > 0 else 0,
            plan_key,
        )
        if found is None or source != "fallback":
            return found
        plan_text = self._backend.get_value(plan_key)
        if plan_text is None:
            return found
        plan = _parse_plan(plan_key, plan_text)
        extended = self._extend_for_reader(plan, key, step_id, reader_step)
        return found if extended is None else (found[0], extended)

    def _extend_for_reader(
        self, plan: StoredPlan, key: str, step_id: str, reader_step: str
    ) -> int | None:
        ids = plan.graph.step_ids
        if step_id not in ids or reader_step not in ids:
            return None
        ext_s = plan.graph.extension_on_read_s(step_id, reader_step)
        if ext_s is None:
            return None
        ttl_s = max(self._settings.min_result_ttl_s, ext_s)
        ttl_ms = K.seconds_to_ms("ttl_s", ttl_s)
        # GT applies only when longer, so the TTL is now the new one or the one read.
        return ttl_ms if self._backend.expire_gt(key, ttl_ms) else None

    # -- time series ------------------------------------------------------------------
    def append_series(
        self,
        metric: str,
        points: Iterable[SeriesPoint | tuple[Any, Any]],
        *,
        window: int | None = None,
        ttl_s: float | None = None,
    ) -> int:
        """Add points and keep only the newest ``window`` (default from settings).

        Returns the number of points kept. The TTL (default
        ``settings.default_result_ttl_s``) is refreshed on every append.
        """
        key = K.series_key(self._session_id, metric)
        keep = check_positive_int(
            "window",
            self._settings.series_window_points if window is None else window,
            maximum=MAX_WINDOW_POINTS,
        )
        ttl_ms = K.seconds_to_ms(
            "ttl_s", self._settings.default_result_ttl_s if ttl_s is None else ttl_s
        )
        if isinstance(points, str | bytes | Mapping) or not isinstance(points, Iterable):
            raise ValidationError("points", "must be an iterable of points")
        members: dict[str, float] = {}

        def clean(value: Any) -> Any:
            return self._sanitizer.value(value, location=f"L2:{key}")

        for i, point in enumerate(points):
            member, score = encode_point(i, point, clean)
            members[member] = score
        if not members:
            raise ValidationError("points", "must not be empty")
        return self._backend.append_window(key, members, keep, ttl_ms)

    def read_series(
        self,
        metric: str,
        start: float | datetime | None = None,
        end: float | datetime | None = None,
    ) -> tuple[SeriesPoint, ...]:
        """Points with ``start <= timestamp <= end``, oldest first."""
        key = K.series_key(self._session_id, metric)
        self._on_read(key)
        low = -math.inf if start is None else check_timestamp("start", start)
        high = math.inf if end is None else check_timestamp("end", end)
        if low > high:
            raise ValidationError("start", "must not be after end")
        rows = self._backend.range_by_score(key, low, high)
        if rows is None:
            raise ContextMissError(key)
        return tuple(decode_point(key, member, score) for member, score in rows)

    # -- pending tasks --------------------------------------------------------------
    def add_pending(self, *task_ids: str) -> int:
        """Register pending asynchronous tasks (no TTL); returns how many were new."""
        if not task_ids:
            raise ValidationError("task_ids", "must not be empty")
        ids = [check_id("task_id", t) for t in task_ids]
        return self._backend.set_add(K.pending_key(self._session_id), ids)

    def complete_pending(self, task_id: str) -> bool:
        """Remove a finished task; False if it was not pending."""
        return self._backend.set_remove(
            K.pending_key(self._session_id), check_id("task_id", task_id)
        )

    def pending(self) -> frozenset[str]:
        """The pending task ids."""
        key = K.pending_key(self._session_id)
        self._on_read(key)
        return self._backend.set_members(key)

    # -- inspection -------------------------------------------------------------------
    def keys(self) -> tuple[WorkingKey, ...]:
        """This session's live keys with their type and TTL, sorted by key."""
        found = self._backend.scan_prefix(K.session_prefix(self._session_id))
        infos = self._backend.describe(sorted(found))
        return tuple(WorkingKey(i.key, i.kind, ttl_seconds(i.ttl_ms)) for i in infos)

    def clear(self) -> int:
        """Delete every key of this session (pending tasks included)."""
        found = self._backend.scan_prefix(K.session_prefix(self._session_id))
        return self._backend.delete(sorted(found))
