"""The bilingual evaluation: the data set's invariants, its generator, the scoring by
hand, and ``memstrata eval bilingual`` end to end through the real engine."""

from __future__ import annotations

import io
import itertools
import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.errors import DatasetError, ValidationError
from memstrata.eval import bilingual_data
from memstrata.eval.bilingual import (
    CATEGORIES,
    BilingualConversation,
    BilingualQuestion,
    all_questions,
    build_report,
    choose_threshold,
    load_bilingual,
)
from memstrata.eval.bilingual_report import render_bilingual
from memstrata.eval.command import run_bilingual
from memstrata.eval.datasets import Turn
from memstrata.eval.runner import Rankings
from memstrata.eval.systems import Retrieved
from memstrata.language import detect_language
from memstrata.testing.embedders import HashEmbedder

runner = CliRunner()


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(bilingual_data.DATA_FILE.read_text(encoding="utf-8"))
    return data


def _turns(conversation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for s in conversation["sessions"] for t in s["turns"]}


# --- the data set -----------------------------------------------------------------------


def test_the_committed_file_is_the_generators_output_and_generation_is_deterministic() -> None:
    assert bilingual_data.DATA_FILE.read_text(encoding="utf-8") == bilingual_data.render()
    assert bilingual_data.generate() == bilingual_data.generate()


def test_sizes_reach_the_issues_minimums(raw: dict[str, Any]) -> None:
    conversations = raw["conversations"]
    turns = sum(len(s["turns"]) for c in conversations for s in c["sessions"])
    questions = [q for c in conversations for q in c["questions"]]
    assert len(conversations) >= 20 and turns >= 2000 and len(questions) >= 400
    assert {c["language"] for c in conversations} == {"zh", "mixed"}
    assert {q["language"] for q in questions} == {"zh", "en", "mixed"}
    assert set(Counter(q["category"] for q in questions)) == set(CATEGORIES)


def test_sessions_are_on_increasing_days_and_ids_unique(raw: dict[str, Any]) -> None:
    seen: set[str] = set()
    for c in raw["conversations"]:
        days = [datetime.fromisoformat(s["date"]) for s in c["sessions"]]
        assert len(days) >= 5
        assert all(a.date() < b.date() for a, b in itertools.pairwise(days)), c["id"]
        assert datetime.fromisoformat(c["asked_at"]).date() > days[-1].date()
        for t in _turns(c):
            assert t not in seen
            seen.add(t)
        speakers = {t["speaker"] for t in _turns(c).values()}
        assert speakers == {"user", "assistant"}
        if c["language"] == "mixed":
            # English sessions, so cross-language questions have English evidence too.
            assert "en" in {s["language"] for s in c["sessions"]}
            assert "mixed" in {t["language"] for t in _turns(c).values()}
        else:
            assert {t["language"] for t in _turns(c).values()} == {"zh"}


def test_every_question_is_well_formed(raw: dict[str, Any]) -> None:
    date_words = re.compile(
        r"月\d|\d+[号日]|昨天|前天|上周|yesterday|last \w+|on [a-z]+ \d", re.IGNORECASE
    )
    for c in raw["conversations"]:
        turns = _turns(c)
        order = list(turns)
        texts = {t["text"] for t in turns.values()}
        for q in c["questions"]:
            assert q["language"] == detect_language(q["question"])
            assert q["question"] not in texts  # asked in other words than it was said
            for turn_id in (*q["evidence"], *q["superseded"]):
                assert turn_id in turns, (q["id"], turn_id)
            if q["category"] == "unanswerable":
                assert q["evidence"] == [] and q["answer"] is None
                continue
            assert q["evidence"] and q["answer"]
            if q["category"] == "cross-language":
                (evidence,) = q["evidence"]
                said = turns[evidence]["language"]
                assert said in ("zh", "en") and q["language"] in ("zh", "en")
                assert q["language"] != said, q["id"]
            if q["category"] == "knowledge-update":
                (current,) = q["evidence"]
                assert q["superseded"]
                assert all(order.index(old) < order.index(current) for old in q["superseded"])
            if q["category"] == "temporal":
                assert date_words.search(q["question"]), q["question"]
            if q["category"] == "multi-hop":
                assert len(set(q["evidence"])) == 2


