"""The reply check's rules in general form (issue 32, round 2): numbers said in groups
(phones, cards, orders), counted nouns as units, Chinese amounts in 百, and topics named
by synonyms or across languages. Each case pairs a conflicting reply with one that
agrees, so that a rule that fires on everything fails too."""

from __future__ import annotations

import pytest

from memstrata.decision.consistency import text_conflicts

CASES = [
    # Numbers said in groups: a digit swapped is another number.
    (
        "My mobile is 13912345678.",
        "I'll call you at 139 1234 5687.",
        "I'll call you at 139 1234 5678.",
    ),
    ("客服电话是010-82345671。", "I rang them at 010-8234 5617.", "I rang them at 010 8234 5671."),
    (
        "user card_number: 66201937",
        "你的卡号 6620 1973 已经登记。",
        "你的卡号 6620 1937 已经登记。",
    ),
    (
        "user order: 305-1188274-9910",
        "Order 305-1188247-9910 ships Friday.",
        "Order 305-1188274-9910 ships Friday.",
    ),
    # An id written with a middle dot (a plate) is one id.
    ("user license_plate: 沪B5X3K9", "你的车牌沪B·5X3K8已登记。", "你的车牌沪B·5X3K9已登记。"),
    # Counted nouns name what they count.
    (
        "We expect 60 guests at the party.",
        "For 90 guests you need a bigger hall.",
        "For 60 guests this hall works.",
    ),
    ("教练让我每天跑一万步。", "你每天跑六千步就够了。", "你每天跑一万步，坚持住。"),
    # Chinese amounts in 百, against held money.
    (
        "user phone_bill: 150 yuan per month",
        "你的phone bill每月是一百九，我记下了。",
        "你的phone bill每月是一百五，我记下了。",
    ),
    # A budget said as a ceiling or a fund; topics across languages.
    (
        "user budget: 2500 dollars",
        "Your ceiling for the laptop is $1,800.",
        "Your ceiling for the laptop is $2,500.",
    ),
    (
        "user budget: 30000 yuan",
        "Your holiday fund is 18,000 yuan.",
        "Your holiday fund is 30,000 yuan.",
    ),
    (
        "My son's tuition is 15,000 RMB a year.",
        "你儿子的学费一年一万八。",
        "你儿子的学费一年一万五。",
    ),
    ("user renovation_budget: 60000元", "按你五万的装修预算来。", "按你六万的装修预算来。"),
    ("The parent-teacher meeting is on 3/18.", "家长会是三月十五号。", "家长会是三月十八号。"),
    (
        "报税截止日期是7月15号。",
        "Your tax filing deadline is July 5.",
        "Your tax filing deadline is July 15.",
    ),
    ("user grandma_birthday: October 3", "Grandma的大寿是10月13号。", "Grandma的大寿是10月3号。"),
]


@pytest.mark.parametrize(("memory", "wrong", "right"), CASES)
def test_conflict_found_and_agreeing_reply_passes(memory: str, wrong: str, right: str) -> None:
    assert text_conflicts(wrong, [memory]), wrong
    assert not text_conflicts(right, [memory]), right


@pytest.mark.parametrize(
    ("memory", "reply"),
    [
        # A capacity beside the guest count is not the guest count.
        (
            "We expect 60 guests at the party.",
            "The hall holds 200 people, enough for your 60 guests.",
        ),
        # Another long number (not a digit or two off) is another thing.
        ("My mobile is 13912345678.", "The hotel's number is 021 6688 7799."),
        # A long amount of money is an amount, not an id.
        ("user savings: 1500000 yuan", "You've saved 1500000 yuan so far."),
    ],
)
def test_no_false_alarm(memory: str, reply: str) -> None:
    assert not text_conflicts(reply, [memory])


@pytest.mark.parametrize(
    ("memory", "wrong", "right"),
    [
        # An allergy denied with the negator before 对.
        ("user allergies: peanuts", "你不对花生过敏，这道菜可以点。", "你对花生过敏，这道菜别点。"),
        # What the user keeps away from, treated as fine.
        (
            "I don't eat beef.",
            "Since you eat beef, the steakhouse works.",
            "Since you don't eat beef, I picked seafood.",
        ),
        (
            "user diet: dairy-free",
            "You're fine with cheese, so fondue works.",
            "The salad bar has dairy-free options.",
        ),
        (
            "I'm lactose intolerant.",
            "You handle milk fine, so a latte is OK.",
            "You handle spicy food fine, so curry is OK.",
        ),
        ("我一点酒都不能喝。", "你能喝酒，那我们去酒吧。", "你不能喝酒，我们去喝茶。"),
        # An allergen the reply says the user is fine with.
        (
            "I'm allergic to shrimp.",
            "You're fine with shrimp, so the paella works.",
            "You're fine with chicken, so the paella works.",
        ),
    ],
)
def test_avoided_things_said_to_be_fine(memory: str, wrong: str, right: str) -> None:
    assert text_conflicts(wrong, [memory]), wrong
    assert not text_conflicts(right, [memory]), right


