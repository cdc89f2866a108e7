"""Start-up failures are one line with their own exit code (issue 34, "Why": a port in
use logged "serving" then died in a 40-line traceback; a data dir that is a file or
not writable, and a bad settings file, were 40-80-line tracebacks).

Each case runs the real `memstrata serve` and checks: the exit code of the table in
docs/service.md ("Start-up failures"), exactly one line on stderr naming the problem
and the fix, no traceback, and nothing saying it serves.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.service.support import START_TIMEOUT_S, free_port

from memstrata.working import EmbeddedValkey


class ExitCode:
    """docs/service.md, "Start-up failures" (the documented contract, spelled out)."""

    PORT_IN_USE = 3
    DATA_DIR_NOT_A_DIRECTORY = 4
    DATA_DIR_NOT_WRITABLE = 5
    BAD_SETTINGS = 6
    DATA_DIR_IN_USE = 7
    VALKEY_DID_NOT_START = 8


def _serve(
    data_dir: Path, *, port: int | None = None, grpc_port: int | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "memstrata.cli", "serve", "--data-dir", str(data_dir),
        "--port", str(port or free_port()), "--grpc-port", str(grpc_port or free_port()),
    ]  # fmt: skip
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
        env={**os.environ, **env},
    )


@contextmanager
def _listening() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        yield int(held.getsockname()[1])


def _one_line(done: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    text = done.stderr
    assert done.returncode == code, f"exit {done.returncode}, wanted {code}: {text}"
    assert "Traceback" not in text and "serving" not in text, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert lines[0].startswith("memstrata: cannot start: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_the_rest_port_in_use(tmp_path: Path) -> None:
    with _listening() as port:
        done = _serve(tmp_path / "data", port=port)
    _one_line(done, ExitCode.PORT_IN_USE, f"REST port {port}", "--port")
    assert not (tmp_path / "data" / "valkey").exists()  # nothing started


def test_the_grpc_port_in_use(tmp_path: Path) -> None:
    with _listening() as port:
        done = _serve(tmp_path / "data", grpc_port=port)
    _one_line(done, ExitCode.PORT_IN_USE, f"gRPC port {port}", "--grpc-port")


def test_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    done = _serve(tmp_path / "data")
    _one_line(done, ExitCode.DATA_DIR_NOT_A_DIRECTORY, "is a file", "--data-dir")


def test_a_data_dir_that_cannot_be_written(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root writes through any mode: a directory of sysfs refuses even root.
        data_dir = Path("/sys")
    else:
        data_dir = tmp_path / "data"
        data_dir.mkdir()
        data_dir.chmod(0o500)
    try:
        done = _serve(data_dir)
    finally:
        if data_dir != Path("/sys"):
            data_dir.chmod(0o700)
    _one_line(done, ExitCode.DATA_DIR_NOT_WRITABLE, "cannot be written", str(data_dir))


def test_a_bad_settings_file(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"longterm": {"no_such_setting": 1}}')
    done = _serve(tmp_path / "data", MEMSTRATA_SETTINGS=str(settings))
    _one_line(done, ExitCode.BAD_SETTINGS, "longterm.no_such_setting", "MEMSTRATA_SETTINGS")


def test_a_data_dir_another_process_serves(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedValkey(data_dir / "valkey"):  # what a running `serve` holds
        done = _serve(data_dir)
    _one_line(done, ExitCode.DATA_DIR_IN_USE, "already served", "--data-dir")


def test_an_embedded_valkey_that_cannot_start(tmp_path: Path) -> None:
    manifest = tmp_path / "data" / "valkey" / "appendonlydir" / "appendonly.aof.manifest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("not a manifest\n")  # a damaged append-only file: Valkey exits
    done = _serve(tmp_path / "data")
    line = _one_line(done, ExitCode.VALKEY_DID_NOT_START, "Valkey did not start", "valkey.log")
    assert "manifest" in line  # its log's reason, quoted


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    done = _serve(tmp_path / "data", MEMSTRATA_DEBUG="1")
    assert done.returncode == ExitCode.DATA_DIR_NOT_A_DIRECTORY
    assert "Traceback" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("memstrata: cannot start: ")


def test_mcp_reports_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    done = subprocess.run(
        [sys.executable, "-m", "memstrata.cli", "mcp", "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    _one_line(done, ExitCode.DATA_DIR_NOT_A_DIRECTORY, "is a file")
