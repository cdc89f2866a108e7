"""The harness end to end: scripted systems with hand-checked scores, the store-backed
systems on HashEmbedder, and the CLI's single JSON document."""

from __future__ import annotations

import io
import json
import math
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.config import LongTermSettings
from memstrata.errors import ValidationError
from memstrata.eval.command import RichProgress, open_turn_store, run_locomo
from memstrata.eval.datasets import Turn, load_locomo, load_longmemeval
from memstrata.eval.locomo import evaluate_locomo, parse_conversations, select_conversations
from memstrata.eval.longmemeval import evaluate_longmemeval
from memstrata.eval.systems import Retrieved, session_batches, store_systems
from memstrata.testing.embedders import HashEmbedder

THRESHOLD = 0.4
LOG2_3 = math.log2(3)


class Scripted:
    """A fake system: a fixed ranking (turn id, confidence) per query text."""

    def __init__(self, script: Mapping[str, Sequence[tuple[str, float]]], name: str = "memstrata"):
        self._script = script
        self._name = name
        self.indexed: dict[str, tuple[str, ...]] = {}
        self.finished = 0
        self.asked: list[tuple[str, str, datetime, int]] = []

    @property
    def name(self) -> str:
        return self._name

    def index(self, tenant: str, turns: Sequence[Turn]) -> None:
        self.indexed[tenant] = tuple(t.id for t in turns)

    def finish_indexing(self) -> None:
        self.finished += 1

    def search(self, tenant: str, query: str, at: datetime, k: int) -> list[Retrieved]:
        self.asked.append((tenant, query, at, k))
        return [Retrieved(i, c) for i, c in self._script[query]][:k]


# --- LongMemEval, scripted --------------------------------------------------------------

LME_SCRIPT: dict[str, list[tuple[str, float]]] = {
    # relevant turn first: perfect at both levels
    "What breed is my dog Biscuit?": [("ssu01_b#0", 0.9), ("ssu01_a#0", 0.9)],
    # relevant turn 4th; its session 2nd
    "Which instrument did I start learning?": [
        ("ssu02_b#0", 0.9),
        ("ssu02_b#1", 0.9),
        ("ssu02_a#1", 0.9),
        ("ssu02_a#0", 0.9),
    ],
    # relevant turns 1st and 6th; relevant sessions 1st and 3rd
    "How many marathons have I run in total?": [
        ("multi01_a#0", 0.9),
        ("multi01_b#0", 0.9),
        ("multi01_b#1", 0.9),
        ("multi01_a#1", 0.9),
        ("multi01_c#1", 0.9),
        ("multi01_c#0", 0.9),
    ],
    # nothing retrieved
    "When did I adopt the kitten?": [],
    # relevant turn missing; its session 2nd; below the confidence threshold
    "Where do I work now?": [("ku01_a#0", 0.1), ("ku01_a#1", 0.1), ("ku01_b#1", 0.1)],
}


