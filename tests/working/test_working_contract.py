"""One contract suite, run against the in-memory, embedded and cluster backends."""

from __future__ import annotations

import dataclasses
import json
import math
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from memstrata.config import WorkingMemorySettings
from memstrata.errors import ContextMissError, ValidationError
from memstrata.testing import WorkingBackendCase
from memstrata.working import (
    MAX_VALUE_BYTES,
    SeriesPoint,
    SessionWorkingMemory,
    StepGraph,
    WorkingMemory,
)
from memstrata.working import keys as K

# Short TTLs so real-server expiry tests take well under a second each.
FAST = WorkingMemorySettings(
    api_ttl_s=900, min_result_ttl_s=0.1, default_result_ttl_s=5.0, series_window_points=1000
)


def _sid(prefix: str = "s") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def wm(working_backend: WorkingBackendCase) -> WorkingMemory:
    return working_backend.memory(FAST)


@pytest.fixture
def sess(wm: WorkingMemory) -> SessionWorkingMemory:
    return wm.session(_sid())


# --- round trips ------------------------------------------------------------------------


def test_api_response_round_trip(sess: SessionWorkingMemory) -> None:
    value = {"temp": [21.5, 22.0], "unit": "C", "ok": True, "note": "温度"}
    written = sess.put_api_response("/sensors/temp", {"device": "D1", "hours": 24}, value)
    got = sess.get_api_response("/sensors/temp", {"hours": 24, "device": "D1"})
    assert got.value == value
    assert (
        got.key
        == written.key
        == K.api_key(sess.session_id, "/sensors/temp", {"device": "D1", "hours": 24})
    )
    assert got.ttl_remaining_s is not None and 890 < got.ttl_remaining_s <= 900
    with pytest.raises(ContextMissError):
        sess.get_api_response("/sensors/temp", {"device": "D2", "hours": 24})


