"""The CLI: --json prints exactly one JSON document; errors are typed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import ContextEngine
from memstrata.cli import app
from memstrata.config import settings_from_env

runner = CliRunner()


def run_json(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # the whole stdout is one document


def test_remember_search_inspect(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    stored = run_json(
        "remember",
        "--user",
        "u1",
        "--text",
        "I live in Chengdu, email me at a.b@example.com",
        "--data-dir",
        data,
    )
    assert stored["text"] == "I live in Chengdu, email me at [REDACTED:email]"
    assert stored["queued"] and stored["written"]
    run_json(
        "remember", "--user", "u1", "--text", "My favourite tea is longjing.", "--data-dir", data
    )
    run_json("remember", "--user", "u2", "--text", "I live in Berlin.", "--data-dir", data)
    found = run_json(
        "search",
        "--user",
        "u1",
        "--query",
        "where does the user live",
        "--k",
        "5",
        "--data-dir",
        data,
    )
    texts = [r["text"] for r in found["results"]]
    assert any("Chengdu" in t for t in texts) and any("longjing" in t for t in texts)
    assert all("Berlin" not in r["text"] for r in found["results"])
    report = run_json("inspect", "--session", "nobody", "--data-dir", data)
    assert report == {"session_id": "nobody", "l1": None, "l2": [], "pending_tasks": []}


def test_bad_input_gets_a_typed_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["remember", "--user", "bad user", "--text", "x", "--json", "--data-dir", str(tmp_path)],
    )
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ValidationError" and error["message"].startswith("user_id:")
    result = runner.invoke(
        app,
        [
            "search",
            "--user",
            "u1",
            "--query",
            "x",
            "--k",
            "0",
            "--json",
            "--data-dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2 and json.loads(result.stdout)["error"]["message"].startswith("k:")


@pytest.mark.slow
def test_demo_runs_end_to_end_as_a_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "MEMSTRATA_REDIS_URL": "", "MEMSTRATA_QDRANT_URL": ""}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "memstrata.cli",
            "demo",
            "--json",
            "--data-dir",
            str(tmp_path / "demo"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    titles = [s["title"] for s in doc["steps"]]
    assert titles == ["step 1 - fetch_sensor_data (D123)", "step 7 - generate_report"]
    first, report = (s["bundle"] for s in doc["steps"])
    layers = {i["layer"] for i in report["items"]}
    assert layers == {"L1", "L2", "L3"}
    reading = next(i for i in first["items"] if i["name"] == "sensor_reading")
    assert reading["content"]["debug"] == "retry with Authorization: Bearer [REDACTED:jwt]"
    assert doc["series_points_kept"] == 1000
    assert doc["step5_ttl_s"]["after_read"] > doc["step5_ttl_s"]["before_read"] - 1
    assert all("sk-proj-" not in text for text in doc["stored_memories"])
    assert {r["kind"] for r in doc["redactions"]} >= {"api_key", "jwt"}


def test_ingest_is_incremental(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "sop.md").write_text(
        "# Vibration\n\nCompare RMS velocity.\n\n## Alarm\n\nAbove 3.5 mm/s.\n"
    )
    data = str(tmp_path / "d")
    first = run_json("ingest", str(docs), "--data-dir", data)
    assert (first["files_added"], first["chunks_added"], first["errors"]) == (1, 2, [])
    second = run_json("ingest", str(docs), "--data-dir", data)
    assert (second["files_skipped"], second["chunks_added"]) == (1, 0)


def test_consolidate_and_restore_report_as_json(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    run_json("remember", "--user", "u1", "--text", "I live in Hangzhou.", "--data-dir", data)
    report = run_json("consolidate", "--data-dir", data)
    assert set(report["memories"]) >= {"merged_duplicates", "compressed", "cold_faded"}
    assert report["hot_knowledge"]["default"] == {"merged": 0, "duplicates": 0, "expired": 0}
    missing = "00000000-0000-4000-8000-000000000000"
    assert run_json("restore", missing, "--data-dir", data)["restored"] == []


def test_forget_a_user_and_a_memory(tmp_path: Path) -> None:
    data = str(tmp_path / "f")
    stored = run_json("remember", "--user", "u1", "--text", "I live in Lhasa.", "--data-dir", data)
    run_json("remember", "--user", "u2", "--text", "I live in Lhasa too.", "--data-dir", data)
    (fact,) = [f for f in stored["facts"] if f["attribute"] == "city"]
    one = run_json("forget", "--id", fact["id"], "--data-dir", data)
    assert one["points_deleted"] >= 1 and one["keys_deleted"] == 1
    report = run_json("forget", "--user", "u1", "--data-dir", data)
    assert report["tenant"] == "default" and report["points_deleted"] >= 1
    found = run_json("search", "--user", "u1", "--query", "Lhasa", "--data-dir", data)
    assert found["results"] == []
    kept = run_json("search", "--user", "u2", "--query", "Lhasa", "--data-dir", data)
    assert any("Lhasa" in r["text"] for r in kept["results"])
    both = runner.invoke(app, ["forget", "--json", "--data-dir", data])
    assert both.exit_code == 2
    assert json.loads(both.stdout)["error"]["type"] == "ValidationError"


def test_forget_a_store_namespace(tmp_path: Path) -> None:
    data = tmp_path / "s"
    with ContextEngine.open(settings_from_env(data_dir=data)) as engine:
        engine.store_put(("memories", "u1"), "diet", {"text": "no peanuts"})
        engine.store_put(("memories", "u2"), "diet", {"text": "no shellfish"})
    prefix = ["--store-namespace", "memories", "--store-namespace", "u1"]
    report = run_json("forget", *prefix, "--data-dir", str(data))
    assert report["points_deleted"] == 1
    with ContextEngine.open(settings_from_env(data_dir=data)) as engine:
        assert engine.store_get(("memories", "u1"), "diet") is None
        assert engine.store_get(("memories", "u2"), "diet") is not None