def test_longmemeval_turn_level_scores_by_hand(synthetic_lme: Path) -> None:
    questions = load_longmemeval(synthetic_lme)
    system = Scripted(LME_SCRIPT)
    report = evaluate_longmemeval(
        questions, [system], granularity="turn", ks=(5, 10), threshold=THRESHOLD
    )
    overall = report["results"]["memstrata"]["overall"]
    # per question ndcg@5: 1, 1/log2(5), 1/(1 + 1/log2 3), 0, 0
    ndcg5 = (1 + 1 / math.log2(5) + 1 / (1 + 1 / LOG2_3)) / 5
    # ndcg@10: question 3 also gets its 6th-ranked turn
    ndcg10 = (1 + 1 / math.log2(5) + (1 + 1 / math.log2(7)) / (1 + 1 / LOG2_3)) / 5
    assert overall == {
        "recall_any@5": 0.6,
        "recall_all@5": 0.4,
        "ndcg@5": round(ndcg5, 4),
        "recall_any@10": 0.6,
        "recall_all@10": 0.6,
        "ndcg@10": round(ndcg10, 4),
        "n": 5,
    }
    assert overall["ndcg@5"] == pytest.approx(0.4088, abs=1e-4)
    by_type = report["results"]["memstrata"]["by_type"]
    assert sorted(by_type) == [
        "knowledge-update",
        "multi-session",
        "single-session-user",
        "temporal-reasoning",
    ]
    assert by_type["single-session-user"]["n"] == 2  # the _abs question is excluded
    assert by_type["single-session-user"]["ndcg@5"] == round((1 + 1 / math.log2(5)) / 2, 4)
    assert by_type["multi-session"]["recall_all@5"] == 0.0
    # CER: loaded = questions 1-3 (4 empty, 5 below 0.4); used = 1, 2, 3 and 5
    # ("Northwind Labs" is in ku01_b#1), not 4 (no context).
    assert report["cer"] == {"cer": 0.6, "loaded_rate": 0.6, "used_rate": 0.8, "steps": 5}
    assert report["data"]["abstention_excluded"] == 1 and report["data"]["scored"] == 5
    # Each question is asked of its own haystack, at its question date.
    assert len(system.indexed) == 5 and system.finished == 1
    assert system.indexed["lme-0"] == (
        "ssu01_a#0", "ssu01_a#1", "ssu01_b#0", "ssu01_b#1", "ssu01_b#2", "ssu01_c#0", "ssu01_c#1"
    )  # fmt: skip
    assert system.asked[0] == (
        "lme-0",
        "What breed is my dog Biscuit?",
        datetime(2023, 6, 10, 9, 15, tzinfo=UTC),
        10,
    )
    assert all(q != "What colour is my car?" for _, q, _, _ in system.asked)
    assert report["latency_ms"]["n"] == 5


def test_longmemeval_session_level_scores_by_hand(synthetic_lme: Path) -> None:
    questions = load_longmemeval(synthetic_lme)
    system = Scripted(LME_SCRIPT)
    report = evaluate_longmemeval(
        questions, [system], granularity="session", ks=(5, 10), threshold=THRESHOLD
    )
    overall = report["results"]["memstrata"]["overall"]
    # sessions: q1 [b, a] -> 1; q2 [b, a] -> rank 2; q3 [a, b, c] -> ranks 1 and 3;
    # q4 nothing; q5 [a, b] -> rank 2
    ndcg = (1 + 1 / LOG2_3 + 1.5 / (1 + 1 / LOG2_3) + 0 + 1 / LOG2_3) / 5
    assert overall["recall_all@5"] == 0.8
    assert overall["ndcg@5"] == round(ndcg, 4) == pytest.approx(0.6363, abs=1e-4)
    assert overall["ndcg@10"] == overall["ndcg@5"]
    assert report["config"]["granularity"] == "session"
    assert system.asked[0][3] == 100  # sessions ranked from the top 100 turns


# --- LoCoMo, scripted -------------------------------------------------------------------


