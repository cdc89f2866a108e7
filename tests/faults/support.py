"""What the fault tests share: a service in this process (REST through its ASGI app),
a ledger of acknowledged writes, a small tmpfs (when mounting is permitted) and the
injected doubles used where it is not."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from tests.service.support import cli, free_port, wait_ready

from memstrata.config import PipelineSettings, Settings
from memstrata.disk import DiskPolicy, free_bytes
from memstrata.embed.protocol import Embedder
from memstrata.engine import ContextEngine
from memstrata.errors import MIB, MemstrataError, error_code
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import MEMORIES
from memstrata.service.core import error_body
from memstrata.service.rest import create_app
from memstrata.service.server import RunningService, open_service
from memstrata.service.wire import dump
from memstrata.testing.embedders import HashEmbedder
from memstrata.wiring import build_stack

TENANT = "acme"
FAST_PIPELINE = PipelineSettings(block_ms=50, claim_idle_ms=500, max_deliveries=3)
"""Consumers that reclaim a dead one's entries within half a second, and would
dead-letter an entry after three failed deliveries (so an outage that spent
deliveries would show)."""


class FakeDisk:
    """TEST DOUBLE of a filesystem's free space: the probe a :class:`DiskPolicy` reads."""

    def __init__(self, free_mib: int = 100_000) -> None:
        self.free = free_mib * MIB

    def probe(self, path: Path) -> int:
        return self.free

    def set_free_mib(self, mib: int) -> None:
        self.free = mib * MIB


@dataclass
class Served:
    """A service over an engine in this process, and a REST client of it."""

    running: RunningService
    engine: ContextEngine
    client: TestClient
    key: str
    admin: str

    def post(self, operation: str, body: dict[str, Any], *, key: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        return self.client.post(f"/v1/{operation}", json=body, headers=headers)

    def remember(self, user: str, text: str) -> Any:
        return self.post("remember", {"user_id": user, "text": text})

    def healthz(self, *, reads: bool = False) -> Any:
        return self.client.get("/healthz?reads=1" if reads else "/healthz")

    def call(self, operation: str, body: dict[str, Any], *, key: str | None = None) -> Reply:
        """The operation through the service in this thread (safe from many threads),
        answered as REST would: the status and the JSON body."""
        try:
            result = self.running.service.call(operation, key or self.key, body, "inprocess")
        except MemstrataError as exc:
            return Reply(error_code(exc).http, {"error": error_body(exc)})
        return Reply(200, dump(result))

    def remember_here(self, user: str, text: str) -> Reply:
        return self.call("remember", {"user_id": user, "text": text})


@dataclass(frozen=True)
class Reply:
    """An answer as REST gives it."""

    status_code: int
    body: dict[str, Any]

    def json(self) -> dict[str, Any]:
        return self.body


@contextlib.contextmanager
def served(
    data_dir: Path,
    *,
    disk: DiskPolicy | None = None,
    embedder: Embedder | None = None,
    pipeline: PipelineSettings = FAST_PIPELINE,
) -> Iterator[Served]:
    """An engine on ``data_dir`` (the hash embedder unless given), its service and a
    REST client; a writer key and an admin key of tenant ``acme``."""
    settings = Settings(data_dir=data_dir, pipeline=pipeline)
    options: dict[str, Any] = {} if disk is None else {"disk": disk}
    engine = ContextEngine(build_stack(settings, embedder=embedder or HashEmbedder(64), **options))
    try:
        running = open_service(settings, engine=engine)
        try:
            writer = running.keys.create(TENANT, "bot", "writer").key
            admin = running.keys.create(TENANT, "ops", "admin").key
            with TestClient(create_app(running.service, mcp=False)) as client:
                yield Served(running, engine, client, writer, admin)
        finally:
            running.close()
    finally:
        engine.close()


@dataclass
class Ledger:
    """Every write a client was told succeeded (200 with ``queued``), and what else it
    was answered (status codes), from any number of threads."""

    acked: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)
    unkept_200s: list[dict[str, Any]] = field(default_factory=list)
    """200 answers for writes that were not queued: must stay empty."""
    answers: dict[int, int] = field(default_factory=dict)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, user: str, text: str, status: int, body: dict[str, Any] | None) -> None:
        with self.lock:
            self.answers[status] = self.answers.get(status, 0) + 1
            if status == 200 and body is not None:
                if body.get("queued") is not True:
                    self.unkept_200s.append(body)
                else:
                    self.acked.append((user, text, tuple(body["episode_ids"])))
            elif body is not None and len(self.bodies) < 50:
                self.bodies.append(body)

    def missing_from(self, engine: ContextEngine) -> list[str]:
        """Acknowledged writes whose episodes are not (all) in long-term memory."""
        return missing_from_index(lambda ids: _stored(engine, ids), self.acked)

    def report(self, case: str, missing: list[str]) -> None:
        """One line for the log (``pytest -s``): what was acknowledged and found."""
        print(
            f"\n[fault] {case}: {len(self.acked)} acknowledged, "
            f"{len(self.acked) - len(missing)} found, answers {dict(sorted(self.answers.items()))}"
        )


