"""``memstrata eval replycheck``: precision, recall and F1 of the reply check per split,
language and kind, as JSON or tables; the packaged set's shape; a bad split or file is a
typed error naming the field."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.eval.replycheck import load_pairs

runner = CliRunner()
KINDS = {
    "amount",
    "date",
    "id",
    "negation",
    "contradiction",
    "same_value",
    "unrelated_number",
    "unmentioned_number",
    "paraphrase",
}


def test_the_packaged_set_is_bilingual_half_conflicts_and_split() -> None:
    pairs = [p for p in load_pairs() if p["split"] in ("dev", "test")]
    assert len(pairs) >= 200 and len({p["id"] for p in pairs}) == len(pairs)
    langs = Counter(p["lang"] for p in pairs)
    assert set(langs) == {"en", "zh"} and 0.4 <= langs["zh"] / len(pairs) <= 0.6
    assert 0.4 <= sum(p["conflict"] for p in pairs) / len(pairs) <= 0.6
    for split in ("dev", "test"):
        rows = [p for p in pairs if p["split"] == split]
        assert len(rows) >= 100 and {p["kind"] for p in rows} == KINDS


def test_the_blind_split_is_its_own_file_scored_apart() -> None:
    every = load_pairs()
    blind = [p for p in every if p["split"] == "blind"]
    assert len(blind) >= 150 and len({p["id"] for p in every}) == len(every)
    assert {p["lang"] for p in blind} == {"en", "zh", "mixed"}
    assert {p["kind"] for p in blind} == {"amount", "date", "id", "negation", "fact"}
    assert 0.4 <= sum(p["conflict"] for p in blind) / len(blind) <= 0.6
    result = runner.invoke(app, ["eval", "replycheck", "--split", "blind", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["pairs"] == len(blind) and set(report["by_split"]) == {"blind"}


def test_the_dev_split_is_scored_as_json() -> None:
    result = runner.invoke(app, ["eval", "replycheck", "--split", "dev", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["split"] == "dev" and report["pairs"] >= 100
    assert report["precision"] >= 0.9 and report["recall"] >= 0.9, report["errors"]
    assert set(report["by_language"]) == {"en", "zh"} and set(report["by_kind"]) == KINDS
    assert set(report["by_split"]) == {"dev"}
    for lang in ("en", "zh"):
        assert report["by_language"][lang]["f1"] >= 0.9


def test_a_file_of_ones_own_and_the_tables(tmp_path: Path) -> None:
    data = tmp_path / "mine.jsonl"
    rows = [
        {
            "id": "a",
            "split": "dev",
            "lang": "zh",
            "kind": "amount",
            "conflict": True,
            "reply": "你的预算是3000元。",
            "memories": ["我的预算是5000元。"],
        },
        {
            "id": "b",
            "split": "dev",
            "lang": "en",
            "kind": "same_value",
            "conflict": False,
            "reply": "Your budget is ¥5000.",
            "memories": ["user budget: 5,000 yuan"],
        },
    ]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    result = runner.invoke(app, ["eval", "replycheck", "--split", "all", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert "split all: 2 pairs (1 conflicts), precision 1.000, recall 1.000" in result.stdout
    assert "amount" in result.stdout and "same_value" in result.stdout


def test_a_bad_split_or_file_is_a_typed_error(tmp_path: Path) -> None:
    bad = runner.invoke(app, ["eval", "replycheck", "--split", "train", "--json"])
    assert bad.exit_code == 2
    error = json.loads(bad.stdout)["error"]
    assert error["type"] == "ValidationError" and "split" in json.dumps(error)
    data = tmp_path / "bad.jsonl"
    data.write_text(
        json.dumps({"id": "x", "split": "dev", "lang": "en", "kind": "amount", "reply": "r"})
        + "\nnot json\n"
    )
    broken = runner.invoke(app, ["eval", "replycheck", "--split", "dev", "--data", str(data)])
    assert broken.exit_code == 2 and "line 1" in broken.output and "conflict" in broken.output
    missing = runner.invoke(app, ["eval", "replycheck", "--data", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and "data" in missing.output
