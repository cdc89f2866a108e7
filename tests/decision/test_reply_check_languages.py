"""The reply check across numerals and languages (issue 32, "Why": "The reply check
reads digits only, and one language at a time"): values are compared after
normalization. Chinese numerals and mixed forms (五千, 八千块, 0.8万, 8k), one currency
however written (元, 块, RMB, yuan, ¥), dates in any form or language (3 March,
March 3rd, 3/5, 3月5日, 三月五号), foods and places across languages (peanuts / 花生,
shrimp / shellfish / 海鲜, Shanghai / 上海), ids of one shape (MU1234 against CA1234;
the same id in another case or spacing agrees).

The engine cases go through ``observe`` -> ``route`` -> ``decide`` -> ``check_reply``
against the real Valkey and Qdrant; the rest read text with the same rules."""

from __future__ import annotations

import pytest
from tests.decision.test_reply_check_claims import Factory, check, remembered

from memstrata.attributes import glossary
from memstrata.attributes.numbers import read_amount, read_count, zh_number
from memstrata.decision.claims import read_claims
from memstrata.decision.consistency import text_conflicts

# -- the cases, through the engine ---------------------------------------------


@pytest.mark.parametrize(
    ("said", "question", "wrong", "right"),
    [
        (
            "我的预算是8000元。",
            "我的预算是多少",
            ("你的预算是五千块。", "九千元", "Your budget is 5k."),
            ("八千块", "0.8万", "8k", "你的预算是¥8,000。", "Your budget is 8000 RMB."),
        ),
        (
            "My budget is 8000 yuan.",
            "what is my budget",
            ("你的预算是两万五。", "Your budget is 9 thousand yuan."),
            ("你的预算是八千块。", "Your budget is 8k.", "预算0.8万元，够用。"),
        ),
    ],
    ids=["zh", "en"],
)
def test_amounts_are_compared_after_their_numerals_and_currency_are_read(
    engine_opener: Factory,
    said: str,
    question: str,
    wrong: tuple[str, ...],
    right: tuple[str, ...],
) -> None:
    engine = remembered(engine_opener, said)
    for reply in wrong:
        card_id, result = check(engine, question, reply)
        assert not result.consistent and result.regenerate, reply
        assert "8000" in result.conflicts[0], result.conflicts
        assert engine.trace_card(card_id, tenant="acme").consistency == "conflict"
    for reply in right:
        _, fine = check(engine, question, reply)
        assert fine.consistent, (reply, fine.conflicts)


@pytest.mark.parametrize(
    ("said", "question", "wrong", "right"),
    [
        (
            "我对花生过敏",
            "what can I eat",
            ("You can eat peanuts.", "Peanuts are fine for you."),
            (
                "I left out the peanuts, since you're allergic.",
                "You can eat the peanut-free satay.",
            ),
        ),
        (
            "I'm allergic to shellfish.",
            "我对什么过敏",
            ("你可以吃虾。", "海鲜对你没问题。", "Lobster is fine for you."),
            ("你对海鲜过敏，我选了鸡肉。", "你可以吃鱼。"),
        ),
    ],
    ids=["zh-held", "en-held"],
)
def test_a_held_allergen_called_safe_in_the_other_language_is_a_conflict(
    engine_opener: Factory,
    said: str,
    question: str,
    wrong: tuple[str, ...],
    right: tuple[str, ...],
) -> None:
    engine = remembered(engine_opener, said)
    for reply in wrong:
        _, result = check(engine, question, reply)
        assert not result.consistent, reply
        assert "allergy" in result.conflicts[0], result.conflicts
    for reply in right:
        _, fine = check(engine, question, reply)
        assert fine.consistent, (reply, fine.conflicts)


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("我的牙医预约是3月5日。", "我的牙医预约是哪天"),
        ("My dentist appointment is on March 5th.", "when is my dentist appointment"),
        ("牙医预约在三月五号。", "我的牙医预约是哪天"),
    ],
    ids=["zh-digits", "en", "zh-numerals"],
)
def test_dates_are_compared_across_forms_and_languages(
    engine_opener: Factory, said: str, question: str
) -> None:
    engine = remembered(engine_opener, said)
    for reply in ("Your dentist appointment is on 3 March.", "你的牙医预约是3月6日。"):
        _, result = check(engine, question, reply)
        assert not result.consistent, (said, reply)
    for reply in (
        "Your dentist appointment is on 5 March.",
        "你的牙医预约是三月五号。",
        "Your dentist appointment is on 3/5.",
        "Your dentist appointment is on the 5th of March.",
    ):
        _, fine = check(engine, question, reply)
        assert fine.consistent, (said, reply, fine.conflicts)


def test_ids_of_one_shape_conflict_and_the_same_id_written_otherwise_agrees(
    engine_opener: Factory,
) -> None:
    engine = remembered(engine_opener, "My flight is MU1234 on Friday.")
    question = "what is my flight number"
    for reply in ("Your flight CA1234 leaves on Friday.", "你的航班是CA 1234。"):
        _, result = check(engine, question, reply)
        assert not result.consistent and "MU1234" in result.conflicts[0], reply
    for reply in ("Your flight mu 1234 leaves on Friday.", "你的航班MU-1234周五起飞。"):
        _, fine = check(engine, question, reply)
        assert fine.consistent, (reply, fine.conflicts)


