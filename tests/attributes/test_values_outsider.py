"""Value normal forms the outsider's dev set (dev2) showed missing: one channel has one
name in both languages, the eating verb of a liked dish is no part of it, and 素 alone
is the vegetarian diet."""

from __future__ import annotations

import pytest

from memstrata.attributes.registry import normal_value


@pytest.mark.parametrize(
    ("said", "canonical"),
    [
        ("微信", "wechat"),
        ("电话", "phone"),
        ("邮件", "email"),
        ("短信", "sms"),
        ("E-mail", "email"),
    ],
)
def test_a_channel_is_one_value_in_both_languages(said: str, canonical: str) -> None:
    assert normal_value("contact_channel", said) == normal_value("contact_channel", canonical)


@pytest.mark.parametrize(
    ("attribute", "one", "other"),
    [("likes", "吃辣", "辣"), ("prefers", "喝茶", "茶")],
)
def test_the_eating_verb_is_no_part_of_a_liked_thing(attribute: str, one: str, other: str) -> None:
    assert normal_value(attribute, one) == normal_value(attribute, other)


def test_a_liked_thing_keeps_its_other_words() -> None:
    assert normal_value("likes", "辣") != normal_value("likes", "甜")


def test_su_alone_is_the_vegetarian_diet() -> None:
    assert normal_value("diet", "素") == normal_value("diet", "吃素") == "vegetarian"
