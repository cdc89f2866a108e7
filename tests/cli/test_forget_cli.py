"""``memstrata forget --no-wait`` starts a job of the service; locally it is refused
(a job of the CLI's own process would end with it)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli import app

runner = CliRunner()


def test_no_wait_needs_a_service(tmp_path: Path) -> None:
    args = ["forget", "--user", "u1", "--no-wait", "--json", "--data-dir", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ValidationError" and error["message"].startswith("wait: ")
    assert list(tmp_path.iterdir()) == []  # refused before the data dir was opened