def _tiny_locomo() -> dict[str, Any]:
    return {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "10:00 am on 1 March, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat named Miso."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "I started pottery classes."},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "Lovely! Send me photos.",
                    "blip_caption": "a photo of a clay bowl",
                    "img_url": ["https://example.invalid/bowl.jpg"],
                },
            ],
            "session_2_date_time": "4:30 pm on 20 March, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "My pottery teacher says I improved."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Miso knocked a vase off yesterday."},
                {"speaker": "Bob", "dia_id": "D2:3", "text": "Cats will be cats."},
            ],
            "session_3_date_time": "9:00 am on 1 April, 2023",  # a date without turns
        },
        "qa": [
            {
                "question": "What hobby does Bob have and how is it going?",
                "answer": "pottery, improving",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            {
                "question": "When did Miso knock over a vase?",
                "answer": "19 March 2023",
                "evidence": ["D2:2"],
                "category": 2,
            },
            {
                "question": "What is the name of Ann's cat?",
                "answer": "Miso",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What is the name of Bob's cat?",
                "adversarial_answer": "Miso",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {
                "question": "What colour is Ann's car?",
                "answer": 7,
                "evidence": ["D9:9"],
                "category": 4,
            },
        ],
    }


TINY_SCRIPT: dict[str, list[tuple[str, float]]] = {
    "What hobby does Bob have and how is it going?": [
        ("D2:1", 0.5),
        ("D2:3", 0.5),
        ("D1:2", 0.5),
    ],
    "When did Miso knock over a vase?": [("D2:3", 0.3), ("D1:1", 0.3)],
    "What is the name of Ann's cat?": [("D1:1", 0.9)],
    "What is the name of Bob's cat?": [("D2:3", 0.9), ("D1:3", 0.9), ("D1:1", 0.9)],
}


def test_locomo_scores_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([_tiny_locomo()]))
    conversations = load_locomo(path)
    system = Scripted(TINY_SCRIPT)
    report = evaluate_locomo(conversations, [system], ks=(1, 3), threshold=THRESHOLD)
    result = report["results"]["memstrata"]
    assert result["overall"] == {
        "hit_any@1": 0.6667,
        "hit_all@1": 0.3333,
        "evidence_recall@1": 0.5,
        "hit_any@3": 0.6667,
        "hit_all@3": 0.6667,
        "evidence_recall@3": 0.6667,
        "n": 3,
    }
    assert result["by_category"]["1"] == {
        "hit_any@1": 1.0,
        "hit_all@1": 0.0,
        "evidence_recall@1": 0.5,
        "hit_any@3": 1.0,
        "hit_all@3": 1.0,
        "evidence_recall@3": 1.0,
        "n": 1,
    }
    assert result["by_category"]["2"]["hit_any@3"] == 0.0
    assert result["by_category"]["3"] == {"n": 0}
    assert result["by_category"]["4"]["hit_all@1"] == 1.0
    assert result["adversarial"]["hit_any@1"] == 0.0
    assert result["adversarial"]["hit_all@3"] == 1.0 and result["adversarial"]["n"] == 1
    # CER over categories 1-4: the vase question is below the confidence threshold but
    # "March 2023" is in its context (2 of 3 content words); "pottery" is 1 of 2.
    assert report["cer"] == {"cer": 0.6667, "loaded_rate": 0.6667, "used_rate": 1.0, "steps": 3}
    assert report["data"] == {
        "conversations": 1,
        "turns": 6,
        "questions": 5,
        "scored": 3,
        "adversarial_scored": 1,
        "without_evidence": 1,
        "evidence_issues": {"repaired": 1, "unparseable": 0, "dangling": 1},
        "evidence_issue_examples": [
            {"conversation": "tiny", "qa": 0, "raw": "D1:2; D2:1", "problem": "repaired",
             "kept": ["D1:2", "D2:1"]},
            {"conversation": "tiny", "qa": 4, "raw": "D9:9", "problem": "dangling", "kept": []},
        ],
    }  # fmt: skip
    # Asked at the last session's date; the question without evidence is not asked.
    assert {a[2] for a in system.asked} == {datetime(2023, 3, 20, 16, 30, tzinfo=UTC)}
    assert len(system.asked) == 1 + 4  # an untimed warm-up query, then the scored QAs
    assert system.indexed == {"locomo-0": ("D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3")}


