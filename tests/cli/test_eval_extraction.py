"""``memstrata eval extraction``: one JSON document, typed errors, the optional LLM run."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.cli import app

runner = CliRunner()

ROWS = [
    {
        "id": "en-move-001",
        "lang": "en",
        "split": "dev",
        "category": "move",
        "role": "user",
        "text": "I moved to Chengdu last month.",
        "facts": [{"subject": "user", "attribute": "city", "value": "Chengdu", "kind": "fact"}],
    },
    {
        "id": "zh-none-001",
        "lang": "zh",
        "split": "test",
        "category": "none",
        "role": "user",
        "text": "你好，最近怎么样？",
        "facts": [],
    },
    {
        "id": "zh-sequence-001",
        "lang": "zh",
        "split": "test",
        "category": "sequence",
        "role": "user",
        "sequence": ["我住在杭州。", "我现在搬去成都住了。"],
        "final": {"subject": "user", "attribute": "city", "value": "成都"},
    },
]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_the_packaged_set_prints_one_json_document() -> None:
    result = runner.invoke(app, ["eval", "extraction", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # the whole stdout is one document
    assert report["data"]["source"] == "statements.jsonl + heldback.jsonl + blind.jsonl"
    assert report["data"]["tuned_on"] == ["dev", "dev2"]
    assert report["scored"] == "facts and events"
    rules = report["results"]["rules"]
    assert set(rules) == {"dev", "dev2", "test", "heldback", "blind", "all"}  # each apart
    # Every split's update sequences also went through the product's write path.
    assert set(report["updates"]) == {"dev", "dev2", "test", "heldback", "blind"}
    assert "llm" not in report["results"]  # no endpoint, no LLM run
    for split in ("dev", "test"):
        assert rules[split]["precision"] >= 0.95 and rules[split]["recall"] >= 0.85
        assert rules[split]["supersede"]["accuracy"] == 1.0
        assert rules[split]["meets_targets"]


def test_a_split_and_a_data_file(tmp_path: Path) -> None:
    data = write_rows(tmp_path / "set.jsonl", ROWS)
    result = runner.invoke(app, ["eval", "extraction", "--data", str(data), "--split", "test"])
    assert result.exit_code == 0, result.output
    assert "supersede accuracy: 1.000 (1/1)" in result.stdout
    document = runner.invoke(
        app, ["eval", "extraction", "--data", str(data), "--split", "dev", "--json"]
    )
    rules = json.loads(document.stdout)["results"]["rules"]
    assert list(rules) == ["dev"]
    assert rules["dev"]["rows"] == 1 and rules["dev"]["matched"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--split", "train"], "split: must be one of dev, dev2, test, heldback, blind, all"),
        (["--llm-base-url", "http://127.0.0.1:9"], "llm_model:"),
    ],
)
def test_bad_options_are_typed_errors(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["eval", "extraction", *args, "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ValidationError" and error["message"].startswith(message)


def test_a_malformed_row_is_a_dataset_error(tmp_path: Path) -> None:
    item = {"subject": "user", "attribute": "city", "kind": "fact"}
    broken = [ROWS[0], {**ROWS[1], "facts": [item]}]
    data = write_rows(tmp_path / "broken.jsonl", broken)
    result = runner.invoke(app, ["eval", "extraction", "--data", str(data), "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "DatasetError" and error["http"] == 422
    assert "line 2 (zh-none-001): facts[0].value: missing" in error["message"]


@pytest.fixture
def llm_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A chat-completions endpoint that finds the city Chengdu in every message."""
    seen: list[dict[str, str]] = []
    memory = {
        "subject": "user",
        "attribute": "city",
        "value": "Chengdu",
        "kind": "fact",
        "confidence": 0.9,
        "importance": 0.7,
        "extras": [],
        "valid_from": None,
    }
    content = json.dumps({"memories": [memory]})
    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append(dict(self.headers))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def test_an_llm_endpoint_is_scored_in_the_same_run(
    tmp_path: Path,
    llm_server: tuple[str, list[dict[str, str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, seen = llm_server
    monkeypatch.setenv("MEMSTRATA_LLM_API_KEY", "sk-eval-test-key")
    data = write_rows(tmp_path / "set.jsonl", ROWS)
    result = runner.invoke(
        app,
        [
            "eval",
            "extraction",
            "--data",
            str(data),
            "--llm-base-url",
            url,
            "--llm-model",
            "test-model",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    assert set(results) == {"rules", "llm"}
    llm = results["llm"]["all"]
    # Chengdu everywhere: right for the move, a false positive for the greeting, and
    # the sequence ends on "Chengdu" where "成都" was expected.
    assert (llm["matched"], llm["predicted"]) == (1, 2)
    assert llm["false_positives"] == [{"id": "zh-none-001", "attribute": "city"}]
    assert llm["supersede"]["failures"] == [{"id": "zh-sequence-001", "attribute": "city"}]
    assert results["rules"]["all"]["supersede"]["accuracy"] == 1.0
    assert len(seen) == 4 and seen[0]["Authorization"] == "Bearer sk-eval-test-key"


def test_help_says_the_held_back_split_is_never_tuned_on() -> None:
    result = runner.invoke(app, ["eval", "extraction", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "heldback" in result.stdout and "never are" in result.stdout


def test_the_held_back_split_alone() -> None:
    result = runner.invoke(app, ["eval", "extraction", "--split", "heldback", "--json"])
    assert result.exit_code == 0, result.output
    rules = json.loads(result.stdout)["results"]["rules"]
    assert list(rules) == ["heldback"] and rules["heldback"]["rows"] >= 150
    assert set(rules["heldback"]["by_lang"]) == {"en", "zh", "mixed"}
