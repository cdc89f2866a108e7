"""A purge rebuilds a collection while reads and writes go on (issue 23, "Why" 3): no
write made during the rebuild is lost, none waits for the copy, and what a write
deleted during the rebuild leaves the disk at the next purge."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

import memstrata.longterm.edge as edge_module
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import MEMORIES, Filter, Point
from memstrata.testing.disk import files_holding

PointFactory = Callable[..., Point]
# Long enough for a write that is not blocked to finish on a loaded machine; a write
# still waiting after it waits for the copy.
UNBLOCKED_S = 60.0


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[EdgeIndex]:
    index = EdgeIndex(tmp_path / "edge")
    index.ensure_collections(32)
    yield index
    index.close()


def _held_copy(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Hold every purge at the start of its copy (the live shard is being copied)
    until released: returns (copying, release)."""
    copying, release = threading.Event(), threading.Event()
    # The copy step under either name it has had (the test is run on the old code too).
    name = "copy_live" if hasattr(edge_module, "copy_live") else "build_copy"
    original = getattr(edge_module, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        copying.set()
        release.wait()
        return original(*args, **kwargs)

    monkeypatch.setattr(edge_module, name, held)
    return copying, release


def _in_thread(target: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def _texts(edge: EdgeIndex) -> dict[str, str]:
    records, _ = edge.scroll(MEMORIES, Filter(tenant="acme"), limit=10_000)
    return {r.id: str(r.payload["text"]) for r in records}


def test_writes_during_the_copy_neither_wait_nor_get_lost(
    edge: EdgeIndex, make_point: PointFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    marker = f"zq{uuid.uuid4().hex[:12]}"
    kept = [make_point(f"kept {i}", "acme") for i in range(40)]
    replaced = [make_point(f"old text {marker} {i}", "acme") for i in range(5)]
    deleted = [make_point(f"deleted {marker} {i}", "acme") for i in range(5)]
    edge.upsert(MEMORIES, kept + replaced + deleted)
    copying, release = _held_copy(monkeypatch)
    purge, purge_errors = _in_thread(edge.purge)
    assert copying.wait(UNBLOCKED_S)

    added = [make_point(f"added during {i}", "acme") for i in range(7)]
    new_versions = [
        make_point(f"new text {i}", "acme", point_id=p.id) for i, p in enumerate(replaced)
    ]

    def write() -> None:
        edge.upsert(MEMORIES, added)
        edge.upsert(MEMORIES, new_versions)
        edge.delete(MEMORIES, [p.id for p in deleted], tenant="acme")

    writer, write_errors = _in_thread(write)
    writer.join(UNBLOCKED_S)
    blocked = writer.is_alive()
    # Reads go on as well, and already see the writes.
    seen = _texts(edge) if not blocked else {}
    release.set()
    writer.join()
    purge.join()
    assert not blocked, "a write waited for the purge's copy"
    assert write_errors == [] and purge_errors == []

    expected = {p.id: str(p.payload["text"]) for p in kept + added + new_versions}
    assert seen == expected
    assert _texts(edge) == expected  # the swapped-in copy holds every write
    # What the writes replaced or deleted during the rebuild is gone at the next one.
    edge.purge()
    assert _texts(edge) == expected
    assert files_holding(tmp_path / "edge", marker) == []


class _FakeCopy:
    """A copy as a dict: what a rebuild sent it."""

    def __init__(self) -> None:
        self.points: dict[str, str] = {}

    def upsert(self, records: Any) -> None:
        for record in records:
            self.points[record.id] = record.payload

    def delete(self, ids: Any) -> None:
        for point_id in ids:
            self.points.pop(point_id, None)

    def optimize(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def seal(self, expected: int) -> None:
        assert len(self.points) == expected


class _Record:
    def __init__(self, point_id: str, payload: str) -> None:
        self.id = point_id
        self.payload = payload


class _ChangingShard:
    """A live shard written between every page the rebuild reads: each write noted
    in the journal, as the index does."""

    def __init__(self, size: int, page: int) -> None:
        self.held = {f"{i:04d}": f"v0 {i}" for i in range(size)}
        self._page = page
        self._touched: set[str] = set()
        self._step = 0

    def _write(self) -> None:
        self._step += 1
        step = self._step
        ids = sorted(self.held)
        new_id = f"{(step * 37) % 9000:04d}x"  # an insert, ahead of the scroll or behind
        self.held[new_id] = f"new {step}"
        changed = ids[(step * 7) % len(ids)]
        self.held[changed] = f"v{step} {changed}"  # a replacement
        gone = ids[(step * 13) % len(ids)]
        self.held.pop(gone, None)  # a deletion
        self._touched.update((new_id, changed, gone))

    def page(self, offset: Any) -> tuple[list[Any], Any]:
        self._write()
        ids = sorted(i for i in self.held if offset is None or i >= offset)
        chunk = ids[: self._page]
        following = ids[self._page] if len(ids) > self._page else None
        return [_Record(i, self.held[i]) for i in chunk], following

    def points(self, ids: Collection[str]) -> list[Any]:
        return [_Record(i, self.held[i]) for i in ids if i in self.held]

    def drain(self) -> set[str]:
        self._write()  # writes go on between catch-up rounds too
        touched, self._touched = self._touched, set()
        return touched


def test_a_copy_caught_up_holds_exactly_what_the_live_shard_holds() -> None:
    from memstrata.longterm.edge_purge import catch_up, copy_live  # not on the old code

    live = _ChangingShard(size=300, page=16)
    copy = _FakeCopy()
    copy_live(copy, live)  # type: ignore[arg-type]
    # The last round, with writes held: nothing changes the live shard meanwhile.
    touched = live.drain()
    catch_up(copy, live, touched)  # type: ignore[arg-type]
    assert copy.points == live.held


def test_a_point_written_under_another_spelling_of_its_id_is_kept() -> None:
    from memstrata.longterm.edge_purge import catch_up

    point_id = str(uuid.uuid4())

    class _Live:
        def points(self, ids: Collection[str]) -> list[Any]:
            # The engine answers its canonical spelling, whatever the write said.
            return [_Record(uuid.UUID(i), "text") for i in ids]  # type: ignore[arg-type]

    class _EngineCopy(_FakeCopy):
        # Like the engine: any spelling of a UUID names the same point.
        def delete(self, ids: Any) -> None:
            for i in ids:
                self.points.pop(uuid.UUID(str(i)), None)  # type: ignore[call-overload]

    copy = _EngineCopy()
    catch_up(copy, _Live(), {point_id.upper()})  # type: ignore[arg-type]
    assert list(copy.points.values()) == ["text"]
