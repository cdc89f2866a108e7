"""``memstrata bench ingest --json``: one JSON document with the promised numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.bench.ingest import generate_turns
from memstrata.cli import app


def test_generated_turns_are_varied_and_bilingual() -> None:
    turns = generate_turns(200)
    assert len(set(turns)) == 200  # no user repeats a turn (the filter would drop it)
    assert len({text for _, text in turns}) > 100
    assert any("我" in text for _, text in turns) and any("I " in text for _, text in turns)
    assert generate_turns(200) == turns  # deterministic


def test_bench_ingest_prints_one_json_document(tmp_path: Path) -> None:
    args = ["bench", "ingest", "--json", "--turns", "40", "--batch-size", "16"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path / "bench")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"turns_per_s", "embedder_per_s", "ratio", "rss_mb_per_10k"} <= set(report)
    assert report["turns"] == 40 and report["not_queued"] == 0
    assert report["units_stored"] >= 30 and report["search_found_last_user"]
    assert report["turns_per_s"] > 0 and report["embedder_per_s"] > 0
    expected = report["turns_per_s"] / report["embedder_per_s"]
    assert report["ratio"] == pytest.approx(expected, rel=0.02)  # both were rounded