@pytest.mark.parametrize(
    ("memory", "wrong", "right"),
    [
        ("I work at Alibaba.", "你在百度工作，年假应该不少。", "你在阿里巴巴工作，年假应该不少。"),
        (
            "user employer: PwC",
            "Since you work at KPMG, busy season is close.",
            "Since you work at PwC, busy season is close.",
        ),
        (
            "我老家在沈阳。",
            "Your hometown is Harbin, so pack a coat.",
            "Your hometown is Shenyang, so pack a coat.",
        ),
        ("My car is a Toyota Corolla.", "你开的是宝马，保养贵一些。", "你开的是丰田，保养便宜。"),
        ("我是B型血。", "Your blood type is AB, noted.", "Your blood type is B, noted."),
    ],
)
def test_single_valued_fact_given_another_value(memory: str, wrong: str, right: str) -> None:
    assert text_conflicts(wrong, [memory]), wrong
    assert not text_conflicts(right, [memory]), right


@pytest.mark.parametrize(
    ("memory", "reply"),
    [
        # A place is not an employer; an unknown name across scripts is not judged.
        ("我在腾讯工作。", "你在深圳工作，通勤方便。"),
        ("user employer: Deloitte", "你在德勤的同事也会来吗？"),
        ("I work at Zentrix Labs.", "你在星辰科技工作的话，可以走内推。"),
        # Working from home names no employer.
        ("I work at Deloitte.", "Since you work from home, a desk lamp helps."),
    ],
)
def test_single_valued_fact_no_false_alarm(memory: str, reply: str) -> None:
    assert not text_conflicts(reply, [memory])


@pytest.mark.parametrize(
    ("memory", "wrong", "right"),
    [
        (
            "I go swimming every Monday morning.",
            "Your swimming is on Fridays, so Monday is free.",
            "Your swimming is on Mondays, so Friday is free.",
        ),
        (
            "我每周三晚上上钢琴课。",
            "你的钢琴课在周四，我记下了。",
            "你的钢琴课在星期三，我记下了。",
        ),
        (
            "The dentist appointment is on the 9th, a Tuesday.",
            "Your dentist appointment is Thursday.",
            "Your dentist appointment is Tuesday.",
        ),
    ],
)
def test_weekday_given_another_day(memory: str, wrong: str, right: str) -> None:
    assert text_conflicts(wrong, [memory]), wrong
    assert not text_conflicts(right, [memory]), right


def test_weekday_of_another_topic_is_not_judged() -> None:
    memory = "I go to yoga every Tuesday evening."
    assert not text_conflicts("Since yoga is on Tuesday, I booked dinner on Wednesday.", [memory])


@pytest.mark.parametrize(
    ("memory", "wrong", "right"),
    [
        (
            "我女儿叫Lily，今年五岁。",
            "Your daughter Emma will love the zoo.",
            "Your daughter Lily will love the zoo.",
        ),
        (
            "My husband is called David.",
            "你老公叫Tom的话，礼物上写他的名字。",
            "你老公David应该会喜欢这个礼物。",
        ),
    ],
)
def test_family_member_given_another_name(memory: str, wrong: str, right: str) -> None:
    assert text_conflicts(wrong, [memory]), wrong
    assert not text_conflicts(right, [memory]), right


def test_family_name_across_scripts_is_not_judged() -> None:
    # Tingting and 婷婷 may be one person: a name in another script is not judged.
    assert not text_conflicts("Your wife Tingting will like the scarf.", ["我老婆叫婷婷。"])


@pytest.mark.parametrize(
    ("memory", "wrong", "right"),
    [
        ("user diet: keto", "你是素食者，这家沙拉店不错。", "你是生酮饮食，这家烤肉店不错。"),
        (
            "I'm vegetarian.",
            "You're on a keto diet, so the steak works.",
            "You're vegetarian, so the salad works.",
        ),
    ],
)
def test_diet_given_an_exclusive_other(memory: str, wrong: str, right: str) -> None:
    assert text_conflicts(wrong, [memory]), wrong
    assert not text_conflicts(right, [memory]), right


@pytest.mark.parametrize(
    ("memory", "reply"),
    [
        ("user diet: gluten-free", "You're keto these days, so bread is out anyway."),
        ("I'm vegan.", "You're vegetarian, so the salad works."),
        ("user diet: keto", "You're not vegan, so the cheese board works."),
    ],
)
def test_diet_that_can_be_kept_together_is_not_judged(memory: str, reply: str) -> None:
    assert not text_conflicts(reply, [memory])


def test_job_start_date_across_languages() -> None:
    memory = "I start my new job on June 2."
    assert text_conflicts("你六月十二号入职，记得带证件。", [memory])
    assert not text_conflicts("你六月二号入职，记得带证件。", [memory])
