"""The official LongMemEval_S file as published: a filler session sampled twice into
one haystack, at two dates (question 18bc8abd repeats ``sharegpt_vyHqfrX_0`` on
2023/04/10 and 2023/06/26), is kept once, at its first date, and counted as folded.

The official file is not redistributed; the record below is written by the test in
its shape.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.errors import DatasetError
from memstrata.eval.datasets import load_longmemeval
from memstrata.eval.longmemeval import data_summary
from memstrata.testing.embedders import HashEmbedder

FILLER = [
    {"role": "user", "content": "Can you explain how a binary search works?"},
    {"role": "assistant", "content": "Binary search halves a sorted range at every step."},
]


def _record() -> dict[str, Any]:
    """Question 18bc8abd's shape: the filler session twice, the answer elsewhere."""
    return {
        "question_id": "18bc8abd",
        "question_type": "temporal-reasoning",
        "question": "Which did I buy first, the kayak or the tent?",
        "answer": "the kayak",
        "question_date": "2023/07/01 (Sat) 10:00",
        "haystack_session_ids": [
            "sharegpt_vyHqfrX_0",
            "answer_kayak",
            "answer_tent",
            "sharegpt_vyHqfrX_0",
        ],
        "haystack_dates": [
            "2023/04/10 (Mon) 09:12",
            "2023/05/02 (Tue) 18:00",
            "2023/05/20 (Sat) 11:30",
            "2023/06/26 (Mon) 21:40",
        ],
        "haystack_sessions": [
            FILLER,
            [{"role": "user", "content": "I bought a red kayak today.", "has_answer": True}],
            [{"role": "user", "content": "I bought a two-person tent today.", "has_answer": True}],
            json.loads(json.dumps(FILLER)),
        ],
        "answer_session_ids": ["answer_kayak", "answer_tent"],
    }


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "longmemeval_s_shape.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_a_session_repeated_at_another_date_is_kept_once_at_its_first_date(
    tmp_path: Path,
) -> None:
    question = load_longmemeval(_write(tmp_path, [_record()]))[0]
    assert question.session_ids == ("sharegpt_vyHqfrX_0", "answer_kayak", "answer_tent")
    filler = [t.turn for t in question.turns if t.turn.session == "sharegpt_vyHqfrX_0"]
    assert [t.id for t in filler] == ["sharegpt_vyHqfrX_0#0", "sharegpt_vyHqfrX_0#1"]
    assert {t.at for t in filler} == {datetime(2023, 4, 10, 9, 12, tzinfo=UTC)}
    assert (question.repeated_sessions, question.redated_sessions) == (1, 1)
    data = data_summary([question], "session")
    assert data["repeated_sessions_folded"] == 1
    assert data["repeated_sessions_folded_with_other_date"] == 1
    assert data["repeated_sessions_dropped"] == 1


def test_a_repeated_id_with_other_turns_is_still_refused(tmp_path: Path) -> None:
    record = _record()
    record["haystack_sessions"][3] = [{"role": "user", "content": "something else"}]
    with pytest.raises(DatasetError, match=r"haystack_sessions\[3\].*different content"):
        load_longmemeval(_write(tmp_path, [record]))


def test_the_command_runs_on_it_and_reports_the_fold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.eval.command.default_embedder", lambda: HashEmbedder(64))
    path = _write(tmp_path, [_record()])
    args = ["eval", "longmemeval", "--data", str(path)]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["data"]["repeated_sessions_folded"] == 1
    assert document["data"]["repeated_sessions_folded_with_other_date"] == 1
    assert document["data"]["scored"] == 1
    assert "temporal-reasoning" in document["results"]["memstrata"]["by_type"]
    printed = CliRunner().invoke(app, args)
    assert printed.exit_code == 0, printed.output
    assert '"repeated_sessions_folded": 1' in printed.stdout
