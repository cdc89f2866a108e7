"""The CLI is written once against the client: inspect, ingest, consolidate, cards and
feedback report never fork on --url nor open the engine themselves (the same commands
run in process and over the wire: tests/service/test_cli_remote.py)."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli import app, feedback, files, memory

COMMANDS = {
    "inspect": memory.inspect,
    "ingest": memory.ingest,
    "consolidate": memory.consolidate,
    "cards": memory.cards,
    "feedback report": feedback.feedback_report,
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_command_has_one_path_through_the_client(name: str) -> None:
    source = inspect.getsource(COMMANDS[name])
    assert "open_client(url" in source
    for fork in ("if url", "if not url", "open_engine", "open_remote", "engine."):
        assert fork not in source, (name, fork)


def test_ingest_reads_the_suffixes_the_engine_parses() -> None:
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
