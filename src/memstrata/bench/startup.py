"""``memstrata bench startup``: how long the command line takes to start and answer,
each row against ``python -c pass`` measured in the same run.

Every row is a fresh process (the way a user or a script runs the CLI), timed wall
clock from spawn to exit, ``runs`` times: the median and the spread (min, max). The
rows: the interpreter alone, ``import memstrata.cli``, ``memstrata --help``, a search
over ``--url`` against a ``memstrata serve`` the bench starts on free ports and a temp
data directory, a search that opens a temp data directory in process, and ``memstrata
serve`` on a fresh data directory from spawn to its first ``/healthz`` answer and to
``/readyz`` 200 (a serve without ``/readyz``, an older one, is ready at its first
``/healthz``), and ``memstrata mcp`` over stdio on a fresh data directory from spawn to
its answer to ``initialize``. Before the searches are timed, one memory is written (untimed) so each
search finds something.

``pythonpath`` puts another source tree first on the children's path: the same bench
times another checkout (e.g. the previous release's) on the same machine and load.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstrata.errors import BackendError, ValidationError

ROWS = (
    "python -c pass",
    "import memstrata.cli",
    "memstrata --help",
    "memstrata search --url",
    "memstrata search (in process)",
    "memstrata serve: first /healthz",
    "memstrata serve: /readyz 200",
    "memstrata mcp (stdio): initialize",
)
"""The rows, in the order printed; the first is every ratio's baseline."""

_IMPORT = (
    "import time; t = time.perf_counter(); import memstrata.cli; print(time.perf_counter() - t)"
)
_USER, _TEXT, _QUERY = (
    "bench-user",
    "I live in Lisbon and my dog is called Rex.",
    "Where do I live?",
)
_READY_S = 300.0  # model loading on a busy two-core machine; a real failure says why sooner


@dataclass(frozen=True)
class Row:
    """One row's command and its wall times (seconds)."""

    name: str
    command: str
    seconds: tuple[float, ...]

    def as_dict(self, baseline_median: float) -> dict[str, Any]:
        median = statistics.median(self.seconds)
        return {
            "name": self.name,
            "command": self.command,
            "runs": len(self.seconds),
            "median_s": round(median, 4),
            "min_s": round(min(self.seconds), 4),
            "max_s": round(max(self.seconds), 4),
            "vs_python": round(median / baseline_median, 2) if baseline_median > 0 else None,
        }


