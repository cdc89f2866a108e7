"""``memstrata bench write --json``: one JSON document with the promised numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.bench.write import generate_turns
from memstrata.cli import app


def test_generated_turns_are_varied_and_bilingual() -> None:
    turns = generate_turns(200)
    assert len(set(turns)) == 200  # no user repeats a turn (the filter would drop it)
    assert len({text for _, text in turns}) > 100
    assert any("我" in text for _, text in turns) and any("I " in text for _, text in turns)
    assert generate_turns(200) == turns  # deterministic


def test_bench_write_prints_one_json_document(tmp_path: Path) -> None:
    root = tmp_path / "bench"
    root.mkdir()
    (root / "keep.txt").write_text("the user's own file")
    args = ["bench", "write", "--json", "--turns", "40", "--batch-size", "16"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(root)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {"turns_per_s", "embedder_turns_per_s", "ratio", "stage_s", "rss_mb_per_10k"} <= set(
        report
    )
    assert report["turns"] == 40 and report["not_queued"] == 0
    # Every turn is an episode; the facts extracted from them come on top.
    assert report["episodes_stored"] == 40 and report["units_written"] >= 30
    assert report["points_stored"] > 40 and report["search_found_last_user"]
    # The raw embedder replays what the run's model embedded: every episode and fact.
    assert report["embedder_texts"] >= report["episodes_written"] + 30
    assert report["turns_per_s"] > 0 and report["embedder_turns_per_s"] > 0
    expected = report["turns_per_s"] / report["embedder_turns_per_s"]
    assert report["ratio"] == pytest.approx(expected, rel=0.02)  # both were rounded
    assert set(report["stage_s"]) >= {"extract", "embed", "facts", "upsert"}
    # The run wrote into a directory of its own; what was there is untouched.
    assert (root / "keep.txt").read_text() == "the user's own file"
    assert Path(report["data_dir"]).parent == root
    again = CliRunner().invoke(app, [*args, "--data-dir", str(root)])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["data_dir"] != report["data_dir"]
