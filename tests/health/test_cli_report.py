"""``memstrata report`` writes the Markdown and the HTML report."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli import app

runner = CliRunner()


def test_report_writes_both_files(tmp_path: Path) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    args = ["report", "--since", "24h", "--out", str(out), "--data-dir", str(data), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    markdown = Path(written["markdown"]).read_text(encoding="utf-8")
    page = Path(written["html"]).read_text(encoding="utf-8")
    assert Path(written["markdown"]) == out / "context_health_report.md"
    assert Path(written["html"]) == out / "context_health_report.html"
    assert markdown.startswith("# Context health report")
    assert "for the last 1d" in markdown and "Immutable violations" in markdown
    assert page.startswith("<!DOCTYPE html>") and page.count('<svg class="chart"') == 9
    assert written["samples"] == 1
    # Samples persist in the data directory's Valkey: a second run sees both.
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["samples"] == 2


def test_report_rejects_a_bad_window(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["report", "--since", "seven days", "--data-dir", str(tmp_path), "--json"]
    )
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["type"] == "ValidationError"