def _stored(engine: ContextEngine, ids: list[str]) -> dict[str, str]:
    records = engine.parts.longterm.get(MEMORIES, ids, tenant=TENANT)
    return {r.id: str(r.payload.get("text", "")) for r in records}


def missing_from_index(
    read: Callable[[list[str]], dict[str, str]], acked: list[tuple[str, str, tuple[str, ...]]]
) -> list[str]:
    """The texts among ``acked`` whose episodes ``read`` (ids -> stored text) lacks."""
    missing = []
    for start in range(0, len(acked), 200):
        chunk = acked[start : start + 200]
        stored = read([i for _, _, ids in chunk for i in ids])
        for _user, text, ids in chunk:
            kept = bool(ids) and all(i in stored for i in ids)
            if not kept or (len(ids) == 1 and stored[ids[0]] != text):
                missing.append(text)
    return missing


class Load:
    """``threads`` clients remembering distinct texts until stopped; each answer goes
    to the ledger (a transport error counts as status 0)."""

    def __init__(self, send: Callable[[str, str], Any], ledger: Ledger, threads: int = 3) -> None:
        self._send = send
        self._ledger = ledger
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)
        ]
        self.sent = 0

    def _run(self, n: int) -> None:
        i = 0
        while not self._stop.is_set():
            i += 1
            user = f"u{n}"
            text = f"Load note {uuid.uuid4().hex[:12]} from client {n}, number {i}."
            try:
                reply = self._send(user, text)
            except Exception:  # the server died under us: not acknowledged
                self._ledger.record(user, text, 0, None)
                time.sleep(0.05)
                continue
            body = _json(reply)
            self._ledger.record(user, text, reply.status_code, body)
            self.sent += 1
            if reply.status_code != 200:
                time.sleep(0.02)

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def _json(reply: Any) -> dict[str, Any] | None:
    try:
        body = reply.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")


# -- a small tmpfs (root, mount permitted) ------------------------------------------------


def can_mount_tmpfs(scratch: Path) -> bool:
    """True when this process may mount a tmpfs (root, and the kernel allows it)."""
    probe = scratch / f"mount-probe-{uuid.uuid4().hex[:6]}"
    probe.mkdir(parents=True)
    try:
        with tmpfs(probe, 1):
            return True
    except (OSError, subprocess.CalledProcessError):
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@contextlib.contextmanager
def tmpfs(where: Path, size_mib: int) -> Iterator[Path]:
    """A tmpfs of ``size_mib`` mounted at ``where`` (unmounted afterwards)."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(where)],
        check=True,
        capture_output=True,
        timeout=30,
    )
    try:
        yield where
    finally:
        for _ in range(50):
            done = subprocess.run(["umount", str(where)], capture_output=True, timeout=30)
            if done.returncode == 0:
                break
            time.sleep(0.2)  # a process still closing its files


class Ballast:
    """A file that eats a filesystem's free space down to what a test asks for."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def leave_free(self, mib: float) -> None:
        """Grow or shrink the ballast so that about ``mib`` MiB stay free."""
        current = self.path.stat().st_size if self.path.exists() else 0
        target = max(0, current + free_bytes(self.path.parent) - int(mib * MIB))
        if target < current:
            with self.path.open("r+b") as f:
                f.truncate(target)
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            block = b"\0" * MIB
            written = current
            while written < target:
                try:
                    written += os.write(fd, block[: min(len(block), target - written)])
                except OSError:
                    break  # full
        finally:
            os.close(fd)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def valkey_refuses_writes(client: Any, refuse: bool) -> None:
    """INJECTED ENOSPC: make a Valkey refuse every write (as MISCONF does on a full
    disk) by requiring a replica it does not have, or accept them again."""
    client.config_set("min-replicas-to-write", "1" if refuse else "0")


def small_policy(disk: FakeDisk) -> DiskPolicy:
    """The default thresholds over an injected probe."""
    return replace(DiskPolicy(), probe=disk.probe)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# -- `memstrata serve` in a subprocess ------------------------------------------------------


