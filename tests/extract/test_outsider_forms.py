"""Phrasings an outsider's dev set (dev2) showed the rules missing, by class (our own
sentences, not the set's): a dropped English subject, ..."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memstrata.extract import RuleExtractor, Turn

MakeTurn = Callable[..., Turn]


def _facts(make_turn: MakeTurn, text: str) -> set[tuple[str, str]]:
    found = RuleExtractor().extract(make_turn(text))
    return {(c.attribute, c.value) for c in found if c.kind == "fact" and c.change != "remove"}


# A note drops its subject ("Moved to X", "Vegetarian, allergic to Y"): the subject comes
# back in the form the first word needs.
DROPPED_SUBJECT = [
    ("Moved to Lisbon in the spring.", ("city", "Lisbon")),
    ("born and raised in Galway, as it happens", ("hometown", "Galway")),
    ("Divorced, and happier for it.", ("marital_status", "divorced")),
    ("Vegan, allergic to cashews, and I hate beets.", ("allergies", "cashews")),
    ("Vegan, allergic to cashews, and I hate beets.", ("diet", "vegan")),
    ("I'm 38, married, and we have a parrot.", ("marital_status", "married")),
    ("I'm a nurse in Leeds, originally from Bristol.", ("hometown", "Bristol")),
    ("Work at Adobe as a designer, live in Austin.", ("city", "Austin")),
]


@pytest.mark.parametrize(("text", "fact"), DROPPED_SUBJECT)
def test_a_dropped_subject_is_put_back(
    make_turn: MakeTurn, text: str, fact: tuple[str, str]
) -> None:
    assert fact in _facts(make_turn, text)


@pytest.mark.parametrize(
    "text",
    ["Married couples get a discount there.", "Based on the reviews, it is fine."],
)
def test_a_sentence_about_something_else_gets_no_subject(make_turn: MakeTurn, text: str) -> None:
    assert _facts(make_turn, text) == set()