class _Children:
    """Runs the CLI (``python -m memstrata.cli``) in fresh processes with one environment."""

    def __init__(self, python: str, env: dict[str, str], cwd: Path) -> None:
        self.python, self.env, self.cwd = python, env, cwd

    def run(self, args: Sequence[str]) -> tuple[float, str]:
        """Wall seconds from spawn to exit, and stdout; BackendError when it fails."""
        wall, stdout, failed = self.attempt(args)
        if failed:
            raise BackendError(f"{' '.join(args[:4])}: {failed}")
        return wall, stdout

    def attempt(self, args: Sequence[str]) -> tuple[float, str, str | None]:
        """Wall seconds, stdout, and why it failed (None: exit 0)."""
        start = time.perf_counter()
        done = subprocess.run(
            [self.python, *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=_READY_S,
            check=False,
        )
        wall = time.perf_counter() - start
        if done.returncode == 0:
            return wall, done.stdout, None
        return wall, done.stdout, f"exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}"

    def cli(self, *args: str) -> tuple[float, str]:
        return self.run(["-m", "memstrata.cli", *args])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _until(what: str, attempt: Callable[[], bool], timeout_s: float, log: Path) -> None:
    """Call ``attempt`` until it is true; BackendError naming ``what`` after the timeout."""
    deadline = time.monotonic() + timeout_s
    while not attempt():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise BackendError(f"bench startup: {what} within {timeout_s:.0f} s; log: {tail}")
        time.sleep(0.25)


def _status(url: str, path: str) -> int | None:
    import httpx

    try:
        return httpx.get(f"{url}{path}", timeout=2.0).status_code
    except httpx.HTTPError:
        return None


@contextmanager
def _served(
    children: _Children, data: Path, log: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``memstrata serve`` on free ports over ``data`` (output to ``log``), and its URL;
    stopped (SIGTERM, then SIGKILL after 60 s) when the block ends."""
    port, grpc_port = _free_port(), _free_port()
    with log.open("w") as sink:
        server = subprocess.Popen(
            [
                *(children.python, "-m", "memstrata.cli", "serve", "--data-dir", str(data)),
                *("--port", str(port), "--grpc-port", str(grpc_port)),
            ],
            env=children.env,
            cwd=children.cwd,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        yield server, f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _serve_start(children: _Children, data: Path) -> tuple[float, float]:
    """Wall seconds from spawning ``memstrata serve`` on the fresh ``data`` to its first
    ``/healthz`` answer and to ``/readyz`` 200; the service is stopped after."""
    log = data.with_suffix(".log")
    start = time.perf_counter()
    with _served(children, data, log) as (server, url):
        answered = ready = None

        def poll() -> bool:
            nonlocal answered, ready
            if server.poll() is not None:
                raise BackendError(f"memstrata serve exited {server.returncode}: see {log}")
            health = _status(url, "/healthz")
            if health is None:
                return False
            now = time.perf_counter() - start
            answered = answered if answered is not None else now
            readiness = _status(url, "/readyz")
            if readiness == 200 or (readiness == 404 and health == 200):
                ready = now
            return ready is not None

        _until("the service answered /readyz", poll, _READY_S, log)
        assert answered is not None and ready is not None
        return answered, ready


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "memstrata-bench", "version": "1"},
    },
}


def _mcp_initialize(children: _Children, data: Path) -> float:
    """Wall seconds from spawning ``memstrata mcp`` (stdio) on the fresh ``data`` to its
    answer to one ``initialize`` request; the process is stopped after."""
    import json

    start = time.perf_counter()
    server = subprocess.Popen(
        [children.python, "-m", "memstrata.cli", "mcp", "--data-dir", str(data)],
        env=children.env,
        cwd=children.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(_INITIALIZE) + "\n")
        server.stdin.flush()
        answer = server.stdout.readline()
        wall = time.perf_counter() - start
        if '"result"' not in answer:
            raise BackendError(f"memstrata mcp did not answer initialize: {answer[-400:]!r}")
        return wall
    finally:
        server.kill()
        server.wait()


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def run_startup_bench(
    runs: int = 5,
    *,
    pythonpath: Path | None = None,
    python: str = sys.executable,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The start-up rows (see the module's docstring) as a report."""
    if runs < 1:
        raise ValidationError("runs", "must be at least 1")
    say = progress or (lambda _line: None)
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(pythonpath), env.get("PYTHONPATH", "")) if p
        )
    env.pop("MEMSTRATA_URL", None)  # the in-process rows open their own data directory
    env["COLUMNS"] = "100"  # the same help text, whatever the terminal
    load_before = os.getloadavg()
    timings: dict[str, list[float]] = {name: [] for name in ROWS}
    commands: dict[str, str] = {}
    import_only: list[float] = []
    with tempfile.TemporaryDirectory(prefix="memstrata-bench-startup-") as tmp:
        root = Path(tmp)
        children = _Children(python, env, root)

        def timed(name: str, command: str, args: Sequence[str]) -> str:
            commands[name] = command
            say(f"{name}: {runs} run(s)")
            stdout = ""
            for _ in range(runs):
                wall, stdout = children.run(args)
                timings[name].append(wall)
            return stdout

        timed(ROWS[0], "python -c pass", ["-c", "pass"])
        commands[ROWS[1]] = 'python -c "import memstrata.cli"'
        say(f"{ROWS[1]}: {runs} run(s)")
        for _ in range(runs):
            wall, printed = children.run(["-c", _IMPORT])
            timings[ROWS[1]].append(wall)
            import_only.append(float(printed.strip().splitlines()[-1]))
        timed(ROWS[2], "memstrata --help", ["-m", "memstrata.cli", "--help"])

        local = root / "local"
        say("writing one memory in process (untimed)")
        children.cli("remember", "--user", _USER, "--text", _TEXT, "--data-dir", str(local))
        search = ["search", "--user", _USER, "--query", _QUERY, "--json"]
        timed(
            ROWS[4],
            "memstrata search --data-dir DIR --user U --query Q --json",
            ["-m", "memstrata.cli", *search, "--data-dir", str(local)],
        )

        served = _serve_and_search(children, root, search, runs, say)
        commands[ROWS[3]] = "memstrata search --url URL --user U --query Q --json"
        timings[ROWS[3]] = served
        commands[ROWS[5]] = commands[ROWS[6]] = "memstrata serve --data-dir NEW --port P"
        say(f"memstrata serve to /healthz and /readyz: {runs} run(s)")
        for run in range(runs):
            answered, ready = _serve_start(children, root / f"fresh-{run}")
            timings[ROWS[5]].append(answered)
            timings[ROWS[6]].append(ready)
        commands[ROWS[7]] = "memstrata mcp --data-dir NEW (one initialize over stdio)"
        say(f"memstrata mcp initialize over stdio: {runs} run(s)")
        for run in range(runs):
            timings[ROWS[7]].append(_mcp_initialize(children, root / f"mcp-{run}"))
    baseline = statistics.median(timings[ROWS[0]])
    return {
        "benchmark": "bench startup",
        "runs": runs,
        "python": python,
        "pythonpath": None if pythonpath is None else str(pythonpath),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "rows": [
            Row(name, commands[name], tuple(timings[name])).as_dict(baseline) for name in ROWS
        ],
        "import_only_s": {
            "median": round(statistics.median(import_only), 4),
            "min": round(min(import_only), 4),
            "max": round(max(import_only), 4),
        },
    }


def _serve_and_search(
    children: _Children,
    root: Path,
    search: list[str],
    runs: int,
    say: Callable[[str], None],
) -> list[float]:
    """Start ``memstrata serve`` on free ports over a temp data dir, write one memory
    through it (retried until the service is ready), time ``runs`` searches, stop it."""
    data = root / "served"
    log = root / "serve.log"
    with _served(children, data, log) as (server, url):
        say(f"started memstrata serve on {url} (untimed)")

        def alive() -> bool:
            return server.poll() is None

        _until("the service answered /healthz", lambda: _healthy(url) or not alive(), _READY_S, log)
        if not alive():
            raise BackendError(f"memstrata serve exited {server.returncode}: see {log}")
        key_file = data / "admin.key"
        _until("the admin key was written", key_file.exists, _READY_S, log)
        children.env["MEMSTRATA_API_KEY"] = key_file.read_text().strip()
        try:
            remember = ["remember", "--user", _USER, "--text", _TEXT, "--url", url]
            # Ready when a write goes through (a starting service may answer 503 first).
            _until(
                "a write through --url succeeded",
                lambda: (
                    children.attempt(["-m", "memstrata.cli", *remember])[2] is None or not alive()
                ),
                _READY_S,
                log,
            )
            if not alive():
                raise BackendError(f"memstrata serve exited {server.returncode}: see {log}")
            say(f"memstrata search --url: {runs} run(s)")
            return [children.cli(*search, "--url", url)[0] for _ in range(runs)]
        finally:
            children.env.pop("MEMSTRATA_API_KEY", None)
