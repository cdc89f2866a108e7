"""The CLI starts at once: help, --version and --url commands import no engine, no
model runtime and no server framework; every option is described; `bench startup`
prints every row. (On 054f6dd `import memstrata.cli` imported the engine, the
retrieval package and the models' runtimes, and there was no --version.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memstrata import cli
from memstrata.cli import app
from memstrata.cli.lazy import SERVICE_COMMANDS, LazyCommand

HEAVY = (
    "memstrata.engine",
    "memstrata.retrieval",
    "memstrata.embed",
    "numpy",
    "onnxruntime",
    "qdrant_edge",
    "fastapi",
    "grpc",
    "mcp",
)


def _commands(command: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf command of the tree with its path (the service's loaded)."""
    if isinstance(command, LazyCommand):
        command = command.load()
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield path, command
        return
    for name, sub in subcommands.items():
        yield from _commands(sub, f"{path} {name}".strip())


def _heavy_after(code: str) -> list[str]:
    """The heavy modules loaded by ``code`` run in a fresh interpreter."""
    probe = (
        f"import json, sys\n{code}\nsys.stdout.write('\\n@@' + json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=False
    )
    assert "@@" in done.stdout, done.stderr[-2000:]
    loaded = json.loads(done.stdout.rsplit("@@", 1)[1])
    return [n for n in loaded if any(n == h or n.startswith(h + ".") for h in HEAVY)]


def _run_app(*argv: list[str]) -> str:
    """Code that runs the app once per argv, as the console script would."""
    calls = "\n".join(f"try:\n    app({argv_!r})\nexcept SystemExit:\n    pass" for argv_ in argv)
    return f"from memstrata.cli import app\n{calls}"


def test_help_and_version_import_no_engine_nor_runtime() -> None:
    every = [p.split() for p, _ in _commands(typer.main.get_command(app))]
    groups = sorted({tuple(p[:-1]) for p in every if len(p) > 1})
    argvs = [["--help"], ["--version"], *[[*g, "--help"] for g in groups]]
    argvs += [[*p, "--help"] for p in every]
    assert _heavy_after(_run_app(*argvs)) == []


URL_SEARCH = ["search", "--url", "http://127.0.0.1:9", "--user", "u", "--query", "q", "--json"]


def test_the_mcp_server_answers_initialize_before_importing_the_engine() -> None:
    # `memstrata mcp` over stdio imports this module before it answers `initialize`:
    # with the operation table at its top it imported the engine's modules first (8.3 s
    # to `initialize` on a busy machine; `bench startup` has the row).
    heavy = _heavy_after(
        "from memstrata.service.mcp import build_server, run_stdio\n"
        "from memstrata.service.local import StartingLocalService"
    )
    assert [n for n in heavy if n.startswith(("memstrata.", "numpy", "onnxruntime"))] == []


def test_a_url_command_imports_only_the_client() -> None:
    # Nothing listens on port 9: the search fails having loaded the client only.
    assert _heavy_after(_run_app(URL_SEARCH)) == []


def test_an_unreachable_service_is_one_typed_error() -> None:
    done = CliRunner().invoke(app, URL_SEARCH)
    assert done.exit_code == 2, done.output
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "BackendUnavailableError"
    assert "http://127.0.0.1:9 did not answer" in error["message"]


def test_version_prints_the_installed_version() -> None:
    try:
        expected = version("ctxstrata")
    except PackageNotFoundError:
        expected = "0+unknown"
    done = subprocess.run(
        [sys.executable, "-m", "memstrata.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"memstrata {expected}\n"), done.stderr


def test_every_option_and_argument_is_described() -> None:
    undescribed = {
        (path, param.opts[0])
        for path, command in _commands(typer.main.get_command(app))
        for param in command.params
        if not (getattr(param, "help", None) or "").strip()
    }
    assert undescribed == set()


def test_every_command_that_prints_data_has_json() -> None:
    missing = [
        path
        for path, command in _commands(typer.main.get_command(app))
        if path.split()[0] not in {"serve", "serve-demo", "mcp", "wait", "proxy"}  # print no data
        and not any("--json" in param.opts for param in command.params)
    ]
    assert missing == []


def test_the_service_commands_are_listed_as_the_service_registers_them() -> None:
    from memstrata.service.commands import register

    holder = typer.Typer()
    register(holder, lambda url, key: None)  # type: ignore[arg-type, return-value]
    real = typer.main.get_command(holder)
    assert isinstance(real, typer.core.TyperGroup)
    assert sorted(real.commands) == sorted(SERVICE_COMMANDS)
    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)
    for name, line in SERVICE_COMMANDS.items():
        listed = root.commands[name]
        assert isinstance(listed, LazyCommand)
        assert listed.load().get_short_help_str(limit=200) == line


def test_the_console_script_and_the_module_run_the_same_app() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memstrata.cli", "search", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "--query" in done.stdout, done.stderr
    import tomllib

    pyproject = tomllib.loads(
        Path(__file__).resolve().parents[2].joinpath("pyproject.toml").read_text()
    )
    assert pyproject["project"]["scripts"]["memstrata"] == "memstrata.cli:app"


@pytest.mark.slow
def test_bench_startup_prints_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.bench.startup import ROWS

    monkeypatch.setattr(cli.out, "width", 200)  # one line per row
    done = CliRunner().invoke(app, ["bench", "startup", "--runs", "1"])
    assert done.exit_code == 0, done.output
    for row in ROWS:
        assert row in done.stdout
    assert "x python -c pass" in done.stdout
