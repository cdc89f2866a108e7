"""Value types of the attribute registry: normal forms and the forms a value is stored under."""

from __future__ import annotations

import pytest

from memstrata.attributes import ATTRIBUTES, normal_value
from memstrata.attributes.values import VALUE_TYPES, diet_class, same, variants


def test_every_attribute_names_a_known_value_type() -> None:
    assert {a.value_type for a in ATTRIBUTES} <= VALUE_TYPES


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("eat pork", "pork"),
        ("吃猪肉", "猪肉"),
        ("drinking alcohol", "alcohol"),
        ("Gluten", "gluten"),
    ],
)
def test_a_food_is_the_food_not_the_eating(one: str, other: str) -> None:
    assert same("food", one, other)
    assert normal_value("avoids", one) == normal_value("avoids", other)


def test_eating_named_by_a_diet_stays_a_diet() -> None:
    assert normal_value("avoids", "吃素") == "吃素"
    assert diet_class("吃素") == diet_class("vegetarian") == "vegetarian"
    assert diet_class("pizza") is None


def test_a_diet_value_is_stored_under_any_of_its_forms() -> None:
    forms = variants("diet", "素食主义者")
    assert forms[0] == "素食主义者"
    assert {"vegetarian", "吃素"} <= set(forms)
    assert variants("text", "x") == ("x",)
