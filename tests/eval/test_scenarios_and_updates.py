"""The blind harnesses of issue 32: ``eval scenarios`` (conversations, then a question,
through observe / build_context / decide) and the product-path update sequences of
``eval extraction --split blind``. Their scoring is pure and tested here on hand-made
blocks and slots; one small run of each goes through a real engine."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli import app
from memstrata.errors import ValidationError
from memstrata.eval.extraction import FinalSlot, SupersedeCase
from memstrata.eval.scenarios import Scenario, load_scenarios, pieces, score_block
from memstrata.eval.updates import SlotState, run_updates, score_update

runner = CliRunner()


def _piece(ident: str, label: str, text: str) -> str:
    return f"[{ident}] {label}\n```\n{text}\n```"


def _scenario(category: str, answer: tuple[str, ...], stale: tuple[str, ...] = ()) -> Scenario:
    return Scenario("s", "en", category, (("x", 1),), "q?", answer, stale)


def test_the_packaged_blind_scenarios_cover_every_category_and_language() -> None:
    scenarios = load_scenarios()
    assert len(scenarios) >= 160 and len({s.id for s in scenarios}) == len(scenarios)
    counts = Counter(s.category for s in scenarios)
    assert counts["fact"] >= 40 and counts["update"] >= 40 and counts["date"] >= 30
    assert counts["needs"] >= 25 and counts["unrelated"] >= 25
    assert {s.lang for s in scenarios} == {"en", "zh", "mixed"}
    assert all(not s.answer for s in scenarios if s.category == "unrelated")


def test_pieces_read_the_block_as_the_model_sees_it() -> None:
    block = "\n\n".join(
        [
            "Memory:",
            _piece("m1", "L3 said on 2026-06-01 | source x", "I live in Chengdu."),
            _piece("m2", "L3 said on 2026-05-01 | PAST, now replaced by: Chengdu", "Hangzhou"),
            _piece("m3", "L3 current fact | LOW CONFIDENCE | source x", "user budget: 8000"),
            _piece("s1", "L1 live", "Chengdu"),
        ]
    )
    found = pieces(block)
    assert [p.id for p in found] == ["m1", "m2", "m3", "s1"]
    assert [p.presented_current for p in found] == [True, False, False, False]


def test_an_answer_must_be_presented_confident_and_current() -> None:
    confident = _piece("m1", "L3 said on 2026-06-01", "We moved to Chengdu.")
    marked = _piece("m1", "L3 said on 2026-06-01 | LOW CONFIDENCE", "We moved to Chengdu.")
    assert score_block(_scenario("fact", ("Chengdu",)), confident, asked=False) == (True, "")
    assert score_block(_scenario("fact", ("chengdu",)), confident, asked=False)[0]
    assert score_block(_scenario("fact", ("Chengdu",)), marked, asked=False) == (
        False,
        "answer 'Chengdu' marked",
    )
    assert score_block(_scenario("fact", ("Chengdu",)), "", asked=False)[1].endswith("missing")
    assert score_block(_scenario("fact", ("Chengdu",)), confident, asked=True) == (
        False,
        "decide asked",
    )
    # A date question is scored on what comes back, not on whether decide asks.
    assert score_block(_scenario("date", ("Chengdu",)), confident, asked=True)[0]


def test_a_stale_value_presented_current_fails_an_update() -> None:
    new = _piece("m1", "L3 said on 2026-06-01", "Actually we moved to Chengdu.")
    past = "L3 said on 2026-01-01 | PAST, now replaced by: x"
    old_past = _piece("m2", past, "I live in Hangzhou")
    old_plain = _piece("m2", "L3 said on 2026-01-01", "I live in Hangzhou")
    both = _piece("m3", "L3 said on 2026-06-01", "Moved from Hangzhou to Chengdu")
    case = _scenario("update", ("Chengdu",), ("Hangzhou",))
    assert score_block(case, f"{new}\n\n{old_past}", asked=False)[0]
    assert score_block(case, both, asked=False)[0]
    passed, why = score_block(case, f"{new}\n\n{old_plain}", asked=False)
    assert not passed and why == "stale 'Hangzhou' presented current (m2)"


def test_an_unrelated_question_must_bring_no_confident_memory() -> None:
    case = _scenario("unrelated", ())
    low = _piece("m1", "L3 said on 2026-06-01 | LOW CONFIDENCE", "I live in Chengdu.")
    live = _piece("s1", "L1 live", "session state")
    assert score_block(case, f"{low}\n\n{live}", asked=True) == (True, "")
    assert not score_block(case, _piece("m1", "L3 current fact", "x"), asked=False)[0]


def _case(values: tuple[str, ...], old: tuple[str, ...], multi: bool = False) -> SupersedeCase:
    final = FinalSlot("user", "birthday", values, multi)
    return SupersedeCase("c", "en", "blind", "sequence", "user", ("a", "b"), final, None, old)


def test_an_update_is_right_when_current_and_the_old_value_is_history() -> None:
    case = _case(("June 3",), ("May 3",))
    assert score_update(case, SlotState(["June 3"], ["May 3"])) == (True, True, "")
    assert score_update(case, SlotState(["June 3"], [])) == (
        True,
        False,
        "old 'May 3' not kept as history",
    )
    assert not score_update(case, SlotState(["May 3"], ["June 3"]))[0]
    assert not score_update(case, SlotState([], []))[0]
    emptied = _case((), ("eggs",), multi=True)
    assert score_update(emptied, SlotState([], ["eggs"])) == (True, True, "")


def test_update_sequences_through_a_real_engine() -> None:
    cases = [
        SupersedeCase(
            "move-en",
            "en",
            "blind",
            "sequence",
            "user",
            ("I live in Hangzhou.", "I moved to Chengdu last month."),
            FinalSlot("user", "city", ("Chengdu",), False),
            None,
            ("Hangzhou",),
        ),
        SupersedeCase(
            "never-said",
            "en",
            "blind",
            "sequence",
            "user",
            ("Nice weather today.", "Thanks for the help."),
            FinalSlot("user", "city", ("Oslo",), False),
            None,
            (),
        ),
    ]
    report = run_updates(cases)
    assert report["n"] == 2 and report["accuracy"] == 0.5 and report["current_right"] == 0.5
    assert [f["id"] for f in report["failures"]] == ["never-said"]


def test_scenarios_through_a_real_engine_and_the_cli(tmp_path: Path) -> None:
    rows = [
        {
            "id": "sc-en-1",
            "lang": "en",
            "category": "fact",
            "turns": [
                {"text": "I'm allergic to peanuts.", "days_ago": 20},
                {"text": "Nice weather today.", "days_ago": 2},
            ],
            "question": "What am I allergic to?",
            "answer": ["peanuts"],
        },
        {
            "id": "sc-en-2",
            "lang": "en",
            "category": "unrelated",
            "turns": [{"text": "I'm allergic to peanuts.", "days_ago": 20}],
            "question": "What's the capital of Peru?",
            "answer": [],
        },
    ]
    data = tmp_path / "mine.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = runner.invoke(app, ["eval", "scenarios", "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["overall"]["n"] == 2
    assert report["by_category"]["unrelated"]["passed"] == 1
    assert report["by_category"]["fact"]["passed"] == 1, report["failures"]


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"category": "gossip"}, "category"),
        ({"turns": [{"text": "x", "days_ago": -1}]}, "turns"),
        ({"turns": []}, "turns"),
        ({"answer": "peanuts"}, "answer"),
    ],
)
def test_a_malformed_scenario_names_its_line_and_field(
    tmp_path: Path, row: dict[str, object], field: str
) -> None:
    good = {
        "id": "a",
        "lang": "en",
        "category": "fact",
        "turns": [{"text": "x", "days_ago": 1}],
        "question": "q",
        "answer": ["x"],
    }
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps({**good, **row}), encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        load_scenarios(data)
    assert caught.value.field == "data" and "line 1" in str(caught.value)
    assert field in str(caught.value)
