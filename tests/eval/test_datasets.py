"""Loaders: the synthetic LongMemEval file, the real LoCoMo file, malformed files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.errors import DatasetError, ValidationError, error_code
from memstrata.eval.datasets import (
    clean_evidence,
    issue_counts,
    load_locomo,
    load_longmemeval,
    parse_lme_date,
    parse_locomo_date,
)
from memstrata.eval.longmemeval import data_summary
from memstrata.testing.synthetic_longmemeval import records as synthetic_records


def test_dates() -> None:
    assert parse_locomo_date("1:47 pm on 9 May, 2023") == datetime(2023, 5, 9, 13, 47, tzinfo=UTC)
    assert parse_locomo_date("12:04 am on 12 September, 2031").hour == 0
    assert parse_locomo_date("12:30 pm on 1 July, 2023").hour == 12
    assert parse_lme_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    for bad in ("8 May 2023", "13:00 pm on 9 May, 2023", "1:47 pm on 9 Maytember, 2023"):
        with pytest.raises(ValueError):
            parse_locomo_date(bad)


def test_evidence_cleaning_rules() -> None:
    turns = ["D8:6", "D9:17", "D11:26", "D30:5", "D1:1"]
    raw = ["D8:6; D9:17", "D:11:26", "D30:05", "D", "D10:19", "D1:1", "D1:1"]
    kept, issues = clean_evidence(raw, turns, question=7)
    assert kept == ("D8:6", "D9:17", "D11:26", "D30:5", "D1:1")
    assert [(i.raw, i.problem) for i in issues] == [
        ("D8:6; D9:17", "repaired"),
        ("D:11:26", "repaired"),
        ("D30:05", "repaired"),
        ("D", "unparseable"),
        ("D10:19", "dangling"),
    ]
    assert all(i.question == 7 for i in issues)
    assert issue_counts(issues) == {"repaired": 3, "unparseable": 1, "dangling": 1}


def test_synthetic_longmemeval(synthetic_lme: Path) -> None:
    questions = load_longmemeval(synthetic_lme)
    assert len(questions) == 6
    assert [q.abstention for q in questions] == [False] * 5 + [True]
    first = questions[0]
    assert first.question_type == "single-session-user"
    assert first.question_date == datetime(2023, 6, 10, 9, 15, tzinfo=UTC)
    assert first.session_ids == ("ssu01_a", "ssu01_b", "ssu01_c")
    assert [t.turn.id for t in first.turns if t.has_answer] == ["ssu01_b#0"]
    assert first.turns[2].turn.session == "ssu01_b"
    assert first.turns[2].turn.at == datetime(2023, 5, 14, 18, 30, tzinfo=UTC)
    assert first.answer == "a border collie"
    assert len(load_longmemeval(synthetic_lme, limit=2)) == 2


def test_real_locomo_file(locomo_file: Path) -> None:
    conversations = load_locomo(locomo_file)
    assert len(conversations) == 10
    assert sum(len(c.turns) for c in conversations) == 5882
    assert sum(len(c.questions) for c in conversations) == 1986
    first = conversations[0]
    assert first.sample_id == "conv-26"
    turn = {t.id: t for t in first.turns}["D1:5"]
    # The indexed text is built from the file's own fields (quoted from the file, not
    # copied here: the data's license forbids redistributing it).
    raw_conversation = json.loads(locomo_file.read_text(encoding="utf-8"))[0]["conversation"]
    raw = next(t for t in raw_conversation["session_1"] if t["dia_id"] == "D1:5")
    assert turn.text.startswith(f"{raw['speaker']}: {raw['text'][:40]}")
    assert turn.text.endswith(f"[shares a photo: {raw['blip_caption']}]")
    assert turn.date_text == raw_conversation["session_1_date_time"]
    assert turn.at == parse_locomo_date(turn.date_text)
    # conv-26 lists dates for sessions it has no turns for; only real sessions count.
    assert {t.session for t in first.turns} == {f"session_{n}" for n in range(1, 20)}
    issues = [i for c in conversations for i in c.evidence_issues]
    assert issue_counts(issues) == {"repaired": 6, "unparseable": 1, "dangling": 2}
    repaired = {i.raw: i.kept for i in issues if i.problem == "repaired"}
    assert repaired["D8:6; D9:17"] == ("D8:6", "D9:17")
    assert repaired["D30:05"] == ("D30:5",)
    assert sum(1 for c in conversations for q in c.questions if not q.evidence) == 4
    adversarial = [q for c in conversations for q in c.questions if q.adversarial]
    assert len(adversarial) == 446
    assert [len(c) for c in (load_locomo(locomo_file, limit=2),)] == [2]


# --- malformed files --------------------------------------------------------------------


def _write(tmp_path: Path, data: Any, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _lme_record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = synthetic_records()[1]
    record.update(changes)
    return record


def _locomo_record() -> dict[str, Any]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:47 pm on 9 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a cat"},
            ],
        },
        "qa": [
            {
                "question": "What is the cat called?",
                "answer": "Miso",
                "evidence": ["D1:1"],
                "category": 4,
            }
        ],
    }


@pytest.mark.parametrize("loader", [load_locomo, load_longmemeval])
def test_bad_json_and_wrong_top_level(loader: Any, tmp_path: Path) -> None:
    path = _write(tmp_path, "[{not json")
    with pytest.raises(DatasetError, match=r"bad\.json: not valid JSON") as info:
        loader(path)
    assert info.value.path == str(path) and info.value.record is None
    with pytest.raises(DatasetError, match="top level must be a JSON list"):
        loader(_write(tmp_path, {"a": 1}))
    with pytest.raises(DatasetError, match="cannot read"):
        loader(tmp_path / "absent.json")


def test_longmemeval_errors_name_the_record(tmp_path: Path) -> None:
    good = _lme_record()
    missing = _lme_record()
    del missing["question_date"]
    path = _write(tmp_path, [good, good, missing])
    with pytest.raises(DatasetError) as info:
        load_longmemeval(path)
    message = str(info.value)
    assert message.startswith(f"{path}: record 2 (synth_ssu_02): question_date: missing")
    assert info.value.record == "record 2 (synth_ssu_02)"

    wrong = _lme_record(haystack_session_ids="ssu02_a")
    with pytest.raises(
        DatasetError,
        match=r"record 0 \(synth_ssu_02\): haystack_session_ids: "
        "must be a list, got str",
    ):
        load_longmemeval(_write(tmp_path, [wrong]))
    bad_turn = _lme_record()
    bad_turn["haystack_sessions"][1][0]["has_answer"] = "yes"
    with pytest.raises(DatasetError, match=r"haystack_sessions\[1\]\[0\]\.has_answer"):
        load_longmemeval(_write(tmp_path, [bad_turn]))
    short = _lme_record(haystack_dates=["2023/06/20 (Tue) 19:00"])
    with pytest.raises(DatasetError, match="same length"):
        load_longmemeval(_write(tmp_path, [short]))
    with pytest.raises(DatasetError, match=r"question_date: not a LongMemEval date"):
        load_longmemeval(_write(tmp_path, [_lme_record(question_date="yesterday")]))
    with pytest.raises(DatasetError, match=r"record 0: question_id: must be a string, got int"):
        load_longmemeval(_write(tmp_path, [_lme_record(question_id=7)]))


def _with_repeat(record: dict[str, Any], source: int) -> dict[str, Any]:
    """``record`` with its session ``source`` appended again (id, date, turns)."""
    record["haystack_session_ids"].append(record["haystack_session_ids"][source])
    record["haystack_dates"].append(record["haystack_dates"][source])
    record["haystack_sessions"].append(json.loads(json.dumps(record["haystack_sessions"][source])))
    return record


def test_longmemeval_identical_repeated_session_is_kept_once(tmp_path: Path) -> None:
    plain = load_longmemeval(_write(tmp_path, [_lme_record()], "plain.json"))[0]
    repeated = _with_repeat(_lme_record(), 1)
    question = load_longmemeval(_write(tmp_path, [repeated], "repeat.json"))[0]
    assert question.session_ids == plain.session_ids
    assert question.turns == plain.turns
    assert question.repeated_sessions == 1 and plain.repeated_sessions == 0
    assert data_summary([question, plain], "turn")["repeated_sessions_dropped"] == 1


def test_longmemeval_repeated_session_id_with_other_content_is_refused(tmp_path: Path) -> None:
    changed = _with_repeat(_lme_record(), 1)
    changed["haystack_sessions"][-1][0]["content"] = "something else entirely"
    last = len(changed["haystack_session_ids"]) - 1
    with pytest.raises(
        DatasetError,
        match=rf"haystack_sessions\[{last}\]: haystack_session_ids\[{last}\] repeats "
        r"session id 'ssu02_b' of haystack_session_ids\[1\] with different content",
    ):
        load_longmemeval(_write(tmp_path, [changed]))
    # the same content at another date is folded, not refused
    # (tests/eval/test_longmemeval_repeats.py)


def test_locomo_errors_name_the_record(tmp_path: Path) -> None:
    assert len(load_locomo(_write(tmp_path, [_locomo_record()], "ok.json"))) == 1
    cases: list[tuple[str, Any]] = [
        ("conversation: missing", lambda r: r.pop("conversation")),
        ("qa[0].category: must be an integer, got str", lambda r: r["qa"][0].update(category="4")),
        ("qa[0].category: must be 1-5, got 9", lambda r: r["qa"][0].update(category=9)),
        ("qa[0].evidence: must be a list, got str", lambda r: r["qa"][0].update(evidence="D1:1")),
        ("qa[0].evidence[0]: must be a string", lambda r: r["qa"][0].update(evidence=[1])),
        (
            "conversation.session_1[1].text: missing",
            lambda r: r["conversation"]["session_1"][1].pop("text"),
        ),
        (
            "conversation.session_1_date_time: not a LoCoMo date",
            lambda r: r["conversation"].update(session_1_date_time="May 2023"),
        ),
        (
            "conversation.session_1[1].dia_id: duplicate id 'D1:1'",
            lambda r: r["conversation"]["session_1"][1].update(dia_id="D1:1"),
        ),
        (
            "conversation.session_1: must be a list of turns, got str",
            lambda r: r["conversation"].update(session_1="hello"),
        ),
        (
            "conversation: has no session_<n> turn lists",
            lambda r: r["conversation"].pop("session_1"),
        ),
    ]
    for expected, mutate in cases:
        record = _locomo_record()
        mutate(record)
        path = _write(tmp_path, [_locomo_record(), record])
        with pytest.raises(DatasetError) as info:
            load_locomo(path)
        assert str(info.value).startswith(f"{path}: record 1 (conv-x): {expected}"), (
            expected,
            str(info.value),
        )


def test_dataset_error_is_a_typed_validation_error() -> None:
    error = DatasetError("f.json", "record 3 (x)", "qa[0].category: missing")
    assert isinstance(error, ValidationError)
    assert error_code(error).http == 422
    assert str(error) == "f.json: record 3 (x): qa[0].category: missing"
