"""The labeled statement set, its scorer, and the rule extractor measured on it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memstrata.errors import DatasetError, ValidationError
from memstrata.eval.extraction import (
    CATEGORIES,
    TARGET_PRECISION,
    TARGET_RECALL,
    Item,
    RowResult,
    Statement,
    StatementSet,
    apply_sequence,
    check_split,
    evaluate_extractors,
    items_match,
    load_statements,
    match_items,
    parse_statements,
    run_extractor,
    score_rows,
    sequence_correct,
    value_key,
)
from memstrata.extract import RuleExtractor

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def dataset() -> StatementSet:
    return load_statements()


OUTSIDERS = ("dev2", "blind")
"""Splits written for issue 32 by people who had read neither the rules nor the sets."""


@pytest.fixture(scope="module")
def report(dataset: StatementSet) -> dict[str, Any]:
    return evaluate_extractors({"rules": RuleExtractor()}, dataset)["results"]["rules"]


# --- the set ----------------------------------------------------------------------------


def test_the_packaged_set_is_large_bilingual_and_split(dataset: StatementSet) -> None:
    rows = [r for r in (*dataset.statements, *dataset.sequences) if r.split not in OUTSIDERS]
    assert len(rows) >= 300
    by_lang = {lang: [r for r in rows if r.lang == lang] for lang in ("en", "zh")}
    assert all(0.4 <= len(group) / len(rows) <= 0.6 for group in by_lang.values())
    held_out = [r for r in rows if r.split in ("test", "heldback")]
    assert len(held_out) * 3 >= len(rows)  # at least a third never tuned on
    assert len([r for r in rows if r.split == "heldback"]) >= 150
    # The outsiders' splits are scored as their writers labeled them (a "mixed" row may
    # mix digits into Chinese); the script check holds for the sets written here.
    for statement in (s for s in dataset.statements if s.split not in OUTSIDERS):
        if statement.lang == "zh":
            assert CJK.search(statement.text), statement.id
        elif statement.lang == "mixed":
            assert CJK.search(statement.text) and re.search("[A-Za-z]", statement.text)
        else:
            assert not CJK.search(statement.text), statement.id


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_category_is_present_in_both_languages_and_splits(
    dataset: StatementSet, lang: str
) -> None:
    # "address" came with issue 24, after the test split was written.
    for split, expected in (("dev", set(CATEGORIES)), ("test", set(CATEGORIES) - {"address"})):
        rows = [*dataset.statements, *dataset.sequences]
        present = {r.category for r in rows if r.lang == lang and r.split == split}
        assert present == expected, (split, expected - present)


def test_the_set_covers_what_the_write_path_must_handle(dataset: StatementSet) -> None:
    attributes = {item.attribute for s in dataset.statements for item in s.facts}
    assert {
        "name",
        "city",
        "job",
        "employer",
        "contact_channel",
        "likes",
        "dislikes",
        "allergies",
        "health",
        "avoids",
        "spouse",
        "children",
        "pets",
        "budget",
        "decision",
        "commitment",
        "order",
        "payment",
        "refund",
    } <= attributes
    nothing = [s for s in dataset.statements if not s.facts]
    assert len(nothing) >= 40  # small talk, questions, hypotheticals, other people
    assert any(s.role == "assistant" for s in dataset.statements)
    sequences = {(c.lang, c.final.attribute) for c in dataset.sequences}
    for lang in ("en", "zh"):
        # moves, corrections, retractions and accumulation, in both languages
        assert {(lang, "city"), (lang, "name"), (lang, "avoids"), (lang, "allergies")} <= sequences


# --- the rule extractor against the targets ---------------------------------------------


@pytest.mark.parametrize("split", ["dev", "test"])
def test_rule_extractor_meets_the_targets(report: dict[str, Any], split: str) -> None:
    scores = report[split]
    assert scores["precision"] >= TARGET_PRECISION, scores["false_positives"]
    assert scores["recall"] >= TARGET_RECALL, scores["misses"]
    assert scores["errors"] == []


@pytest.mark.parametrize("split", ["dev", "test"])
def test_every_supersede_sequence_ends_with_the_right_value(
    report: dict[str, Any], split: str
) -> None:
    supersede = report[split]["supersede"]
    assert supersede["n"] > 0
    assert supersede["failures"] == []
    assert supersede["by_lang"] == {"en": 1.0, "zh": 1.0, "mixed": None}


def test_sequences_one_by_one(dataset: StatementSet) -> None:
    # The held-back and blind splits are measured, never asserted on: a test would tune
    # on them.
    cases = tuple(c for c in dataset.sequences if c.split in ("dev", "test"))
    run = run_extractor(RuleExtractor(), StatementSet(dataset.source, (), cases))
    wrong = [
        (case.id, case.texts, apply_sequence(steps))
        for case, steps in zip(cases, run.sequences, strict=True)
        if not sequence_correct(case, steps)
    ]
    assert wrong == []


def test_the_held_back_split_is_its_own_file_and_reported_apart(
    dataset: StatementSet, report: dict[str, Any]
) -> None:
    assert dataset.source == "statements.jsonl + heldback.jsonl + blind.jsonl"
    held = dataset.select("heldback")
    assert len(held.statements) + len(held.sequences) >= 150
    assert {s.lang for s in held.statements} == {"en", "zh", "mixed"}
    assert {c.lang for c in held.sequences} == {"en", "zh", "mixed"}
    attributes = {item.attribute for s in held.statements for item in s.facts}
    assert {"address", "delivery_address", "city", "diet", "budget", "language"} <= attributes
    assert set(report) == {"dev", "dev2", "test", "heldback", "blind", "all"}
    assert report["heldback"]["rows"] == len(held.statements)
    assert report["all"]["rows"] == len(dataset.statements)


def test_the_blind_split_is_its_own_file_reported_apart(
    dataset: StatementSet, report: dict[str, Any]
) -> None:
    blind = dataset.select("blind")
    assert len(blind.statements) >= 300 and len(blind.sequences) >= 100
    assert {s.lang for s in blind.statements} == {"en", "zh", "mixed"}
    assert {c.lang for c in blind.sequences} == {"en", "zh", "mixed"}
    # Every update sequence says which earlier values are no longer true.
    assert sum(1 for c in blind.sequences if c.old) >= 100
    assert report["blind"]["rows"] == len(blind.statements)
    assert report["blind"]["supersede"]["n"] == len(blind.sequences)


# --- loading errors ---------------------------------------------------------------------

GOOD = {
    "id": "en-x-001",
    "lang": "en",
    "split": "dev",
    "category": "move",
    "role": "user",
    "text": "I moved to Chengdu.",
    "facts": [{"subject": "user", "attribute": "city", "value": "Chengdu", "kind": "fact"}],
}
GOOD_SEQUENCE = {
    "id": "en-s-001",
    "lang": "en",
    "split": "test",
    "category": "sequence",
    "role": "user",
    "sequence": ["I live in Hangzhou.", "I moved to Chengdu."],
    "final": {"subject": "user", "attribute": "city", "value": "Chengdu"},
}


def _without(row: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != key}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (_without(GOOD, "facts"), "facts"),
        ({**GOOD, "facts": [{**GOOD["facts"][0], "kind": "opinion"}]}, "facts[0].kind"),
        ({**GOOD, "facts": [_without(GOOD["facts"][0], "value")]}, "facts[0].value"),
        ({**GOOD, "facts": [{**GOOD["facts"][0], "value": "  "}]}, "facts[0].value"),
        ({**GOOD, "split": "train"}, "split"),
        ({**GOOD, "lang": "fr"}, "lang"),
        ({**GOOD, "category": "weather"}, "category"),
        ({**GOOD, "role": "robot"}, "role"),
        ({**GOOD, "id": "has space"}, "id"),
        ({**GOOD, "txt": "typo"}, "txt"),
        ({**GOOD, "text": 42}, "text"),
        ({**GOOD_SEQUENCE, "sequence": ["only one"]}, "sequence"),
        ({**GOOD_SEQUENCE, "final": {**GOOD_SEQUENCE["final"], "values": ["x"]}}, "final"),
        ({**GOOD_SEQUENCE, "final": {"subject": "user", "value": "x"}}, "final.attribute"),
    ],
)
def test_a_malformed_row_names_its_line_and_field(bad: dict[str, Any], field: str) -> None:
    lines = [json.dumps(GOOD), json.dumps(bad)]
    with pytest.raises(DatasetError) as caught:
        parse_statements(lines, "set.jsonl")
    message = str(caught.value)
    assert message.startswith("set.jsonl: line 2")
    assert f": {field}: " in message, message
    assert isinstance(caught.value, ValidationError)  # mapped to 422 like any bad input


def test_invalid_json_duplicate_ids_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"line 1: row: not valid JSON"):
        parse_statements(["{not json"], "set.jsonl")
    with pytest.raises(DatasetError, match=r"line 3 \(en-x-001\): id: duplicate of line 1"):
        parse_statements([json.dumps(GOOD), "", json.dumps(GOOD)], "set.jsonl")
    with pytest.raises(DatasetError, match="holds no rows"):
        parse_statements(["", "  "], "set.jsonl")
    missing = tmp_path / "absent.jsonl"
    with pytest.raises(DatasetError, match=r"absent\.jsonl"):
        load_statements(missing)
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD_SEQUENCE) + "\n", encoding="utf-8")
    loaded = load_statements(path)
    assert [s.id for s in loaded.statements] == ["en-x-001"]
    assert loaded.sequences[0].final.values == ("Chengdu",)
    assert loaded.select("test").statements == ()


def test_check_split() -> None:
    assert check_split("all") == "all"
    with pytest.raises(ValidationError, match=r"^split:"):
        check_split("train")


# --- matching and scoring ---------------------------------------------------------------


def fact(attribute: str, value: str, subject: str = "user") -> Item:
    return Item(subject, attribute, value, "fact")


def test_value_key_normalization() -> None:
    assert value_key("The City Council.") == value_key("city council")
    assert value_key("gluten-free") == value_key("Gluten free")
    assert value_key("5000 元") == value_key("5000元")
    assert value_key("ＡＢＣ") == value_key("abc")  # full-width folds
    assert value_key("$300") != value_key("300")  # currency symbols count
    assert value_key("Andrew") == "andrew"  # only a whole leading article is dropped


def test_items_match_facts_exactly_and_events_by_key_phrase() -> None:
    assert items_match(fact("City", "hangzhou"), fact("city", "Hangzhou"))
    assert not items_match(fact("city", "Hangzhou"), fact("hometown", "Hangzhou"))
    assert not items_match(fact("city", "Hangzhou West"), fact("city", "Hangzhou"))
    assert not items_match(fact("name", "Bob", "assistant"), fact("name", "Bob"))
    event = Item("user", "payment", "I paid $120 for order #48213", "event")
    assert items_match(event, Item("user", "payment", "$120", "event"))
    assert not items_match(event, Item("user", "payment", "$12", "fact"))
    assert not items_match(event, Item("user", "refund", "$120", "event"))


def test_matching_is_one_to_one() -> None:
    gold = (fact("likes", "tea"), fact("likes", "tea"))
    assert match_items(gold, (fact("likes", "tea"),)) == ((0, 0),)
    assert match_items((fact("likes", "tea"),), (fact("likes", "Tea"), fact("likes", "tea"))) == (
        (0, 0),
    )


def test_score_rows_counts_precision_and_recall_per_attribute() -> None:
    one = Statement("a", "en", "dev", "multi", "user", "t", (fact("city", "X"), fact("job", "Y")))
    none = Statement("b", "zh", "dev", "none", "user", "t", ())
    scores = score_rows(
        [
            RowResult(one, (fact("city", "X"), fact("likes", "Z"))),
            RowResult(none, (fact("city", "W"),)),
        ]
    )
    assert (scores["gold"], scores["predicted"], scores["matched"]) == (2, 3, 1)
    assert scores["precision"] == round(1 / 3, 4) and scores["recall"] == 0.5
    assert scores["by_attribute"]["city"] == {
        "gold": 1,
        "predicted": 2,
        "matched": 1,
        "precision": 0.5,
        "recall": 1.0,
        "f1": round(2 * 0.5 / 1.5, 4),
    }
    assert scores["by_attribute"]["job"]["precision"] is None  # never predicted
    assert scores["misses"] == [{"id": "a", "attribute": "job"}]
    assert scores["false_positives"] == [
        {"id": "a", "attribute": "likes"},
        {"id": "b", "attribute": "city"},
    ]
    assert scores["by_lang"]["zh"]["predicted"] == 1
    assert not scores["meets_targets"]


def test_apply_sequence_supersedes_or_accumulates() -> None:
    steps = [
        [fact("city", "Hangzhou"), fact("allergies", "peanuts")],
        [fact("city", "Chengdu"), fact("allergies", "Peanuts"), fact("allergies", "shellfish")],
        [Item("user", "city", "an event holds no slot", "event")],
    ]
    slots = apply_sequence(steps, frozenset({"allergies"}))
    assert slots[("user", "city")] == ("Chengdu",)
    assert slots[("user", "allergies")] == ("peanuts", "shellfish")
