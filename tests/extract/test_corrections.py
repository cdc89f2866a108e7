"""Explicit corrections and removals as the rule extractor reads them (issue 25, item 1):
a correction marks the turn's facts ``correct`` (English and Chinese), a removal names
the value taken back, and nothing is read from questions, hypotheticals, jokes, other
people or the assistant. The set semantics the eval applies mirror the write path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata.errors import ValidationError
from memstrata.eval.extraction import Item, apply_sequence
from memstrata.extract import Candidate, RuleExtractor, Turn
from memstrata.memory.versioning import item_key

EXTRACTOR = RuleExtractor()


def _found(text: str, role: str = "user") -> list[tuple[str, str, str]]:
    turn = Turn(
        text=text,
        role=role,  # type: ignore[arg-type]
        tenant="t",
        user="u",
        session_id="s",
        turn_id="x",
        observed_at=datetime(2025, 3, 1, tzinfo=UTC),
    )
    return [(c.attribute, c.value, c.change) for c in EXTRACTOR.extract(turn)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sorry, I got that wrong: my birthday is June 3.", ("birthday", "June 3")),
        ("I was wrong. My birthday is June 3.", ("birthday", "June 3")),
        ("Correction: my birthday is June 3.", ("birthday", "June 3")),
        ("不对，我记错了，我的生日是6月3日。", ("birthday", "6月3日")),
        ("更正一下，我的生日是6月3日", ("birthday", "6月3日")),
        ("说错了，我住在无锡。", ("city", "无锡")),
    ],
)
def test_a_correction_marks_the_facts_it_states(text: str, expected: tuple[str, str]) -> None:
    assert (*expected, "correct") in _found(text)


@pytest.mark.parametrize(
    "text",
    [
        "My birthday is June 3.",
        "Actually, I'm also allergic to kiwi.",  # adds
        "我还对芒果过敏，更正一下。",  # 还: adds
        "我不对芒果过敏。",  # 不对 inside a sentence is no correction marker
    ],
)
def test_no_correction_without_a_marker_or_when_adding(text: str) -> None:
    assert all(change != "correct" for _a, _v, change in _found(text))


@pytest.mark.parametrize(
    ("text", "removed"),
    [
        ("I'm allergic to shellfish, not peanuts.", "peanuts"),
        ("I'm no longer allergic to peanuts.", "peanuts"),
        ("I'm not allergic to soy anymore.", "soy"),
        ("Please take aspirin off my allergy list.", "aspirin"),
        ("Remove pollen from my allergies.", "pollen"),
        ("我不再对花生过敏", "花生"),
        ("我对海鲜过敏，不是花生", "花生"),
        ("我现在对牛奶已经不过敏了。", "牛奶"),
        ("牛奶我现在已经不过敏了", "牛奶"),
        ("把花生去掉", "花生"),
    ],
)
def test_a_removal_names_the_allergy_taken_back(text: str, removed: str) -> None:
    assert ("allergies", removed, "remove") in _found(text)


def test_a_removal_naming_no_attribute_concerns_every_set() -> None:
    found = _found("把花生去掉")
    assert {a for a, v, c in found if c == "remove" and v == "花生"} >= {
        "allergies",
        "dislikes",
        "likes",
    }


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("Am I no longer allergic to peanuts?", "user"),
        ("If I'm not allergic to peanuts, can I eat this?", "user"),
        ("如果我不再对花生过敏，就能吃了吗", "user"),
        ("My son is no longer allergic to peanuts.", "user"),
        ("I'm no longer allergic to Mondays, haha.", "user"),
        ("You are no longer allergic to peanuts.", "assistant"),
        ("I'm no longer allergic to peanuts.", "assistant"),
    ],
)
def test_no_removal_from_questions_hypotheticals_jokes_or_others(text: str, role: str) -> None:
    assert all(change != "remove" for _a, _v, change in _found(text, role))


def test_a_candidate_refuses_an_unknown_change_or_an_event_that_removes() -> None:
    with pytest.raises(ValidationError) as raised:
        Candidate("user", "allergies", "x", "fact", 0.9, 0.5, change="delete")  # type: ignore[arg-type]
    assert raised.value.field == "change"
    with pytest.raises(ValidationError) as raised:
        Candidate("user", "order", "x", "event", 0.9, 0.5, change="remove")
    assert raised.value.field == "change"


def test_items_are_told_apart_by_case_spacing_and_plural() -> None:
    assert item_key("Peanuts") == item_key("peanut") == item_key(" peanuts ")
    assert item_key("peaches") == item_key("peach")
    assert item_key("glass") != item_key("glas")
    assert item_key("花生") != item_key("海鲜")


def _step(*items: tuple[str, str, str]) -> tuple[Item, ...]:
    return tuple(Item("user", a, v, "fact", c) for a, v, c in items)  # type: ignore[arg-type]


def test_the_eval_applies_corrections_and_removals_as_the_write_path_does() -> None:
    both = _step(("allergies", "peanuts", "state"), ("allergies", "shellfish", "state"))
    not_peanuts = _step(("allergies", "shellfish", "state"), ("allergies", "peanuts", "remove"))
    slot = ("user", "allergies")
    assert apply_sequence([both, not_peanuts])[slot] == ("shellfish",)
    fixed = _step(("allergies", "tree nuts", "correct"), ("allergies", "sesame", "correct"))
    assert apply_sequence([both, fixed])[slot] == ("tree nuts", "sesame")
    gone = _step(("allergies", "Peanut", "remove"), ("allergies", "shellfish", "remove"))
    assert slot not in apply_sequence([both, gone])
    liked = _step(("likes", "jazz", "state"), ("likes", "country music", "state"))
    hated = _step(("dislikes", "country music", "state"))
    assert apply_sequence([liked, hated])[("user", "likes")] == ("jazz",)