def test_splits_hold_whole_conversations_and_share_no_material(raw: dict[str, Any]) -> None:
    by_split: dict[str, list[dict[str, Any]]] = {"dev": [], "test": []}
    for c in raw["conversations"]:
        by_split[c["split"]].append(c)
    total = len(raw["conversations"])
    assert 0.35 <= len(by_split["dev"]) / total <= 0.45
    assert raw["splits"] == {s: [c["id"] for c in cs] for s, cs in by_split.items()}
    for conversations in by_split.values():
        categories = {q["category"] for c in conversations for q in c["questions"]}
        assert categories == set(CATEGORIES)
    dev, test = by_split["dev"], by_split["test"]
    assert not {c["user"]["zh"] for c in dev} & {c["user"]["zh"] for c in test}

    def questions(cs: list[dict[str, Any]]) -> set[str]:
        return {q["question"] for c in cs for q in c["questions"]}

    def statements(cs: list[dict[str, Any]]) -> set[str]:
        return {t["text"] for c in cs for t in _turns(c).values()}

    # Tuning on dev cannot memorize test: no question and no turn is in both.
    assert not questions(dev) & questions(test)
    assert not statements(dev) & statements(test)


def test_the_loader_reads_a_split_and_names_a_broken_record(tmp_path: Path) -> None:
    dev = load_bilingual(split="dev")
    test = load_bilingual(split="test")
    assert {c.split for c in dev} == {"dev"} and {c.split for c in test} == {"test"}
    assert len(load_bilingual(split="all")) == len(dev) + len(test)
    assert [c.id for c in load_bilingual(split="test", limit=2)] == [c.id for c in test[:2]]
    with pytest.raises(ValidationError) as info:
        load_bilingual(split="train")
    assert info.value.field == "split"
    broken = json.loads(bilingual_data.DATA_FILE.read_text(encoding="utf-8"))
    broken["conversations"][1]["questions"][0]["evidence"] = ["nope"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"record 1 \(dev-02\).*no such turn: nope"):
        load_bilingual(path, split="all")


# --- scoring by hand --------------------------------------------------------------------


def _conversation() -> BilingualConversation:
    at = datetime(2025, 5, 1, 12, tzinfo=UTC)
    turns = tuple(Turn(f"t{i}", "s1", "user", f"text {i}", at, "2025-05-01") for i in range(1, 6))

    def q(
        i: int, category: str, lang: str, evidence: tuple[str, ...], old: tuple[str, ...] = ()
    ) -> BilingualQuestion:
        return BilingualQuestion(f"q{i}", f"question {i}", lang, category, evidence, old, "a")

    return BilingualConversation(
        "c1",
        "dev",
        "mixed",
        turns,
        {t.id: "zh" for t in turns},
        (
            q(1, "single-hop", "zh", ("t1",)),
            q(2, "multi-hop", "en", ("t2", "t3")),
            q(3, "knowledge-update", "zh", ("t4",), ("t1",)),
            q(4, "cross-language", "en", ("t5",)),
            BilingualQuestion("q5", "never said", "zh", "unanswerable", (), (), None),
        ),
        datetime(2025, 5, 3, 9, tzinfo=UTC),
    )


def test_scores_flags_and_update_order_by_hand() -> None:
    conversation = _conversation()
    assert len(all_questions([conversation])) == 5

    def r(*items: tuple[str, float, bool]) -> tuple[Retrieved, ...]:
        return tuple(Retrieved(i, c, low) for i, c, low in items)

    found = (
        r(("t1", 0.8, False)),  # hit
        r(("t2", 0.7, False), ("t4", 0.6, False)),  # any, not all
        r(("t1", 0.9, False), ("t4", 0.5, True)),  # found, but the old value first
        r(("t3", 0.2, True)),  # miss, flagged
        r(("t2", 0.1, True)),  # unanswerable: flagged
    )
    rankings = Rankings({"memstrata": found, "minilm": found}, (0.01,) * 5, "memstrata")
    report = build_report(
        [conversation], rankings, (10,), thresholds={"minilm": {"zh": 0.55, "en": 0.3}}
    )
    product = report["results"]["memstrata"]
    assert product["overall"] == {"hit_any@10": 0.75, "hit_all@10": 0.5, "n": 4}
    assert product["by_category"]["multi-hop"] == {"hit_any@10": 1.0, "hit_all@10": 0.0, "n": 1}
    assert product["by_language"]["en"]["n"] == 2 and product["by_language"]["mixed"] == {"n": 0}
    assert product["cross_language"]["en question"]["hit_any@10"] == 0.0
    assert product["update_current_first"] == {"share": 0.0, "n": 1}
    confidence = product["confidence"]
    assert confidence["unanswerable_flagged"] == {"share": 1.0, "n": 1}
    assert confidence["answerable_flagged"] == {"share": 0.25, "n": 4}
    # The dense row flags by its own threshold per question language: q3 (zh, 0.9) is
    # not flagged, q4 (en, 0.2 < 0.3) is, q5 (zh, 0.1 < 0.55) is.
    dense = report["results"]["minilm"]["confidence"]
    assert dense["answerable_flagged"] == {"share": 0.25, "n": 4}
    assert dense["unanswerable_flagged"] == {"share": 1.0, "n": 1}
    assert report["calibration"] is None
    calibrated = build_report([conversation], rankings, (10,), calibrate=True)["calibration"]
    assert set(calibrated["rows"]) == {"memstrata", "minilm"}
    zh = calibrated["rows"]["minilm"]["zh"]
    assert zh["answerable"]["n"] == 2 and zh["unanswerable"]["n"] == 1
    assert zh["meets_target"] and zh["unanswerable_flagged"] == 1.0
    assert zh["answerable_flagged"] == 0.0 and 0.1 < zh["threshold"] < 0.8


