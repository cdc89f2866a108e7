"""The embedded valkey-server: socket, persistence, single owner, start errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memstrata.clock import SystemClock
from memstrata.config import WorkingMemorySettings
from memstrata.errors import BackendUnavailableError
from memstrata.working import EmbeddedValkey, RedisBackend, WorkingMemory, valkey_binary
from memstrata.working.embedded import MAX_SOCKET_PATH_BYTES, socket_path_for


def _memory(server: EmbeddedValkey) -> WorkingMemory:
    return WorkingMemory(RedisBackend.from_url(server.url), WorkingMemorySettings(), SystemClock())


def test_data_survives_a_restart_on_the_same_dir(tmp_path: Path) -> None:
    with EmbeddedValkey(tmp_path) as server:
        wm = _memory(server)
        sess = wm.session("persist-1")
        sess.put_api_response("/e", {"p": 1}, {"v": [1, 2]})
        sess.add_pending("t1", "t2")
        wm.set_preference("u1", "ui_color", "blue", 0.9)
        backend = wm.backend
        assert isinstance(backend, RedisBackend)
        assert backend.client.config_get("appendonly") == {"appendonly": "yes"}
        assert backend.client.config_get("dir") == {"dir": str(tmp_path.resolve())}
        wm.close()
    assert (tmp_path / "appendonlydir").is_dir()
    assert not server.socket_path.exists()
    with EmbeddedValkey(tmp_path) as again:
        wm2 = _memory(again)
        sess2 = wm2.session("persist-1")
        assert sess2.get_api_response("/e", {"p": 1}).value == {"v": [1, 2]}
        assert sess2.pending() == {"t1", "t2"}
        assert wm2.get_preference("u1", "ui_color").value == "blue"
        wm2.close()


def test_long_data_dir_uses_a_short_socket(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    sock = socket_path_for(deep.resolve())
    assert len(os.fsencode(sock)) <= MAX_SOCKET_PATH_BYTES
    assert not str(sock).startswith(str(deep))
    assert socket_path_for(deep.resolve()) == sock  # stable for the same dir
    with EmbeddedValkey(deep) as server:
        assert server.socket_path == sock
        backend = RedisBackend.from_url(server.url)
        assert backend.ping()
        backend.close()
    assert socket_path_for(tmp_path) == tmp_path / "valkey.sock"


def test_second_server_on_a_live_dir_fails_clearly(tmp_path: Path) -> None:
    with EmbeddedValkey(tmp_path) as first:
        with pytest.raises(BackendUnavailableError, match="already served"):
            EmbeddedValkey(tmp_path).start()
        assert first.is_running()
    # Once the first stopped, the directory is free again.
    with EmbeddedValkey(tmp_path) as second:
        assert second.is_running()


def test_server_orphaned_by_a_crashed_owner_is_adopted(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os
        from memstrata.working import EmbeddedValkey, RedisBackend
        server = EmbeddedValkey({str(tmp_path)!r}).start()
        backend = RedisBackend.from_url(server.url)
        backend.set_string("left", "behind", None)
        print(server.pid, flush=True)
        os._exit(0)  # a crash: no stop(), no finalizers
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=30
    )
    assert out.returncode == 0, out.stderr
    orphan_pid = int(out.stdout.strip())
    server = EmbeddedValkey(tmp_path).start()
    try:
        assert server.adopted and server.pid == orphan_pid
        backend = RedisBackend.from_url(server.url)
        assert backend.get_string("left") == ("behind", -1)
        backend.close()
    finally:
        server.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(orphan_pid, 0)


def test_start_failure_reports_the_log_tail(tmp_path: Path) -> None:
    wrapper = tmp_path / "broken-valkey"
    wrapper.write_text(f'#!/bin/sh\nexec "{valkey_binary()}" "$@" --no-such-directive 1\n')
    wrapper.chmod(0o755)
    server = EmbeddedValkey(tmp_path / "data", binary=wrapper)
    with pytest.raises(BackendUnavailableError, match="no-such-directive"):
        server.start()
    assert server.pid is None
    # The failed start released the directory.
    with EmbeddedValkey(tmp_path / "data") as ok:
        assert ok.is_running()


def test_stopped_server_raises_backend_unavailable(tmp_path: Path) -> None:
    server = EmbeddedValkey(tmp_path).start()
    backend = RedisBackend.from_url(server.url, socket_timeout_s=0.5)
    assert backend.ping()
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(BackendUnavailableError):
        backend.ping()
    backend.close()