def test_locomo_subset_oracle_and_first_evidence_only(locomo_subset_file: Path) -> None:
    conversations = load_locomo(locomo_subset_file)
    questions = [q for q in conversations[0].questions if q.evidence]
    oracle = Scripted({q.question: [(e, 0.9) for e in q.evidence] for q in questions})
    first = Scripted({q.question: [(q.evidence[0], 0.9)] for q in questions}, name="first")
    report = evaluate_locomo(conversations, [oracle, first], threshold=THRESHOLD)
    assert report["data"]["turns"] == 35 and report["data"]["questions"] == 20
    perfect = report["results"]["memstrata"]
    assert {k: v for k, v in perfect["overall"].items() if k != "n"} == dict.fromkeys(
        ("hit_any@5", "hit_all@5", "evidence_recall@5", "hit_any@10", "hit_all@10"), 1.0
    ) | {"evidence_recall@10": 1.0}
    assert perfect["overall"]["n"] == 15
    assert {c: v["n"] for c, v in perfect["by_category"].items()} == {
        "1": 2,
        "2": 4,
        "3": 1,
        "4": 8,
    }
    assert perfect["adversarial"]["n"] == 5 and perfect["adversarial"]["hit_all@10"] == 1.0
    # Only the open-domain question has two evidence turns (D1:9, D1:11).
    partial = report["results"]["first"]
    assert partial["overall"]["hit_any@10"] == 1.0
    assert partial["overall"]["hit_all@10"] == round(14 / 15, 4)
    assert partial["overall"]["evidence_recall@10"] == round(14.5 / 15, 4)
    assert partial["by_category"]["3"]["hit_all@5"] == 0.0
    assert partial["by_category"]["3"]["evidence_recall@5"] == 0.5


# --- the store-backed systems on HashEmbedder ---------------------------------------------


def _check_bounds(metrics: Mapping[str, float], ks: Sequence[int]) -> None:
    for k in ks:
        assert 0.0 <= metrics[f"hit_all@{k}"] <= metrics[f"evidence_recall@{k}"]
        assert metrics[f"evidence_recall@{k}"] <= metrics[f"hit_any@{k}"] <= 1.0
    assert metrics["hit_any@5"] <= metrics["hit_any@10"]


def test_store_systems_on_the_locomo_subset(locomo_subset_file: Path, tmp_path: Path) -> None:
    report = run_locomo(locomo_subset_file, embedder=HashEmbedder(64), data_dir=tmp_path)
    assert list(report) == [
        "dataset",
        "results",
        "latency_ms",
        "calibration",
        "cer",
        "data",
        "config",
    ]
    calibration = report["calibration"]
    assert calibration["questions"] == 15 and len(calibration["curve"]) == 19
    # The baselines on the plain index, and the same single routes on memstrata's.
    # The product's own path, the same retrieval on a batch-written index, the
    # baselines on the plain index, and the same single routes on memstrata's.
    assert list(report["results"]) == [
        "memstrata",
        "memstrata_index",
        "bm25",
        "dense",
        "bm25_context",
        "dense_context",
        "dense_multilingual",
    ]
    for result in report["results"].values():
        assert result["overall"]["n"] == 15 and result["adversarial"]["n"] == 5
        _check_bounds(result["overall"], (5, 10))
        assert result["cer"]["steps"] == 15
    # BM25 finds the exact-keyword questions of this subset.
    assert report["results"]["bm25"]["overall"]["hit_any@10"] >= 0.6
    latency = report["latency_ms"]
    assert latency["system"] == "memstrata" and latency["n"] == 20
    assert 0 < latency["p50"] <= latency["p99"]
    assert report["cer"] == report["results"]["memstrata"]["cer"]
    assert report["config"]["embedder"] == "test-hash-embedder"
    config = report["config"]
    assert config["context_terms"] == [0.5, 0.35] and config["adjacent_blend"] == 0.1
    assert config["plain_index_dir"] == str(tmp_path / "eval-locomo-plain")
    # Indexed once per index, one point per turn, under DIR/eval-locomo and
    # DIR/eval-locomo-plain; a rerun on the same directory replaces the points instead
    # of adding copies.
    again = run_locomo(locomo_subset_file, embedder=HashEmbedder(64), data_dir=tmp_path)
    for dataset in ("locomo", "locomo-plain"):
        with open_turn_store(tmp_path, dataset, HashEmbedder(64), LongTermSettings()) as turns:
            assert turns.store.count("memories", tenant="locomo-0") == 35
    for name in report["results"]:  # the same data, the same answers
        assert again["results"][name] == report["results"][name]


