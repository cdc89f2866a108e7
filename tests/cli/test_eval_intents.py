"""``memstrata eval intents``: accuracy overall, per language and per intent, and the
fall-back rate, as JSON or tables; a bad split or file is a typed error."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli import app

runner = CliRunner()


def test_the_packaged_set_is_scored_as_json() -> None:
    result = runner.invoke(app, ["eval", "intents", "--split", "test", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["split"] == "test" and report["messages"] >= 100
    assert set(report["by_language"]) == {"en", "zh", "mixed"}
    assert {"respond", "order_status", "root_cause"} <= set(report["by_intent"])
    assert 0.0 <= report["fallback_rate"] <= 1.0 and 0.0 <= report["accuracy"] <= 1.0


def test_a_file_of_ones_own_and_the_tables(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    rows = [
        {"text": "我的快递到哪儿了？", "intent": "order_status", "lang": "zh", "split": "dev"},
        {"text": "Tell me something funny", "intent": "respond", "lang": "en", "split": "dev"},
    ]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    result = runner.invoke(app, ["eval", "intents", "--split", "dev", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert "split dev: 2 messages" in result.stdout and "fall-back rate" in result.stdout


def test_a_bad_split_or_label_is_a_typed_error(tmp_path: Path) -> None:
    bad = runner.invoke(app, ["eval", "intents", "--split", "train", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["type"] == "ValidationError"
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps({"text": "x", "intent": "nope", "lang": "en", "split": "dev"}))
    unknown = runner.invoke(app, ["eval", "intents", "--split", "dev", "--data", str(data)])
    assert unknown.exit_code == 2 and "nope" in unknown.output
