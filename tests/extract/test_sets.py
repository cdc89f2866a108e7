"""The rule extractor's set-valued languages and contact channels (issue 25, item 1):
what each phrasing adds or removes, in English and Chinese, and what must add and
remove nothing (someone else's languages, questions, hypotheticals)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memstrata.config import DEFAULT_MULTI_VALUED
from memstrata.extract.candidates import Turn
from memstrata.extract.rules import RuleExtractor

MakeTurn = Callable[..., Turn]

Found = list[tuple[str, str, str]]


def _facts(make_turn: MakeTurn, text: str) -> Found:
    return [
        (c.attribute, c.value, c.change)
        for c in RuleExtractor().extract(make_turn(text))
        if c.kind == "fact"
    ]


def test_both_are_set_valued_and_the_reply_language_is_not() -> None:
    assert {"languages_spoken", "contact_channels"} <= DEFAULT_MULTI_VALUED
    assert "language" not in DEFAULT_MULTI_VALUED
    assert "contact_channel" not in DEFAULT_MULTI_VALUED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I speak English and French.",
            [("languages_spoken", "English", "state"), ("languages_spoken", "French", "state")],
        ),
        ("I also speak Spanish.", [("languages_spoken", "Spanish", "state")]),
        ("I'm fluent in German.", [("languages_spoken", "German", "state")]),
        ("I speak a little Japanese.", [("languages_spoken", "Japanese", "state")]),
        (
            "我会说中文和英语",
            [("languages_spoken", "中文", "state"), ("languages_spoken", "英语", "state")],
        ),
        ("我还会说一点日语。", [("languages_spoken", "日语", "state")]),
        ("I don't speak French anymore.", [("languages_spoken", "French", "remove")]),
        ("I no longer speak French.", [("languages_spoken", "French", "remove")]),
        ("Not French.", [("languages_spoken", "French", "remove")]),
        ("我不会说法语了。", [("languages_spoken", "法语", "remove")]),
        ("不是法语。", [("languages_spoken", "法语", "remove")]),
        (
            # A correction naming the wrong value swaps it: an addition and a removal.
            "Sorry, I got that wrong: I speak Italian, not French.",
            [("languages_spoken", "Italian", "state"), ("languages_spoken", "French", "remove")],
        ),
        (
            "I speak English, but my husband speaks French.",
            [("languages_spoken", "English", "state")],
        ),
        ("我会说英语，我老婆会说法语。", [("languages_spoken", "英语", "state")]),
    ],
)
def test_languages_spoken(make_turn: MakeTurn, text: str, expected: Found) -> None:
    assert _facts(make_turn, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "You can reach me by email or phone.",
            [
                ("contact_channel", "email", "state"),
                ("contact_channels", "email", "state"),
                ("contact_channels", "phone", "state"),
            ],
        ),
        ("Please contact me by email.", [("contact_channel", "email", "state")]),
    ],
)
def test_several_channels_make_a_set_and_one_stays_the_preference(
    make_turn: MakeTurn, text: str, expected: Found
) -> None:
    assert _facts(make_turn, text) == expected


@pytest.mark.parametrize(
    ("text", "channel"),
    [
        ("Don't call me by phone anymore.", "phone"),
        ("Don't contact me by phone.", "phone"),
        ("Email is fine, not by phone.", "phone"),
        ("Don't text me anymore.", "sms"),
        ("别打电话了。", "phone"),
        ("别用电话联系我", "phone"),
        ("不要用短信联系我。", "sms"),
    ],
)
def test_a_channel_taken_back_is_removed_and_never_stated(
    make_turn: MakeTurn, text: str, channel: str
) -> None:
    assert _facts(make_turn, text) == [
        ("contact_channels", channel, "remove"),
        ("contact_channel", channel, "remove"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "My wife speaks French.",
        "Do you speak French?",
        "Can you reach me by email or phone?",
        "你会说法语吗？",
        "我老婆会说法语。",
        "If I spoke French I'd move to Paris.",
        "I'm not fluent in French.",
        "I know French people.",
        "Not now.",
        "You never call me.",
        "I got no texts from you.",
        "She said don't call me by phone.",
        "他不想用微信联系我。",
        "我妈说别打电话了。",
    ],
)
def test_nothing_added_or_removed(make_turn: MakeTurn, text: str) -> None:
    assert [f for f in _facts(make_turn, text) if "language" in f[0] or "channel" in f[0]] == []