# -- the same rules on text -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("五千", 5000),
        ("一万", 10_000),
        ("两万五", 25_000),
        ("三千五百", 3500),
        ("三千五", 3500),
        ("一百零五", 105),
        ("0.8万", 8000),
        ("1.2万", 12_000),
        ("3千5", 3500),
        ("5k", 5000),
        ("5,000", 5000),
        ("2 thousand", 2000),
    ],
)
def test_numerals_and_mixed_forms_read_as_one_number(text: str, value: float) -> None:
    assert read_amount(text) == value


def test_words_that_hold_a_numeral_are_not_numbers() -> None:
    assert zh_number("千万") is None and zh_number("万一") is None and zh_number("五五千") is None
    assert read_count("二〇二六") == 2026 and read_count("twelve") == 12
    assert read_count("几") is None and read_count("几", vague=True) == 3
    # 两万一个月: the 一 counts the month.
    assert text_conflicts("预算两万一个月。", ["我的预算是两万元。"]) == ()
    assert read_claims("我们一起去，十分开心，千万别迟到。").amounts == ()


@pytest.mark.parametrize(
    "said", ["¥8000", "8000 RMB", "8000 yuan", "8000元", "8000块", "八千块钱", "8000元人民币"]
)
def test_one_currency_however_written(said: str) -> None:
    (amount,) = read_claims(f"My budget is {said}.").amounts
    assert (amount.value, amount.unit) == (8000, "CNY")


@pytest.mark.parametrize(
    "said", ["3 March", "March 3rd", "the 3rd of March", "3/3", "3月3日", "三月三号", "3月3号"]
)
def test_one_date_however_written(said: str) -> None:
    (date,) = read_claims(f"It is on {said}.").dates
    assert (3, 3) in date.days()


def test_more_than_admits_the_values_up_to_its_next_step() -> None:
    assert text_conflicts("你的预算一万多。", ["我的预算是12000元。"]) == ()
    assert text_conflicts("你的预算八千多块。", ["My budget is 8,500 yuan."]) == ()
    assert text_conflicts("Your budget is 5k+.", ["我的预算是五千五。"]) == ()
    assert text_conflicts("你的预算一万多。", ["我的预算是22000元。"])
    assert text_conflicts("你的预算八千多块。", ["My budget is 9,500 yuan."])


def test_a_slash_date_agrees_read_either_way_and_conflicts_read_neither() -> None:
    held = ["My exam is on May 3."]
    assert text_conflicts("Your exam is on 3/5.", held) == ()
    assert text_conflicts("Your exam is on 5/3.", held) == ()
    assert text_conflicts("Your exam is on 5/4.", held)
    assert text_conflicts("Your exam is on 13/5.", ["My exam is on May 13."]) == ()


@pytest.mark.parametrize(
    ("english", "chinese"),
    [
        ("peanuts", "花生"),
        ("shrimp", "虾"),
        ("shellfish", "贝类"),
        ("seafood", "海鲜"),
        ("dairy", "乳制品"),
        ("vegetarian", "素食者"),
        ("Shanghai", "上海"),
        ("Cantonese", "粤语"),
        ("dentist appointment", "牙医预约"),
        ("budget", "预算"),
    ],
)
def test_the_glossary_names_one_thing_in_both_languages(english: str, chinese: str) -> None:
    assert glossary.concepts(english) and glossary.concepts(english) == glossary.concepts(chinese)


def test_a_broader_term_covers_the_narrower_not_its_siblings() -> None:
    assert glossary.related("shellfish", "shrimp") and glossary.related("shrimp", "seafood")
    assert not glossary.related("shrimp", "crab") and not glossary.related("peanut", "almond")
    assert glossary.concepts("peanut-free cookies") == frozenset()
    assert glossary.concepts("龙虾") == {"lobster"}


@pytest.mark.parametrize(
    ("memories", "reply"),
    [
        (["I live in Shanghai."], "你不住在上海，所以不推荐。"),
        (["我住在上海。"], "Since you live in Beijing, try the Beijing branch."),
        (["我是素食者。"], "You're not vegetarian, so the steak works."),
        (["I hate cilantro."], "你喜欢香菜，我多放了一点。"),
        (["user allergies: 海鲜"], "You can eat shellfish."),
        (["user 过敏: 虾"], "Shrimp is fine for you."),  # a fact stored under an alias
        (["user languages_spoken: 粤语"], "You don't speak Cantonese, so I'll use Mandarin."),
    ],
)
def test_facts_are_compared_across_languages(memories: list[str], reply: str) -> None:
    assert text_conflicts(reply, memories), reply


@pytest.mark.parametrize(
    ("memories", "reply"),
    [
        (["我住在上海。"], "Since you live in Shanghai, try the Bund branch."),
        (["我住在上海。"], "You don't like Shanghai food much, so I picked noodles."),
        (["我不吃猪肉。"], "You don't eat pork, so I picked beef."),
        (["I'm allergic to shellfish."], "你可以吃鱼。"),
        (["My flight is MU1234."], "MU1234 connects to CA1234 in Beijing."),
        (["My order number is A1234."], "The X9000 blender ships with order A1234."),
        (["My order number is A1234."], "The X9000 blender is in stock."),
        # An amount alone answers the question; one beside other words is judged by them.
        (["我的预算是8000元。"], "这个300元。"),
        (["My budget is 8000 yuan."], "It's 300 yuan."),
    ],
)
def test_agreement_across_languages_is_not_a_conflict(memories: list[str], reply: str) -> None:
    assert text_conflicts(reply, memories) == ()