def test_store_systems_on_synthetic_longmemeval(synthetic_lme: Path) -> None:
    questions = load_longmemeval(synthetic_lme)
    calls: list[tuple[str, str, datetime, int]] = []
    with open_turn_store(None, "longmemeval", HashEmbedder(64), LongTermSettings()) as turns:
        systems = store_systems(turns)
        for granularity in ("turn", "session"):
            report = evaluate_longmemeval(
                questions, systems, granularity=granularity, threshold=THRESHOLD
            )
            for name in ("memstrata_index", "dense"):
                # Every haystack has at most 7 turns: a dense route returns all of them.
                assert report["results"][name]["overall"]["recall_all@10"] == 1.0
                assert report["results"][name]["overall"]["n"] == 5
            assert report["results"]["bm25"]["by_type"]["knowledge-update"]["n"] == 1

        def custom(tenant: str, query: str, at: datetime, k: int) -> Sequence[Any]:
            calls.append((tenant, query, at, k))
            return turns.search(tenant, query, k, "sparse")

        # The memstrata retrieval is injected with one argument; the stored points are
        # shared (every tenant was indexed above, so nothing is written again).
        swapped = store_systems(turns, memstrata_search=custom)
        report = evaluate_longmemeval(questions, swapped, granularity="turn", threshold=THRESHOLD)
        assert turns.store.count("memories", tenant="lme-0") == 7
    assert len(calls) == 5  # five scored questions (only the product row is warmed up)
    assert calls[0] == ("lme-0", "What breed is my dog Biscuit?", questions[0].question_date, 10)
    assert report["results"]["memstrata_index"] == report["results"]["bm25"]


# --- the CLI ------------------------------------------------------------------------------


@pytest.fixture
def hash_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memstrata.eval.command.default_embedder", lambda: HashEmbedder(64))


runner = CliRunner()


