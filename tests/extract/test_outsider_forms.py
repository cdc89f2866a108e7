"""Phrasings an outsider's dev set (dev2) showed the rules missing, by class (our own
sentences, not the set's): a dropped English subject, how long ago or why a value
is said, and English values inside Chinese sentences."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memstrata.extract import RuleExtractor, Turn
from memstrata.extract.values import strip_tail

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


# How long ago, for how long and why a value is said are no part of it.
ADJUNCTS = [
    ("I joined Spotify three months ago.", ("employer", "Spotify")),
    ("I stopped eating sugar about two years ago.", ("avoids", "sugar")),
    ("I live at 9 Marsh Lane now in case you need it.", ("address", "9 Marsh Lane")),
]


@pytest.mark.parametrize(("text", "fact"), ADJUNCTS)
def test_a_time_or_purpose_adjunct_is_cut_from_the_value(
    make_turn: MakeTurn, text: str, fact: tuple[str, str]
) -> None:
    assert fact in _facts(make_turn, text)


def test_a_monthly_amount_keeps_its_period() -> None:
    assert strip_tail("2,400 a month") == "2,400 a month"
    assert strip_tail("Acme for about a year") == "Acme"


# Code-switched Chinese: the English value keeps its spaces and passes the English check.
CODE_SWITCHED = [
    ("我跳槽到Goldman Sachs了。", ("employer", "Goldman Sachs")),
    ("我老家是San Jose。", ("hometown", "San Jose")),
    ("我最近得了eczema。", ("health", "eczema")),
    ("我不吃beef。", ("avoids", "beef")),
]


@pytest.mark.parametrize(("text", "fact"), CODE_SWITCHED)
def test_an_english_value_in_a_chinese_sentence(
    make_turn: MakeTurn, text: str, fact: tuple[str, str]
) -> None:
    found = _facts(make_turn, text)
    assert any(a == fact[0] and v.removeprefix("吃") == fact[1] for a, v in found), found


# The reply language: a request is no question, the reply may be named as a noun, and a
# spoken list ends where the sentence turns to the reply.
REPLY_LANGUAGE = [
    ("Would you reply in German from here on?", ("language", "German")),
    ("Please keep your answers in French.", ("language", "French")),
    ("以后回答我都用英文吧。", ("language", "英文")),
    ("answer我的时候用Japanese就行。", ("language", "Japanese")),
]


@pytest.mark.parametrize(("text", "fact"), REPLY_LANGUAGE)
def test_the_reply_language_is_read(make_turn: MakeTurn, text: str, fact: tuple[str, str]) -> None:
    assert fact in _facts(make_turn, text)


def test_a_question_about_a_fact_stays_a_question(make_turn: MakeTurn) -> None:
    assert _facts(make_turn, "Could you tell me if I live in Paris?") == set()


@pytest.mark.parametrize(
    ("text", "spoken", "reply"),
    [
        (
            "I speak Dutch and Italian, but please write in English.",
            {"Dutch", "Italian"},
            "English",
        ),
        ("我会说日语和韩语，不过回复用中文就好。", {"日语", "韩语"}, "中文"),
    ],
)
def test_the_reply_language_is_not_a_spoken_one(
    make_turn: MakeTurn, text: str, spoken: set[str], reply: str
) -> None:
    found = _facts(make_turn, text)
    assert {v for a, v in found if a == "languages_spoken"} == spoken
    assert ("language", reply) in found


def test_english_language_names_inside_chinese(make_turn: MakeTurn) -> None:
    found = _facts(make_turn, "我会讲Korean、Spanish还有一点Thai。")
    assert {v for a, v in found if a == "languages_spoken"} == {"Korean", "Spanish", "Thai"}


# Pets: counted ("two rabbits"), kept by the household (家里养了...), after a clause whose
# subject goes on, or named in English inside Chinese.
PETS = [
    ("We've got three rabbits.", ("pets", "rabbits")),
    ("家里养了一只仓鼠。", ("pets", "仓鼠")),
    ("我今年30，单身，养了两条金鱼。", ("pets", "金鱼")),
    ("我家有个hamster。", ("pets", "hamster")),
]


@pytest.mark.parametrize(("text", "fact"), PETS)
def test_a_pet_is_read(make_turn: MakeTurn, text: str, fact: tuple[str, str]) -> None:
    assert fact in _facts(make_turn, text)


def test_a_named_pet_keeps_the_name(make_turn: MakeTurn) -> None:
    assert ("pets", "豆豆") in _facts(make_turn, "我养了一只柯基，叫豆豆。")


# A schedule is a time of the week or day however it is composed: day ranges, parts of
# the day, clock ranges, in either language or both.
SCHEDULES = [
    ("I work Monday through Thursday, 8 to 4.", "Monday through Thursday, 8 to 4"),
    ("I'm usually free weekend mornings before 11.", "weekend mornings before 11"),
    ("I only have time on Friday evenings.", "Friday evenings"),
    ("我通常周六下午才有空。", "周六下午"),
    ("我每天晚上九点到十点健身。", "每天晚上九点到十点"),
    ("我weekends 10点到4点上班。", "weekends 10点到4点"),
]


@pytest.mark.parametrize(("text", "value"), SCHEDULES)
def test_a_schedule_is_read(make_turn: MakeTurn, text: str, value: str) -> None:
    assert ("schedule", value) in _facts(make_turn, text)


@pytest.mark.parametrize("text", ["I work at Initech.", "我在上海上班。", "I'm free to talk."])
def test_no_schedule_without_a_time(make_turn: MakeTurn, text: str) -> None:
    assert not any(a == "schedule" for a, _v in _facts(make_turn, text))


# An employer named by the move made for it, by the work done for it, or as where a job
# change from another one ended.
EMPLOYERS = [
    ("We relocated to Austin for a job at Dell.", ("employer", "Dell")),
    ("I've been nursing for Kaiser since 2019.", ("employer", "Kaiser")),
    ("我从百度跳槽到美团了。", ("employer", "美团")),
]


@pytest.mark.parametrize(("text", "fact"), EMPLOYERS)
def test_an_employer_is_read(make_turn: MakeTurn, text: str, fact: tuple[str, str]) -> None:
    assert fact in _facts(make_turn, text)


def test_waiting_for_a_company_is_no_job(make_turn: MakeTurn) -> None:
    assert not any(a == "employer" for a, _v in _facts(make_turn, "I've been waiting for Amazon."))


# A preference is the thing or quality preferred, not the having of it; taking a pastime
# up (迷上了, 爱上了) makes it an interest.
@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I'd rather have something light than something cheap.", ("prefers", "light")),
        ("I'd rather have juice than soda.", ("prefers", "juice")),
        ("我最近迷上了攀岩。", ("interests", "攀岩")),
        ("今年爱上了滑雪。", ("interests", "滑雪")),
    ],
)
def test_preferences_and_interests(make_turn: MakeTurn, text: str, fact: tuple[str, str]) -> None:
    found = _facts(make_turn, text)
    assert fact in found
    assert not any(v.startswith("上了") for _a, v in found)