def test_reads_are_frozen_copies(sess: SessionWorkingMemory) -> None:
    sess.put_api_response("/e", {}, {"list": [1, 2]})
    item = sess.get_api_response("/e", {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.value = None  # type: ignore[misc]
    item.value["list"].append(3)
    assert sess.get_api_response("/e", {}).value == {"list": [1, 2]}


def test_step_result_round_trip_without_plan(sess: SessionWorkingMemory) -> None:
    fields = {"device_id": "D123", "alert_ts": "2025-04-01T08:22:00Z", "count": 3, "x": None}
    sess.put_step_result("step5", fields)
    got = sess.get_step_result("step5")
    assert got.value == fields
    assert got.key == K.result_key(sess.session_id, "step5")
    assert got.ttl_remaining_s is not None and 4 < got.ttl_remaining_s <= FAST.default_result_ttl_s
    # A rewrite replaces the hash, it does not merge stale fields into it.
    sess.put_step_result("step5", {"device_id": "D9"})
    assert sess.get_step_result("step5").value == {"device_id": "D9"}


def test_preferences_round_trip_and_index(wm: WorkingMemory) -> None:
    user, other = _sid("u"), _sid("u")
    when = datetime(2025, 3, 22, 14, 30, tzinfo=UTC)
    wm.set_preference(user, "ui_color", "blue", 0.92, updated_at=when)
    wm.set_preference(user, "report_format", {"charts": True}, 0.7)
    pref = wm.get_preference(user, "ui_color")
    assert (pref.value, pref.confidence, pref.last_updated) == ("blue", 0.92, when)
    assert [p.pref_type for p in wm.list_preferences(user)] == ["report_format", "ui_color"]
    wm.set_preference(user, "ui_color", "green", 0.5)
    assert wm.get_preference(user, "ui_color").value == "green"
    assert len(wm.list_preferences(user)) == 2
    assert wm.list_preferences(other) == ()
    # Another tenant's user of the same id has preferences of their own.
    assert wm.list_preferences(user, tenant="globex") == ()
    with pytest.raises(ContextMissError):
        wm.get_preference(user, "ui_color", tenant="globex")
    wm.set_preference(user, "ui_color", "red", 0.4, tenant="globex")
    assert wm.get_preference(user, "ui_color").value == "green"
    assert wm.get_preference(user, "ui_color", tenant="globex").value == "red"
    with pytest.raises(ContextMissError) as err:
        wm.get_preference(other, "ui_color")
    assert err.value.key == f"pref:{{default:{other}}}:ui_color"


def test_plan_is_stored_and_read_back(sess: SessionWorkingMemory) -> None:
    with pytest.raises(ContextMissError):
        sess.get_plan()
    graph = StepGraph.of([("a", 1, []), ("b", 2, ["a"])])
    stored = sess.plan_steps(graph)
    again = sess.get_plan()
    assert again.graph == graph
    assert abs((again.stored_at - stored.stored_at).total_seconds()) < 1e-3


# --- TTLs -------------------------------------------------------------------------------


def test_api_response_expires(
    working_backend: WorkingBackendCase, sess: SessionWorkingMemory
) -> None:
    sess.put_api_response("/e", {"q": 1}, "v", ttl_s=0.3)
    sess.add_pending("task-a")
    assert sess.get_api_response("/e", {"q": 1}).value == "v"
    working_backend.advance(0.45)
    with pytest.raises(ContextMissError) as err:
        sess.get_api_response("/e", {"q": 1})
    assert err.value.key == K.api_key(sess.session_id, "/e", {"q": 1})
    assert err.value.key in str(err.value)
    # The pending set has no TTL and survives what expired around it.
    assert sess.pending() == {"task-a"}
    live = sess.keys()
    kinds = {k.key: (k.kind, k.ttl_remaining_s) for k in live}
    assert kinds == {K.pending_key(sess.session_id): ("set", None)}


def test_result_ttl_comes_from_the_dependency_graph(sess: SessionWorkingMemory) -> None:
    sess.plan_steps(
        StepGraph.of([("a", 10, []), ("b", 20, ["a"]), ("c", 5, ["b"]), ("x", 0.01, [])])
    )
    # a is read by b (ends at 30 s): lives 2 x 30 = 60 s from plan start.
    ttl_a = sess.put_step_result("a", {"v": 1}).ttl_remaining_s
    assert ttl_a is not None and 59 < ttl_a <= 60
    read = sess.get_step_result("a").ttl_remaining_s
    assert read is not None and 58 < read <= 60
    # b is read by c (ends at 35 s).
    assert 69 < (sess.put_step_result("b", {"v": 2}).ttl_remaining_s or 0) <= 70
    # c and x have no dependents: the default TTL.
    assert sess.put_step_result("c", {"v": 3}).ttl_remaining_s == FAST.default_result_ttl_s
    assert sess.result_ttl_s("x") == FAST.default_result_ttl_s


def test_result_ttl_is_floored(working_backend: WorkingBackendCase) -> None:
    settings = dataclasses.replace(FAST, min_result_ttl_s=30.0)
    sess = working_backend.memory(settings).session(_sid())
    sess.plan_steps(StepGraph.of([("a", 0.01, []), ("b", 0.01, ["a"])]))
    ttl = sess.put_step_result("a", {"v": 1}).ttl_remaining_s
    assert ttl == 30.0


@pytest.mark.parametrize("table", [True, False], ids=["one-round-trip", "plan-without-table"])
def test_dependent_read_extends_and_never_shortens(
    working_backend: WorkingBackendCase, sess: SessionWorkingMemory, table: bool
) -> None:
    # a (0.2 s) -> b (0.3 s): a's result lives 2 x 0.5 = 1.0 s from plan start.
    sess.plan_steps(StepGraph.of([("a", 0.2, []), ("b", 0.3, ["a"]), ("z", 0.1, [])]))
    if not table:  # a plan written before extension tables: read and extended in Python
        working_backend.backend.delete([K.plan_extensions_key(sess.session_id)])
    sess.put_step_result("a", {"v": 1})
    fresh = sess.get_step_result("a", reader_step="b").ttl_remaining_s
    # Extension (2 x (0.5 - 0.2) = 0.6 s) is shorter than what is left: unchanged.
    assert fresh is not None and fresh > 0.8
    working_backend.advance(0.6)
    left = sess.get_step_result("a").ttl_remaining_s
    assert left is not None and left < 0.45
    # A non-dependent reader changes nothing; the dependent b extends to ~0.6 s.
    assert (sess.get_step_result("a", reader_step="z").ttl_remaining_s or 1) < 0.45
    extended = sess.get_step_result("a", reader_step="b").ttl_remaining_s
    assert extended is not None and 0.5 < extended <= 0.6
    working_backend.advance(0.7)
    with pytest.raises(ContextMissError):
        sess.get_step_result("a", reader_step="b")


def test_a_dependent_read_without_a_plan_reads_the_result_unchanged(
    sess: SessionWorkingMemory,
) -> None:
    sess.put_step_result("a", {"v": 1})
    before = sess.get_step_result("a").ttl_remaining_s
    got = sess.get_step_result("a", reader_step="b")
    assert got.value == {"v": 1}
    assert before is not None and got.ttl_remaining_s is not None
    assert got.ttl_remaining_s <= before


def test_fields_read_alone(working_backend: WorkingBackendCase) -> None:
    backend = working_backend.backend
    sid = _sid()
    key, text_key = K.result_key(sid, "a"), K.plan_key(sid)
    assert backend.read_fields(key) is None
    backend.write_hash(key, {"f": "1", "g": "2"}, None)
    assert backend.read_fields(key) == {"f": "1", "g": "2"}
    found = backend.read_hash(key)
    assert found is not None and backend.read_fields(key) == found[0]
    backend.set_string(text_key, "x", None)
    assert backend.read_fields(text_key) is None  # not a hash: as a missing one


def test_hash_read_extending_from_a_table(working_backend: WorkingBackendCase) -> None:
    backend = working_backend.backend
    sid = _sid()
    result, table, plan = K.result_key(sid, "a"), K.plan_extensions_key(sid), K.plan_key(sid)

    def read(field: str = "a>b", floor_ms: int = 0) -> Any:
        return backend.read_hash_extending(result, table, field, floor_ms, plan)

    assert read() == (None, "none")
    backend.write_hash(result, {"f": "1"}, 30_000)
    found, source = read()
    assert source == "none" and found is not None and found[0] == {"f": "1"}
    backend.set_string(plan, "{}", 60_000)
    assert read()[1] == "fallback"  # a plan without a table: the caller extends
    assert 29_000 < backend.pttl(result) <= 30_000
    backend.write_hash(table, {"*": "", "a>b": "50000", "a>c": "10000"}, 60_000)
    found, source = read()
    assert source == "table" and found is not None and 49_000 < found[1] <= 50_000
    assert 49_000 < backend.pttl(result) <= 50_000
    # Never shortened: a shorter extension, or a field the table lacks, keeps the TTL.
    for field in ("a>c", "x>y"):
        found, source = read(field)
        assert source == "table" and found is not None and 49_000 < found[1] <= 50_000
    # The floor wins over a shorter extension.
    found, _ = read("a>c", floor_ms=80_000)
    assert found is not None and 79_000 < found[1] <= 80_000
    # A persistent result counts as infinite (PEXPIRE GT): never given an expiry.
    backend.write_hash(result, {"f": "2"}, None)
    found, _ = read()
    assert found == ({"f": "2"}, -1)


# --- time series --------------------------------------------------------------------


def test_series_keeps_newest_window(sess: SessionWorkingMemory) -> None:
    kept = sess.append_series("vibration", [(float(t), {"mm_s": t / 10}) for t in range(1500)])
    assert kept == 1000
    points = sess.read_series("vibration")
    assert len(points) == 1000
    assert points[0] == SeriesPoint(500.0, {"mm_s": 50.0})
    assert points[-1].timestamp == 1499.0
    assert [p.timestamp for p in sess.read_series("vibration", 1000, 1002)] == [1000, 1001, 1002]
    assert sess.read_series("vibration", 5000) == ()


def test_series_custom_window_and_duplicates(sess: SessionWorkingMemory) -> None:
    sess.append_series("temp", [SeriesPoint(1.0, 20), SeriesPoint(2.0, 20)], window=3)
    kept = sess.append_series("temp", [(3.0, 21), (4.0, 22), (2.0, 20)], window=3)
    assert kept == 3
    assert [(p.timestamp, p.value) for p in sess.read_series("temp")] == [
        (2.0, 20),
        (3.0, 21),
        (4.0, 22),
    ]
    when = datetime(2025, 4, 1, 8, 22, tzinfo=UTC)
    sess.append_series("temp2", [(when, "x")])
    assert sess.read_series("temp2", start=when, end=when)[0].timestamp == when.timestamp()


def test_series_miss_names_the_key(sess: SessionWorkingMemory) -> None:
    with pytest.raises(ContextMissError) as err:
        sess.read_series("nothing")
    assert err.value.key == K.series_key(sess.session_id, "nothing")


# --- pending tasks, inspection ------------------------------------------------------


def test_pending_tasks(sess: SessionWorkingMemory) -> None:
    assert sess.pending() == frozenset()
    assert sess.add_pending("t1", "t2") == 2
    assert sess.add_pending("t2", "t3") == 1
    assert sess.complete_pending("t2") is True
    assert sess.complete_pending("t2") is False
    assert sess.pending() == {"t1", "t3"}


def test_keys_and_clear(sess: SessionWorkingMemory) -> None:
    sess.put_api_response("/e", {}, 1)
    sess.put_step_result("s1", {"a": 1})
    sess.append_series("m", [(1.0, 1)])
    sess.add_pending("t")
    sess.plan_steps(StepGraph.of([("s1", 1, [])]))
    live = sess.keys()
    kinds = {k.key.split(":")[2]: k.kind for k in live}
    assert kinds == {
        "api": "string",
        "result": "hash",
        "ts": "zset",
        "pending_tasks": "set",
        "plan": "string",
        "plan_ext": "hash",
    }
    assert all(k.ttl_remaining_s is None or k.ttl_remaining_s > 0 for k in live)
    assert sess.clear() == 6
    assert sess.keys() == ()


# --- isolation ------------------------------------------------------------------------


def test_sessions_are_isolated(wm: WorkingMemory) -> None:
    a, b = wm.session(_sid("a")), wm.session(_sid("b"))
    a.put_api_response("/e", {"p": 1}, "secret")
    a.put_step_result("s1", {"v": 1})
    a.append_series("m", [(1.0, 1)])
    a.add_pending("t1")
    with pytest.raises(ContextMissError):
        b.get_api_response("/e", {"p": 1})
    with pytest.raises(ContextMissError):
        b.get_step_result("s1")
    with pytest.raises(ContextMissError):
        b.read_series("m")
    assert b.pending() == frozenset()
    assert b.keys() == ()
    assert b.clear() == 0
    assert len(a.keys()) == 4


@pytest.mark.parametrize("bad", ["a}:{b", "x{y}", "s:1", "", "*", "s\n"])
def test_malformed_session_ids_rejected(wm: WorkingMemory, bad: str) -> None:
    with pytest.raises(ValidationError) as err:
        wm.session(bad)
    assert err.value.field == "session_id"


# --- bad input writes nothing ------------------------------------------------------


def _snapshot(wm: WorkingMemory, sess: SessionWorkingMemory, user: str) -> Any:
    live = sess.keys()
    return (
        [(k.key, k.kind) for k in live],
        sess.pending(),
        wm.list_preferences(user),
    )


BAD_CALLS: dict[str, tuple[str, Callable[[WorkingMemory, SessionWorkingMemory, str], Any]]] = {
    "not_json": ("value", lambda wm, s, u: s.put_api_response("/e", {}, {1, 2})),
    "nan_value": ("value", lambda wm, s, u: s.put_api_response("/e", {}, math.nan)),
    "oversized": ("value", lambda wm, s, u: s.put_api_response("/e", {}, "x" * MAX_VALUE_BYTES)),
    "bad_ttl": ("ttl_s", lambda wm, s, u: s.put_api_response("/e", {}, 1, ttl_s=-1)),
    "params_type": ("params", lambda wm, s, u: s.put_api_response("/e", "p", 1)),
    "empty_endpoint": ("endpoint", lambda wm, s, u: s.put_api_response(" ", {}, 1)),
    "bad_step": ("step_id", lambda wm, s, u: s.put_step_result("s:1", {"a": 1})),
    "empty_fields": ("fields", lambda wm, s, u: s.put_step_result("s1", {})),
    "field_name": ("fields", lambda wm, s, u: s.put_step_result("s1", {1: "a"})),
    "reserved_field": ("fields", lambda wm, s, u: s.put_step_result("s1", {"@stored_at": 1})),
    "field_value": ("fields.a", lambda wm, s, u: s.put_step_result("s1", {"a": object()})),
    "nan_ts": (
        "points[1].timestamp",
        lambda wm, s, u: s.append_series("m", [(1.0, 1), (math.nan, 2)]),
    ),
    "str_ts": ("points[0].timestamp", lambda wm, s, u: s.append_series("m", [("1", 1)])),
    "point_shape": ("points[0]", lambda wm, s, u: s.append_series("m", [1.0])),
    "no_points": ("points", lambda wm, s, u: s.append_series("m", [])),
    "window": ("window", lambda wm, s, u: s.append_series("m", [(1.0, 1)], window=0)),
    "bad_metric": ("metric", lambda wm, s, u: s.append_series("m{x}", [(1.0, 1)])),
    "bad_task": ("task_id", lambda wm, s, u: s.add_pending("ok", "t:2")),
    "no_tasks": ("task_ids", lambda wm, s, u: s.add_pending()),
    "plan_type": ("graph", lambda wm, s, u: s.plan_steps({"a": 1})),
    "confidence": ("confidence", lambda wm, s, u: wm.set_preference(u, "t", "v", 1.5)),
    "naive_time": (
        "updated_at",
        lambda wm, s, u: wm.set_preference(u, "t", "v", 0.5, datetime(2025, 1, 1)),
    ),
    "pref_type": ("pref_type", lambda wm, s, u: wm.set_preference(u, "a:b", "v", 0.5)),
    "pref_value": ("value", lambda wm, s, u: wm.set_preference(u, "t", b"raw", 0.5)),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_rejected_with_nothing_written(
    wm: WorkingMemory, sess: SessionWorkingMemory, case: str
) -> None:
    user = _sid("u")
    sess.put_api_response("/seed", {}, "seed")
    before = _snapshot(wm, sess, user)
    field, call = BAD_CALLS[case]
    with pytest.raises(ValidationError) as err:
        call(wm, sess, user)
    assert err.value.field == field
    assert _snapshot(wm, sess, user) == before


def test_miss_names_the_key(sess: SessionWorkingMemory) -> None:
    with pytest.raises(ContextMissError) as err:
        sess.get_step_result("step4")
    assert err.value.key == f"wm:{{{sess.session_id}}}:result:step4"
    assert err.value.key in str(err.value)


def test_backend_reports_health(wm: WorkingMemory, sess: SessionWorkingMemory) -> None:
    sess.put_api_response("/e", {}, 1)
    assert wm.ping() is True
    info = wm.info()
    assert info.keys >= 1
    assert info.nodes == (3 if info.kind == "cluster" else 1)


def test_concurrent_writers_lose_nothing(sess: SessionWorkingMemory) -> None:
    def add(worker: int) -> None:
        for i in range(25):
            sess.add_pending(f"w{worker}-t{i}")
            sess.append_series("m", [(float(worker * 100 + i), worker)], window=150)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(add, range(8)))
    assert len(sess.pending()) == 200
    # 200 points appended concurrently, window 150: exactly the newest 150 remain.
    points = sess.read_series("m")
    expected = sorted(float(w * 100 + i) for w in range(8) for i in range(25))[-150:]
    assert [p.timestamp for p in points] == expected


class _StubSanitizer:
    """Stands in for the gateway: replaces one fake secret, records where it ran."""

    def __init__(self) -> None:
        self.locations: list[str] = []

    def value(self, obj: Any, *, location: str) -> Any:
        self.locations.append(location)
        return json.loads(json.dumps(obj).replace("sk_live_123", "[REDACTED]"))


def test_every_write_passes_the_sanitizer(working_backend: WorkingBackendCase) -> None:
    gate = _StubSanitizer()
    wm = WorkingMemory(working_backend.backend, FAST, working_backend.clock, sanitizer=gate)
    sess, user = wm.session(_sid()), _sid("u")
    assert sess.put_api_response("/e", {}, {"err": "bad key sk_live_123"}).value == {
        "err": "bad key [REDACTED]"
    }
    sess.put_step_result("s1", {"token": "sk_live_123"})
    sess.append_series("m", [(1.0, "sk_live_123")])
    wm.set_preference(user, "t", "sk_live_123", 0.5)
    assert sess.get_api_response("/e", {}).value == {"err": "bad key [REDACTED]"}
    assert sess.get_step_result("s1").value == {"token": "[REDACTED]"}
    assert sess.read_series("m")[0].value == "[REDACTED]"
    assert wm.get_preference(user, "t").value == "[REDACTED]"
    raw = working_backend.backend.get_string(K.api_key(sess.session_id, "/e", {}))
    assert raw is not None and "sk_live" not in raw[0]
    assert all(loc.startswith("L2:") for loc in gate.locations) and len(gate.locations) == 4


def test_items_carry_their_write_time(
    working_backend: WorkingBackendCase, sess: SessionWorkingMemory
) -> None:
    before = working_backend.clock.now()
    sess.put_api_response("/e", {}, 1)
    sess.put_step_result("s1", {"a": 1})
    for item in (sess.get_api_response("/e", {}), sess.get_step_result("s1")):
        assert item.stored_at is not None
        assert 0 <= (item.stored_at - before).total_seconds() < 5
