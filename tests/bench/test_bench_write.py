"""``memstrata bench write --json``: one JSON document with the promised numbers."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.bench.write import generate_turns, long_work
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
    # The raw embedder replays what the run's model embedded: every distinct text of an
    # episode or a fact, once (users repeat each other's sentences).
    said = {text for _, text in generate_turns(40)}
    assert report["embedder_texts"] >= len(said) + 20
    assert report["turns_per_s"] > 0 and report["embedder_turns_per_s"] > 0
    expected = report["turns_per_s"] / report["embedder_turns_per_s"]
    assert report["ratio"] == pytest.approx(expected, rel=0.02)  # both were rounded
    assert set(report["stage_s"]) >= {"extract", "embed", "facts", "upsert"}
    # The previous release's numbers come beside today's; 40 turns are not the
    # baseline's 10,000, so they are shown for reference and nothing is flagged.
    assert report["baseline"]["commit"] == "77813da" and report["baseline"]["mode"] == "short"
    vs = report["vs_baseline"]
    assert (
        vs["comparable"] is False and "turns 40 (previous: 10000)" in vs["not_comparable_because"]
    )
    assert vs["flags"] == []
    row = vs["metrics"]["turns_per_s"]
    assert row["today"] == report["turns_per_s"] and row["previous"] == 178.4
    assert row["ratio"] == pytest.approx(report["turns_per_s"] / 178.4, abs=0.001)
    assert row["better"] == "higher" and len(vs["load_average_at_end"]) == 3
    # Every model the run used is replayed on the texts it embedded, and the ratio is
    # against their sum: the Chinese turns had the multilingual vector at least.
    minilm, second = report["embedders"].values()
    assert second["on"] and second["texts"] >= 20 and second["calls"] >= 1
    assert report["ratio_against"] == list(report["embedders"])
    assert report["embedder_s"] == pytest.approx(minilm["replay_s"] + second["replay_s"], abs=0.002)
    assert report["ratio_minilm_only"] < report["ratio"]  # a smaller raw time
    # The second model's time inside the writes is its own stage, not upsert's.
    assert report["stage_s"]["embed_multilingual"] > 0
    assert report["points_upserted"] >= 80 and report["upsert_ms_per_point"] > 0
    micro = report["upsert_micro"]
    assert micro["points"] >= 40 and micro["ms_per_point"] > 0
    # The run wrote into a directory of its own; what was there is untouched.
    assert (root / "keep.txt").read_text() == "the user's own file"
    assert Path(report["data_dir"]).parent == root
    again = CliRunner().invoke(app, [*args, "--data-dir", str(root)])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["data_dir"] != report["data_dir"]


def test_bench_write_english_is_the_same_turns_without_chinese(tmp_path: Path) -> None:
    """``--english``: the generator's turns with its Chinese ones in English, and the
    ratio against raw MiniLM alone."""
    english = generate_turns(200, english=True)
    assert not any("我" in text for _, text in english)
    assert [t for t in generate_turns(200) if "我" not in t[1]] == [
        t for t, mixed in zip(english, generate_turns(200), strict=True) if t == mixed
    ]
    args = ["bench", "write", "--english", "--json", "--turns", "30", "--batch-size", "16"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["mode"] == "short-english" and report["episodes_stored"] == 30
    minilm = report["embedders"][report["embedder"]]
    assert report["ratio_against"] == [report["embedder"]]
    assert report["embedder_s"] == pytest.approx(minilm["replay_s"], abs=0.002)
    assert report["ratio"] == pytest.approx(report["ratio_minilm_only"], abs=0.002)


def test_bench_write_long_observes_long_turns_with_their_window_keys(tmp_path: Path) -> None:
    """``--long``: LongMemEval-like turns (their own roles and sessions) with the
    window keys of long ones embedded, and the raw embedder replaying all of it."""
    args = ["bench", "write", "--long", "--json", "--turns", "16", "--batch-size", "8"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["mode"] == "long" and report["turns"] == 16 and report["not_queued"] == 0
    assert report["words"]["mean"] > 60 and report["words"]["max"] > 150
    assert report["sessions"] >= 1 and report["episodes_stored"] == 16
    # Long answers are read through several window keys: more than one text a turn.
    assert report["texts_per_turn"] > 1.2
    assert report["embedder_texts"] >= report["episodes_written"] + report["units_written"]
    assert report["ratio"] > 0 and report["words_per_s"] > 0
    assert set(report["stage_s"]) >= {"extract", "embed", "facts", "upsert"}
    assert report["baseline"]["mode"] == "long" and report["baseline"]["commit"] == "959fa07"
    assert report["vs_baseline"]["metrics"]["words_per_s"]["previous"] == 1719.0


def test_bench_write_prints_the_previous_release_beside_today(tmp_path: Path) -> None:
    """Without --json: the report, then a table of today against the previous release."""
    args = ["bench", "write", "--turns", "20", "--batch-size", "16"]
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp_path)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "against the previous release 77813da" in result.stdout
    assert "previous release" in result.stdout and "178 turns/s" in result.stdout
    assert "not run like the previous release" in result.stdout


def test_long_work_is_s_shaped_haystacks_in_order() -> None:
    work = long_work(300)
    assert work == long_work(300)  # deterministic
    assert {turn.role for turn in work} == {"user", "assistant"}
    words = sorted(len(turn.text.split()) for turn in work)
    assert 60 <= words[len(words) // 2] <= 130  # LongMemEval_S: median ~90
    assert 120 <= sum(words) / len(words) <= 210  # mean ~160
    # One session's turns are contiguous (the engine observes a session at a time).
    order = [turn.session for turn in work]
    assert len({*order}) == sum(1 for a, b in pairwise(order) if a != b) + 1


def test_s_shaped_file_has_longmemeval_s_shape_and_loads(tmp_path: Path) -> None:
    """``python -m memstrata.testing.synthetic_longmemeval --s-shaped N``: questions of
    LongMemEval_S's shape (~50 sessions, ~115k tokens) that the eval loader reads."""
    from memstrata.context.tokens import counter_for_model
    from memstrata.eval.datasets import load_longmemeval
    from memstrata.testing import synthetic_longmemeval as synth

    out = tmp_path / "s.json"
    synth.main(["--s-shaped", "2", str(out)])
    records = json.loads(out.read_text())
    assert records == synth.s_shaped(2)  # deterministic
    count = counter_for_model(synth.TOKEN_ENCODING_MODEL).count
    for record in records:
        sessions = record["haystack_sessions"]
        assert len(sessions) == synth.S_SESSIONS == len(record["haystack_dates"])
        tokens = sum(count(turn["content"]) for session in sessions for turn in session)
        assert abs(tokens - synth.S_TOKENS) < 0.05 * synth.S_TOKENS
        # The answer was said by the user in the evidence sessions, marked as such.
        evidence = [
            session
            for sid, session in zip(record["haystack_session_ids"], sessions, strict=True)
            if sid in record["answer_session_ids"]
        ]
        assert evidence and all(
            session[0]["role"] == "user" and session[0]["has_answer"] for session in evidence
        )
    questions = load_longmemeval(out)
    assert [q.question_id for q in questions] == [r["question_id"] for r in records]
    assert all(len(q.session_ids) == synth.S_SESSIONS for q in questions)
    with pytest.raises(ValueError, match="sessions"):
        synth.s_shaped_question(0, sessions=1)
