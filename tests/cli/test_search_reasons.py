"""No silent empty read (issue 31, "Why" 7): ``memstrata search`` says why L3 served
nothing, in its table and its JSON, and a fresh process's first read is not
abandoned while its models load.

The issue's run: on a busy machine each ``memstrata search`` (a fresh process) took
longer than ``read_deadline_s`` loading its models; L3 was skipped, no item came
back, and the table said "all below the confidence floor" (the wrong reason) while
the JSON said nothing. Here a slow L3 is the fault injector of the settings file
(``faults.l3_read_delay_s``: every L3 read waits, as on a slow server), and the cold
read runs with a read deadline far shorter than any model load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli import app

runner = CliRunner()
QUESTION = "what am I allergic to"


def _remember(data: Path, text: str) -> None:
    result = runner.invoke(
        app, ["remember", "--user", "u1", "--text", text, "--data-dir", str(data), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["written"]


def _settings(tmp_path: Path, document: dict[str, object]) -> dict[str, str]:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(document))
    return {"MEMSTRATA_SETTINGS": str(path)}


def _search(data: Path, query: str, env: dict[str, str], *, as_json: bool) -> str:
    args = ["search", "--user", "u1", "--query", query, "--data-dir", str(data)]
    result = runner.invoke(app, [*args, "--json"] if as_json else args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def _words(text: str) -> str:
    return " ".join(text.split())  # the table wraps at the terminal's width


def test_a_slow_l3_is_named_in_the_table_and_the_json_never_as_the_confidence_floor(
    tmp_path: Path,
) -> None:
    data = tmp_path / "d"
    _remember(data, "I am allergic to peanuts.")
    slow = _settings(
        tmp_path,
        {
            "longterm": {"read_deadline_s": 0.3, "search_deadline_s": 0.3},
            "faults": {"l3_read_delay_s": 30.0},
        },
    )
    found = json.loads(_search(data, QUESTION, slow, as_json=True))
    assert found["l3_skipped"] is True and found["l3_skip_reason"] == "l3_timeout"
    assert found["dense_skip_reason"] is None
    assert "[l3_timeout]" in found["note"] and "read deadline" in found["note"]
    assert "confidence floor" not in found["note"]

    table = _words(_search(data, QUESTION, slow, as_json=False))
    assert "did not answer within its read deadline" in table and "[l3_timeout]" in table
    assert "confidence floor" not in table


def test_all_below_the_floor_is_said_so_and_named_in_the_json(tmp_path: Path) -> None:
    data = tmp_path / "d"
    _remember(data, "I am allergic to peanuts.")
    query = "quarterly tax filing deadline for corporations"
    found = json.loads(_search(data, query, {}, as_json=True))
    assert found["l3_skipped"] is True and found["l3_skip_reason"] == "below_threshold"
    assert "confidence floor" in found["note"]
    table = _words(_search(data, query, {}, as_json=False))
    assert "all below the confidence floor" in table and "[below_threshold]" in table


def test_a_fresh_process_reads_l3_whole_under_a_read_deadline_shorter_than_its_models_load(
    tmp_path: Path,
) -> None:
    data = tmp_path / "d"
    _remember(data, "I am allergic to peanuts.")
    # A Chinese memory: the English question's cross-language route loads the
    # multilingual model inside the L3 part of the read.
    _remember(data, "我对虾过敏。")
    tiny = _settings(tmp_path, {"longterm": {"read_deadline_s": 0.001, "search_deadline_s": 0.001}})
    process = subprocess.run(
        [sys.executable, "-m", "memstrata.cli", "search", "--user", "u1", "--query", QUESTION,
         "--data-dir", str(data), "--json"],
        capture_output=True, text=True, timeout=300, check=False, env={**os.environ, **tiny},
    )  # fmt: skip
    assert process.returncode == 0, process.stderr[-3000:]
    found = json.loads(process.stdout)
    assert found["l3_skipped"] is False and found["l3_skip_reason"] is None
    assert found["dense_skip_reason"] is None and found["note"] is None
    assert any("peanuts" in row["text"] for row in found["results"])


WARM = """
import json, sys
from memstrata import ContextEngine
from memstrata.config import Settings
from memstrata.embed import minilm, multilingual

engine = ContextEngine.open(Settings(data_dir=sys.argv[1]))
try:
    before = [len(minilm._SHARED_ONNX), len(multilingual._SHARED)]
    failed = engine.warm()
    after = [len(minilm._SHARED_ONNX), len(multilingual._SHARED)]
finally:
    engine.close()
print(json.dumps({"before": before, "after": after, "failed": failed}))
"""


def test_opening_loads_no_model_and_warm_loads_every_one_a_read_uses(tmp_path: Path) -> None:
    # Opening stays cheap for the commands that never read (keys, inspect...); serve
    # warms before it listens, and a read's deadline never counts a load.
    process = subprocess.run(
        [sys.executable, "-c", WARM, str(tmp_path / "d")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert process.returncode == 0, process.stderr[-3000:]
    assert json.loads(process.stdout.splitlines()[-1]) == {
        "before": [0, 0],
        "after": [1, 1],
        "failed": [],
    }
