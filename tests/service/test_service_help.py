"""The service commands' help (issue 34, "Why": `serve --help` named none of the
environment variables; `--host`, `--grpc-port`, `--tenant`, `keys create --agent /
--ttl-days / --rate-per-s` had no description; `keys create` rejected `--json`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from memstrata.service.commands import register

SRC = Path(__file__).resolve().parents[2] / "src" / "memstrata"
# What `serve` runs reads its environment in these modules (settings, the stack's
# wiring, the model cache, the service itself); the client's MEMSTRATA_URL and
# MEMSTRATA_API_KEY are not read by `serve`.
SERVE_READS = (
    "config.py",
    "wiring.py",
    "embed",
    "disk.py",
    "service/server.py",
    "service/startup.py",
    "service/workers.py",
)
LITERAL = re.compile(r"""["'](MEMSTRATA_[A-Z_]+)["']""")  # a name the code reads


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app, lambda url, key: None)  # type: ignore[arg-type,return-value]
    return app


def _variables_serve_reads() -> set[str]:
    found: set[str] = set()
    for name in SERVE_READS:
        path = SRC / name
        for source in [path] if path.is_file() else sorted(path.rglob("*.py")):
            text = source.read_text()
            found |= set(LITERAL.findall(text))
    return found


def test_serve_help_names_every_environment_variable_it_reads() -> None:
    wanted = _variables_serve_reads()
    assert {"MEMSTRATA_SETTINGS", "MEMSTRATA_REDIS_URL", "MEMSTRATA_MODEL_CACHE"} <= wanted
    shown = CliRunner().invoke(_app(), ["serve", "--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    missing = sorted(v for v in wanted if v not in shown.output)
    assert not missing, f"serve --help does not name {missing}"


def test_every_option_of_the_service_commands_is_described() -> None:
    command = typer.main.get_command(_app())
    assert getattr(command, "commands", None)
    undescribed: list[str] = []

    def walk(cmd: Any, path: str) -> None:
        for param in cmd.params:
            if param.param_type_name == "option" and not (param.help or "").strip():
                undescribed.append(f"{path} {param.opts[0]}")
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(command, "memstrata")
    assert not undescribed, f"options without help: {undescribed}"


def test_keys_commands_take_json(tmp_path: Path) -> None:
    runner = CliRunner()
    data_dir = str(tmp_path / "data")
    made = runner.invoke(
        _app(),
        [
            *("keys", "create", "--tenant", "acme", "--agent", "bot", "--role", "reader"),
            *("--data-dir", data_dir, "--json"),
        ],
    )
    assert made.exit_code == 0, made.output
    key_id = json.loads(made.stdout)["info"]["key_id"]
    listed = runner.invoke(_app(), ["keys", "list", "--data-dir", data_dir, "--json"])
    assert listed.exit_code == 0, listed.output
    assert key_id in {k["key_id"] for k in json.loads(listed.stdout)["keys"]}
    revoked = runner.invoke(_app(), ["keys", "revoke", key_id, "--data-dir", data_dir, "--json"])
    assert revoked.exit_code == 0, revoked.output
    assert json.loads(revoked.stdout)["revoked"] is True