@dataclass
class ServeProcess:
    """A ``memstrata serve`` subprocess on free loopback ports over ``data_dir``."""

    url: str
    data_dir: Path
    process: subprocess.Popen[bytes]
    log: Path

    def valkey_pid(self) -> int | None:
        """The embedded Valkey's process id, from its lock file."""
        return valkey_pid_of(self.data_dir)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def valkey_pid_of(data_dir: Path) -> int | None:
    lock = data_dir / "valkey" / "valkey.lock"
    try:
        pid = json.loads(lock.read_text() or "{}").get("server_pid")
    except (OSError, ValueError):
        return None
    return int(pid) if pid else None


def serve_settings(path: Path) -> Path:
    """A settings file with the fast consumers of :data:`FAST_PIPELINE`."""
    fast = {"block_ms": 50, "claim_idle_ms": 1000, "max_deliveries": 5}
    path.write_text(json.dumps({"pipeline": fast}))
    return path


def offline_key(data_dir: Path, env: dict[str, str]) -> str:
    """An admin key of tenant ``acme`` made on the data directory (no service running)."""
    made = cli(
        "keys", "create", "--tenant", TENANT, "--agent", "ops", "--role", "admin",
        "--data-dir", str(data_dir), env=env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["key"])


def start_serve(data_dir: Path, log: Path, env: dict[str, str]) -> ServeProcess:
    """``memstrata serve`` (no readiness wait: see :func:`wait_serving`)."""
    port, grpc_port = free_port(), free_port()
    command = [
        sys.executable, "-m", "memstrata.cli", "serve", "--data-dir", str(data_dir),
        "--port", str(port), "--grpc-port", str(grpc_port),
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}
        )
    return ServeProcess(f"http://127.0.0.1:{port}", data_dir, process, log)


def wait_serving(served: ServeProcess) -> None:
    wait_ready(served.url, served.process, served.log)


def stop_serve(served: ServeProcess, sig: int = signal.SIGTERM) -> int:
    """Signal ``serve`` and wait for it; its return code."""
    if served.process.poll() is None:
        served.process.send_signal(sig)
    try:
        return served.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        served.process.kill()
        return served.process.wait()


def kill_orphan_valkey(data_dir: Path) -> None:
    """Stop a Valkey a failed test left running (its pid from the lock file)."""
    pid = valkey_pid_of(data_dir)
    if pid is not None and pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not pid_alive(pid), 10, "the orphaned Valkey to stop")


Reader = Callable[[list[str]], dict[str, str]]


def index_reader(data_dir: Path, dim: int = 384) -> tuple[Reader, Any]:
    """Read stored episode texts by id straight from the embedded index under
    ``data_dir`` (once nothing else holds it); returns (read, index to close)."""
    index = EdgeIndex(data_dir / "qdrant")
    index.ensure_collections(dim)

    def read(ids: list[str]) -> dict[str, str]:
        return {r.id: str(r.payload.get("text", "")) for r in index.retrieve(MEMORIES, ids, TENANT)}

    return read, index


class DropMidWrite:
    """INJECTED fault: the connection to Valkey breaks in the middle of a write, after
    ``after`` of its entries were sent, every time it is tried (so redis-py's own
    retries fail too). Entries are counted as the XADD commands to ``stream`` that
    reached the server: a transaction (MULTI ... EXEC) is cut after its ``after``-th
    XADD, before its EXEC, as a failing network would cut it."""

    def __init__(self, stream: str, after: int = 3) -> None:
        self._marker = f"$4\r\nXADD\r\n${len(stream)}\r\n{stream}\r\n".encode()
        self._after = after
        self.sent = 0
        self.drops = 0
        self._real: Any = None

    def __enter__(self) -> DropMidWrite:
        from redis.connection import AbstractConnection

        self._real = AbstractConnection.send_packed_command
        fault = self

        def send(conn: Any, command: Any, check_health: bool = True) -> None:
            fault._send(conn, command, check_health)

        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from redis.connection import AbstractConnection

        AbstractConnection.send_packed_command = self._real  # type: ignore[method-assign]

    def _send(self, conn: Any, command: Any, check_health: bool) -> None:
        import redis.exceptions

        chunks = [command] if isinstance(command, (str, bytes)) else list(command)
        data = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
        starts = []
        at = data.find(self._marker)
        while at >= 0:
            starts.append(data.rfind(b"*", 0, at))  # the command's array header
            at = data.find(self._marker, at + 1)
        room = self._after - self.sent
        if len(starts) <= room:
            self._real(conn, command, check_health)
            self.sent += len(starts)
            return
        self._real(conn, [data[: starts[room]]], check_health)
        self.drops += 1
        conn.disconnect()
        raise redis.exceptions.ConnectionError("connection dropped mid-write (injected)")