def test_choose_threshold_meets_the_target_or_says_it_cannot() -> None:
    separable = choose_threshold([0.6, 0.7, 0.8, 0.9], [0.1, 0.2, 0.3])
    assert separable["meets_target"] and separable["unanswerable_flagged"] == 1.0
    assert separable["answerable_flagged"] == 0.0 and 0.3 < separable["threshold"] < 0.6
    overlapping = choose_threshold([0.2, 0.6, 0.7, 0.8], [0.1, 0.5, 0.65])
    assert not overlapping["meets_target"]
    assert overlapping["unanswerable_flagged"] - overlapping["answerable_flagged"] > 0
    assert overlapping["within_answerable_limit"] == {
        "threshold": 0.15,
        "unanswerable_flagged": 0.3333,
        "answerable_flagged": 0.0,
    }
    assert choose_threshold([], [0.1])["threshold"] is None


# --- the command ------------------------------------------------------------------------


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memstrata.eval.command.default_embedder", lambda: HashEmbedder(64))
    monkeypatch.setattr("memstrata.eval.command.default_multilingual", lambda: HashEmbedder(32))


def test_calibrating_on_test_is_refused_before_anything_runs(hashed: None) -> None:
    for split in ("test", "all"):
        with pytest.raises(ValidationError, match="dev split only") as info:
            run_bilingual(split=split, calibrate=True)
        assert info.value.field == "split"
    result = runner.invoke(app, ["eval", "bilingual", "--split", "test", "--calibrate", "--json"])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ValidationError" and "never tuned on" in error["message"]
    helped = runner.invoke(app, ["eval", "bilingual", "--help"])
    assert "never tune" in helped.stdout and "--calibrate" in helped.stdout


def test_cli_runs_end_to_end_on_a_dev_slice(hashed: None) -> None:
    """One dev conversation through the real engine (embedded Valkey, qdrant-edge)."""
    args = ["eval", "bilingual", "--split", "dev", "--limit", "1", "--calibrate", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dataset"] == "bilingual"
    assert set(report["results"]) == {"memstrata", "bm25", "minilm", "multilingual"}
    first = load_bilingual(split="dev", limit=1)[0]
    assert report["data"]["conversations"] == 1
    assert report["data"]["turns"] == len(first.turns)
    assert report["data"]["questions"] == len(first.questions)
    answerable = sum(q.answerable for q in first.questions)
    for name, row in report["results"].items():
        assert row["overall"]["n"] == answerable
        assert 0.0 <= row["overall"]["hit_all@10"] <= row["overall"]["hit_any@10"] <= 1.0
        assert set(row["by_category"]) == set(CATEGORIES) - {"unanswerable"}
        assert (row["confidence"] is None) == (name == "bm25")
    # The product retrieves through observe()'s episodes: something is found.
    assert report["results"]["memstrata"]["overall"]["hit_any@10"] > 0
    assert set(report["calibration"]["rows"]) == {"memstrata", "minilm", "multilingual"}
    assert report["config"]["split"] == "dev" and report["config"]["limit"] == 1
    console = Console(file=io.StringIO(), width=120)
    render_bilingual(report, console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    for expected in ("bilingual (dev): memstrata", "cross-language", "low-confidence", "thr"):
        assert expected in text