def test_cli_locomo_json(hash_embedder: None, locomo_subset_file: Path) -> None:
    args = ["eval", "locomo", "--data", str(locomo_subset_file), "--limit", "1"]
    result = runner.invoke(app, [*args, "--k", "3,5", "--k", "10", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # the whole stdout is one document
    assert document["dataset"] == "locomo"
    assert set(document) == {
        "dataset",
        "results",
        "latency_ms",
        "calibration",
        "cer",
        "data",
        "config",
        "baseline",
        "vs_baseline",
    }
    assert set(document["results"]) == {
        "memstrata",
        "memstrata_index",
        "bm25",
        "dense",
        "bm25_context",
        "dense_context",
        "dense_multilingual",
    }
    for result_set in document["results"].values():
        assert set(result_set) == {"overall", "by_category", "adversarial", "cer"}
        assert (
            "hit_all@3" in result_set["overall"] and "evidence_recall@10" in result_set["overall"]
        )
        assert set(result_set["by_category"]) == {"1", "2", "3", "4"}
    assert set(document["latency_ms"]) >= {"p50", "p99"}
    assert set(document["cer"]) == {"cer", "loaded_rate", "used_rate", "steps"}
    assert document["config"]["ks"] == [3, 5, 10] and document["config"]["limit"] == 1


def test_conversation_selection() -> None:
    assert parse_conversations("1-5") == (1, 2, 3, 4, 5)
    assert parse_conversations(" 6 - 7 ,9,7") == (6, 7, 9)
    for bad, reason in (
        ("", "at least one"),
        ("0-3", "1-based"),
        ("5-1", "ascending"),
        ("1-", "not a number or a range"),
        ("a", "not a number or a range"),
        ("1;2", "not a number or a range"),
    ):
        with pytest.raises(ValidationError, match=reason) as info:
            parse_conversations(bad)
        assert info.value.field == "conversations"
    with pytest.raises(ValidationError, match="the file has conversations 1-2; asked for 3"):
        select_conversations([object(), object()], (2, 3))  # type: ignore[list-item]


def test_cli_locomo_conversations(
    hash_embedder: None, locomo_subset_file: Path, tmp_path: Path
) -> None:
    two = tmp_path / "two.json"
    sample = json.loads(locomo_subset_file.read_text(encoding="utf-8"))[0]
    two.write_text(json.dumps([sample, {**sample, "sample_id": "conv-copy"}]), encoding="utf-8")
    result = runner.invoke(
        app, ["eval", "locomo", "--data", str(two), "--conversations", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["data"]["conversations"] == 1
    assert document["config"]["conversations"] == {
        "positions": [2],
        "sample_ids": ["conv-copy"],
    }
    for args, message in (
        (["--conversations", "3"], "the file has conversations 1-2; asked for 3"),
        (["--conversations", "2-1"], "ascending"),
        (["--conversations", "1", "--limit", "1"], "not both"),
    ):
        failed = runner.invoke(app, ["eval", "locomo", "--data", str(two), *args, "--json"])
        assert failed.exit_code == 2, failed.output
        error = json.loads(failed.stdout)["error"]
        assert error["type"] == "ValidationError" and message in error["message"]
    helped = runner.invoke(app, ["eval", "locomo", "--help"])
    assert "--conversations" in helped.stdout


def test_cli_longmemeval_json(hash_embedder: None, synthetic_lme: Path) -> None:
    args = ["eval", "longmemeval", "--data", str(synthetic_lme), "--granularity", "turn"]
    result = runner.invoke(app, [*args, "--limit", "3", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["dataset"] == "longmemeval"
    assert set(document["results"]["memstrata"]) == {"overall", "by_type", "cer"}
    assert document["data"]["questions"] == 3 and document["data"]["scored"] == 3
    assert document["config"]["granularity"] == "turn"
    plain = runner.invoke(
        app, ["eval", "longmemeval", "--data", str(synthetic_lme), "--limit", "1"]
    )
    assert plain.exit_code == 0, plain.output
    for text in ("longmemeval: memstrata", "longmemeval: dense", "overall", "CER"):
        assert text in plain.stdout


def test_cli_bad_data_file(hash_embedder: None, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps([{"question_id": "q1"}]))
    result = runner.invoke(
        app, ["eval", "longmemeval", "--data", str(bad), "--granularity", "turn", "--json"]
    )
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "DatasetError" and error["http"] == 422
    assert error["message"] == f"{bad}: record 0 (q1): question_type: missing"
    plain = runner.invoke(app, ["eval", "locomo", "--data", str(bad)])
    assert plain.exit_code == 2
    assert "DatasetError" in plain.stderr and "broken.json: record 0" in plain.stderr
    assert plain.stdout == ""
    wrong = runner.invoke(app, ["eval", "longmemeval", "--data", str(bad), "--granularity", "page"])
    assert wrong.exit_code == 2 and "granularity" in wrong.stderr


def _session_turns(sizes: Sequence[int]) -> list[Turn]:
    at = datetime(2023, 5, 8, tzinfo=UTC)
    return [
        Turn(f"D{s}:{i}", str(s), "A", f"turn {i}", at, "8 May, 2023")
        for s, size in enumerate(sizes, start=1)
        for i in range(1, size + 1)
    ]


@pytest.mark.parametrize(
    ("sizes", "size", "expected"),
    [
        ([3, 3, 3], 4, [(0, 6), (6, 9)]),  # a cut waits for the session's end
        ([3, 3, 3], 3, [(0, 3), (3, 6), (6, 9)]),
        ([10], 4, [(0, 10)]),  # one long session is never cut
        ([2, 2], 100, [(0, 4)]),
        ([], 4, []),
    ],
)
def test_session_batches_cut_only_between_sessions(
    sizes: list[int], size: int, expected: list[tuple[int, int]]
) -> None:
    assert session_batches(_session_turns(sizes), size) == expected


def test_the_eval_progress_draws_between_queries_from_no_thread_of_its_own() -> None:
    # A refresh thread would take the GIL in the middle of the timed searches.
    before = threading.active_count()
    out = io.StringIO()
    with RichProgress(Console(file=out, force_terminal=True, width=80)) as progress:
        progress.start("retrieving (3 systems)", 4)
        for _ in range(4):
            progress.advance()
        assert threading.active_count() == before
    assert "retrieving (3 systems)" in out.getvalue() and "4/4" in out.getvalue()
