"""The CLI is written once against the client: inspect, ingest, consolidate, cards and
feedback report never fork on --url nor open the engine themselves (the same commands
run in process and over the wire: tests/service/test_cli_remote.py)."""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memstrata.cli import app

COMMANDS = ("inspect", "ingest", "consolidate", "cards", "feedback report")


def _callback(name: str) -> Callable[..., object]:
    """The function behind ``memstrata NAME`` as the app registers it (wherever it lives)."""
    command: Any = typer.main.get_command(app)
    for part in name.split():  # a group's commands (typer may vendor its own click)
        command = command.commands[part]
    callback: Callable[..., object] = command.callback
    return callback


@pytest.mark.parametrize("name", COMMANDS)
def test_the_command_has_one_path_through_the_client(name: str) -> None:
    source = inspect.getsource(_callback(name))
    assert "open_client(url" in source
    for fork in ("if url", "if not url", "open_engine", "open_remote", "engine."):
        assert fork not in source, (name, fork)


def test_ingest_reads_the_suffixes_the_engine_parses() -> None:
    from memstrata.cli import files
    from memstrata.knowledge.parsing import SUPPORTED_SUFFIXES, format_for_suffix

    assert set(files.SUFFIXES) == set(SUPPORTED_SUFFIXES)
    assert all(str(format_for_suffix(s)) == f for s, f in files.SUFFIXES.items())


def test_deadletters_list_pages_without_a_deprecated_call(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(
            app, ["deadletters", "list", "--data-dir", str(tmp_path / "d"), "--json"]
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"dead_letters": [], "next_after": None}
    deprecated = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert not [w for w in deprecated if "dead_letters" in str(w.message)], deprecated
